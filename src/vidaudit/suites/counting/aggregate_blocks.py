"""The blocks counting's report.json sections are made of (see :mod:`~vidaudit.suites.counting.aggregate` for
the denominators): EM over planned trials with its Wilson interval (``em_counts``, ``em_block``), the
unweighted macro over domains, means summed in record order, sums counted in C, and nested dicts of results.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache
from operator import itemgetter
from typing import Any

from vidaudit.sdk import wilson_interval as _wilson_interval
from vidaudit.suites.counting.aggregate_scan import TRACE_KEYS, Scan, require
from vidaudit.suites.counting.boundaries import format_value

#: the same (k, n) recurs over thousands of cells and blocks; the interval is a pure function of them
wilson_interval = lru_cache(maxsize=65536)(_wilson_interval)


def is_ok(r: dict[str, Any]) -> bool:
    return r.get("status", "ok") == "ok"


def is_right(r: dict[str, Any]) -> bool:
    """Correct and completed: a failed trial is a wrong answer whatever its ``correct`` says."""
    return is_ok(r) and r.get("correct") is True


def mean(values: Iterable[Any]) -> float | None:
    """The mean of the values that are not None, each float()-ed, summed in order.

    A list's plain ``sum`` is that sum when its total is a float or an int: float() of a float is itself;
    sum() adds a bool or an int to a float total as float() of it, and adds the bools and ints before the
    first float exactly, as the float sum of those (integers far below 2**53) is; an int total k over n is
    float(k) / n, both correctly rounded. A total of another type (Decimal, Fraction, numpy) or a TypeError
    (None, str) takes the float() path."""
    if isinstance(values, (list, tuple)):  # a column with no gap: summed in C, same order
        if not values:
            return None
        try:
            total = sum(values)
        except TypeError:  # a None among them (or a str): float() each, below
            total = None
        if type(total) is float or type(total) is int:  # floats, bools and ints only
            return total / len(values)
        try:
            return sum(map(float, values)) / len(values)
        except TypeError:  # a None among them (or a value float() refuses: it refuses it again below)
            pass
    xs = [float(v) for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def nested() -> defaultdict:
    return defaultdict(nested)


def plain(d: Any) -> Any:
    """Nested :func:`nested` dicts as plain dicts (their leaves, blocks made here, kept as they are)."""
    if type(d) is defaultdict:
        return {k: plain(v) for k, v in d.items()}
    return d


def grouped_by(records: Iterable[dict[str, Any]], *names: str) -> dict[tuple, list[dict[str, Any]]]:
    out: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    get = itemgetter(*names)
    one = len(names) == 1
    for r in records:
        try:
            key = (get(r),) if one else get(r)
        except KeyError:
            for n in names:
                require(r, n)  # raises the explanatory DataError
            raise
        out[key].append(r)
    return out


def frequency_key(f: Any) -> str:
    return format_value(float(f)) if f is not None else "none"


def int_total(values: Sequence[Any]) -> int:
    """``sum(map(int, values))``: the plain sum when every value is an int already (int() of an int is itself; a
    total that is not an int had another type among them; int() is most of the cost)."""
    try:
        total = sum(values)
    except TypeError:
        total = None
    return total if type(total) is int else sum(map(int, values))


def int_sum(values: Sequence[Any]) -> int:
    """``sum(int(v or 0) for v in values)``, in C while no value is None (or another int() refuses)."""
    try:
        return int_total(values)
    except (TypeError, ValueError):
        return sum(int(v or 0) for v in values)


def count_true(values: Sequence[Any]) -> int:
    """``sum(map(bool, values))``, counted in C."""
    return len(list(filter(None, values)))


def em_block(s: Scan, cells: Iterable[int], columns: Sequence[list[Any]]) -> dict[str, Any]:
    """EM over planned trials (and over N >= 1), completion, parse failures: sums of the ``cells``' counts;
    the trace-metric means of ``columns`` (the cells' traced trials' TRACE_KEYS values, in record order)."""
    n = n_ok = right = n_positive = right_positive = unparseable = 0
    for c in cells:
        k = s.cell_right[c]
        n += s.cell_n[c]
        n_ok += s.cell_ok[c]
        right += k
        unparseable += s.cell_unparseable[c]
        if s.cell_positive[c]:
            n_positive += s.cell_n[c]
            right_positive += k
    block: dict[str, Any] = {
        "n": n,
        "n_ok": n_ok,
        "completion": n_ok / n if n else None,
        "correct": right,
        **em_counts(right, n),
        "n_em_positive": n_positive,
        "n_controls": n - n_positive,
        **em_counts(right_positive, n_positive, "em_positive"),
        "em_ok": (right / n_ok) if n_ok else None,
        "n_positive": len(columns[0]),
    }
    for name, values in zip(TRACE_KEYS, columns, strict=True):
        block[name] = mean(values)
    block["parse_failure_rate"] = (unparseable / n_ok) if n_ok else None
    return block


def em_counts(k: int, n: int, prefix: str = "em") -> dict[str, Any]:
    """EM of ``k`` right of ``n`` planned trials with its Wilson interval (``prefix`` names the keys)."""
    lo, hi = wilson_interval(k, n) if n else (None, None)
    return {prefix: k / n if n else None, f"{prefix}_ci_low": lo, f"{prefix}_ci_high": hi}


MACRO_KEYS = ("em", "em_positive", "completion", *TRACE_KEYS, "parse_failure_rate")


def macro(blocks: dict[str, dict[str, Any]], traced: Iterable[str] = ()) -> dict[str, Any]:
    """The unweighted mean over domains of each block's figure (sums for the counts).

    ``traced``: the domains whose trials carry a trace (a positive-event grid cell: a real video's count-only
    domain is none). A trace metric's macro is their mean, and None (undefined) when one of them has none (every
    positive trial failed): the mean over the others would be published as the macro of every domain listed."""
    out: dict[str, Any] = {k: mean(b.get(k) for b in blocks.values()) for k in MACRO_KEYS}
    named = set(traced)
    with_trace = [b for d, b in blocks.items() if d in named]  # in the blocks' order, as the other figures
    for k in TRACE_KEYS:
        values = [b.get(k) for b in with_trace]
        out[k] = None if None in values else mean(values)
    for k in ("n", "n_ok", "n_em_positive", "n_controls", "n_positive"):
        out[k] = sum(b[k] for b in blocks.values())
    out["domains"] = sorted(blocks)
    return out
