"""Aggregate counting-suite trial records into the numbers of report.json.

A record is :func:`~vidaudit.suites.counting.scoring.score_trial` output plus ``model``,
``condition``, ``domain``, ``n_events``, ``frequency_hz``, ``status``, ``usage`` and ``cost_usd``.

Denominators, stated once:

- accuracy (exact match, EM) is over trials with status ``ok``; an unparseable answer is wrong
  and stays in; errored trials are out of accuracy but in ``errors`` (error rates);
- trace metrics (VOR, P, R, F1, ACR, RFR) are means over ok positive-event trials with a trace
  (N = 0 has no ratios); ``macro`` is the unweighted mean over domains;
- boundaries use positive counts only; N = 0 controls appear in ``cells`` and EM.

All JSON keys are strings: frequencies as "0.5", "1.0", counts as "1", "2".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from vidaudit.core.errors import DataError
from vidaudit.score.boundaries import count_boundary, format_value, frequency_boundary
from vidaudit.score.stats import paired_bootstrap, wilson_interval
from vidaudit.score.taxonomy import TAXONOMY_KEYS

TRACE_KEYS = ("vor", "precision", "recall", "f1", "acr", "rfr")
LOW_COUNT_MAX, HIGH_COUNT_MIN = 3, 5
LOW_FREQ_MAX, HIGH_FREQ_MIN = 2.0, 2.5
COUNT_BINS: tuple[tuple[str, int, float], ...] = (
    ("1-2", 1, 2), ("3-4", 3, 4), ("5-6", 5, 6), ("7-8", 7, 8), ("9-10", 9, 10), ("11-15", 11, 15),
    ("16-20", 16, 20), ("21-30", 21, 30), (">30", 31, float("inf")),
)
REGIONS: dict[str, Callable[[int, float], bool]] = {
    "low_count": lambda n, f: 1 <= n <= LOW_COUNT_MAX,
    "high_count": lambda n, f: n >= HIGH_COUNT_MIN,
    "low_frequency": lambda n, f: n >= 1 and f <= LOW_FREQ_MAX,
    "high_frequency": lambda n, f: n >= 1 and f >= HIGH_FREQ_MIN,
    "low_count_low_frequency": lambda n, f: 1 <= n <= LOW_COUNT_MAX and f <= LOW_FREQ_MAX,
    "high_count_high_frequency": lambda n, f: n >= HIGH_COUNT_MIN and f >= HIGH_FREQ_MIN,
}


# --------------------------------------------------------------------------- helpers


def _key(r: dict[str, Any], name: str) -> Any:
    if name not in r:
        raise DataError(f"trial record for sample {r.get('sample_id', '?')!r} lacks {name!r}; "
                        "records must be score_trial output plus model, condition, domain, n_events, frequency_hz")
    return r[name]


def _ok(r: dict[str, Any]) -> bool:
    return r.get("status", "ok") == "ok"


def _mean(values: Iterable[Any]) -> float | None:
    xs = [float(v) for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def _positive_traced(rs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rs if _ok(r) and int(r["n_events"]) > 0 and r.get("trace_available")]


def _nested() -> defaultdict:
    return defaultdict(_nested)


def _plain(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _plain(v) for k, v in d.items()}
    return d


def _by(records: Iterable[dict[str, Any]], *names: str) -> dict[tuple, list[dict[str, Any]]]:
    out: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        try:
            key = tuple([r[n] for n in names])
        except KeyError:
            for n in names:
                _key(r, n)  # raises the explanatory DataError
            raise
        out[key].append(r)
    return out


def _fkey(f: Any) -> str:
    return format_value(float(f)) if f is not None else "none"


def _em_block(rs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """EM with Wilson interval, trace-metric means and parse-failure rate over a set of records."""
    ok = [r for r in rs if _ok(r)]
    pos = _positive_traced(ok)
    k = sum(bool(r.get("correct")) for r in ok)
    lo, hi = wilson_interval(k, len(ok)) if ok else (None, None)
    block: dict[str, Any] = {"n": len(ok), "n_positive": len(pos), "correct": k,
                             "em": k / len(ok) if ok else None, "em_ci_low": lo, "em_ci_high": hi}
    for name in TRACE_KEYS:
        block[name] = _mean(r.get(name) for r in pos)
    block["parse_failure_rate"] = (sum(r.get("parse_method") == "unparseable" for r in ok) / len(ok)) if ok else None
    return block


def _macro(blocks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    keys = ("em", *TRACE_KEYS, "parse_failure_rate")
    out: dict[str, Any] = {k: _mean(b.get(k) for b in blocks.values()) for k in keys}
    out["n"] = sum(b["n"] for b in blocks.values())
    out["n_positive"] = sum(b["n_positive"] for b in blocks.values())
    out["domains"] = sorted(blocks)
    return out


# --------------------------------------------------------------------------- sections


def _cells(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    cells = []
    grouped = _by(records, "model", "condition", "domain", "n_events", "frequency_hz")
    order = sorted(grouped, key=lambda g: (str(g[0]), str(g[1]), str(g[2]), int(g[3]),
                                           -1.0 if g[4] is None else float(g[4])))
    for model, cond, dom, n, f in order:
        rs = grouped[(model, cond, dom, n, f)]
        ok = [r for r in rs if _ok(r)]
        k = sum(bool(r.get("correct")) for r in ok)
        lo, hi = wilson_interval(k, len(ok)) if ok else (None, None)
        cells.append({"model": model, "condition": cond, "domain": dom, "n_events": int(n),
                      "frequency_hz": float(f) if f is not None else None, "n": len(ok), "correct": k,
                      "accuracy": k / len(ok) if ok else None, "ci_low": lo, "ci_high": hi,
                      "n_errored": len(rs) - len(ok)})
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


def _trace_metrics(groups: dict[tuple, list[dict[str, Any]]]) -> dict:
    out = _nested()
    for (model, cond), rs in groups.items():
        blocks = {dom: _em_block(drs) for (dom,), drs in sorted(_by(rs, "domain").items(), key=lambda kv: str(kv[0]))}
        for dom, b in blocks.items():
            out[model][cond][str(dom)] = b
        out[model][cond]["macro"] = _macro(blocks)
    return _plain(out)


def _regions(groups: dict[tuple, list[dict[str, Any]]]) -> dict:
    out = _nested()
    for (model, cond), rs in groups.items():
        for region, pred in REGIONS.items():
            inside = [r for r in rs if r.get("frequency_hz") is not None
                      and pred(int(r["n_events"]), float(r["frequency_hz"]))]
            blocks = {str(dom): _em_block(drs) for (dom,), drs in _by(inside, "domain").items()}
            for dom, b in sorted(blocks.items()):
                out[model][cond][region][dom] = b
            out[model][cond][region]["macro"] = _macro(blocks) if blocks else None
    return _plain(out)


def _taxonomy(groups: dict[tuple, list[dict[str, Any]]]) -> dict:
    out = _nested()
    for (model, cond), rs in groups.items():
        pos = [r for r in _positive_traced(rs) if r.get("taxonomy")]
        for label, sel in [("all", pos)] + [(str(d), drs) for (d,), drs in sorted(_by(pos, "domain").items(),
                                                                                  key=lambda kv: str(kv[0]))]:
            tot = {k: int(sum(int(r["taxonomy"].get(k, 0)) for r in sel)) for k in TAXONOMY_KEYS}
            tot["true_events"] = int(sum(int(r["n_events"]) for r in sel))
            tot["reported_events"] = int(sum(int(r.get("n_reported") or 0) for r in sel))
            tot["videos"] = len(sel)
            tot["rfr_videos"] = int(sum(bool(r.get("rfr")) for r in sel))
            out[model][cond][label] = tot
    return _plain(out)


def _tolerance(groups: dict[tuple, list[dict[str, Any]]]) -> dict:
    """Table 9: EM over the full grid; VOR, P, R, F1, ACR, RFR over positive-event trials, per window."""
    out = _nested()
    for (model, cond), rs in groups.items():
        ok = [r for r in rs if _ok(r)]
        pos = _positive_traced(ok)
        em = (sum(bool(r.get("correct")) for r in ok) / len(ok)) if ok else None
        vor = _mean(r.get("vor") for r in pos)
        keys: list[str] = []
        for r in pos:
            for k in r.get("tolerance") or {}:
                if k not in keys:
                    keys.append(k)
        for k in keys:
            rows = [r["tolerance"][k] for r in pos if k in (r.get("tolerance") or {})]
            out[model][cond][k] = {"em": em, "vor": vor, "n_positive": len(rows),
                                   **{m: _mean(x.get(m) for x in rows) for m in ("precision", "recall", "f1",
                                                                                  "acr", "rfr")}}
    return _plain(out)


def _errors(groups: dict[tuple, list[dict[str, Any]]]) -> dict:
    out = _nested()
    for (model, cond), rs in groups.items():
        ok = [r for r in rs if _ok(r)]
        by_status: dict[str, int] = defaultdict(int)
        for r in rs:
            if not _ok(r):
                by_status[str(r.get("status"))] += 1
        unparse = sum(r.get("parse_method") == "unparseable" for r in ok)
        out[model][cond] = {"n_trials": len(rs), "n_ok": len(ok), "n_errored": dict(sorted(by_status.items())),
                            "error_rate": (len(rs) - len(ok)) / len(rs) if rs else None,
                            "n_unparseable": unparse, "parse_failure_rate": unparse / len(ok) if ok else None,
                            "n_dropped_timestamps": int(sum(int(r.get("n_dropped_timestamps") or 0) for r in ok))}
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
        out[model][cond] = {**dict(sorted(tokens.items())), "cost_usd": cost, "n_cost_unknown": unknown,
                            "n_trials": len(rs)}
    return _plain(out)


# --------------------------------------------------------------------------- public API


def aggregate(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The report.json numbers of a counting run (see the module docstring for denominators)."""
    groups = _by(records, "model", "condition")
    cells = _cells(records)
    cb, fb = _boundaries(cells, "point")
    cbw, fbw = _boundaries(cells, "wilson_lower")
    return {
        "n_records": len(records),
        "cells": cells,
        "count_boundary": cb,
        "frequency_boundary": fb,
        "count_boundary_wilson": cbw,
        "frequency_boundary_wilson": fbw,
        "boundary_rules": {"count_boundary": "point", "frequency_boundary": "point",
                           "count_boundary_wilson": "wilson_lower", "frequency_boundary_wilson": "wilson_lower",
                           "tau": 0.80},
        "trace_metrics": _trace_metrics(groups),
        "regions": _regions(groups),
        "taxonomy": _taxonomy(groups),
        "tolerance": _tolerance(groups),
        "errors": _errors(groups),
        "usage": _usage(groups),
        "count_bins": count_bins(records),
    }


