"""profile.md and a self-contained profile.html: one block per audit part, read top to bottom.

Each block is a small table: one column per headline figure of the part, the measured models first, then
the part's references (chance, the pixel observer, the human ceiling), and the papers' published rows
beneath, folded in HTML (``<details>``) and named by paper title and table. The model column stays in view
(sticky) and no element of the page is wider than the window (``tests/tools/audit/test_audit.py`` checks it in
Chromium at 1400 x 900): a figure's interval and counts wrap under its value instead of widening the table.
Answers that need a judge the run did not have are counted in an ``unjudged`` column beside the figures.

Every text that a user or a model wrote (model labels, paper names, notes, paths) is escaped: Markdown
through ``report.tables.md_escape``, HTML by Jinja2's autoescape. The page loads nothing and runs no script.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from jinja2 import Environment
from markupsafe import Markup

from vidaudit.core.contract.profile import ProfileFigure
from vidaudit.core.contract.records import unjudged_text
from vidaudit.report.tables import md_escape
from vidaudit.score.terminal import text_table, unjudged_cell
from vidaudit.tools.audit.profile import ModelRow, PartInfo, Profile


def fmt_figure(f: ProfileFigure | None, *, interval: bool = True) -> str:
    """``100.0% [75.8, 100.0] (12/12)`` for an accuracy, the value for a boundary, ``—`` for none."""
    if f is None or f.value is None:
        return "—" if f is None or not f.note else f"— ({f.note})"
    if f.kind != "accuracy" or not isinstance(f.value, (int, float)):
        return str(f.value)
    text = f"{100 * f.value:.1f}%"
    if interval and f.ci_low is not None and f.ci_high is not None:
        text += f" [{100 * f.ci_low:.1f}, {100 * f.ci_high:.1f}]"
    if f.k is not None and f.n:
        text += f" ({f.k}/{f.n})"
    return text


def figure_names(rows: list[ModelRow], part: PartInfo) -> list[str]:
    """The part's headline figures, in the order ``rows`` carry them."""
    names: list[str] = []
    for row in rows:
        for f in row.figures.get(part.name, []):
            if f.name not in names:
                names.append(f.name)
    return names


def _figure(row: ModelRow, part: str, name: str) -> ProfileFigure | None:
    return next((x for x in row.figures.get(part, []) if x.name == name), None)


@dataclass
class BlockRow:
    """One row of a part's table: a label, its kind, one cell per figure, and the unjudged count (measured)."""

    label: str
    kind: str  # measured | reference | published
    cells: list[ProfileFigure | None | str]
    unjudged: int = 0
    note: str = ""


@dataclass
class Block:
    part: PartInfo
    title: str
    names: list[str]
    published_names: list[str]
    measured: list[BlockRow] = field(default_factory=list)
    references: list[BlockRow] = field(default_factory=list)
    published: list[BlockRow] = field(default_factory=list)

    @property
    def judged(self) -> bool:
        """Whether the block needs its ``unjudged`` column."""
        return any(r.unjudged for r in self.measured)


def _chance_cell(part: PartInfo, name: str, names: list[str]) -> str:
    if name in part.chance:
        return f"{100 * part.chance[name]:.1f}%"
    if len(names) == 1 and len(set(part.chance.values())) == 1:
        return f"{100 * next(iter(part.chance.values())):.1f}%"
    return ""


def blocks(profile: Profile) -> list[Block]:
    """Per part: its figure columns, the measured rows, the reference rows and the published rows."""
    out = []
    for p in profile.parts:
        names = figure_names(list(profile.rows), p)
        pub_rows = [r for r in profile.published if p.name in r.figures]
        pub_names = figure_names(pub_rows, p)
        b = Block(p, part_title(p), names or pub_names, pub_names)
        names = b.names
        for row in profile.rows:
            b.measured.append(
                BlockRow(
                    row.model,
                    "measured",
                    [_figure(row, p.name, n) for n in names],
                    unjudged=p.unjudged.get(row.model, 0),
                )
            )
        if p.chance and names:
            b.references.append(BlockRow("chance level", "reference", [_chance_cell(p, n, names) for n in names]))
        if p.observer:
            obs = ModelRow(model=p.observer, figures={p.name: list(p.observer_figures)})
            b.references.append(
                BlockRow(f"observer ({p.observer})", "reference", [_figure(obs, p.name, n) for n in names])
            )
        if p.human_ceiling is not None:
            h = p.human_ceiling
            b.references.append(
                BlockRow(
                    "human ceiling",
                    "reference",
                    [h, *[""] * (len(names) - 1)] if names else [],
                    note="published" if h.note == "published" else h.note,
                )
            )
        for row in pub_rows:
            b.published.append(BlockRow(row.model, "published", [_figure(row, p.name, n) for n in pub_names]))
        out.append(b)
    return out


