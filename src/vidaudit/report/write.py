"""write_report: report.json, report.md and report.html side by side, each written atomically.

A trace viewer too big for one page also gets ``viewer/NNN.js`` beside them (see
:mod:`vidaudit.report.viewer_files`), written into a temporary folder and renamed into place.

``make_report`` adds the provenance (vidaudit version, git revision, creation time) to what a
suite's aggregation returned; ``write_report`` validates the :class:`Report`, renders all three
files, writes each under a temporary name and only then renames them all into place together
(:func:`vidaudit.core.fileio.replace_together`): a bad input, a full disk or a failed rename leaves
the previous report.json / .md / .html (and viewer/) exactly as they were, never a mix of old and new.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vidaudit import __version__
from vidaudit.core.contract.report import Report, SuiteReport, ViewerSpec, ViewerTrial
from vidaudit.core.errors import DataError
from vidaudit.core.fileio import stage_text, written_together
from vidaudit.core.versions import source_revision
from vidaudit.report.html import render_html
from vidaudit.report.markdown import render_markdown
from vidaudit.report.viewer_files import (
    CHUNK_BYTES,
    INLINE_MAX_BYTES,
    VIEWER_DIR,
    check_viewer_dir,
    stage_viewer_dir,
    viewer_data,
)


def make_report(
    suite: str,
    suite_report: SuiteReport,
    *,
    models: Sequence[str] = (),
    conditions: Sequence[str] = (),
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    source: Mapping[str, str] | None = None,
    n_records: int = 0,
    created_at: str | None = None,
) -> Report:
    """A Report from a suite's aggregation plus the provenance the report stage knows."""
    revision, dirty = source_revision()
    return Report(
        suite=suite,
        vidaudit_version=__version__,
        git_revision=revision,
        git_dirty=dirty,
        created_at=created_at or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        source=dict(source or {}),
        models=list(models),
        conditions=list(conditions),
        settings={str(k): dict(v) for k, v in (settings or {}).items()},
        n_records=n_records,
        notes=list(suite_report.notes),
        sections=list(suite_report.sections),
        results=dict(suite_report.results),
    )


def _check_json_safe(value: Any, where: str = "report") -> None:
    """report.json must be strict JSON: NaN/inf are not JSON, and a missing number is None."""
    if isinstance(value, float) and not math.isfinite(value):
        raise DataError(f"{where} is {value!r}; report.json must hold strict JSON, use None for a missing number")
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise DataError(f"{where} has the non-string key {k!r}; JSON keys are strings (e.g. '0.5')")
            _check_json_safe(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json_safe(v, f"{where}[{i}]")


def report_json(report: Report) -> str:
    """The text of report.json: the validated Report as strict JSON (no NaN), keys sorted."""
    if not isinstance(report, Report):
        raise DataError(
            f"a report must be a Report (vidaudit.core.contract.report), got {type(report).__name__}; "
            "build one with make_report or Report.model_validate"
        )
    data = report.model_dump(mode="python")
    _check_json_safe(data)
    try:
        text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise DataError(f"report holds a value JSON cannot carry ({e}); convert it to str, number, list or dict") from e
    try:
        Report.model_validate_json(text)  # what we write is what a reader can load back
    except ValidationError as e:
        raise DataError(f"report.json would not validate as a Report: {e}") from e
    return text + "\n"


def displayable(text: str) -> str:
    """Text a UTF-8 file can hold: a lone surrogate (which a model may return, and the store keeps
    losslessly) is shown as U+FFFD; a valid surrogate pair becomes its character."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def write_report(
    report: Report,
    trials: Sequence[ViewerTrial],
    viewer: ViewerSpec,
    out_dir: Path,
    n_trials_total: int | None = None,
    *,
    inline_max_bytes: float = INLINE_MAX_BYTES,
    chunk_bytes: int = CHUNK_BYTES,
    figures: str = "svg",
    progress: Callable[[str, int, int | None], None] | None = None,
) -> dict[str, Path]:
    """Write the three report files into ``out_dir`` and return their paths keyed "json", "md", "html".

    ``trials`` are the trials the viewer shows (pass the output of select_trials_for_viewer, and
    the run's trial count as ``n_trials_total``, to keep the page small); ``viewer`` is the suite's
    ViewerSpec. When their JSON exceeds ``inline_max_bytes`` their details go to side files of
    about ``chunk_bytes`` in ``out_dir/viewer/``, returned as "viewer" (``float("inf")``: always
    one self-contained page); otherwise a stale ``viewer/`` folder is removed. ``figures``: ``svg``
    (drawn in the page from the numbers) or ``png`` (matplotlib pictures, for papers).
    """
    # Render everything before writing anything, so a bad input leaves no partial report behind.
    out_dir = Path(out_dir)
    check_viewer_dir(out_dir)
    json_text = displayable(report_json(report))
    data = viewer_data(trials, viewer, inline_max_bytes=inline_max_bytes, chunk_bytes=chunk_bytes)
    data.chunks = [displayable(c) for c in data.chunks]
    html = displayable(
        render_html(
            report, trials, viewer, n_trials_total=n_trials_total, data=data, figures=figures, progress=progress
        )
    )
    if progress is not None:
        progress("writing", 0, None)
    markdown = displayable(render_markdown(report))
    paths = {"json": out_dir / "report.json", "md": out_dir / "report.md", "html": out_dir / "report.html"}
    # every file on disk under a temporary name first, then all renamed together (or none)
    with written_together(f"the report into {out_dir}", "report files", "run the report again") as staged:
        out_dir.mkdir(parents=True, exist_ok=True)
        staged += [
            (stage_text(paths["json"], json_text), paths["json"]),
            (stage_text(paths["md"], markdown), paths["md"]),
        ]
        staged.append((stage_viewer_dir(out_dir, data), out_dir / VIEWER_DIR))  # before the page that reads it
        staged.append((stage_text(paths["html"], html), paths["html"]))
    if data.chunked:
        paths["viewer"] = out_dir / VIEWER_DIR
    return paths
