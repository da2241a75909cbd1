"""What counting's ``aggregate`` reads of each trial record, read once, in columns (issue 24).

The sections of report.json used to walk the records about ten times, record by record (about 1 us a
record each: 0.44 s for the paper's 38,000). :func:`scan` reads each field once with C-level ``map`` and
``compress`` passes into the units every section is made of:

- cells: each (model, condition, domain, n_events, frequency_hz) in order of first appearance, keyed by
  its first record, with its counts (planned, ok, right, unparseable among ok); every EM, completion
  and parse-failure count of a report section is a sum of these integers;
- groups: each (model, condition) in order of first appearance, keyed by its first record, its records
  a slice of the ``Scan.column`` columns (records stably sorted by group: each group's in record order), its
  cells, its domains (keyed by their first record);
- the traced trials (ok, N >= 1, trace available; ``Scan.traced``, in the same order) with their
  trace-metric values, split by domain in record order.

A section's float is a sum of these values in record order, as the record-by-record code added them.
Records are the flat dicts :mod:`~vidaudit.suites.counting.aggregate` describes; optional keys may be
missing (read with ``.get``, as before), a missing required one raises the same DataError as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress, count, repeat
from operator import and_, eq, is_, itemgetter, truth
from typing import Any

from vidaudit.sdk import DataError

TRACE_KEYS = ("vor", "precision", "recall", "f1", "acr", "rfr")
#: what a cell is keyed by; the first two are the group
CELL_FIELDS = ("model", "condition", "domain", "n_events", "frequency_hz")


def require(r: dict[str, Any], name: str) -> Any:
    """``r[name]``, or the DataError that says which record lacks it and what a record must have."""
    if name not in r:
        raise DataError(
            f"trial record for sample {r.get('sample_id', '?')!r} lacks {name!r}; "
            "records must be score_trial output plus model, condition, domain, n_events, frequency_hz"
        )
    return r[name]


@dataclass(slots=True)
class Group:
    """One (model, condition): its records (``Scan.column[name][start:stop]``), its traced trials
    (``Scan.traced[name][t_start:t_stop]``), its cells and domains in order of first appearance."""

    key: tuple[Any, Any]
    start: int = 0
    stop: int = 0
    t_start: int = 0
    t_stop: int = 0
    cells: list[int] = field(default_factory=list)
    #: each domain (its first record's value) -> its index in the group
    domains: dict[Any, int] = field(default_factory=dict)
    #: per domain index: its cells, and its traced trials' cells and TRACE_KEYS values (record order)
    domain_cells: list[list[int]] = field(default_factory=list)
    traced_cells: list[list[int]] = field(default_factory=list)
    traced_values: list[list[list[Any]]] = field(default_factory=list)


@dataclass(slots=True)
class Scan:
    """The records read once (see the module docstring)."""

    #: each field of FIELDS of every record, by group in record order (``status`` "ok" where missing)
    column: dict[str, Sequence[Any]]
    ok: list[bool]
    right: list[bool]
    unparseable: list[bool]
    #: per cell: key (its first record's), planned, ok, right, unparseable (among ok), N >= 1, group, domain
    cell_keys: list[tuple[Any, ...]]
    cell_n: list[int]
    cell_ok: list[int]
    cell_right: list[int]
    cell_unparseable: list[int]
    cell_positive: list[bool]
    cell_group: list[int]
    cell_domain: list[int]
    groups: list[Group]
    #: the traced trials (ok, N >= 1, trace available), in the same order: their TRACED_FIELDS, domain, cells
    traced: dict[str, list[Any]]
    traced_cell: list[int]
    #: their TRACE_KEYS values, a list each
    traced_values: list[list[Any]]


_CELL_GET = itemgetter(*CELL_FIELDS)
#: what else is read of a record (with ``.get``: ``status`` defaults to ok, the others to None)
FIELDS = (
    "status",
    "correct",
    "parse_method",
    "trace_available",
    *TRACE_KEYS,
    "taxonomy",
    "tolerance",
    "n_reported",
    "usage",
    "cost_usd",
    "n_dropped_timestamps",
    "n_frame_mentions",
    "n_frame_out_of_range",
)
_DEFAULTS = tuple("ok" if name == "status" else None for name in FIELDS)
_FIELDS_GET = itemgetter(*FIELDS)
#: what is kept of the traced trials
TRACED_FIELDS = (*TRACE_KEYS, "taxonomy", "tolerance", "n_reported")


def _cell_keys(records: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    try:
        return list(map(_CELL_GET, records))
    except KeyError:  # the DataError the grouping by (model, condition), then by cell, raised
        for names in (CELL_FIELDS[:2], CELL_FIELDS):
            for r in records:
                for name in names:
                    require(r, name)
        raise


def _row(r: dict[str, Any]) -> tuple[Any, ...]:
    try:
        return _FIELDS_GET(r)
    except KeyError:
        return tuple(map(r.get, FIELDS, _DEFAULTS))


def _rows(records: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each record's FIELDS, in one lookup a record while all are there."""
    try:
        return list(map(_FIELDS_GET, records))
    except KeyError:
        return list(map(_row, records))


