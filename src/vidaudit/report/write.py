"""write_report: report.json, report.md and report.html side by side, each written atomically."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vidaudit.core.errors import DataError
from vidaudit.core.fileio import write_json_atomic, write_text_atomic
from vidaudit.report.html import render_html
from vidaudit.report.markdown import render_markdown


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


def write_report(report: dict[str, Any], trials: Sequence[Mapping[str, Any]], out_dir: Path,
                 n_trials_total: int | None = None) -> dict[str, Path]:
    """Write the three report files into ``out_dir`` and return their paths keyed "json", "md", "html".

    ``trials`` are the trials the viewer shows; pass the output of select_trials_for_viewer
    (and the run's trial count as ``n_trials_total``) to keep the page small.
    """
    if not isinstance(report, dict):
        raise DataError(f"report must be a dict (the content of report.json), got {type(report).__name__}")
    _check_json_safe(report)
    try:
        json.dumps(report, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise DataError(f"report holds a value JSON cannot carry ({e}); convert it to str, number, list or dict") from e
    # Render everything before writing anything, so a bad input leaves no partial report behind.
    html = render_html(report, trials, n_trials_total=n_trials_total)
    markdown = render_markdown(report)
    out_dir = Path(out_dir)
    paths = {"json": out_dir / "report.json", "md": out_dir / "report.md", "html": out_dir / "report.html"}
    write_json_atomic(paths["json"], report)
    write_text_atomic(paths["md"], markdown)
    write_text_atomic(paths["html"], html)
    return paths
