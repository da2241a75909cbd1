"""Report tables and figures for the paper's exact views: per-N accuracy, Table 2's boundary, Table 1 Part B.

Every builder reads ``results``, the dict :func:`~vidaudit.suites.counting.aggregate.aggregate`
returns, and returns the typed report objects of :mod:`vidaudit.core.contract.report`; numbers are
formatted once here (3 decimals, an em dash for "no data", never 0). EM counts failed trials as
wrong (see the aggregate's module docstring).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from vidaudit.sdk import ConfigError, LineFigure, Section, Series, Table
from vidaudit.suites.counting.aggregate import PAPER_REGIONS, REGIONS
from vidaudit.suites.counting.boundaries import TAU
from vidaudit.suites.counting.grid import DOMAINS
from vidaudit.suites.counting.report_tables import TRACE_COLUMNS

MISSING = "\u2014"
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")

REGION_LABELS: dict[str, str] = {
    "low_count_low_frequency": "LCLF (N \u2264 3, F \u2264 2.0)",
    "high_count_low_frequency": "HCLF (N \u2265 5, F \u2264 2.0)",
    "low_count_high_frequency": "LCHF (N \u2264 3, F \u2265 2.5)",
    "high_count_high_frequency": "HCHF (N \u2265 5, F \u2265 2.5)",
    "low_count": "N \u2264 3",
    "high_count": "N \u2265 5",
    "low_frequency": "F \u2264 2.0",
    "high_frequency": "F \u2265 2.5",
}
REGION_METRICS: tuple[tuple[str, str], ...] = (
    ("em", "EM (with N=0)"),
    ("em_positive", "EM (N\u22651)"),
    ("completion", "completion"),
    *TRACE_COLUMNS,
    ("n", "trials"),
    ("n_positive", "traced"),
)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or isinstance(value, bool):
        return MISSING if value is None else ("yes" if value else "no")
    if isinstance(value, float):
        return f"{value:.{digits}f}" if math.isfinite(value) else MISSING
    return str(value)


def _boundary(value: Any) -> str:
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:g}"
    return _fmt(value)


def _num(label: str) -> tuple[int, float, str]:
    try:
        return (0, float(label), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(label))


def _domain_order(domains: Iterable[str]) -> list[str]:
    return sorted(set(domains), key=lambda d: (DOMAINS.index(d) if d in DOMAINS else len(DOMAINS), d))


def _groups(obj: Any) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(model, condition, inner mapping) of a {model: {condition: inner}} mapping, sorted."""
    out = []
    if isinstance(obj, Mapping):
        for model, by_cond in sorted(obj.items()):
            if isinstance(by_cond, Mapping):
                for cond, inner in sorted(by_cond.items()):
                    if isinstance(inner, Mapping):
                        out.append((str(model), str(cond), inner))
    return out


def _unique_id(base: str, seen: set[str]) -> str:
    slug = _SLUG.sub("-", base).strip("-") or "figure"
    out, k = slug, 2
    while out in seen:
        out, k = f"{slug}-{k}", k + 1
    seen.add(out)
    return out


# --------------------------------------------------------------------------- per N


def per_n_table(results: Mapping[str, Any]) -> Table:
    """Exact match per N, averaged over F (the mean of the cell accuracies), one row per model x condition x domain."""
    rows_in = []
    ns: set[str] = set()
    for model, cond, by_dom in _groups(results.get("per_n")):
        for dom in _domain_order(by_dom):
            leaf = by_dom[dom]
            if isinstance(leaf, Mapping):
                ns.update(leaf)
                rows_in.append((model, cond, dom, leaf))
    cols = sorted(ns, key=_num)
    table_rows = [
        [model, cond, dom] + [_fmt(leaf[n]["accuracy"]) if n in leaf else MISSING for n in cols]
        for model, cond, dom, leaf in rows_in
    ]
    return Table(
        id="per-n",
        title="Exact match per N, averaged over frequencies",
        columns=["model", "condition", "domain"] + [f"N={n}" for n in cols],
        rows=table_rows,
        caption=(
            "For each N, the mean over the tested frequencies of the cell accuracies (paper Figures "
            '4, 6-8: "Final-answer exact match averaged over frequencies"). Each cell\'s accuracy is '
            "over its planned trials: a failed call counts as a wrong answer. N = 0 is the no-event "
            "control at its one nominal frequency."
        ),
        key_columns=3,
    )


