"""report.md: the same header, sections, figures (as tables of their data) and tables as the HTML page.

GitHub-flavoured Markdown, for diffs and READMEs. Every string that came from a model, a
condition, a user, an annotator or a data file goes through :func:`~vidaudit.report.tables.md_escape`
(the one escaping rule: HTML's ``& < >`` as entities, Markdown's syntax backslash-escaped, line breaks
made spaces), so the file is safe rendered with raw HTML on, and a ``|`` or a line break can never add
a column or end a table.
"""

from __future__ import annotations

import json
from typing import Any

from vidaudit.core.contract.report import GridFigure, LineFigure, Report, Section, Table
from vidaudit.core.errors import DataError
from vidaudit.report.tables import MISSING, md_escape


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(md_escape(c) for c in cells) + " |"


def markdown_table(table: Table, level: int = 3) -> str:
    """One table with its title and caption; an explicit line when there is nothing to show."""
    lines = [f"{'#' * level} {md_escape(table.title)}", ""]
    if table.caption:
        lines += [md_escape(table.caption), ""]
    if not table.rows:
        return "\n".join(lines + ["_Nothing recorded._", ""])
    align = ["---" if i < table.key_columns else "---:" for i in range(len(table.columns))]
    lines.append(_row(table.columns))
    lines.append("| " + " | ".join(align) + " |")
    lines += [_row(row) for row in table.rows]
    return "\n".join(lines + [""])


def _value(v: float | None, digits: int = 2) -> str:
    return MISSING if v is None else f"{v:.{digits}f}"


def markdown_grid(fig: GridFigure, level: int = 3) -> str:
    """A grid figure's data as a table: one line per row label, cells "value (annotation)", outlined in bold."""
    lines = [f"{'#' * level} {md_escape(fig.title)}", ""]
    if fig.caption:
        lines += [md_escape(fig.caption), ""]
    if not fig.rows or not fig.cols:
        return "\n".join(lines + ["_No cells._", ""])
    lines.append(_row([f"{fig.row_label} ↓ / {fig.col_label} →", *fig.cols]))
    lines.append("| " + " | ".join(["---"] + ["---:"] * len(fig.cols)) + " |")
    any_outlined = False
    for r, label in enumerate(fig.rows):
        cells = [md_escape(label)]
        for c in range(len(fig.cols)):
            v = fig.values[r][c]
            note = fig.annotations[r][c] if fig.annotations else ""
            text = "" if v is None and not note else _value(v)
            if note:
                text += f" ({note})"
            text = md_escape(text)
            if text and fig.outlined and fig.outlined[r][c]:
                any_outlined = True
                text = f"**{text}**"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"_Values: {md_escape(fig.value_label)}; an empty cell has no data."
        + (" Bold cells are outlined in the figure._" if any_outlined else "_"),
    ]
    return "\n".join(lines + [""])


def markdown_line(fig: LineFigure, level: int = 3) -> str:
    """A line figure's data as a table: one line per x value, one column per series (with its band)."""
    lines = [f"{'#' * level} {md_escape(fig.title)}", ""]
    if fig.caption:
        lines += [md_escape(fig.caption), ""]
    if not fig.series or not fig.x:
        return "\n".join(lines + ["_No series._", ""])
    lines.append(_row([fig.x_label, *(s.name for s in fig.series)]))
    lines.append("| " + " | ".join(["---:"] * (1 + len(fig.series))) + " |")
    for i, x in enumerate(fig.x):
        cells = [f"{x:g}"]
        for s in fig.series:
            text = _value(s.y[i], 3)
            if s.low is not None and s.high is not None and (s.low[i] is not None or s.high[i] is not None):
                text += f" [{_value(s.low[i], 3)}, {_value(s.high[i], 3)}]"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")  # numbers and our own brackets: nothing to escape
    lines += [
        "",
        f"_y: {md_escape(fig.y_label)}"
        + ("; [low, high] is the series' interval._" if any(s.low is not None for s in fig.series) else "._"),
    ]
    return "\n".join(lines + [""])


def _setting(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def header_lines(report: Report) -> list[str]:
    """The provenance bullets shared by the top of report.md."""
    out = [
        f"- **suite**: {md_escape(report.suite)}",
        f"- **created at**: {md_escape(report.created_at)}",
        f"- **vidaudit version**: {md_escape(report.vidaudit_version)}",
    ]
    if report.git_revision:
        dirty = " (uncommitted changes)" if report.git_dirty else ""
        out.append(f"- **git revision**: {md_escape(report.git_revision)}{dirty}")
    for key, value in report.source.items():
        out.append(f"- **{md_escape(key.replace('_', ' '))}**: {md_escape(value)}")
    if report.n_records:
        out.append(f"- **records**: {report.n_records}")
    for name, items in (("models", report.models), ("conditions", report.conditions)):
        if items:
            out.append(f"- **{name}**: " + ", ".join(md_escape(x) for x in items))
    if report.settings:
        out.append("- **settings sent**:")
        for model, settings in report.settings.items():
            text = ", ".join(f"{md_escape(k)}={md_escape(_setting(v))}" for k, v in sorted(settings.items()))
            out.append(f"  - {md_escape(model, label=True)}: {text or '(defaults)'}")
    return out


def markdown_section(section: Section) -> str:
    out = [f"## {md_escape(section.title)}", ""]
    if section.lede:
        out += [md_escape(section.lede), ""]
    group: list[str] | None = None
    for fig in section.figures:
        if fig.group and fig.group != group:
            out += [f"### {' · '.join(md_escape(g) for g in fig.group)}", ""]
        group = fig.group
        level = 4 if fig.group else 3
        out.append(markdown_grid(fig, level) if isinstance(fig, GridFigure) else markdown_line(fig, level))
    for table in section.tables:
        out.append(markdown_table(table))
    if section.notes:
        out += [f"- {md_escape(n)}" for n in section.notes] + [""]
    return "\n".join(out)


def render_markdown(report: Report) -> str:
    """The whole report.md: header, the headline table (one row per model), notes, then every section."""
    if not isinstance(report, Report):
        raise DataError(
            f"render_markdown needs a Report, got {type(report).__name__}; "
            "build one with Report(...) or Report.model_validate(...)"
        )
    out = [f"# vidaudit report — {md_escape(report.suite)}", "", *header_lines(report), ""]
    if report.headline is not None:
        out.append(markdown_table(report.headline, level=2))
    out += ["## Notes", ""]
    out += [f"- {md_escape(n)}" for n in report.notes] if report.notes else ["_No notes._"]
    out.append("")
    for section in report.sections:
        out.append(markdown_section(section))
    return "\n".join(out).rstrip() + "\n"
