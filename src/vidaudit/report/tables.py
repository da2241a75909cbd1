"""Turn report.json's nested dicts into plain tables (columns + rows of strings).

Markdown and HTML render the same tables, so the numbers in both documents cannot drift
apart. Values are formatted here once; ``None`` (e.g. no positive-count trials) is shown
as an em dash, never as 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MISSING = "—"

TRACE_METRICS: tuple[tuple[str, str], ...] = (
    ("em", "EM"),
    ("vor", "VOR"),
    ("precision", "P"),
    ("recall", "R"),
    ("f1", "F1"),
    ("acr", "ACR"),
    ("rfr", "RFR"),
    ("parse_failure_rate", "parse fail"),
)

COUNT_RULES: tuple[tuple[str, str], ...] = (
    ("count_boundary", "observed accuracy ≥ τ at this N and every smaller positive N"),
    ("count_boundary_wilson", "stricter: 95% Wilson lower bound ≥ τ over the same prefix"),
)
FREQUENCY_RULES: tuple[tuple[str, str], ...] = (
    ("frequency_boundary", "observed accuracy ≥ τ at this F and every lower F"),
    ("frequency_boundary_wilson", "stricter: 95% Wilson lower bound ≥ τ over the same prefix"),
)
RULE_SHORT = {"count_boundary": "point", "count_boundary_wilson": "Wilson",
              "frequency_boundary": "point", "frequency_boundary_wilson": "Wilson"}


@dataclass
class Table:
    """A titled table of preformatted strings; ``key_columns`` lead each row and identify it."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""
    key_columns: int = 0


def dig(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]...`` or None when any level is absent or not a mapping."""
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def fmt(value: Any, digits: int = 3) -> str:
    """One cell's text: floats rounded, None as an em dash, everything else as str."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return MISSING
        return f"{value:.{digits}f}"
    if isinstance(value, int) and abs(value) >= 10_000:
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v, digits) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {fmt(v, digits)}" for k, v in value.items())
    return str(value)


def numeric_key(label: str) -> tuple[int, float, str]:
    """Sort "0.5" < "1" < "10" numerically; non-numbers after, alphabetically."""
    try:
        return (0, float(label), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(label))


def _walk3(obj: Any) -> list[tuple[str, str, str, Any]]:
    """(model, condition, scope, leaf) for a {model: {condition: {scope: leaf}}} mapping."""
    out = []
    if not isinstance(obj, Mapping):
        return out
    for model, by_condition in sorted(obj.items()):
        if not isinstance(by_condition, Mapping):
            continue
        for condition, by_scope in sorted(by_condition.items()):
            if not isinstance(by_scope, Mapping):
                continue
            for scope, leaf in by_scope.items():
                out.append((str(model), str(condition), str(scope), leaf))
    return out


def boundary_table(report: Mapping[str, Any], kind: str) -> Table:
    """Both rules of one boundary kind ("count" or "frequency") in one table, the rule named on each row."""
    rules = COUNT_RULES if kind == "count" else FREQUENCY_RULES
    axis = "F (Hz)" if kind == "count" else "N"
    entries: dict[tuple[str, str, str], dict[str, Mapping[str, Any]]] = {}
    labels: set[str] = set()
    for key, _ in rules:
        for model, condition, domain, leaf in _walk3(report.get(key)):
            if isinstance(leaf, Mapping):
                entries.setdefault((model, condition, domain), {})[key] = leaf
                labels.update(str(k) for k in leaf)
    columns_keys = sorted(labels, key=numeric_key)
    if kind == "count":
        title, symbol = "Count boundary N*(F)", "N*"
        caption = ("Largest positive count N that is reliable at a fixed frequency F, with every smaller positive "
                   "count also reliable (contiguous prefix). '<1' means not reliable even at N = 1.")
    else:
        title, symbol = "Frequency boundary F*(N)", "F* (Hz)"
        caption = ("Highest frequency F that is reliable at a fixed count N, with every lower tested frequency also "
                   "reliable. '<0.5' means not reliable even at the lowest tested rate.")
    caption += " Rules: " + "; ".join(f"{RULE_SHORT[k]} = {text}" for k, text in rules) + "."
    table = Table(f"{title} — {symbol} by {axis}", ["model", "condition", "domain", "rule"]
                  + [f"{axis.split()[0]}={c}" for c in columns_keys], caption=caption, key_columns=4)
    for (model, condition, domain), by_rule in sorted(entries.items()):
        for key, _ in rules:
            leaf = by_rule.get(key)
            if leaf is None:
                continue
            table.rows.append([model, condition, domain, RULE_SHORT[key]]
                              + [_boundary_value(leaf.get(c)) for c in columns_keys])
    return table


def _boundary_value(value: Any) -> str:
    """A boundary is a tested count or frequency ("12", "2.5") or a below-range marker ("<1", "<0.5")."""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:g}"
    return fmt(value)


