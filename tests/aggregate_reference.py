# The counting aggregate as it was at a4d1acc (before issue 24's fourth round read each record once), kept
# verbatim as the reference tests/suites/counting/test_counting_aggregate_reference.py and
# benchmarks/aggregate_only.py compare the current module with. Not imported by src; do not edit.
"""Aggregate counting-suite trial records into the numbers of report.json.

A record is a flat dict: :func:`~vidaudit.suites.counting.scoring.score_trial` output plus
``model``, ``condition``, ``domain``, ``n_events``, ``frequency_hz``, ``status``, ``usage`` and
``cost_usd`` (other keys, e.g. ``trial_id``, ``suite``, ``model_role``, ``predicted``, are ignored).
One record is one planned trial.

Denominators, stated once:

- EM (exact match) is over every planned trial: a trial whose status is not ``ok`` (``api_error``,
  ``refused``, ``timeout``, ``pending``) is a wrong answer, and so is an unparseable one. Beside
  every EM stand ``n`` (planned trials), ``n_ok`` and ``completion`` = n_ok / n, and its Wilson 95%
  interval is over the planned trials. This holds everywhere EM appears: ``cells``, the
  ``trace_metrics`` blocks, ``regions``, ``per_n``, ``tolerance``, ``count_bins`` and
  ``paired_difference``; boundaries are computed from the cells, so errors count as wrong there
  too. ``em_ok`` (blocks only) is EM over completed trials, the paper's "non-errored records"
  (Table 6), for diagnosis; it is never the headline figure.
- ``em`` includes the N = 0 no-event controls (Table 1: "Final EM includes no-event controls");
  ``em_positive`` is the same over N >= 1 only.
- Trace metrics (VOR, P, R, F1, ACR, RFR) are means over ok positive-event trials with a trace
  (``n_positive``; N = 0 has no ratios, a failed call has no trace); ``macro`` is the unweighted
  mean over domains.
- Boundaries use positive counts only; N = 0 controls appear in ``cells`` and EM.

All JSON keys are strings: frequencies as "0.5", "1.0", counts as "1", "2".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from itertools import chain, compress, repeat
from operator import is_not, itemgetter, methodcaller, not_
from typing import Any

from vidaudit.core.errors import DataError
from vidaudit.score.stats import paired_bootstrap
from vidaudit.score.stats import wilson_interval as _wilson_interval
from vidaudit.suites.counting.boundaries import TAU, count_boundary, format_value, frequency_boundary
from vidaudit.suites.counting.taxonomy import TAXONOMY_KEYS

#: the same (k, n) recurs over thousands of cells and blocks; the interval is a pure function of them
wilson_interval = lru_cache(maxsize=65536)(_wilson_interval)

TRACE_KEYS = ("vor", "precision", "recall", "f1", "acr", "rfr")
LOW_COUNT_MAX, HIGH_COUNT_MIN = 3, 5
LOW_FREQ_MAX, HIGH_FREQ_MIN = 2.0, 2.5
COUNT_BINS: tuple[tuple[str, int, float], ...] = (
    ("1-2", 1, 2),
    ("3-4", 3, 4),
    ("5-6", 5, 6),
    ("7-8", 7, 8),
    ("9-10", 9, 10),
    ("11-15", 11, 15),
    ("16-20", 16, 20),
    ("21-30", 21, 30),
    (">30", 31, float("inf")),
)
#: Table 1 Part B's four regions ("Part B uses N <= 3, N >= 5, F <= 2.0, and F >= 2.5 Hz"), in the
#: paper's row order, then the marginal regions. A predicate takes (N, F); the N = 0 controls
#: (rendered at nominal F = 1.0 Hz) satisfy N <= 3 and F <= 2.0, so they enter ``em`` of LCLF,
#: low_count and low_frequency (``em_positive`` leaves them out).
REGIONS: dict[str, Callable[[int, float], bool]] = {
    "low_count_low_frequency": lambda n, f: n <= LOW_COUNT_MAX and f <= LOW_FREQ_MAX,
    "high_count_low_frequency": lambda n, f: n >= HIGH_COUNT_MIN and f <= LOW_FREQ_MAX,
    "low_count_high_frequency": lambda n, f: n <= LOW_COUNT_MAX and f >= HIGH_FREQ_MIN,
    "high_count_high_frequency": lambda n, f: n >= HIGH_COUNT_MIN and f >= HIGH_FREQ_MIN,
    "low_count": lambda n, f: n <= LOW_COUNT_MAX,
    "high_count": lambda n, f: n >= HIGH_COUNT_MIN,
    "low_frequency": lambda n, f: f <= LOW_FREQ_MAX,
    "high_frequency": lambda n, f: f >= HIGH_FREQ_MIN,
}
PAPER_REGIONS: dict[str, str] = {
    "low_count_low_frequency": "LCLF",
    "high_count_low_frequency": "HCLF",
    "low_count_high_frequency": "LCHF",
    "high_count_high_frequency": "HCHF",
}


# --------------------------------------------------------------------------- helpers


def _key(r: dict[str, Any], name: str) -> Any:
    if name not in r:
        raise DataError(
            f"trial record for sample {r.get('sample_id', '?')!r} lacks {name!r}; "
            "records must be score_trial output plus model, condition, domain, n_events, frequency_hz"
        )
    return r[name]


def _ok(r: dict[str, Any]) -> bool:
    return r.get("status", "ok") == "ok"


def _right(r: dict[str, Any]) -> bool:
    """Correct and completed: a failed trial is a wrong answer whatever its ``correct`` says."""
    return _ok(r) and r.get("correct") is True


def _mean(values: Iterable[Any]) -> float | None:
    if isinstance(values, (list, tuple)) and None not in values:  # a column with no gap: summed in C, same order
        return sum(map(float, values)) / len(values) if values else None
    xs = [float(v) for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def _nested() -> defaultdict:
    return defaultdict(_nested)


def _plain(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _plain(v) for k, v in d.items()}
    return d


def _by(records: Iterable[dict[str, Any]], *names: str) -> dict[tuple, list[dict[str, Any]]]:
    out: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    get = itemgetter(*names)
    one = len(names) == 1
    for r in records:
        try:
            key = (get(r),) if one else get(r)
        except KeyError:
            for n in names:
                _key(r, n)  # raises the explanatory DataError
            raise
        out[key].append(r)
    return out


def _fkey(f: Any) -> str:
    return format_value(float(f)) if f is not None else "none"


#: what an EM block reads of one record: (ok, positive, right, unparseable, the TRACE_KEYS values or None)
_Facts = tuple[bool, bool, bool, bool, "tuple[Any, ...] | None"]


def _facts(r: dict[str, Any]) -> _Facts:
    """The few things :func:`_em_block_of` reads of a record, read once (a record enters several blocks)."""
    ok = r.get("status", "ok") == "ok"
    positive = int(r["n_events"]) > 0
    traced = tuple(map(r.get, TRACE_KEYS)) if ok and positive and r.get("trace_available") else None
    return ok, positive, ok and r.get("correct") is True, ok and r.get("parse_method") == "unparseable", traced


def _em_block_of(facts: Sequence[_Facts]) -> dict[str, Any]:
    """EM over planned trials (and over N >= 1), completion, trace-metric means, parse failures, from the
    records' facts, in one pass (a block is built for every model x condition x region x domain)."""
    n_ok = n_positive = right = right_positive = unparseable = 0
    traced: list[tuple[Any, ...]] = []
    for ok, positive, is_right, unparse, values in facts:
        n_positive += positive
        right += is_right
        right_positive += is_right and positive
        if ok:
            n_ok += 1
            unparseable += unparse
            if values is not None:
                traced.append(values)
    n = len(facts)
    block: dict[str, Any] = {
        "n": n,
        "n_ok": n_ok,
        "completion": n_ok / n if facts else None,
        "correct": right,
        **_em_counts(right, n),
        "n_em_positive": n_positive,
        "n_controls": n - n_positive,
        **_em_counts(right_positive, n_positive, "em_positive"),
        "em_ok": (right / n_ok) if n_ok else None,
        "n_positive": len(traced),
    }
    columns: list[Any] = list(zip(*traced)) or [()] * len(TRACE_KEYS)  # each metric's values, in record order
    for name, column in zip(TRACE_KEYS, columns, strict=True):
        block[name] = _mean(column)
    block["parse_failure_rate"] = (unparseable / n_ok) if n_ok else None
    return block


