"""Reports: report.json, report.md and a self-contained report.html with heatmaps and a trace viewer."""

from vidaudit.report.heatmaps import Heatmap, render_heatmap, render_heatmaps
from vidaudit.report.html import render_html
from vidaudit.report.markdown import render_markdown
from vidaudit.report.viewer import select_trials_for_viewer, thumbnail_jpeg_b64
from vidaudit.report.write import write_report

__all__ = [
    "Heatmap",
    "render_heatmap",
    "render_heatmaps",
    "render_html",
    "render_markdown",
    "select_trials_for_viewer",
    "thumbnail_jpeg_b64",
    "write_report",
]