def cell_text(c: ProfileFigure | None | str, *, interval: bool = True) -> str:
    return c if isinstance(c, str) else fmt_figure(c, interval=interval)


def part_title(p: PartInfo) -> str:
    return p.name if p.name == p.suite else f"{p.suite}: {p.name}"


def _resolution(p: PartInfo) -> str:
    if not p.trials_per_model:
        return "no trials"
    mdd = p.min_detectable_difference or 0.0
    unjudged = max(p.unjudged.values(), default=0)
    scored = f", {p.trials_per_model - unjudged} scored ({unjudged} unjudged, need --judge)" if unjudged else ""
    if p.ci_half_width is None:
        return f"{p.trials_per_model} trials per model{scored}; no interval: nothing was scored"
    over = "" if p.resolution_n is None else f" (its smallest figure: {p.resolution_n} trials)"
    return (
        f"{p.trials_per_model} trials per model{scored}; 95% intervals at most "
        f"±{math.ceil(1000 * (p.ci_half_width or 0) - 1e-9) / 10:.1f} points; smallest difference resolved ≈ "
        f"{100 * mdd:.1f} points{over}"
    )


def render_markdown(profile: Profile) -> str:
    lines = [
        f"# Model profile ({md_escape(profile.budget)} budget)",
        "",
        f"vidaudit {md_escape(profile.vidaudit_version)}, {md_escape(profile.created_at)}; models: "
        + ", ".join(md_escape(m) for m in profile.models),
        "",
    ]
    for b in blocks(profile):
        p = b.part
        about = (
            f"Preset {md_escape(p.preset)}, conditions {md_escape(', '.join(p.conditions))}; "
            f"{md_escape(_resolution(p))}. Full report: [{md_escape(p.report_html)}](<{p.report_html}>)"
        )
        lines += [f"## {md_escape(b.title)}", "", about, ""]
        extra = ["unjudged"] if b.judged else []
        lines.append("| model | kind | " + " | ".join(md_escape(n) for n in [*b.names, *extra]) + " |")
        lines.append("| --- | --- | " + " | ".join("---" for _ in [*b.names, *extra]) + " |")
        for r in [*b.measured, *b.references]:
            cells = [cell_text(c) for c in r.cells]
            if r.note and cells:
                cells[0] += f" ({r.note})"
            if b.judged:
                cells.append(unjudged_text(r.unjudged) if r.kind == "measured" else "")
            lines.append(f"| {md_escape(r.label)} | {r.kind} | " + " | ".join(md_escape(c) for c in cells) + " |")
        if b.published:
            source = f" ({md_escape(p.published_source)})" if p.published_source else ""
            lines += [
                "",
                f"Published{source}: the papers' own numbers, not measured here.",
                "",
                "| model | kind | " + " | ".join(md_escape(n) for n in b.published_names) + " |",
                "| --- | --- | " + " | ".join("---" for _ in b.published_names) + " |",
            ]
            lines += [
                f"| {md_escape(r.label)} | published (paper) | "
                + " | ".join(md_escape(cell_text(c, interval=False)) for c in r.cells)
                + " |"
                for r in b.published
            ]
            lines.append("")
        for note in p.notes:
            lines.append(f"Note: {md_escape(note)}.")
        lines.append("")
    lines += [f"Note: {md_escape(n)}." for n in profile.notes]
    return "\n".join(lines).rstrip() + "\n"


def _cell_html(c: ProfileFigure | None | str, *, interval: bool = True) -> Markup:
    """A figure's value on one line, its interval and counts on the next (so a column stays narrow)."""
    if isinstance(c, str) or c is None or c.value is None or c.kind != "accuracy" or not interval:
        return Markup("{}").format(cell_text(c, interval=interval))
    value = f"{100 * float(c.value):.1f}%"
    parts = []
    if c.ci_low is not None and c.ci_high is not None:
        parts.append(f"[{100 * c.ci_low:.1f}, {100 * c.ci_high:.1f}]")
    if c.k is not None and c.n:
        parts.append(f"({c.k}/{c.n})")
    return Markup('<span class="v">{}</span> <span class="ci">{}</span>').format(value, " ".join(parts))


_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>vidaudit profile ({{ p.budget }})</title>
<style>
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:1.5em auto;padding:0 1.5em;max-width:72em;color:#222;
  overflow-wrap:anywhere}
