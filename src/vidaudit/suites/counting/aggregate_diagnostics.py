"""Counting's diagnostics in report.json: why traces are wrong (the error taxonomy), how the trace metrics move
with the timing tolerance, which trials failed and why (error kinds), and what the calls cost (token usage).
Each is a section of :func:`~vidaudit.suites.counting.aggregate.aggregate`, computed from one ``Scan``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import chain, compress
from operator import itemgetter, not_, truth
from typing import Any

from vidaudit.suites.counting.aggregate_blocks import count_true, em_counts, int_sum, int_total, mean, nested, plain
from vidaudit.suites.counting.aggregate_scan import Scan, split
from vidaudit.suites.counting.taxonomy import TAXONOMY_KEYS


def _taxonomy_totals(
    taxonomies: list[Any],
    read: bool,
    true_events: list[int],
    reported: list[Any],
    rfr: list[Any],
    acr: list[Any],
    n_not_scored: int,
) -> dict[str, int]:
    """One domain's Table 8 row from its traced trials' columns (those with a taxonomy); ``read``: the
    taxonomies are their TAXONOMY_KEYS values already (every one had them all)."""
    if read:  # int(v or 0) of each value (every key is there: tax.get(k, 0) is the value)
        tot = {k: int_sum(col) for k, col in zip(TAXONOMY_KEYS, zip(*taxonomies, strict=True), strict=True)}
    else:
        try:  # column sums in C; int() of each value as the loop reads it (None, or a missing key: the loop)
            columns = zip(*map(_TAXONOMY_GET, taxonomies), strict=True)
            tot = {k: int_total(col) for k, col in zip(TAXONOMY_KEYS, columns, strict=True)}
        except (KeyError, TypeError, ValueError):  # (no record at all: the loop's zeros)
            tot = _taxonomy_sums(taxonomies)
    tot.update(
        true_events=sum(true_events),
        reported_events=int_sum(reported),
        videos=len(taxonomies),
        videos_not_scored=n_not_scored,
        rfr_videos=count_true(rfr),
        acr_videos=count_true(acr),
    )
    return tot


_TAXONOMY_GET = itemgetter(*TAXONOMY_KEYS)


def _taxonomy_sums(taxonomies: list[Any]) -> dict[str, int]:
    """The taxonomy totals read record by record (any record: missing keys and None count 0)."""
    tot = dict.fromkeys(TAXONOMY_KEYS, 0)
    for tax in taxonomies:
        for k in TAXONOMY_KEYS:
            tot[k] += int(tax.get(k, 0) or 0)
    return tot


def taxonomy_of(s: Scan) -> dict:
    """Table 8 per model x condition: ``all``, then each domain; ``all`` adds up the domains (integer counts).
    A domain's row is over its traced trials with a taxonomy; ``videos_not_scored`` counts its failed
    positive-event grid trials (its cells' planned minus ok)."""
    out = nested()
    t = s.traced
    counts = [int(k[3]) for k in s.cell_keys]
    unscored = [
        n - n_ok if positive and key[4] is not None else 0
        for key, n, n_ok, positive in zip(s.cell_keys, s.cell_n, s.cell_ok, s.cell_positive, strict=True)
    ]
    for group in s.groups:
        model, cond = group.key
        a, b = group.t_start, group.t_stop
        taxonomies = t["taxonomy"][a:b]
        try:  # every one has every key (then each is a non-empty dict): read in one lookup each
            taxonomies, read = list(map(_TAXONOMY_GET, taxonomies)), True
            cells, pos_domains = s.traced_cell[a:b], t["domain"][a:b]
            columns = [taxonomies, *(t[name][a:b] for name in ("n_reported", "rfr", "acr"))]
        except (KeyError, TypeError):  # only those with a taxonomy count
            has, read = list(map(truth, taxonomies)), False
            cells, pos_domains = list(compress(s.traced_cell[a:b], has)), list(compress(t["domain"][a:b], has))
            columns = [
                list(compress(col, has))
                for col in (taxonomies, *(t[name][a:b] for name in ("n_reported", "rfr", "acr")))
            ]
        dom = list(map(s.cell_domain.__getitem__, cells))
        columns.insert(1, list(map(counts.__getitem__, cells)))
        first = {j: pos_domains[dom.index(j)] for j in dict.fromkeys(dom)}  # each domain as its first record has it
        parts = split(dom, columns, len(group.domains)) if len(first) > 1 else None
        per_domain = []
        for j, d in sorted(first.items(), key=lambda kv: str((kv[1],))):
            tax, true_events, reported, rfr, acr = columns if parts is None else parts[j]
            per_domain.append(
                (
                    str(d),
                    _taxonomy_totals(
                        tax,
                        read,
                        true_events,
                        reported,
                        rfr,
                        acr,
                        sum(map(unscored.__getitem__, group.domain_cells[j])),
                    ),
                )
            )
        total = dict.fromkeys((*TAXONOMY_KEYS, "true_events", "reported_events", "videos"), 0)
        total.update(videos_not_scored=sum(map(unscored.__getitem__, group.cells)), rfr_videos=0, acr_videos=0)
        for _, tot in per_domain:
            for k in total:
                if k != "videos_not_scored":
                    total[k] += tot[k]
        out[model][cond]["all"] = total
        for label, tot in per_domain:
            out[model][cond][label] = tot
    return plain(out)


def tolerance_of(s: Scan) -> dict:
    """Table 9: EM over the full grid (planned trials); VOR, P, R, F1, ACR, RFR over positive-event trials.

    Each window's rows are read once and split into one column per metric (the same values, in record
    order, as reading each metric of each row: the means are the same floats)."""
    out = nested()
    tolerances = s.traced["tolerance"]
    for group in s.groups:
        model, cond = group.key
        n = group.stop - group.start
        n_ok = sum(map(s.cell_ok.__getitem__, group.cells))
        em = em_counts(sum(map(s.cell_right.__getitem__, group.cells)), n)  # over every planned trial
        vor = mean(s.traced_values[0][group.t_start : group.t_stop])
        tols = tolerances[group.t_start : group.t_stop]
        for k, rows in _windows(tols):
            try:
                metrics: list[Any] = list(zip(*map(_TOLERANCE_GET, rows), strict=True)) or [()] * len(TOLERANCE_METRICS)
            except KeyError:  # a row without every metric (not score_trial's): read each with .get
                metrics = [[x.get(m) for x in rows] for m in TOLERANCE_METRICS]
            out[model][cond][k] = {
                "em": em["em"],
                "n": n,
                "completion": n_ok / n,
                "vor": vor,
                "n_positive": len(rows),
                **{m: mean(col) for m, col in zip(TOLERANCE_METRICS, metrics, strict=True)},
            }
    return plain(out)


def _windows(tols: list[Any]) -> list[tuple[str, list[Any]]]:
    """Each tolerance window (in order of first appearance) with the rows the records have for it, in record
    order (a record's ``tolerance`` None or missing: no rows). Every record with the same windows (score_trial's):
    one lookup a record."""
    first = tols[0] if tols else None
    if type(first) is dict and first:
        keys = list(first)
        try:
            if sum(map(len, tols)) == len(keys) * len(tols):  # then each has them all, and no other
                if len(keys) == 1:
                    return [(keys[0], list(map(itemgetter(keys[0]), tols)))]
                return list(zip(keys, map(list, zip(*map(itemgetter(*keys), tols), strict=True)), strict=True))
        except (KeyError, TypeError):  # a record without one of them (then another has one more), or None
            pass
    if None in tols or {} in tols:  # (r.get("tolerance") or {}: the same when every record has rows)
        tols = [t or {} for t in tols]
    out = []
    for k in dict.fromkeys(chain.from_iterable(tols)):  # in order of first appearance
        try:
            rows = list(map(itemgetter(k), tols))
        except KeyError:  # a record without this window
            rows = [t[k] for t in tols if k in t]
        out.append((k, rows))
    return out


TOLERANCE_METRICS = ("precision", "recall", "f1", "acr", "rfr")
_TOLERANCE_GET = itemgetter(*TOLERANCE_METRICS)
_ERROR_COUNTS = ("n_dropped_timestamps", "n_frame_mentions", "n_frame_out_of_range")


def errors_of(s: Scan) -> dict:
    out = nested()
    for group in s.groups:
        model, cond = group.key
        a, b = group.start, group.stop
        n, ok = b - a, s.ok[a:b]
        n_ok = sum(ok)
        by_status: dict[str, int] = defaultdict(int)
        for status, k in Counter(map(str, compress(s.column["status"][a:b], map(not_, ok)))).items():
            by_status[status] += k
        unparse = sum(s.unparseable[a:b])
        out[model][cond] = {
            "n_trials": n,
            "n_ok": n_ok,
            "n_errored": dict(sorted(by_status.items())),
            "completion": n_ok / n if n else None,
            "error_rate": (n - n_ok) / n if n else None,
            "n_unparseable": unparse,
            "parse_failure_rate": unparse / n_ok if n_ok else None,
            **{k: int_sum(list(compress(s.column[k][a:b], ok))) for k in _ERROR_COUNTS},
        }
    return plain(out)


def _token_sums(usages: Sequence[Any]) -> dict[str, int]:
    """Each token count summed over the records (only numbers, not booleans, count), by name."""
    first = usages[0] if usages else None
    if type(first) is dict and first:  # every record with the same names: a column each, summed in C if all ints
        names = list(first)
        try:
            if sum(map(len, usages)) == len(names) * len(usages):  # then each has them all, and no other
                rows = list(map(itemgetter(*names), usages))
                values = list(zip(*rows, strict=True)) if len(names) > 1 else [rows]
                if all(set(map(type, col)) == {int} for col in values):
                    return dict(sorted(zip(names, map(sum, values), strict=True)))
        except (KeyError, TypeError):  # one without one of them (then another has one more), or not a dict
            pass
    totals: dict[str, int] = defaultdict(int)
    for usage in usages:
        for k, v in (usage or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                totals[k] += int(v)
    return dict(sorted(totals.items()))


def usage_of(s: Scan) -> dict:
    out = nested()
    for group in s.groups:
        model, cond = group.key
        a, b = group.start, group.stop
        tokens = _token_sums(s.column["usage"][a:b])
        costs = s.column["cost_usd"][a:b]
        try:  # added in record order from 0.0, as the loop did
            cost, unknown = sum(map(float, costs), 0.0), 0
        except TypeError:  # an unknown cost (None) among them
            known = [c for c in costs if c is not None]
            cost, unknown = sum(map(float, known), 0.0), len(costs) - len(known)
        out[model][cond] = {**tokens, "cost_usd": cost, "n_cost_unknown": unknown, "n_trials": b - a}
    return plain(out)
