"""profile.md and a self-contained profile.html: one row per model, a column group per part.

Every text that a user or a model wrote (model labels, paper names, notes, paths) is escaped: Markdown
through ``report.tables.md_escape``, HTML by Jinja2's autoescape. The page loads nothing and runs no script.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jinja2 import Environment

from vidaudit.audit.profile import ModelRow, PartInfo, Profile
from vidaudit.report.profile_figures import Figure
from vidaudit.report.tables import md_escape


def fmt_figure(f: Figure | None, *, interval: bool = True) -> str:
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


@dataclass
class Column:
    part: str
    name: str
    kind: str   # figure | chance | observer | human


def columns(profile: Profile) -> list[Column]:
    """Per part: each headline figure the measured rows carry, then chance, observer and human ceiling."""
    cols: list[Column] = []
    for p in profile.parts:
        names: list[str] = []
        for row in list(profile.rows) + list(profile.published):
            for f in row.figures.get(p.name, []):
                if f.name not in names:
                    names.append(f.name)
        cols += [Column(p.name, n, "figure") for n in names]
        if p.chance:
            cols.append(Column(p.name, "chance", "chance"))
        if p.observer:
            cols.append(Column(p.name, f"observer ({p.observer})", "observer"))
        if p.human_ceiling is not None:
            cols.append(Column(p.name, "human ceiling", "human"))
    return cols


def cell(profile: Profile, row: ModelRow, col: Column) -> str:
    part = profile.part(col.part)
    assert part is not None
    if col.kind == "figure":
        f = next((x for x in row.figures.get(col.part, []) if x.name == col.name), None)
        return fmt_figure(f, interval=row.kind == "measured")
    if row.kind != "measured":
        return ""
    if col.kind == "chance":
        if len(set(part.chance.values())) == 1:
            return f"{100 * next(iter(part.chance.values())):.1f}%"
        return ", ".join(f"{n} {100 * v:.1f}%" for n, v in part.chance.items())
    if col.kind == "observer":
        figs = part.observer_figures
        if len(figs) == 1:
            return fmt_figure(figs[0])
        return ", ".join(f"{f.name} {fmt_figure(f, interval=False)}" for f in figs) or "—"
    h = part.human_ceiling
    return "" if h is None else fmt_figure(h) + (" (published)" if h.note == "published" else "")


def part_title(p: PartInfo) -> str:
    return p.name if p.name == p.suite else f"{p.suite}: {p.name}"


def _resolution(p: PartInfo) -> str:
    if not p.trials_per_model:
        return "no trials"
    mdd = p.min_detectable_difference or 0.0
    return (f"{p.trials_per_model} trials per model; 95% intervals at most ±{100 * (p.ci_half_width or 0):.1f} "
            f"points; smallest difference resolved ≈ {100 * mdd:.1f} points")


def render_markdown(profile: Profile) -> str:
    lines = [f"# Model profile ({md_escape(profile.budget)} budget)", "",
             f"vidaudit {md_escape(profile.vidaudit_version)}, {md_escape(profile.created_at)}; models: "
             + ", ".join(md_escape(m) for m in profile.models), ""]
    for p in profile.parts:
        cols = [c for c in columns(profile) if c.part == p.name]
        about = (f"Preset {md_escape(p.preset)}, conditions {md_escape(', '.join(p.conditions))}; "
                 f"{md_escape(_resolution(p))}. Full report: [{md_escape(p.report_html)}](<{p.report_html}>)")
        lines += [f"## {md_escape(part_title(p))}", "", about, ""]
        lines.append("| model | kind | " + " | ".join(md_escape(c.name) for c in cols) + " |")
        lines.append("| --- | --- | " + " | ".join("---" for _ in cols) + " |")
        for row in list(profile.rows) + [r for r in profile.published if p.name in r.figures]:
            kind = "measured" if row.kind == "measured" else "published (paper)"
            lines.append(f"| {md_escape(row.model)} | {kind} | "
                         + " | ".join(md_escape(cell(profile, row, c)) for c in cols) + " |")
        if p.published_source:
            lines += ["", f"Published rows: {md_escape(p.published_source)}."]
        for note in p.notes:
            lines.append(f"Note: {md_escape(note)}.")
        lines.append("")
    lines += [f"Note: {md_escape(n)}." for n in profile.notes]
    return "\n".join(lines).rstrip() + "\n"


_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>vidaudit profile ({{ p.budget }})</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:13px;margin-bottom:1em}
th,td{border:1px solid #bbb;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#eee} td.model,th.model{text-align:left}
tr.published td{background:#f7f3e8;font-style:italic}
th.group{background:#dde6f0;text-align:center}
.ref{color:#555}
</style></head><body>
<h1>Model profile <small>({{ p.budget }} budget)</small></h1>
<p>vidaudit {{ p.vidaudit_version }}, {{ p.created_at }}. Models: {{ p.models|join(', ') }}.</p>
<table id="profile">
<thead>
<tr><th class="model" rowspan="2">model</th><th class="model" rowspan="2">kind</th>
{% for g in groups %}<th class="group" colspan="{{ g.span }}"><a href="{{ g.part.report_html }}">{{ g.title }}</a></th>{% endfor %}</tr>
<tr>{% for c in cols %}<th>{{ c.name }}</th>{% endfor %}</tr>
</thead>
<tbody>
{% for r in rows %}<tr class="{{ r.kind }}" data-model="{{ r.model }}"><td class="model">{{ r.model }}</td>
<td class="model">{{ 'measured' if r.kind == 'measured' else 'published (paper)' }}</td>
{% for c in cols %}<td>{{ cellf(r, c) }}</td>{% endfor %}</tr>
{% endfor %}
</tbody></table>
<h2>Parts</h2>
<ul>
{% for part in p.parts %}<li><a href="{{ part.report_html }}">{{ title(part) }}</a>: preset {{ part.preset }},
conditions {{ part.conditions|join(', ') }}; {{ resolution(part) }}.
{% if part.published_source %}<span class="ref">Published rows: {{ part.published_source }}.</span>{% endif %}
{% for n in part.notes %}<br><span class="ref">{{ n }}</span>{% endfor %}</li>
{% endfor %}</ul>
{% for n in p.notes %}<p class="ref">{{ n }}</p>{% endfor %}
</body></html>
"""


def render_html(profile: Profile) -> str:
    cols = columns(profile)
    groups = []
    for part in profile.parts:
        span = sum(1 for c in cols if c.part == part.name)
        if span:
            groups.append({"part": part, "span": span, "title": part_title(part)})
    rows: Sequence[ModelRow] = list(profile.rows) + list(profile.published)
    env = Environment(autoescape=True)
    return env.from_string(_TEMPLATE).render(
        p=profile, cols=cols, groups=groups, rows=rows,
        cellf=lambda r, c: cell(profile, r, c), title=part_title, resolution=_resolution)