def _stable_order(labels: list[int]) -> list[int] | None:
    """The positions sorted by label, each label's in their order; None where they already are."""
    order = sorted(range(len(labels)), key=labels.__getitem__)
    return None if order == list(range(len(labels))) else order


def _take(values: Sequence[Any], order: list[int]) -> list[Any]:
    return list(map(values.__getitem__, order))


def split(labels: list[int], columns: Sequence[Sequence[Any]], n: int) -> list[list[Any]]:
    """Each column's items by label (0 .. n - 1), each label's in their order: a slice each where the labels
    already come together, else after one stable sort."""
    order = _stable_order(labels)
    if order is not None:
        columns = [_take(col, order) for col in columns]
    size = Counter(labels)
    out, a = [], 0
    for j in range(n):
        b, a = a, a + size[j]
        out.append([col[b:a] for col in columns])
    return out


def _counts(ids: list[int], mask: list[Any] | None, n: int) -> list[int]:
    counter = Counter(ids if mask is None else compress(ids, mask))
    return list(map(counter.__getitem__, range(n)))


def scan(records: Sequence[dict[str, Any]]) -> Scan:
    """Read every record once (see the module docstring)."""
    keys = _cell_keys(records)
    first: dict[tuple[Any, ...], int] = {}  # each cell (keyed by its first record) -> its first record's index
    at_first = list(map(first.setdefault, keys, count()))
    cell_keys = list(first)
    n_cells = len(cell_keys)
    cid = list(map(dict(zip(first.values(), range(n_cells), strict=True)).__getitem__, at_first))
    groups: list[Group] = []
    group_of: dict[tuple[Any, Any], int] = {}
    cell_group: list[int] = []
    cell_domain: list[int] = []
    for key in cell_keys:  # a group's first cell holds its first record
        g = group_of.setdefault(key[:2], len(groups))
        if g == len(groups):
            groups.append(Group(key[:2]))
        group = groups[g]
        j = group.domains.setdefault(key[2], len(group.domains))
        if j == len(group.domain_cells):
            group.domain_cells.append([])
        group.domain_cells[j].append(len(cell_group))
        group.cells.append(len(cell_group))
        cell_group.append(g)
        cell_domain.append(j)
    rows = _rows(records)
    order = _stable_order(list(map(cell_group.__getitem__, cid)))  # each group's records together
    if order is not None:
        rows, cid, keys = _take(rows, order), _take(cid, order), _take(keys, order)
    column: dict[str, Sequence[Any]] = (
        dict(zip(FIELDS, zip(*rows, strict=True), strict=True)) if rows else dict.fromkeys(FIELDS, ())
    )
    del rows
    ok = list(map(eq, column["status"], repeat("ok")))
    right = list(map(and_, ok, map(is_, column["correct"], repeat(True))))
    unparseable = list(map(and_, ok, map(eq, column["parse_method"], repeat("unparseable"))))
    cell_positive = [int(k[3]) > 0 for k in cell_keys]
    traced_mask = list(
        map(and_, map(and_, ok, map(cell_positive.__getitem__, cid)), map(truth, column["trace_available"]))
    )
    traced = {name: list(compress(column[name], traced_mask)) for name in TRACED_FIELDS}
    traced["domain"] = list(map(itemgetter(2), compress(keys, traced_mask)))
    n = _counts(cid, None, n_cells)
    s = Scan(
        column,
        ok,
        right,
        unparseable,
        cell_keys,
        n,
        n if all(ok) else _counts(cid, ok, n_cells),
        _counts(cid, right, n_cells),
        _counts(cid, unparseable, n_cells),
        cell_positive,
        cell_group,
        cell_domain,
        groups,
        traced,
        list(compress(cid, traced_mask)),
        [traced[name] for name in TRACE_KEYS],
    )
    _bound(s)
    return s


def _bound(s: Scan) -> None:
    """Each group's slices of the records and of the traced trials, and its traced trials by domain."""
    n_traced = Counter(map(s.cell_group.__getitem__, s.traced_cell))
    start = t_start = 0
    for g, group in enumerate(s.groups):
        group.start, group.t_start = start, t_start
        start += sum(map(s.cell_n.__getitem__, group.cells))
        t_start += n_traced[g]
        group.stop, group.t_stop = start, t_start
        cells = s.traced_cell[group.t_start : group.t_stop]
        values = [v[group.t_start : group.t_stop] for v in s.traced_values]
        parts = split(list(map(s.cell_domain.__getitem__, cells)), [cells, *values], len(group.domains))
        group.traced_cells = [part[0] for part in parts]
        group.traced_values = [part[1:] for part in parts]
