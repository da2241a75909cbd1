"""The self-contained HTML report: header, the suite's sections (figures, tables, notes) and the trace viewer.

No network: CSS, script, figures (SVG drawn from the numbers, or PNG with ``figures="png"``) and JPEG
thumbnails are all inline, except that a viewer
with too many trials for one page keeps their details in side files next to it (see
:mod:`vidaudit.report.viewer_files`). Model output is untrusted: Jinja2 autoescapes every value,
the trials travel as JSON inside a ``<script type="application/json">`` block (or a side file)
with ``< > & /`` escaped, and the page's script puts strings into the DOM only through
textContent. A Content-Security-Policy that allows only the page's own script (by hash, plus
the side files it inserts) backs this up should any of it ever fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from vidaudit.core.contract.report import Report, Section, ViewerSpec, ViewerTrial
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.report.embed import csp_hash
from vidaudit.report.headline import role_rank
from vidaudit.report.heatmaps import RenderedFigure, figure_heading, render_figure
from vidaudit.report.svg import SvgFigure, svg_figure
from vidaudit.report.viewer_files import VIEWER_DIR, ViewerData, viewer_data

if TYPE_CHECKING:
    from jinja2 import Environment

#: element ids the page itself uses; a section can never take one of them
_RESERVED_IDS = frozenset({"headline", "notes", "viewer", "run"})
#: how the page draws its figures (``vidaudit report --figures``)
FIGURE_FORMATS = ("svg", "png")
#: a table with more rows than this is folded (a <details> the reader opens), so the page stays short
LONG_TABLE_ROWS = 30


def headline_roles(report: Report) -> dict[str, str]:
    """Model -> role, as the headline table states them (its first two columns)."""
    h = report.headline
    if h is None or h.columns[:2] != ["model", "role"]:
        return {}
    return {row[0]: row[1] for row in h.rows}


@cache
def _static(name: str) -> str:
    return resources.files("vidaudit.report").joinpath("static", name).read_text(encoding="utf-8")


def content_security_policy(script: str, side_files: bool = False) -> str:
    """Nothing may load or connect; images only from data: URLs; only our own script (by hash) runs.

    ``side_files``: the viewer's trial details are in ``viewer/NNN.js``; ``'strict-dynamic'``
    lets the scripts that our hashed script inserts run (a file:// page cannot fetch), nothing else.
    """
    scripts = csp_hash(script) + (" 'strict-dynamic'" if side_files else "")
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src {scripts}; base-uri 'none'; form-action 'none'"
    )


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("vidaudit.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


class _Ids:
    """Unique, attribute-safe element ids made from arbitrary text."""

    def __init__(self) -> None:
        self.used: set[str] = set(_RESERVED_IDS)

    def __call__(self, prefix: str, *parts: str) -> str:
        slug = "-".join(re.sub(r"[^a-z0-9]+", "_", p.lower()).strip("_") or "x" for p in parts)
        base = f"{prefix}-{slug}"[:120]
        out, i = base, 2
        while out in self.used:
            out, i = f"{base}-{i}", i + 1
        self.used.add(out)
        return out


def figure_drawer(figures: str) -> Callable[[Any], RenderedFigure | SvgFigure]:
    """How the page draws its figures: ``svg`` (inline, from the numbers; the default) or ``png`` (matplotlib)."""
    if figures not in FIGURE_FORMATS:
        raise ConfigError(
            f"--figures {figures!r}: choose one of {', '.join(FIGURE_FORMATS)} (svg: drawn in the page "
            "from the numbers; png: matplotlib pictures, for papers)"
        )
    return svg_figure if figures == "svg" else render_figure


def _section_context(
    section: Section, ids: _Ids, drawn_figure: Callable[[Any], Any] | None = None, roles: dict[str, str] | None = None
) -> dict[str, Any]:
    """A section as the template reads it: figures drawn and grouped under headings by ``figure.group``."""
    draw = drawn_figure or svg_figure
    sid = ids("sec", section.id)
    blocks: list[dict[str, Any]] = []
    previous: list[str] | None = None
    for fig in section.figures:
        if not blocks or fig.group != previous:
            start = 0
            if previous is not None:
                while start < min(len(previous), len(fig.group)) and previous[start] == fig.group[start]:
                    start += 1
            headings = [(level, fig.group[level]) for level in range(start, len(fig.group))]
            blocks.append({"headings": headings, "group": list(fig.group), "figures": []})
            previous = list(fig.group)
        drawn = draw(fig)
        blocks[-1]["figures"].append(
            {
                "id": ids("fig", section.id, fig.id),
                "figure_id": fig.id,
                "kind": fig.kind,
                "title": fig.title,
                "heading": figure_heading(fig),
                "caption": fig.caption,
                "group": " · ".join(fig.group),
                "alt": drawn.alt,
                "png_b64": getattr(drawn, "png_b64", None),
                "svg": Markup(drawn.svg) if isinstance(drawn, SvgFigure) else None,
            }
        )
    tables = [{"id": ids("table", section.id, t.id), "table": t} for t in section.tables]
    return {
        "id": sid,
        "title": section.title,
        "lede": section.lede,
        "groups": _outer_groups(blocks, roles or {}),
        "tables": tables,
        "notes": section.notes,
    }


def _outer_groups(blocks: list[dict[str, Any]], roles: dict[str, str]) -> list[dict[str, Any]]:
    """Blocks gathered under their first-level heading (a model, for figures grouped by model), each group a
    collapsible block: open for a model under test, closed for a reference (oracle, chance, observer, ...)."""
    groups: list[dict[str, Any]] = []
    for b in blocks:
        top = next((text for level, text in b["headings"] if level == 0), None)
        if top is not None or not groups:
            role = roles.get(top) if top is not None else None
            groups.append({"title": top, "role": role, "open": role_rank(role) <= role_rank("human"), "blocks": []})
        groups[-1]["blocks"].append({**b, "headings": [(lv, t) for lv, t in b["headings"] if lv > 0]})
    if groups and not any(g["open"] for g in groups):
        groups[0]["open"] = True  # only references were run (the demo): show the first of them
    return groups


def _settings_rows(report: Report) -> list[tuple[str, str]]:
    rows = []
    for model, settings in report.settings.items():
        parts = [
            f"{k}={v if isinstance(v, str) else json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)}"
            for k, v in sorted(settings.items())
        ]
        rows.append((model, ", ".join(parts) or "(defaults)"))
    return rows


def render_html(
    report: Report,
    trials: Sequence[ViewerTrial],
    viewer: ViewerSpec,
    n_trials_total: int | None = None,
    *,
    data: ViewerData | None = None,
    figures: str = "svg",
    progress: Callable[[str, int, int | None], None] | None = None,
) -> str:
    """The report page as one string. ``trials`` are those to show (see select_trials_for_viewer).

    ``figures``: ``svg`` draws each figure in the page from its numbers (:mod:`vidaudit.report.svg`);
    ``png`` draws them with matplotlib as inline PNGs (:mod:`vidaudit.report.heatmaps`), for papers.

    ``data``: the viewer's data as :func:`viewer_data` split it (write_report passes it, and
    writes its side files); without it every trial is inline, however many there are.
    """
    if not isinstance(report, Report):
        raise DataError(
            f"render_html needs a Report, got {type(report).__name__}; "
            "build one with Report(...) or Report.model_validate(...)"
        )
    if not isinstance(viewer, ViewerSpec):
        raise DataError(f"render_html needs the suite's ViewerSpec, got {type(viewer).__name__}")
    render = figure_drawer(figures)
    ids = _Ids()
    total = sum(len(s.figures) for s in report.sections)
    done = [0]

    def draw(fig: Any) -> RenderedFigure | SvgFigure:  # one figure, counted for the progress display
        if progress is not None:
            progress("figures", done[0], total)
        done[0] += 1
        return render(fig)

    roles = headline_roles(report)
    sections = [_section_context(s, ids, draw, roles) for s in report.sections]
    if data is None:
        data = viewer_data(trials, viewer, inline_max_bytes=float("inf"))
    js = _static("viewer.js")
    page: str = (
        _environment()
        .get_template("report.html.j2")
        .render(
            csp=content_security_policy(js, side_files=data.chunked),
            css=Markup(_static("report.css")),
            js=Markup(js),
            report=report,
            headline_id="headline" if report.headline is not None else None,
            long_table_rows=LONG_TABLE_ROWS,
            settings=_settings_rows(report),
            sections=sections,
            viewer=viewer,
            trials_json=data.data_json,
            n_trials=data.n_trials,
            viewer_dir=VIEWER_DIR if data.chunked else None,
            n_chunks=len(data.chunks),
            n_trials_total=n_trials_total,
        )
    )
    return page