def trace_metrics_table(report: Mapping[str, Any]) -> Table:
    """Trace scores per model x condition x domain, with the macro average last in each group."""
    table = Table("Trace metrics", ["model", "condition", "domain"] + [label for _, label in TRACE_METRICS],
                  caption=("Over eligible positive-count trials. EM exact match; VOR = M/N (<1 under-reports, "
                           ">1 over-reports); P, R, F1 of timestamp-matched events; ACR correct count with F1 < 0.8; "
                           "RFR wrong count despite F1 ≥ 0.8; parse fail = share of unparseable answers."),
                  key_columns=3)
    rows = _walk3(report.get("trace_metrics"))
    rows.sort(key=lambda r: (r[0], r[1], r[2] == "macro", r[2]))
    for model, condition, scope, leaf in rows:
        if isinstance(leaf, Mapping):
            table.rows.append([model, condition, scope] + [fmt(leaf.get(k)) for k, _ in TRACE_METRICS])
    return table


def surfaces_summary_table(report: Mapping[str, Any]) -> Table:
    """Pooled accuracy per surface: what the heatmaps show, one line each."""
    from vidaudit.report.heatmaps import group_cells

    table = Table("Capability surfaces", ["model", "condition", "domain", "cells", "trials", "correct", "accuracy",
                                          "N range", "F range (Hz)"],
                  caption="Exact-match accuracy pooled over every cell of the N x F surface.", key_columns=3)
    from vidaudit.report.heatmaps import format_frequency

    for (model, condition, domain), cells in sorted(group_cells(report.get("cells") or []).items()):
        n = sum(int(c["n"]) for c in cells)
        k = sum(int(c["correct"]) for c in cells)
        counts = sorted(int(c["n_events"]) for c in cells)
        freqs = sorted((float(c["frequency_hz"]) for c in cells if c.get("frequency_hz") is not None))
        f_range = f"{format_frequency(freqs[0])}–{format_frequency(freqs[-1])}" if freqs else MISSING
        table.rows.append([model, condition, domain, str(len(cells)), str(n), str(k),
                           fmt(k / n) if n else MISSING, f"{counts[0]}–{counts[-1]}", f_range])
    return table


def flatten_table(title: str, obj: Any, level_names: Sequence[str], caption: str = "") -> Table:
    """A generic table for nested mappings/lists whose exact shape another module owns.

    Walks mappings until it reaches a record (a mapping of scalars) or a scalar; the keys on
    the way become the leading columns (named by ``level_names``, then "level k").
    """
    records: list[tuple[list[str], Mapping[str, Any] | Any]] = []

    def is_record(value: Any) -> bool:
        return isinstance(value, Mapping) and all(not isinstance(v, (Mapping, list)) for v in value.values())

    def walk(value: Any, path: list[str]) -> None:
        if is_record(value) and path:
            records.append((path, value))
        elif isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, path + [str(k)])
        elif isinstance(value, list) and value and all(is_record(v) for v in value):
            for v in value:
                records.append((path, v))
        else:
            records.append((path, {"value": value}))

    if obj not in (None, {}, []):
        walk(obj, [])
    depth = max((len(p) for p, _ in records), default=0)
    keys = [name if i < len(level_names) else f"level {i + 1}" for i, name in enumerate(list(level_names)[:depth])]
    keys += [f"level {i + 1}" for i in range(len(keys), depth)]
    value_cols: list[str] = []
    for _, rec in records:
        for k in rec:
            if str(k) not in value_cols:
                value_cols.append(str(k))
    table = Table(title, keys + value_cols, caption=caption, key_columns=depth)
    for path, rec in records:
        padded = path + [""] * (depth - len(path))
        table.rows.append(padded + [fmt(rec.get(c)) if c in rec else "" for c in value_cols])
    return table


def notes_list(report: Mapping[str, Any]) -> list[str]:
    notes = report.get("notes") or []
    if isinstance(notes, str):
        return [notes]
    return [str(n) for n in notes]


def all_tables(report: Mapping[str, Any]) -> dict[str, Table]:
    """Every table of the report, keyed by the section it belongs to."""
    return {
        "surfaces": surfaces_summary_table(report),
        "count_boundary": boundary_table(report, "count"),
        "frequency_boundary": boundary_table(report, "frequency"),
        "trace_metrics": trace_metrics_table(report),
        "taxonomy": flatten_table("Error taxonomy", report.get("taxonomy"), ["model", "condition", "domain"],
                                  "Trials per outcome category (faithful, missed, hallucinated, wrong accumulation, "
                                  "accidental correctness, displaced)."),
        "regions": flatten_table("Regions", report.get("regions"), ["model", "condition", "region"],
                                 "Metrics over named regions of the N x F grid."),
        "tolerance": flatten_table("Matching tolerance", report.get("tolerance"), ["setting"],
                                   "How reported events were matched to true events."),
        "errors": flatten_table("Errors and parse failures", report.get("errors"), ["model", "condition"],
                                "Failed calls are outcomes, not answers: they stay in the denominators."),
        "usage": flatten_table("Usage and cost", report.get("usage"), ["model", "condition"],
                               "Tokens, calls, latency and cost as recorded by the run store."),
    }
