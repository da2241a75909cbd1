"""The counting suite's report sections: capability surfaces, boundaries, trace metrics, pairs, errors.

``counting_sections(results)`` turns what :func:`~vidaudit.suites.counting.aggregate.aggregate`
returns (plus ``results["paired_differences"]``) into :class:`~vidaudit.core.contract.report.Section`
objects that the generic report stage renders to Markdown and HTML. Builders read keys with
``.get`` and ignore keys they do not know; unknown top-level keys are shown in a last "Other
results" section as flattened tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import vidaudit.suites.counting.report_tables as rt
from vidaudit.sdk import DataError, GridFigure, Section, dig
from vidaudit.suites.counting.report_tables import NO_FREQUENCY, format_frequency, group_cells
from vidaudit.suites.counting.sections_exact import exact_sections

#: results keys laid out by the exact views (per-N, Table 2)
EXACT_KEYS = ("per_n", "max_count_boundary", "max_count_boundary_wilson")

SURFACES_LEDE = (
    "Exact-match accuracy over event count N (rows) and event frequency F (columns), one surface per "
    "model × condition × domain. Each cell shows accuracy and k/n correct. Outlined cells lie inside "
    "the reported count boundary N*(F) (point rule). Grey: no trials at that point; the n/a column "
    "holds the no-event controls (N = 0 has no frequency)."
)
BOUNDARIES_LEDE = (
    "Two complementary slices of the reliable region at reliability target τ. Each boundary is given "
    "under two rules, named on every row: point uses the observed cell accuracy; Wilson is stricter "
    "and uses the 95% Wilson lower bound, so it never exceeds the point boundary."
)
TRACE_LEDE = (
    "Whether the count rests on the events: reported timestamps matched one-to-one to the true events "
    "within the rate-relative window 1/(2F), the error taxonomy, named regions of the grid and other "
    "matching windows."
)
PAIRED_LEDE = (
    "Differences in exact-match accuracy between conditions of one model and between models under one "
    "condition, paired by sample and bootstrapped by source video."
)
ERRORS_LEDE = "Failed calls, unparseable answers, tokens and cost per model × condition."


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _boundary_at(boundary: Any, frequency: float) -> float | None:
    """The numeric point count boundary N*(F) at ``frequency`` (keys like "1.0" matched by value), or None."""
    if not isinstance(boundary, Mapping):
        return None
    for key, value in boundary.items():
        try:
            same = abs(float(key) - frequency) < 1e-9
        except (TypeError, ValueError):
            continue
        if same:
            return float(value) if _is_number(value) else None
    return None


def surface_figure(
    model: str,
    condition: str,
    domain: str,
    cells: Sequence[Mapping[str, Any]],
    count_boundary: Mapping[str, Any] | None = None,
) -> GridFigure:
    """One N x F surface: N ascending (rows), F ascending (columns) after an n/a column for the N = 0 controls.

    Cells at N = 0 (or without a frequency) go to the n/a column, the N = 0 controls pooled if there
    are several; two cells at one positive (N, F) are an error. Cells inside the point count boundary are outlined.
    """
    by_point: dict[tuple[int, str], list[int]] = {}
    freq_values: dict[str, float] = {}
    for c in cells:
        n = int(c["n_events"])
        f = c.get("frequency_hz")
        col = NO_FREQUENCY if n == 0 or f is None else format_frequency(f)
        if f is not None and col != NO_FREQUENCY:
            freq_values[col] = float(f)
        k_n = by_point.setdefault((n, col), [0, 0, 0])
        if k_n[2] and n > 0:
            raise DataError(
                f"two cells for {model}/{condition}/{domain} at N={n}, F={col}; aggregate trials into "
                "one cell per (N, F)"
            )
        k_n[0] += int(c["correct"])
        k_n[1] += int(c["n"])
        k_n[2] += 1
    counts = sorted({n for n, _ in by_point})
    cols = sorted(freq_values, key=lambda label: freq_values[label])
    if any(col == NO_FREQUENCY for _, col in by_point):
        cols = [NO_FREQUENCY, *cols]
    values: list[list[float | None]] = []
    notes: list[list[str]] = []
    outlined: list[list[bool]] = []
    for n in counts:
        v_row: list[float | None] = []
        a_row: list[str] = []
        o_row: list[bool] = []
        for col in cols:
            cell = by_point.get((n, col))
            if cell is None:
                v_row.append(None)
                a_row.append("")
                o_row.append(False)
                continue
            k, total, _ = cell
            v_row.append(k / total if total else None)
            a_row.append(f"{k}/{total}")
            bound = _boundary_at(count_boundary, freq_values[col]) if col != NO_FREQUENCY else None
            o_row.append(bool(bound is not None and 0 < n <= bound))
        values.append(v_row)
        notes.append(a_row)
        outlined.append(o_row)
    return GridFigure(
        id=f"surface:{model}:{condition}:{domain}",
        title=domain,
        group=[model, condition],
        row_label="event count N",
        col_label="event frequency F (Hz)",
        rows=[str(n) for n in counts],
        cols=cols,
        values=values,
        annotations=notes,
        outlined=outlined,
        vmin=0.0,
        vmax=1.0,
        value_label="exact-match accuracy",
    )


def surface_figures(results: Mapping[str, Any]) -> list[GridFigure]:
    """Every surface in ``results["cells"]``, sorted by model, condition, domain."""
    out = []
    for (model, condition, domain), group in sorted(group_cells(results.get("cells")).items()):
        boundary = dig(results.get("count_boundary"), model, condition, domain)
        out.append(surface_figure(model, condition, domain, group, boundary if isinstance(boundary, Mapping) else None))
    return out


def counting_sections(results: dict[str, Any]) -> list[Section]:
    """The counting report, in reading order (see the module docstring)."""
    if not isinstance(results, Mapping):
        raise DataError(f"counting_sections needs the dict aggregate(records) returns, got {type(results).__name__}")
    trace_tables = [rt.trace_metrics_table(results), rt.flat_table(results, "taxonomy")]
    trace_tables += [t for t in (rt.flat_table(results, "tolerance"),) if t.rows]
    sections = [
        Section(
            id="surfaces",
            title="Capability surfaces",
            lede=SURFACES_LEDE,
            figures=surface_figures(results),
            tables=[rt.surfaces_summary_table(results)]
            + [t for t in (rt.flat_table(results, "count_bins"),) if t.rows],
        ),
        Section(
            id="boundaries",
            title="Operating boundaries",
            lede=BOUNDARIES_LEDE,
            tables=[rt.boundary_table(results, "count"), rt.boundary_table(results, "frequency")],
        ),
        *exact_sections(results),
        Section(id="trace", title="Trace metrics", lede=TRACE_LEDE, tables=trace_tables),
        Section(
            id="paired", title="Paired differences", lede=PAIRED_LEDE, tables=[rt.paired_differences_table(results)]
        ),
        Section(
            id="errors",
            title="Errors, parse failures and usage",
            lede=ERRORS_LEDE,
            tables=[rt.errors_table(results), rt.flat_table(results, "usage")],
        ),
    ]
    other = rt.other_results_tables(results, known=EXACT_KEYS)
    if other:
        sections.append(
            Section(
                id="other",
                title="Other results",
                lede="Numbers of report.json that the counting report does not lay out yet.",
                tables=other,
            )
        )
    return sections