def paired_difference(records: list[dict[str, Any]], a: tuple[str, str], b: tuple[str, str], *,
                      n_boot: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """EM(b) - EM(a) over samples scored ok in both arms, bootstrapped by source video (group_id)."""
    arms: list[dict[str, dict[str, Any]]] = []
    for model, cond in (a, b):
        arm: dict[str, dict[str, Any]] = {}
        for r in records:
            if r.get("model") == model and r.get("condition") == cond and _ok(r):
                sid = _key(r, "sample_id")
                if sid in arm:
                    raise DataError(f"sample {sid!r} is scored twice for {model} / {cond}; "
                                    "deduplicate the records before pairing")
                arm[sid] = r
        arms.append(arm)
    shared = sorted(set(arms[0]) & set(arms[1]))
    if not shared:
        raise DataError(f"no sample is scored ok under both {a} and {b}; check the model and condition names")
    xa = [float(bool(arms[0][s].get("correct"))) for s in shared]
    xb = [float(bool(arms[1][s].get("correct"))) for s in shared]
    groups = [arms[0][s].get("group_id") or s for s in shared]
    res = paired_bootstrap(xa, xb, groups, n_boot=n_boot, seed=seed)
    return {"a": list(a), "b": list(b), "difference": "em_b - em_a", **res.to_dict(),
            "n_only_a": len(set(arms[0]) - set(shared)), "n_only_b": len(set(arms[1]) - set(shared))}


def count_bin(n: int) -> str | None:
    for label, lo, hi in COUNT_BINS:
        if lo <= n <= hi:
            return label
    return None


def count_bins(records: list[dict[str, Any]]) -> dict[str, Any]:
    """EM by true-count bin (1-2, 3-4, ..., >30) per model and condition: the real-video transfer view."""
    out = _nested()
    for (model, cond), rs in _by(records, "model", "condition").items():
        per: dict[str, list[bool]] = defaultdict(list)
        for r in rs:
            if _ok(r):
                label = count_bin(int(_key(r, "n_events")))
                if label is not None:
                    per[label].append(bool(r.get("correct")))
        for label, _, _ in COUNT_BINS:
            if label in per:
                xs = per[label]
                lo, hi = wilson_interval(sum(xs), len(xs))
                out[model][cond][label] = {"n": len(xs), "correct": sum(xs), "accuracy": sum(xs) / len(xs),
                                           "ci_low": lo, "ci_high": hi}
    return _plain(out)
