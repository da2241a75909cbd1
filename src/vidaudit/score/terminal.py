"""Figures in the terminal: the compact tables ``score``, ``demo``, ``audit`` and ``compare`` end with.

Plain text, aligned in columns, no colour or box drawing, so that ``> out.txt`` keeps exactly what the
screen shows and a script can read it. Every figure is a share with its Wilson 95% interval and k/n,
counted by the contract's one rule (``core.contract.records.counted``): trials that need a judge the run
did not have are in no denominator and are counted in a column of their own.
"""

from __future__ import annotations

from collections.abc import Sequence

from vidaudit.core.contract.report import Table
from vidaudit.score.stats import wilson_interval

#: what an empty cell shows
NONE = "—"


def rate_text(k: int | None, n: int | None, *, interval: bool = True) -> str:
    """``100.0% [82.4, 100.0] (18/18)``; an em dash when nothing was counted."""
    if not n or k is None:
        return NONE
    text = f"{100 * k / n:.1f}%"
    if interval:
        lo, hi = wilson_interval(int(k), int(n))
        text += f" [{100 * lo:.1f}, {100 * hi:.1f}]"
    return f"{text} ({k}/{n})"


def unjudged_cell(unjudged: int) -> str:
    """An ``unjudged`` column's cell: ``20, need --judge`` (an em dash for none)."""
    return f"{unjudged}, need --judge" if unjudged else NONE


def text_table(columns: Sequence[str], rows: Sequence[Sequence[str]], *, title: str = "") -> str:
    """The rows under their column names, each column as wide as its widest cell (two spaces between)."""
    cells = [[str(c) for c in columns], *[[" ".join(str(c).split()) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = [title] if title else []
    for j, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def headline_text(table: Table) -> str:
    """A report's headline table (``report.json`` ``headline``) as text, under its title."""
    return text_table(table.columns, table.rows, title=table.title)
