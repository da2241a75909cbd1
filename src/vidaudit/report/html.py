"""The self-contained HTML report: heatmaps, boundary and metric tables, and the trace viewer.

One file, no network: CSS, script, PNG heatmaps and JPEG thumbnails are all inline. Model
output is untrusted: Jinja2 autoescapes every value, the trials travel as JSON inside a
``<script type="application/json">`` block with ``< > & /`` escaped, and the page's script
puts strings into the DOM only through textContent. A Content-Security-Policy that allows
only the page's own script (by hash) backs this up should any of it ever fail.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from itertools import groupby
from typing import Any

from markupsafe import Markup

from vidaudit.core.errors import DataError
from vidaudit.report.heatmaps import Heatmap, render_heatmaps
from vidaudit.report.tables import all_tables, notes_list
from vidaudit.report.viewer import viewer_record

_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "/": "\\/",
                 "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(obj: Any) -> Markup:
    """JSON that is safe between ``<script type="application/json">`` tags: no '<', '>', '&' or '/' survives."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return Markup("".join(_JSON_ESCAPES.get(ch, ch) for ch in text))


@cache
def _static(name: str) -> str:
    return resources.files("vidaudit.report").joinpath("static", name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(script: str) -> str:
    """Nothing may load or connect; images only from data: URLs; only our own script (by hash) runs."""
    return ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
            f"script-src {_csp_hash(script)}; base-uri 'none'; form-action 'none'")


@cache
def _environment():
    from jinja2 import Environment, PackageLoader, StrictUndefined

    return Environment(loader=PackageLoader("vidaudit.report", "templates"), autoescape=True,
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _group_heatmaps(heatmaps: list[Heatmap]) -> list[tuple[str, list[tuple[str, list[Heatmap]]]]]:
    out = []
    for model, by_model in groupby(heatmaps, key=lambda h: h.model):
        out.append((model, [(cond, list(maps)) for cond, maps in groupby(by_model, key=lambda h: h.condition)]))
    return out


def _names(report: Mapping[str, Any], key: str, heatmaps: list[Heatmap]) -> list[str]:
    meta = report.get("meta") or {}
    listed = meta.get(key + "s") if isinstance(meta, Mapping) else None
    if isinstance(listed, list) and listed:
        return [str(x) if not isinstance(x, Mapping) else str(x.get("id") or x.get("name") or x) for x in listed]
    return sorted({getattr(h, key) for h in heatmaps})


def render_html(report: Mapping[str, Any], trials: Sequence[Mapping[str, Any]],
                n_trials_total: int | None = None) -> str:
    """The report page as one string. ``trials`` are those to show (see select_trials_for_viewer)."""
    if not isinstance(report, Mapping):
        raise DataError(f"report must be a dict (the content of report.json), got {type(report).__name__}")
    heatmaps = render_heatmaps(report)
    records = [viewer_record(t) for t in trials]
    try:
        trials_json = script_json(records)
    except ValueError as e:
        raise DataError(f"trials hold a value JSON cannot carry ({e}); use None for missing numbers") from e
    js = _static("viewer.js")
    raw_meta = report.get("meta") if isinstance(report.get("meta"), Mapping) else {}
    meta = {k: raw_meta.get(k) for k in ("run_dir", "created_at", "vidaudit_version")}
    page = _environment().get_template("report.html.j2").render(
        csp=content_security_policy(js),
        css=Markup(_static("report.css")),
        js=Markup(js),
        meta=meta,
        models=_names(report, "model", heatmaps),
        conditions=_names(report, "condition", heatmaps),
        notes=notes_list(report),
        tables=all_tables(report),
        heatmap_groups=_group_heatmaps(heatmaps),
        trials_json=trials_json,
        n_trials=len(records),
        n_trials_total=n_trials_total,
    )
    return page