def per_n_figure(results: Mapping[str, Any], by: str = "domain", *, tau_line: bool = True) -> list[LineFigure]:
    """Accuracy against N averaged over F, with a constant series at tau = 0.80 (the paper's dashed
    line; ``tau_line=False`` leaves it out, so that every series is a domain or condition).

    ``by="domain"``: one figure per model x condition, a series per domain. ``by="condition"``: one
    figure per model x domain, a series per condition (the paper's Figure 4 panels).
    """
    if by not in ("domain", "condition"):
        raise ConfigError(f"per_n_figure groups by 'domain' or 'condition', not {by!r}")
    data = results.get("per_n") or {}
    panels: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for model, cond, by_dom in _groups(data):
        for dom, leaf in by_dom.items():
            if not isinstance(leaf, Mapping):
                continue
            key, name = ((model, cond), str(dom)) if by == "domain" else ((model, str(dom)), cond)
            panels.setdefault(key, {})[name] = leaf
    figures: list[LineFigure] = []
    seen: set[str] = set()
    for (model, second), series_in in sorted(panels.items()):
        xs = sorted({int(n) for leaf in series_in.values() for n in leaf})
        names = _domain_order(series_in) if by == "domain" else sorted(series_in)
        series = []
        for name in names:
            leaf = series_in[name]
            pts = [leaf.get(str(x)) for x in xs]
            series.append(
                Series(
                    name=name,
                    y=[p["accuracy"] if p else None for p in pts],
                    low=[p["ci_low"] if p else None for p in pts],
                    high=[p["ci_high"] if p else None for p in pts],
                )
            )
        if tau_line:
            series.append(Series(name=f"\u03c4 = {TAU:.2f}", y=[TAU] * len(xs)))
        what = "condition" if by == "domain" else "domain"
        figures.append(
            LineFigure(
                id=_unique_id(f"per-n-{model}-{second}", seen),
                title=f"Exact match per N — {model}, {what} {second}",
                caption=(
                    "Final-answer exact match averaged over frequencies (mean of the cell accuracies; failed "
                    "trials count as wrong). Bands: Wilson 95% interval over the pooled trials of each N."
                ),
                group=[model, second],
                x_label="Event count N",
                y_label="Final answer accuracy",
                x=[float(x) for x in xs],
                series=series,
            )
        )
    return figures


# --------------------------------------------------------------------------- Table 2


def max_count_boundary_table(results: Mapping[str, Any]) -> Table:
    """Table 2's layout: EM per domain and the maximum count boundary per model x condition."""
    tm = results.get("trace_metrics") or {}
    mcb = results.get("max_count_boundary") or {}
    keys = {(m, c) for m, c, _ in _groups(tm)} | {(m, c) for m, c, _ in _groups(mcb)}
    doms = _domain_order(d for _, _, inner in _groups(tm) for d in inner if d != "macro")
    rows = []
    for model, cond in sorted(keys):
        em = (tm.get(model) or {}).get(cond) or {}
        best = ((mcb.get(model) or {}).get(cond) or {}).get("all") or {}
        rows.append(
            [model, cond]
            + [_fmt((em.get(d) or {}).get("em")) for d in doms]
            + [_boundary(best.get("value")), ", ".join(best.get("domains") or []) or MISSING]
        )
    return Table(
        id="max-count-boundary",
        title="Exact match by domain and maximum count boundary",
        columns=["model", "condition"] + [f"{d} EM" for d in doms] + ["max count boundary", "reached in"],
        rows=rows,
        caption=(
            "Paper Table 2. EM over every planned trial of the domain (N = 0 controls included, failed "
            'trials wrong). The maximum count boundary is "the largest reliable contiguous '
            'positive-count prefix observed at any tested frequency and domain" (tau = 0.80, the '
            "observed-accuracy rule); '<1' means no frequency is reliable even at N = 1."
        ),
        key_columns=2,
    )


# --------------------------------------------------------------------------- Table 1 Part B


def regions_table(results: Mapping[str, Any]) -> Table:
    """Table 1 Part B: the four N x F regions (then the marginal ones), per domain and macro-averaged."""
    order = list(PAPER_REGIONS) + [r for r in REGIONS if r not in PAPER_REGIONS]
    rows = []
    for model, cond, by_region in _groups(results.get("regions")):
        for region in order + sorted(r for r in by_region if r not in order):  # regions this code does not know last
            scopes = by_region.get(region)
            if not isinstance(scopes, Mapping):
                continue
            doms = _domain_order(d for d in scopes if d != "macro")
            for scope in doms + (["macro"] if isinstance(scopes.get("macro"), Mapping) else []):
                leaf = scopes.get(scope)
                if isinstance(leaf, Mapping):
                    rows.append(
                        [model, cond, REGION_LABELS.get(region, region), scope]
                        + [_fmt(leaf.get(k)) for k, _ in REGION_METRICS]
                    )
    return Table(
        id="regions",
        title="Trace evaluation across N x F regions",
        columns=["model", "condition", "region", "domain"] + [label for _, label in REGION_METRICS],
        rows=rows,
        caption=(
            'Paper Table 1 Part B ("Part B uses N \u2264 3, N \u2265 5, F \u2264 2.0, and F \u2265 2.5 '
            'Hz"), then the marginal regions. EM (with N=0) includes the no-event controls, rendered at '
            'nominal F = 1.0 Hz, wherever their (N, F) falls in the region ("Final EM includes no-event '
            'controls"); EM (N\u22651) leaves them out. EM is over planned trials (failed trials are '
            "wrong; completion = ok / planned). VOR, P, R, F1, ACR, RFR are means over ok positive-event "
            "trials with a trace ('traced'). macro = unweighted mean over domains (a trace metric's over the "
            "domains with a trace, — when one of them has no value)."
        ),
        key_columns=4,
    )


def exact_sections(results: Mapping[str, Any]) -> list[Section]:
    """The three views as report sections (per-N figure and table, Table 2, Table 1 Part B)."""
    return [
        Section(
            id="per-n",
            title="Accuracy per event count",
            lede="Exact match per N averaged over the tested frequencies (paper Figures 4, 6-8).",
            figures=list(per_n_figure(results)),
            tables=[per_n_table(results)],
        ),
        Section(
            id="max-count-boundary",
            title="Maximum count boundary",
            lede="The largest reliable positive-count prefix at any frequency (paper Table 2).",
            tables=[max_count_boundary_table(results)],
        ),
        Section(
            id="regions",
            title="Operating regions",
            lede="Final answers and reported traces in the four N x F regions (paper Table 1 Part B).",
            tables=[regions_table(results)],
        ),
    ]
