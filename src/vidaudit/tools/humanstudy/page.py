"""The study page: one self-contained HTML file (inline CSS and script, no network) an annotator opens from disk.

What the page carries is only what a person should see: the clips, the questions and the options. Item
ids are hashes, the videos are embedded or named by their sha256, and the page's own JSON holds the
study id and each item's id, kind and phase: no sample id (sample ids can name the answer) and no
correct answer. A Content-Security-Policy allows only the page's own script (by hash), media from
``data:`` or files beside the page, and no connection anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources

from jinja2 import Environment, StrictUndefined
from markupsafe import Markup

from vidaudit import __version__
from vidaudit.report.embed import csp_hash, script_json
from vidaudit.tools.humanstudy.items import StudyItem


@cache
def _static(name: str) -> str:
    return resources.files("vidaudit.tools.humanstudy").joinpath("static", name).read_text(encoding="utf-8")


@cache
def _template():
    env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.from_string(_static("study.html.j2"))


def content_security_policy(script: str) -> str:
    return (
        "default-src 'none'; media-src data: 'self' file:; style-src 'unsafe-inline'; "
        f"script-src {csp_hash(script)}; base-uri 'none'; form-action 'none'; connect-src 'none'"
    )


def render_page(
    study: str, kind: str, suite: str, items: Sequence[StudyItem], media: Mapping[str, str], width: int = 480
) -> str:
    """The page for ``items`` in order; ``media`` maps each item id to its video's ``src`` (data URI or path)."""
    phase1 = [i for i in items if i.phase != 2]
    phase2 = [i for i in items if i.phase == 2]
    js = _static("study.js")
    data = {"study": study, "items": [{"id": i.item_id, "kind": i.kind, "phase": i.phase or 1} for i in items]}
    return _template().render(
        csp=content_security_policy(js),
        css=Markup(_static("study.css")),
        js=Markup(js),
        study=study,
        kind=kind,
        suite=suite,
        n_items=len(items),
        paired=bool(phase2),
        phase1=phase1,
        phase2=phase2,
        media=dict(media),
        width=width,
        data_json=script_json(data),
        version=__version__,
    )