def _em_counts(k: int, n: int, prefix: str = "em") -> dict[str, Any]:
    """EM of ``k`` right of ``n`` planned trials with its Wilson interval (``prefix`` names the keys)."""
    lo, hi = wilson_interval(k, n) if n else (None, None)
    return {prefix: k / n if n else None, f"{prefix}_ci_low": lo, f"{prefix}_ci_high": hi}


MACRO_KEYS = ("em", "em_positive", "completion", *TRACE_KEYS, "parse_failure_rate")


def _macro(blocks: dict[str, dict[str, Any]], traced: Iterable[str] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {k: _mean(b.get(k) for b in blocks.values()) for k in MACRO_KEYS}
    named = set(traced)  # domains with a positive grid trial: all must have the metric
    with_trace = [b for d, b in blocks.items() if d in named]
    for k in TRACE_KEYS:
        values = [b.get(k) for b in with_trace]
        out[k] = None if None in values else _mean(values)
    for k in ("n", "n_ok", "n_em_positive", "n_controls", "n_positive"):
        out[k] = sum(b[k] for b in blocks.values())
    out["domains"] = sorted(blocks)
    return out


# --------------------------------------------------------------------------- sections


def _cells(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Accuracy per model x condition x domain x (N, F): correct over planned trials."""
    cells = []
    grouped = _by(records, "model", "condition", "domain", "n_events", "frequency_hz")
    order = sorted(
        grouped, key=lambda g: (str(g[0]), str(g[1]), str(g[2]), int(g[3]), -1.0 if g[4] is None else float(g[4]))
    )
    for model, cond, dom, n, f in order:
        rs = grouped[(model, cond, dom, n, f)]
        n_ok = sum(_ok(r) for r in rs)
        k = sum(_right(r) for r in rs)
        lo, hi = wilson_interval(k, len(rs))
        cells.append(
            {
                "model": model,
                "condition": cond,
                "domain": dom,
                "n_events": int(n),
                "frequency_hz": float(f) if f is not None else None,
                "n": len(rs),
                "n_ok": n_ok,
                "n_errored": len(rs) - n_ok,
                "completion": n_ok / len(rs),
                "correct": k,
                "accuracy": k / len(rs),
                "ci_low": lo,
                "ci_high": hi,
            }
        )
    return cells


def _boundaries(cells: Sequence[dict[str, Any]], rule: str) -> tuple[dict, dict]:
    by_f: dict[tuple, dict[float, dict[int, tuple[int, int]]]] = defaultdict(lambda: defaultdict(dict))
    by_n: dict[tuple, dict[int, dict[float, tuple[int, int]]]] = defaultdict(lambda: defaultdict(dict))
    for c in cells:
        if c["n_events"] <= 0 or c["frequency_hz"] is None:
            continue
        g = (c["model"], c["condition"], c["domain"])
        by_f[g][c["frequency_hz"]][c["n_events"]] = (c["correct"], c["n"])
        by_n[g][c["n_events"]][c["frequency_hz"]] = (c["correct"], c["n"])
    cb, fb = _nested(), _nested()
    for (model, cond, dom), per_f in by_f.items():
        for f in sorted(per_f):
            cb[model][cond][dom][_fkey(f)] = count_boundary(per_f[f], rule=rule).value
    for (model, cond, dom), per_n in by_n.items():
        for n in sorted(per_n):
            fb[model][cond][dom][str(n)] = frequency_boundary(per_n[n], rule=rule).value
    return _plain(cb), _plain(fb)


def _larger(a: Any, b: Any) -> bool:
    """Whether boundary ``a`` beats ``b``: a tested count beats a below-range marker ("<1"), which beats None."""

    def rank(v: Any) -> tuple[int, float]:
        return (
            (2, float(v))
            if isinstance(v, (int, float)) and not isinstance(v, bool)
            else (1, 0.0)
            if isinstance(v, str)
            else (0, 0.0)
        )

    return rank(a) > rank(b)


def max_count_boundary(count_boundaries: dict) -> dict:
    """Table 2's "maximum count boundary": the largest N*(F) "observed at any tested frequency and domain".

    Per model x condition: each domain's largest N*(F) over F with the frequencies that reach it,
    and ``all``, the largest over every domain and frequency with the domains that reach it. A
    domain where no frequency is reliable even at N = 1 has ``"<1"``.
    """
    out = _nested()
    for model, by_cond in count_boundaries.items():
        for cond, by_dom in by_cond.items():
            best_all: Any = None
            doms: list[str] = []
            for dom, by_f in sorted(by_dom.items()):
                best: Any = None
                at: list[float] = []
                for fk, v in by_f.items():
                    if _larger(v, best):
                        best, at = v, [float(fk)]
                    elif v == best and v is not None:
                        at.append(float(fk))
                out[model][cond][dom] = {"value": best, "frequencies_hz": sorted(at)}
                if _larger(best, best_all):
                    best_all, doms = best, [dom]
                elif best == best_all and best is not None:
                    doms.append(dom)
            out[model][cond]["all"] = {"value": best_all, "domains": doms}
    return _plain(out)


def per_n(cells: Sequence[dict[str, Any]]) -> dict:
    """Accuracy per N averaged over F (Figures 4, 6-8: "Final-answer exact match averaged over frequencies").

    ``accuracy`` is the mean over the tested frequencies of the cell accuracies (eq. 1, each over
    its planned trials); ``pooled_accuracy`` = correct / planned over the same cells, equal to it
    when every cell has as many trials; the Wilson interval is over the pooled trials. Only grid
    samples (with a frequency) enter: real videos have ``count_bins``. N = 0 has its one nominal F.
    """
    grouped: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for c in cells:
        if c["frequency_hz"] is not None:
            grouped[(c["model"], c["condition"], c["domain"], c["n_events"])].append(c)
    out = _nested()
    for (model, cond, dom, n), cs in sorted(grouped.items(), key=lambda kv: (str(kv[0][:3]), kv[0][3])):
        planned = sum(c["n"] for c in cs)
        k = sum(c["correct"] for c in cs)
        n_ok = sum(c["n_ok"] for c in cs)
        lo, hi = wilson_interval(k, planned)
        out[model][cond][str(dom)][str(n)] = {
            "accuracy": sum(c["accuracy"] for c in cs) / len(cs),
            "n_frequencies": len(cs),
            "frequencies_hz": sorted(c["frequency_hz"] for c in cs),
            "n": planned,
            "n_ok": n_ok,
            "completion": n_ok / planned,
            "correct": k,
            "pooled_accuracy": k / planned,
            "ci_low": lo,
            "ci_high": hi,
        }
    return _plain(out)


def _group_facts(groups: dict[tuple, list[dict[str, Any]]]) -> dict[tuple, list[_Facts]]:
    """Each group's records' facts (:func:`_facts`), in record order: read once, used by the trace-metric and
    region blocks."""
    return {g: list(map(_facts, rs)) for g, rs in groups.items()}


def _trace_metrics(groups: dict[tuple, list[dict[str, Any]]], facts: dict[tuple, list[_Facts]]) -> dict:
    out = _nested()
    for (model, cond), rs in groups.items():
        by_dom: dict[Any, list[_Facts]] = defaultdict(list)
        traced: set[str] = set()
        for r, fs in zip(rs, facts[(model, cond)], strict=True):
            by_dom[r["domain"]].append(fs)  # every record has one (``_cells`` grouped by it)
            if int(r["n_events"]) > 0 and r.get("frequency_hz") is not None:
                traced.add(str(r["domain"]))
        blocks = {dom: _em_block_of(fs) for dom, fs in sorted(by_dom.items(), key=lambda kv: str(kv[0]))}
        for dom, b in blocks.items():
            out[model][cond][str(dom)] = b
        out[model][cond]["macro"] = _macro({str(d): b for d, b in blocks.items()}, sorted(traced))
    return _plain(out)


def _regions(groups: dict[tuple, list[dict[str, Any]]], facts: dict[tuple, list[_Facts]]) -> dict:
    """EM blocks per region and domain. One pass over a group's records puts each record's facts in every
    region its (N, F) falls in (the regions of a cell are decided once), in record order, per domain in order
    of first appearance, as filtering the group once per region would."""
    out = _nested()
    names = tuple(REGIONS)
    preds = tuple(REGIONS.values())
    of_cell: dict[tuple[int, float], tuple[int, ...]] = {}
    for (model, cond), rs in groups.items():
        inside: list[dict[Any, list[_Facts]]] = [{} for _ in names]
        traced: list[set[str]] = [set() for _ in names]
        for r, fs in zip(rs, facts[(model, cond)], strict=True):
            if r.get("frequency_hz") is None:
                continue
            cell = (int(r["n_events"]), float(r["frequency_hz"]))
            where = of_cell.get(cell)
            if where is None:
                where = of_cell[cell] = tuple(i for i, pred in enumerate(preds) if pred(*cell))
            if where:
                dom = r["domain"]
                for i in where:
                    by_dom = inside[i]
                    if cell[0] > 0:
                        traced[i].add(str(dom))
                    if dom in by_dom:
                        by_dom[dom].append(fs)
                    else:
                        by_dom[dom] = [fs]
        for region, by_dom, with_trace in zip(names, inside, traced, strict=True):
            blocks = {str(dom): _em_block_of(fs) for dom, fs in by_dom.items()}
            for dom, b in sorted(blocks.items()):
                out[model][cond][region][dom] = b
            out[model][cond][region]["macro"] = _macro(blocks, sorted(with_trace)) if blocks else None
    return _plain(out)


def _taxonomy_totals(sel: Sequence[dict[str, Any]], n_not_scored: int) -> dict[str, int]:
    try:  # column sums in C; int() of each value as the loop reads it (None, or a missing key: the loop)
        tot = {
            k: sum(map(int, col))
            for k, col in zip(TAXONOMY_KEYS, zip(*map(_TAXONOMY_GET, map(itemgetter("taxonomy"), sel))), strict=True)
        }
    except (KeyError, TypeError, ValueError):  # (no record at all: the loop's zeros)
        tot = _taxonomy_sums(sel)
    true_events = reported = rfr = acr = 0
    for r in sel:
        true_events += int(r["n_events"])
        reported += int(r.get("n_reported") or 0)
        rfr += bool(r.get("rfr"))
        acr += bool(r.get("acr"))
    tot.update(
        true_events=true_events,
        reported_events=reported,
        videos=len(sel),
        videos_not_scored=n_not_scored,
        rfr_videos=rfr,
        acr_videos=acr,
    )
    return tot


_TAXONOMY_GET = itemgetter(*TAXONOMY_KEYS)


def _taxonomy_sums(sel: Sequence[dict[str, Any]]) -> dict[str, int]:
    """The taxonomy totals read record by record (any record: missing keys and None count 0)."""
    tot = dict.fromkeys(TAXONOMY_KEYS, 0)
    for r in sel:
        tax = r["taxonomy"]
        for k in TAXONOMY_KEYS:
            tot[k] += int(tax.get(k, 0) or 0)
    return tot


def _taxonomy(groups: dict[tuple, list[dict[str, Any]]], facts: dict[tuple, list[_Facts]]) -> dict:
    """Table 8 per model x condition: ``all``, then each domain; ``all`` adds up the domains (integer counts)."""
    out = _nested()
    for (model, cond), rs in groups.items():
        fs = facts[(model, cond)]
        traced = list(compress(rs, map(is_not, map(_TRACED, fs), repeat(None))))  # ok, positive, traced
        pos = list(compress(traced, map(_TAXONOMY_OF, traced)))  # those with a taxonomy
        unscored = [
            r
            for r in compress(rs, map(not_, map(_OK, fs)))  # not ok, positive, on the grid
            if int(r["n_events"]) > 0 and r.get("frequency_hz") is not None
        ]
        per_domain = [
            (str(d), _taxonomy_totals(drs, sum(1 for r in unscored if r["domain"] == d)))
            for (d,), drs in sorted(_by(pos, "domain").items(), key=lambda kv: str(kv[0]))
        ]
        total = dict.fromkeys((*TAXONOMY_KEYS, "true_events", "reported_events", "videos"), 0)
        total.update(videos_not_scored=len(unscored), rfr_videos=0, acr_videos=0)
        for _, tot in per_domain:
            for k in total:
                if k != "videos_not_scored":
                    total[k] += tot[k]
        out[model][cond]["all"] = total
        for label, tot in per_domain:
            out[model][cond][label] = tot
    return _plain(out)


def _tolerance(groups: dict[tuple, list[dict[str, Any]]], facts: dict[tuple, list[_Facts]]) -> dict:
    """Table 9: EM over the full grid (planned trials); VOR, P, R, F1, ACR, RFR over positive-event trials.

    Each window's rows are read once and split into one column per metric (the same values, in record
    order, as reading each metric of each row: the means are the same floats)."""
    out = _nested()
    for (model, cond), rs in groups.items():
        fs = facts[(model, cond)]
        n_ok = sum(map(_OK, fs))
        pos = list(compress(rs, map(is_not, map(_TRACED, fs), repeat(None))))  # ok, positive, traced
        em = _em_counts(sum(map(_RIGHT, fs)), len(rs))  # over every planned trial
        vor = _mean(list(map(_VOR, pos)))
        tols = list(map(_TOLERANCE_OF, pos))
        if None in tols or {} in tols:  # (r.get("tolerance") or {}: the same when every record has rows)
            tols = [t or {} for t in tols]
        keys = list(dict.fromkeys(chain.from_iterable(tols)))  # in order of first appearance
        for k in keys:
            try:
                rows = list(map(itemgetter(k), tols))
            except KeyError:  # a record without this window
                rows = [t[k] for t in tols if k in t]
            try:
                columns: list[Any] = list(zip(*map(_TOLERANCE_GET, rows))) or [()] * len(_TOLERANCE_METRICS)
            except KeyError:  # a row without every metric (not score_trial's): read each with .get
                columns = [[x.get(m) for x in rows] for m in _TOLERANCE_METRICS]
            out[model][cond][k] = {
                "em": em["em"],
                "n": len(rs),
                "completion": n_ok / len(rs),
                "vor": vor,
                "n_positive": len(rows),
                **{m: _mean(col) for m, col in zip(_TOLERANCE_METRICS, columns, strict=True)},
            }
    return _plain(out)


_TOLERANCE_METRICS = ("precision", "recall", "f1", "acr", "rfr")
_TOLERANCE_GET = itemgetter(*_TOLERANCE_METRICS)
_OK, _RIGHT, _TRACED = itemgetter(0), itemgetter(2), itemgetter(4)  # of a record's _Facts
_VOR, _TOLERANCE_OF, _TAXONOMY_OF = (
    methodcaller("get", "vor"),
    methodcaller("get", "tolerance"),
    methodcaller("get", "taxonomy"),
)


def _errors(groups: dict[tuple, list[dict[str, Any]]]) -> dict:
    out = _nested()
    for (model, cond), rs in groups.items():
        ok = [r for r in rs if _ok(r)]
        by_status: dict[str, int] = defaultdict(int)
        for r in rs:
            if not _ok(r):
                by_status[str(r.get("status"))] += 1
        unparse = sum(r.get("parse_method") == "unparseable" for r in ok)
        out[model][cond] = {
            "n_trials": len(rs),
            "n_ok": len(ok),
            "n_errored": dict(sorted(by_status.items())),
            "completion": len(ok) / len(rs) if rs else None,
            "error_rate": (len(rs) - len(ok)) / len(rs) if rs else None,
            "n_unparseable": unparse,
            "parse_failure_rate": unparse / len(ok) if ok else None,
            "n_dropped_timestamps": int(sum(int(r.get("n_dropped_timestamps") or 0) for r in ok)),
            "n_frame_mentions": int(sum(int(r.get("n_frame_mentions") or 0) for r in ok)),
            "n_frame_out_of_range": int(sum(int(r.get("n_frame_out_of_range") or 0) for r in ok)),
        }
    return _plain(out)


def _usage(groups: dict[tuple, list[dict[str, Any]]]) -> dict:
    out = _nested()
    for (model, cond), rs in groups.items():
        tokens: dict[str, int] = defaultdict(int)
        cost, unknown = 0.0, 0
        for r in rs:
            for k, v in (r.get("usage") or {}).items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    tokens[k] += int(v)
            c = r.get("cost_usd")
            if c is None:
                unknown += 1
            else:
                cost += float(c)
        out[model][cond] = {
            **dict(sorted(tokens.items())),
            "cost_usd": cost,
            "n_cost_unknown": unknown,
            "n_trials": len(rs),
        }
    return _plain(out)


# --------------------------------------------------------------------------- public API


def aggregate(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The report.json numbers of a counting run (see the module docstring for denominators)."""
    groups = _by(records, "model", "condition")
    cells = _cells(records)
    facts = _group_facts(groups)
    cb, fb = _boundaries(cells, "point")
    cbw, fbw = _boundaries(cells, "wilson_lower")
    return {
        "n_records": len(records),
        "cells": cells,
        "count_boundary": cb,
        "frequency_boundary": fb,
        "count_boundary_wilson": cbw,
        "frequency_boundary_wilson": fbw,
        "max_count_boundary": max_count_boundary(cb),
        "max_count_boundary_wilson": max_count_boundary(cbw),
        "boundary_rules": {
            "count_boundary": "point",
            "frequency_boundary": "point",
            "count_boundary_wilson": "wilson_lower",
            "frequency_boundary_wilson": "wilson_lower",
            "max_count_boundary": "point",
            "max_count_boundary_wilson": "wilson_lower",
            "tau": TAU,
            "errors": "wrong",
        },
        "per_n": per_n(cells),
        "trace_metrics": _trace_metrics(groups, facts),
        "regions": _regions(groups, facts),
        "taxonomy": _taxonomy(groups, facts),
        "tolerance": _tolerance(groups, facts),
        "errors": _errors(groups),
        "usage": _usage(groups),
        "count_bins": count_bins(records),
    }


def paired_difference(
    records: list[dict[str, Any]], a: tuple[str, str], b: tuple[str, str], *, n_boot: int = 10_000, seed: int = 0
) -> dict[str, Any]:
    """EM(b) - EM(a) over samples planned in both arms (a failed trial is wrong), bootstrapped by source video."""
    arms: list[dict[str, dict[str, Any]]] = []
    for model, cond in (a, b):
        arm: dict[str, dict[str, Any]] = {}
        for r in records:
            if r.get("model") == model and r.get("condition") == cond:
                sid = _key(r, "sample_id")
                if sid in arm:
                    raise DataError(
                        f"sample {sid!r} is scored twice for {model} / {cond}; deduplicate the records before pairing"
                    )
                arm[sid] = r
        arms.append(arm)
    shared = sorted(set(arms[0]) & set(arms[1]))
    if not shared:
        raise DataError(f"no sample is planned under both {a} and {b}; check the model and condition names")
    xa = [float(_right(arms[0][s])) for s in shared]
    xb = [float(_right(arms[1][s])) for s in shared]
    groups = [arms[0][s].get("group_id") or s for s in shared]
    res = paired_bootstrap(xa, xb, groups, n_boot=n_boot, seed=seed)
    return {
        "a": list(a),
        "b": list(b),
        "difference": "em_b - em_a",
        **res.to_dict(),
        "n_only_a": len(set(arms[0]) - set(shared)),
        "n_only_b": len(set(arms[1]) - set(shared)),
        "n_not_ok_a": sum(not _ok(arms[0][s]) for s in shared),
        "n_not_ok_b": sum(not _ok(arms[1][s]) for s in shared),
    }


def count_bin(n: int) -> str | None:
    for label, lo, hi in COUNT_BINS:
        if lo <= n <= hi:
            return label
    return None


def count_bins(records: list[dict[str, Any]]) -> dict[str, Any]:
    """EM by true-count bin (1-2, 3-4, ..., >30) per model and condition: the real-video transfer view.

    Over planned trials, like every EM (a failed trial is wrong), with the completion beside it.
    """
    out = _nested()
    for (model, cond), rs in _by(records, "model", "condition").items():
        per: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rs:
            label = count_bin(int(_key(r, "n_events")))
            if label is not None:
                per[label].append(r)
        for label, _, _ in COUNT_BINS:
            if label in per:
                xs = per[label]
                k = sum(_right(r) for r in xs)
                n_ok = sum(_ok(r) for r in xs)
                lo, hi = wilson_interval(k, len(xs))
                out[model][cond][label] = {
                    "n": len(xs),
                    "n_ok": n_ok,
                    "completion": n_ok / len(xs),
                    "correct": k,
                    "accuracy": k / len(xs),
                    "ci_low": lo,
                    "ci_high": hi,
                }
    return _plain(out)
