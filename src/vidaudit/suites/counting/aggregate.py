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
  mean over domains, a trace metric's over the domains with a trace (None when one of them has no value).
- Boundaries use positive counts only; N = 0 controls appear in ``cells`` and EM.

All JSON keys are strings: frequencies as "0.5", "1.0", counts as "1", "2".

The blocks every section is made of (EM with its interval, means in record order) are
:mod:`~vidaudit.suites.counting.aggregate_blocks`'s; the diagnostics (taxonomy, tolerance, errors, usage)
:mod:`~vidaudit.suites.counting.aggregate_diagnostics`'s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, compress, repeat
from operator import and_, ne
from typing import Any

from vidaudit.sdk import DataError, paired_bootstrap
from vidaudit.suites.counting.aggregate_blocks import (
    em_block,
    frequency_key,
    grouped_by,
    is_ok,
    is_right,
    macro,
    nested,
    plain,
    wilson_interval,
)
from vidaudit.suites.counting.aggregate_diagnostics import errors_of, taxonomy_of, tolerance_of, usage_of
from vidaudit.suites.counting.aggregate_scan import Scan, require, scan
from vidaudit.suites.counting.boundaries import TAU, count_boundary, frequency_boundary

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


def _cells(s: Scan) -> list[dict[str, Any]]:
    """Accuracy per model x condition x domain x (N, F): correct over planned trials."""
    cells = []
    keys = s.cell_keys
    order = sorted(
        range(len(keys)),
        key=lambda c: (
            str(keys[c][0]),
            str(keys[c][1]),
            str(keys[c][2]),
            int(keys[c][3]),
            -1.0 if keys[c][4] is None else float(keys[c][4]),
        ),
    )
    for c in order:
        model, cond, dom, n, f = keys[c]
        planned, n_ok, k = s.cell_n[c], s.cell_ok[c], s.cell_right[c]
        lo, hi = wilson_interval(k, planned)
        cells.append(
            {
                "model": model,
                "condition": cond,
                "domain": dom,
                "n_events": int(n),
                "frequency_hz": float(f) if f is not None else None,
                "n": planned,
                "n_ok": n_ok,
                "n_errored": planned - n_ok,
                "completion": n_ok / planned,
                "correct": k,
                "accuracy": k / planned,
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
    cb, fb = nested(), nested()
    for (model, cond, dom), per_f in by_f.items():
        for f in sorted(per_f):
            cb[model][cond][dom][frequency_key(f)] = count_boundary(per_f[f], rule=rule).value
    for (model, cond, dom), per_n in by_n.items():
        for n in sorted(per_n):
            fb[model][cond][dom][str(n)] = frequency_boundary(per_n[n], rule=rule).value
    return plain(cb), plain(fb)


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
    out = nested()
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
    return plain(out)


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
    out = nested()
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
    return plain(out)


def _traceable(s: Scan, cells: Iterable[int]) -> bool:
    """Whether any of the cells is a positive-event grid cell, whose samples carry a trace (a real video has no
    frequency and a count only; N = 0 has no ratios): a domain with one enters the macro of the trace metrics."""
    return any(s.cell_positive[c] and s.cell_keys[c][4] is not None for c in cells)


def _trace_metrics(s: Scan) -> dict:
    out = nested()
    for group in s.groups:
        model, cond = group.key
        blocks = {
            dom: em_block(s, group.domain_cells[j], group.traced_values[j])
            for dom, j in sorted(group.domains.items(), key=lambda kv: str(kv[0]))
        }
        for dom, b in blocks.items():
            out[model][cond][str(dom)] = b
        traced = [str(dom) for dom, j in group.domains.items() if _traceable(s, group.domain_cells[j])]
        out[model][cond]["macro"] = macro({str(d): b for d, b in blocks.items()}, traced)
    return plain(out)


def _region_cells(s: Scan) -> list[tuple[int, ...]]:
    """The indices (in REGIONS) of the regions each cell's (N, F) falls in, decided once per (N, F); none for a
    real video (no frequency)."""
    preds = tuple(REGIONS.values())
    of_cell: dict[tuple[int, float], tuple[int, ...]] = {}
    out: list[tuple[int, ...]] = []
    for key in s.cell_keys:
        if key[4] is None:
            out.append(())
            continue
        cell = (int(key[3]), float(key[4]))
        where = of_cell.get(cell)
        if where is None:
            where = of_cell[cell] = tuple(i for i, pred in enumerate(preds) if pred(*cell))
        out.append(where)
    return out


class _Picker:
    """Selects, from columns in record order, the items whose label has a given bit, in that order: by
    copying the runs of equal labels that have it when the runs are long (records come cell by cell),
    else through a mask."""

    def __init__(self, labels: list[int]) -> None:
        n = len(labels)
        starts = [0, *compress(range(1, n), map(ne, labels[1:], labels[:-1]))] if n else []
        self.labels = labels
        self.runs: list[slice] | None = None
        if len(starts) * 4 <= n:
            self.runs = list(map(slice, starts, [*starts[1:], n]))
            self.run_labels = list(map(labels.__getitem__, starts))

    def __call__(self, columns: Sequence[list[Any]], bit: int) -> list[list[Any]]:
        if self.runs is not None:
            runs = list(compress(self.runs, map(and_, self.run_labels, repeat(bit))))
            return [list(chain.from_iterable(map(col.__getitem__, runs))) for col in columns]
        mask = list(map(and_, self.labels, repeat(bit)))
        return [list(compress(col, mask)) for col in columns]


def _regions(s: Scan) -> dict:
    """EM blocks per region and domain, per domain in order of first appearance in the region (its cells are in
    that order), of the records (and traced trials, in record order) of the cells inside the region."""
    out = nested()
    names = tuple(REGIONS)
    where = _region_cells(s)
    bits = [sum(1 << i for i in w) for w in where]
    for group in s.groups:
        model, cond = group.key
        inside: list[dict[int, tuple[Any, list[int]]]] = [{} for _ in names]  # domain index -> (domain, cells)
        for c in group.cells:
            for i in where[c]:
                by_dom = inside[i]
                j = s.cell_domain[c]
                if j in by_dom:
                    by_dom[j][1].append(c)
                else:
                    by_dom[j] = (s.cell_keys[c][2], [c])
        pick = [_Picker(list(map(bits.__getitem__, cells))) for cells in group.traced_cells]
        for i, (region, by_dom) in enumerate(zip(names, inside, strict=True)):
            blocks: dict[str, dict[str, Any]] = {}
            traced: list[str] = []
            for j, (dom, cells) in by_dom.items():
                blocks[str(dom)] = em_block(s, cells, pick[j](group.traced_values[j], 1 << i))
                if _traceable(s, cells):
                    traced.append(str(dom))
            for dom, b in sorted(blocks.items()):
                out[model][cond][region][dom] = b
            out[model][cond][region]["macro"] = macro(blocks, traced) if blocks else None
    return plain(out)


def _count_bins(s: Scan) -> dict:
    """:func:`count_bins` of the scanned records, from their cells' counts."""
    out = nested()
    labels = [count_bin(int(key[3])) for key in s.cell_keys]
    for group in s.groups:
        model, cond = group.key
        per: dict[str, list[int]] = {}
        for c in group.cells:
            label = labels[c]
            if label is not None:
                t = per.setdefault(label, [0, 0, 0])
                t[0] += s.cell_n[c]
                t[1] += s.cell_ok[c]
                t[2] += s.cell_right[c]
        for label, row in _bin_rows(per).items():
            out[model][cond][label] = row
    return plain(out)


def _bin_rows(per: dict[str, list[int]]) -> dict[str, dict[str, Any]]:
    """Each count bin's row, in ``COUNT_BINS`` order, from its [planned, ok, right] counts (bins with none left out)."""
    rows = {}
    for label, _, _ in COUNT_BINS:
        if label in per:
            n, n_ok, k = per[label]
            lo, hi = wilson_interval(k, n)
            rows[label] = {
                "n": n,
                "n_ok": n_ok,
                "completion": n_ok / n,
                "correct": k,
                "accuracy": k / n,
                "ci_low": lo,
                "ci_high": hi,
            }
    return rows


def aggregate(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The report.json numbers of a counting run (see the module docstring for denominators)."""
    s = scan(records)
    cells = _cells(s)
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
        "trace_metrics": _trace_metrics(s),
        "regions": _regions(s),
        "taxonomy": taxonomy_of(s),
        "tolerance": tolerance_of(s),
        "errors": errors_of(s),
        "usage": usage_of(s),
        "count_bins": _count_bins(s),
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
                sid = require(r, "sample_id")
                if sid in arm:
                    raise DataError(
                        f"sample {sid!r} is scored twice for {model} / {cond}; deduplicate the records before pairing"
                    )
                arm[sid] = r
        arms.append(arm)
    shared = sorted(set(arms[0]) & set(arms[1]))
    if not shared:
        raise DataError(f"no sample is planned under both {a} and {b}; check the model and condition names")
    xa = [float(is_right(arms[0][s])) for s in shared]
    xb = [float(is_right(arms[1][s])) for s in shared]
    groups = [arms[0][s].get("group_id") or s for s in shared]
    res = paired_bootstrap(xa, xb, groups, n_boot=n_boot, seed=seed)
    return {
        "a": list(a),
        "b": list(b),
        "difference": "em_b - em_a",
        **res.to_dict(),
        "n_only_a": len(set(arms[0]) - set(shared)),
        "n_only_b": len(set(arms[1]) - set(shared)),
        "n_not_ok_a": sum(not is_ok(arms[0][s]) for s in shared),
        "n_not_ok_b": sum(not is_ok(arms[1][s]) for s in shared),
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
    out = nested()
    for (model, cond), rs in grouped_by(records, "model", "condition").items():
        per: dict[str, list[int]] = {}
        for r in rs:
            label = count_bin(int(require(r, "n_events")))
            if label is not None:
                t = per.setdefault(label, [0, 0, 0])
                t[0] += 1
                t[1] += is_ok(r)
                t[2] += is_right(r)
        for label, row in _bin_rows(per).items():
            out[model][cond][label] = row
    return plain(out)