h1{font-size:1.6em} h2{font-size:1.2em;margin:1.6em 0 .3em}
nav.parts{font-size:13px;line-height:1.8}
nav.parts a{margin-right:.9em;white-space:nowrap}
section.part{border-top:1px solid #ddd;padding-top:.2em}
.about,.ref{color:#555;font-size:13px}
.scroll{max-width:100%;overflow-x:auto}
table{border-collapse:separate;border-spacing:0;font-size:13px;margin:.4em 0;max-width:100%}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:right;vertical-align:top;
  overflow-wrap:normal;word-break:normal}
th{background:#eee;font-weight:600}
th.model,td.model{text-align:left;position:sticky;left:0;background:#fff;z-index:1;
  max-width:22em;overflow-wrap:anywhere;border-right:1px solid #ddd}
th.model{background:#eee}
td .v{white-space:nowrap;font-weight:600}
td .ci{display:block;color:#666;font-size:12px;white-space:nowrap}
tr.reference td{color:#444;background:#f6f8fb}
tr.reference td.model{background:#f6f8fb}
tr.published td,tr.published td.model{background:#f7f3e8;font-style:italic}
td.unjudged{color:#8a5a00;text-align:left}
details{margin:.3em 0 .8em}
summary{cursor:pointer;color:#333;font-size:13px}
</style></head><body>
<h1>Model profile <small>({{ p.budget }} budget)</small></h1>
<p>vidaudit {{ p.vidaudit_version }}, {{ p.created_at }}. Models: {{ p.models|join(', ') }}.
Each part below: the models measured here, then the part's references (chance, the pixel observer, the
human ceiling), then the papers' published numbers, folded (their own data and models, not measured here).</p>
<nav class="parts">{% for b in blocks %}<a href="#part-{{ b.part.name }}">{{ b.title }}</a> {% endfor %}</nav>
{% for b in blocks %}
<section class="part" id="part-{{ b.part.name }}" data-part="{{ b.part.name }}">
<h2><a href="{{ b.part.report_html }}">{{ b.title }}</a></h2>
<p class="about">Preset {{ b.part.preset }}, conditions {{ b.part.conditions|join(', ') }};
{{ resolution(b.part) }}. <a href="{{ b.part.report_html }}">Full report</a>.</p>
<div class="scroll"><table class="measured">
<thead><tr><th class="model">model</th>{% for n in b.names %}<th>{{ n }}</th>{% endfor %}
{% if b.judged %}<th>unjudged</th>{% endif %}</tr></thead>
<tbody>
{% for r in b.measured + b.references %}<tr class="{{ r.kind }}" data-model="{{ r.label }}">
<td class="model">{{ r.label }}</td>{% for c in r.cells %}<td>{{ cellf(c, True) }}{% if loop.first and r.note %}
<span class="ci">{{ r.note }}</span>{% endif %}</td>{% endfor %}
{% if b.judged %}<td class="unjudged">{{ unjudged(r.unjudged) if r.kind == 'measured' else '' }}</td>{% endif %}</tr>
{% endfor %}</tbody></table></div>
{% if b.published %}<details class="published"><summary>Published: {{ b.published|length }} model{{ 's' if b.published|length != 1 }}
{% if b.part.published_source %}&mdash; {{ b.part.published_source }}{% endif %}</summary>
<div class="scroll"><table>
<thead><tr><th class="model">model (paper)</th>{% for n in b.published_names %}<th>{{ n }}</th>{% endfor %}</tr></thead>
<tbody>{% for r in b.published %}<tr class="published" data-model="{{ r.label }}"><td class="model">{{ r.label }}</td>
{% for c in r.cells %}<td>{{ cellf(c, False) }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table></div></details>{% endif %}
{% for n in b.part.notes %}<p class="ref">{{ n }}</p>{% endfor %}
</section>
{% endfor %}
{% for n in p.notes %}<p class="ref">{{ n }}</p>{% endfor %}
</body></html>
"""


def render_html(profile: Profile) -> str:
    env = Environment(autoescape=True)
    return env.from_string(_TEMPLATE).render(
        p=profile,
        blocks=blocks(profile),
        cellf=lambda c, interval: _cell_html(c, interval=interval),
        resolution=_resolution,
        unjudged=unjudged_text,
    )


def terminal_table(profile: Profile) -> str:
    """The profile's measured figures as the plain-text table ``vidaudit audit`` ends with on stdout: a row per
    (part, figure), a column per model; a part whose answers need a judge gets an ``unjudged`` row."""
    rows: list[list[str]] = []
    for b in blocks(profile):
        label = b.part.name if b.part.name == b.part.suite else f"{b.part.suite}/{b.part.name}"
        for i, name in enumerate(b.names):
            rows.append([label, name, *(cell_text(r.cells[i], interval=False) for r in b.measured)])
        if b.judged:
            rows.append([label, "unjudged", *(unjudged_cell(r.unjudged) for r in b.measured)])
    return text_table(
        ["part", "figure", *profile.models],
        rows,
        title=f"Headline figures ({profile.budget} budget; intervals and references in profile.html)",
    )
