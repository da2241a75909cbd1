"""Reports: report.json, report.md and a self-contained report.html with figures and a trace viewer.

Generic: a suite describes its report as :class:`Section` objects (tables, grid and line figures,
notes) and its viewer as a :class:`ViewerSpec` plus :class:`ViewerTrial` objects; nothing here
knows a suite, and no module here imports ``vidaudit.suites``.
"""

from vidaudit.core.contract.report import (
    EventTimeline,
    GridFigure,
    LineFigure,
    Report,
    Section,
    Series,
    SuiteReport,
    Table,
    TimelineEvent,
    ViewerColumn,
    ViewerFrame,
    ViewerSpec,
    ViewerTrial,
)
from vidaudit.report.heatmaps import RenderedFigure, render_figure, render_grid, render_line
from vidaudit.report.html import render_html, script_json
from vidaudit.report.markdown import render_markdown
from vidaudit.report.viewer import attach_frames, select_trials_for_viewer, thumbnail_jpeg_b64, viewer_payload
from vidaudit.report.write import make_report, report_json, write_report

__all__ = [
    "GridFigure",
    "LineFigure",
    "RenderedFigure",
    "Report",
    "Section",
    "Series",
    "SuiteReport",
    "Table",
    "EventTimeline",
    "TimelineEvent",
    "ViewerColumn",
    "ViewerFrame",
    "ViewerSpec",
    "ViewerTrial",
    "attach_frames",
    "make_report",
    "render_figure",
    "render_grid",
    "render_html",
    "render_line",
    "render_markdown",
    "report_json",
    "script_json",
    "select_trials_for_viewer",
    "thumbnail_jpeg_b64",
    "viewer_payload",
    "write_report",
]
