"""The counting suite's report tables, built from what :func:`~vidaudit.suites.counting.aggregate.aggregate` returns.

Each builder reads its own key of ``results`` with ``.get`` and skips what it does not know, so
a new key or level in the aggregate never breaks the report; :func:`other_results_tables` shows
keys no builder knows as flattened tables until one does. Values are formatted here once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from vidaudit.sdk import MISSING, DataError, Table, flatten_table, fmt, numeric_key

#: the trace metrics (key, column) every table of traced trials shows, in this order
TRACE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("vor", "VOR"),
    ("precision", "P"),
    ("recall", "R"),
    ("f1", "F1"),
    ("acr", "ACR"),
    ("rfr", "RFR"),
)
TRACE_METRICS: tuple[tuple[str, str], ...] = (("em", "EM"), *TRACE_COLUMNS, ("parse_failure_rate", "parse fail"))

COUNT_RULES: tuple[tuple[str, str], ...] = (
    ("count_boundary", "observed accuracy ≥ τ at this N and every smaller positive N"),
    ("count_boundary_wilson", "stricter: 95% Wilson lower bound ≥ τ over the same prefix"),
)
FREQUENCY_RULES: tuple[tuple[str, str], ...] = (
    ("frequency_boundary", "observed accuracy ≥ τ at this F and every lower F"),
    ("frequency_boundary_wilson", "stricter: 95% Wilson lower bound ≥ τ over the same prefix"),
)
RULE_SHORT = {
    "count_boundary": "point",
    "count_boundary_wilson": "Wilson",
    "frequency_boundary": "point",
    "frequency_boundary_wilson": "Wilson",
}

#: keys of ``results`` that a builder of this module (or sections.py) shows
KNOWN_KEYS = frozenset(
    {
        "n_records",
        "cells",
        "count_boundary",
        "frequency_boundary",
        "count_boundary_wilson",
        "frequency_boundary_wilson",
        "boundary_rules",
        "trace_metrics",
        "regions",
        "taxonomy",
        "tolerance",
        "errors",
        "usage",
        "count_bins",
        "paired_differences",
        "notes",
        "meta",
    }
)
MAX_OTHER_ROWS = 400
NO_FREQUENCY = "n/a"  # column label for cells without a frequency (the N = 0 no-event controls)


def format_frequency(value: Any) -> str:
    """A frequency as a label: 1.0 -> "1", 0.5 -> "0.5"; None -> "n/a"."""
    if value is None:
        return NO_FREQUENCY
    return f"{float(value):g}"


def _label(key: Any) -> str:
    """A numeric JSON key as a short label ("1.0" -> "1"); anything else as it is."""
    try:
        x = float(key)
    except (TypeError, ValueError):
        return str(key)
    return f"{x:g}" if math.isfinite(x) else str(key)


def walk3(obj: Any) -> list[tuple[str, str, str, Any]]:
    """(model, condition, scope, leaf) for a {model: {condition: {scope: leaf}}} mapping; other shapes skipped."""
    out: list[tuple[str, str, str, Any]] = []
    if not isinstance(obj, Mapping):
        return out
    for model, by_condition in sorted(obj.items(), key=lambda kv: str(kv[0])):
        if not isinstance(by_condition, Mapping):
            continue
        for condition, by_scope in sorted(by_condition.items(), key=lambda kv: str(kv[0])):
            if not isinstance(by_scope, Mapping):
                continue
            for scope, leaf in by_scope.items():
                out.append((str(model), str(condition), str(scope), leaf))
    return out


def group_cells(cells: Any) -> dict[tuple[str, str, str], list[Mapping[str, Any]]]:
    """Group ``results["cells"]`` by (model, condition, domain), in first-seen order; reject malformed cells."""
    if not isinstance(cells, list):
        raise DataError("results have no 'cells' list; pass what counting's aggregate(records) returns")
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    required = ("model", "condition", "domain", "n_events", "n", "correct")
    for i, cell in enumerate(cells):
        if not isinstance(cell, Mapping):
            raise DataError(f"cells[{i}] is {type(cell).__name__}, expected an object; re-run the aggregation")
        missing = [k for k in required if k not in cell]
        if missing:
            raise DataError(f"cells[{i}] lacks {', '.join(missing)}; every cell needs {', '.join(required)}")
        groups.setdefault((str(cell["model"]), str(cell["condition"]), str(cell["domain"])), []).append(cell)
    return groups


def surfaces_summary_table(results: Mapping[str, Any]) -> Table:
    """Pooled accuracy per surface: what the heatmaps show, one line each."""
    rows = []
    for (model, condition, domain), cells in sorted(group_cells(results.get("cells") or []).items()):
        n = sum(int(c["n"]) for c in cells)
        k = sum(int(c["correct"]) for c in cells)
        counts = sorted(int(c["n_events"]) for c in cells)
        freqs = sorted(
            float(c["frequency_hz"]) for c in cells if c.get("frequency_hz") is not None and int(c["n_events"]) > 0
        )
        f_range = f"{format_frequency(freqs[0])}–{format_frequency(freqs[-1])}" if freqs else MISSING
        errored = sum(int(c.get("n_errored") or 0) for c in cells)
        rows.append(
            [
                model,
                condition,
                domain,
                str(len(cells)),
                str(n),
                str(k),
                fmt(k / n) if n else MISSING,
                str(errored),
                f"{counts[0]}–{counts[-1]}",
                f_range,
            ]
        )
    return Table(
        id="surfaces",
        title="Capability surfaces",
        columns=[
            "model",
            "condition",
            "domain",
            "cells",
            "trials",
            "correct",
            "accuracy",
            "errored",
            "N range",
            "F range (Hz)",
        ],
        rows=rows,
        key_columns=3,
        caption="Exact-match accuracy pooled over every cell of the N x F surface (ok trials; errored "
        "trials are counted apart).",
    )


def boundary_table(results: Mapping[str, Any], kind: str) -> Table:
    """Both rules of one boundary kind ("count" or "frequency") in one table, the rule named on each row."""
    if kind not in ("count", "frequency"):
        raise DataError(f"boundary kind must be 'count' or 'frequency', got {kind!r}")
    rules = COUNT_RULES if kind == "count" else FREQUENCY_RULES
    axis = "F" if kind == "count" else "N"
    entries: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    labels: set[str] = set()
    for key, _ in rules:
        for model, condition, domain, leaf in walk3(results.get(key)):
            if isinstance(leaf, Mapping):
                normalised = {_label(k): v for k, v in leaf.items()}
                entries.setdefault((model, condition, domain), {})[key] = normalised
                labels.update(normalised)
    columns_keys = sorted(labels, key=numeric_key)
    tau = (
        (results.get("boundary_rules") or {}).get("tau") if isinstance(results.get("boundary_rules"), Mapping) else None
    )
    tau_text = f"τ = {tau:.2f}" if isinstance(tau, (int, float)) and not isinstance(tau, bool) else "τ"
    if kind == "count":
        title = "Count boundary N*(F) — N* by F (Hz)"
        caption = (
            "Largest positive count N that is reliable at a fixed frequency F, with every smaller positive "
            "count also reliable (contiguous prefix). '<1' means not reliable even at N = 1."
        )
    else:
        title = "Frequency boundary F*(N) — F* (Hz) by N"
        caption = (
            "Highest frequency F that is reliable at a fixed count N, with every lower tested frequency also "
            "reliable. '<0.5' means not reliable even at the lowest tested rate."
        )
    caption += (
        f" Reliability target {tau_text}. Rules: " + "; ".join(f"{RULE_SHORT[k]} = {text}" for k, text in rules) + "."
    )
    rows = []
    for (model, condition, domain), by_rule in sorted(entries.items()):
        for key, _ in rules:
            leaf = by_rule.get(key)
            if leaf is not None:
                rows.append(
                    [model, condition, domain, RULE_SHORT[key]] + [_boundary_value(leaf.get(c)) for c in columns_keys]
                )
    return Table(
        id=f"{kind}_boundary",
        title=title,
        columns=["model", "condition", "domain", "rule"] + [f"{axis}={c}" for c in columns_keys],
        rows=rows,
        caption=caption,
        key_columns=4,
    )


def _boundary_value(value: Any) -> str:
    """A boundary is a tested count or frequency ("12", "2.5") or a below-range marker ("<1", "<0.5")."""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:g}"
    return fmt(value)


def _metrics_rows(obj: Any) -> list[list[str]]:
    rows = walk3(obj)
    rows.sort(key=lambda r: (r[0], r[1], r[2] == "macro", r[2]))
    return [
        [model, condition, scope] + [fmt(leaf.get(k)) for k, _ in TRACE_METRICS] + [fmt(leaf.get("n"))]
        for model, condition, scope, leaf in rows
        if isinstance(leaf, Mapping)
    ]


def trace_metrics_table(results: Mapping[str, Any]) -> Table:
    """Trace scores per model x condition x domain, with the macro average last in each group."""
    return Table(
        id="trace_metrics",
        title="Trace metrics",
        columns=["model", "condition", "domain"] + [label for _, label in TRACE_METRICS] + ["trials"],
        rows=_metrics_rows(results.get("trace_metrics")),
        key_columns=3,
        caption=(
            "EM exact match over ok trials; the trace metrics over eligible positive-count trials. "
            "VOR = M/N (<1 under-reports, >1 over-reports); P, R, F1 of timestamp-matched events; "
            "ACR correct count with F1 < 0.8; RFR wrong count despite F1 ≥ 0.8; parse fail = share "
            "of unparseable answers; macro = unweighted mean over domains (a trace metric's over the domains with a "
            "trace, — when one of them has no value)."
        ),
    )


def regions_table(results: Mapping[str, Any]) -> Table:
    """Trace scores over named regions of the N x F grid, per domain and macro-averaged."""
    rows = []
    regions = results.get("regions")
    for model, condition, region, by_scope in walk3(regions):
        if not isinstance(by_scope, Mapping):
            continue
        scopes = sorted(by_scope.items(), key=lambda kv: (str(kv[0]) == "macro", str(kv[0])))
        for scope, leaf in scopes:
            if isinstance(leaf, Mapping) and any(k in leaf for k, _ in TRACE_METRICS):
                rows.append(
                    [model, condition, region, str(scope)]
                    + [fmt(leaf.get(k)) for k, _ in TRACE_METRICS]
                    + [fmt(leaf.get("n"))]
                )
    return Table(
        id="regions",
        title="Regions of the grid",
        columns=["model", "condition", "region", "domain"] + [label for _, label in TRACE_METRICS] + ["trials"],
        rows=rows,
        key_columns=4,
        caption="The same metrics over named regions of the N x F grid (e.g. low count, high frequency).",
    )


def paired_differences_table(results: Mapping[str, Any]) -> Table:
    """EM(b) - EM(a) on shared samples, with its bootstrap interval clustered by source video."""
    rows = []
    entries = results.get("paired_differences")
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping):
            continue
        est, lo, hi = entry.get("estimate"), entry.get("ci_low"), entry.get("ci_high")
        rows.append(
            [
                _arm(entry.get("a")),
                _arm(entry.get("b")),
                fmt(entry.get("mean_a")),
                fmt(entry.get("mean_b")),
                _signed(est),
                f"[{_signed(lo)}, {_signed(hi)}]",
                fmt(entry.get("n_pairs")),
                fmt(entry.get("n_groups")),
            ]
        )
    conf = 0.95
    for entry in entries if isinstance(entries, list) else []:
        c = entry.get("confidence") if isinstance(entry, Mapping) else None
        if isinstance(c, (int, float)) and not isinstance(c, bool) and 0 < c < 1:
            conf = float(c)
            break
    return Table(
        id="paired_differences",
        title="Paired differences",
        columns=[
            "a (model / condition)",
            "b (model / condition)",
            "EM a",
            "EM b",
            "difference b − a",
            f"{conf * 100:g}% interval",
            "pairs",
            "videos",
        ],
        rows=rows,
        key_columns=2,
        caption="Exact-match difference between two arms over the samples scored ok in both, with a "
        "bootstrap interval that resamples whole source videos.",
    )


def _arm(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return " / ".join(str(v) for v in value)
    return fmt(value)


def _signed(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return f"{value:+.3f}"
    return MISSING


def errors_table(results: Mapping[str, Any]) -> Table:
    """Failed calls and unparseable answers per model x condition: outcomes, kept in the denominators."""
    rows = []
    errors = results.get("errors")
    if isinstance(errors, Mapping):
        for model, by_condition in sorted(errors.items(), key=lambda kv: str(kv[0])):
            if not isinstance(by_condition, Mapping):
                continue
            for condition, e in sorted(by_condition.items(), key=lambda kv: str(kv[0])):
                if not isinstance(e, Mapping):
                    continue
                by_status = e.get("n_errored")
                errored = (
                    ", ".join(f"{k}: {fmt(v)}" for k, v in sorted(by_status.items())) or "none"
                    if isinstance(by_status, Mapping)
                    else fmt(by_status)
                )
                rows.append(
                    [
                        str(model),
                        str(condition),
                        fmt(e.get("n_trials")),
                        fmt(e.get("n_ok")),
                        errored,
                        fmt(e.get("error_rate")),
                        fmt(e.get("n_unparseable")),
                        fmt(e.get("parse_failure_rate")),
                        fmt(e.get("n_dropped_timestamps")),
                    ]
                )
    return Table(
        id="errors",
        title="Errors and parse failures",
        columns=[
            "model",
            "condition",
            "trials",
            "ok",
            "errored by status",
            "error rate",
            "unparseable",
            "parse failure rate",
            "dropped timestamps",
        ],
        rows=rows,
        key_columns=2,
        caption="Failed calls are outcomes, not answers: they are out of accuracy but in the error rate; "
        "an unparseable answer is wrong and stays in accuracy.",
    )


#: the tables that show one key of ``results`` flattened as the aggregate nests it: key -> (title, the names of
#: the nesting levels, caption)
FLAT_TABLES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "count_bins": (
        "Accuracy by true-count bin",
        ("model", "condition", "count bin"),
        "Exact-match accuracy by the true count N (bins 1-2, 3-4, ...), pooled over domains and "
        "frequencies, with its 95% Wilson interval: the view that transfers to real videos.",
    ),
    "taxonomy": (
        "Error taxonomy",
        ("model", "condition", "domain"),
        "Event-level outcome counts over positive-count trials with a trace (matched, missed, "
        "hallucinated, displaced, misidentified) and trial-level flags (wrong accumulation, "
        "accidental correctness); 'all' pools the domains.",
    ),
    "tolerance": (
        "Matching tolerance",
        ("model", "condition", "window (s)"),
        "Trace metrics when reported events are matched within fixed windows (1.0, 0.5, 0.25 s) "
        "and within the rate-relative window 1/(2F).",
    ),
    "usage": (
        "Usage and cost",
        ("model", "condition"),
        "Tokens and cost (USD) summed over trials; n_cost_unknown counts trials whose price is not known.",
    ),
}


def flat_table(results: Mapping[str, Any], key: str) -> Table:
    """``results[key]`` flattened under its title, level names and caption (``FLAT_TABLES``)."""
    title, levels, caption = FLAT_TABLES[key]
    return flatten_table(key, title, results.get(key), list(levels), caption)


def other_results_tables(results: Mapping[str, Any], known: Sequence[str] = ()) -> list[Table]:
    """Keys of ``results`` no builder knows, flattened (capped at MAX_OTHER_ROWS rows each)."""
    skip = KNOWN_KEYS | set(known)
    tables = []
    for key in sorted(k for k in results if k not in skip):
        table = flatten_table(f"other_{key}", key.replace("_", " "), results[key], ["model", "condition"])
        if len(table.rows) > MAX_OTHER_ROWS:
            table = table.model_copy(
                update={
                    "rows": table.rows[:MAX_OTHER_ROWS],
                    "caption": f"First {MAX_OTHER_ROWS} of {len(table.rows)} rows; report.json has them all.",
                }
            )
        tables.append(table)
    return tables
