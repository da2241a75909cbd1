"""report.md: the same tables as the HTML page, as GitHub-flavoured Markdown, for diffs and READMEs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vidaudit.core.errors import DataError
from vidaudit.report.tables import Table, all_tables, notes_list

_LINE_BREAKS = re.compile("[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # every str.splitlines() break


def _cell(text: str) -> str:
    """Markdown table cells cannot hold '|' or newlines; keep the text, lose the break."""
    return _LINE_BREAKS.sub(" ", text.replace("\\", "\\\\").replace("|", "\\|"))


def markdown_table(table: Table) -> str:
    """One table with its title and caption; an explicit line when there is nothing to show."""
    lines = [f"### {table.title}", ""]
    if table.caption:
        lines += [table.caption, ""]
    if not table.rows:
        return "\n".join(lines + ["_Nothing recorded._", ""])
    align = ["---" if i < table.key_columns else "---:" for i in range(len(table.columns))]
    lines.append("| " + " | ".join(_cell(c) for c in table.columns) + " |")
    lines.append("| " + " | ".join(align) + " |")
    for row in table.rows:
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines + [""])


def render_markdown(report: Mapping[str, Any]) -> str:
    """The whole report.md: surfaces summary, both boundaries with both rules, trace metrics, errors, usage, notes."""
    if not isinstance(report, Mapping):
        raise DataError(f"report must be a dict (the content of report.json), got {type(report).__name__}")
    meta = report.get("meta") if isinstance(report.get("meta"), Mapping) else {}
    tables = all_tables(report)
    out = ["# vidaudit report", ""]
    for key in ("run_dir", "created_at", "vidaudit_version"):
        if meta.get(key):
            out.append(f"- **{key.replace('_', ' ')}**: {_cell(str(meta[key]))}")
    for key in ("models", "conditions"):
        if isinstance(meta.get(key), list) and meta[key]:
            out.append(f"- **{key}**: {', '.join(_cell(str(x)) for x in meta[key])}")
    out += ["", "## Notes", ""]
    notes = notes_list(report)
    out += [f"- {_cell(n)}" for n in notes] if notes else ["_No notes._"]
    out += ["", "## Capability surfaces", "", markdown_table(tables["surfaces"]),
            "## Operating boundaries", "",
            "Each boundary is listed under two rules, named in the `rule` column: **point** uses the observed "
            "cell accuracy; **Wilson** is stricter and uses the 95% Wilson lower bound.", "",
            markdown_table(tables["count_boundary"]), markdown_table(tables["frequency_boundary"]),
            "## Trace metrics", "", markdown_table(tables["trace_metrics"]), markdown_table(tables["taxonomy"])]
    for key in ("regions", "tolerance"):
        if tables[key].rows:
            out.append(markdown_table(tables[key]))
    out += ["## Errors, parse failures and usage", "", markdown_table(tables["errors"]),
            markdown_table(tables["usage"])]
    return "\n".join(out).rstrip() + "\n"
