"""Moved: the report's typed records are part of the contract on the ground floor, ``vidaudit.core.contract.report``.

Kept as a re-export so that code written against the old path keeps working; new code imports
``vidaudit.core.contract`` (or ``vidaudit.core.contract.report``).
"""

from vidaudit.core.contract.report import (
    REPORT_SCHEMA_VERSION,
    Figure,
    GridFigure,
    LineFigure,
    Report,
    Section,
    Series,
    SuiteReport,
    Table,
    Timeline,
    TimelineEvent,
    ViewerColumn,
    ViewerFrame,
    ViewerSpec,
    ViewerTrial,
)

__all__ = ["REPORT_SCHEMA_VERSION", "Figure", "GridFigure", "LineFigure", "Report", "Section", "Series",
           "SuiteReport", "Table", "Timeline", "TimelineEvent", "ViewerColumn", "ViewerFrame", "ViewerSpec",
           "ViewerTrial"]
