"""The contract every stage and every suite shares, on the ground floor (it imports no stage).

This is the public surface for suite authors, in one place:

- the suite protocol (``suite``): :class:`Suite`, its declared :class:`Capabilities`, :class:`Prompt`,
  :class:`SuiteInfo`, :data:`ObservedFrame`, and the lookup :func:`get_suite`;
- what a suite's ``score`` returns and ``scores.jsonl`` holds (``records``): :class:`TrialScore`,
  :class:`ParseResult`, :class:`ScoreRecord`;
- what a suite's ``aggregate`` and ``viewer_trial`` return and ``report.json`` holds (``report``):
  :class:`SuiteReport`, :class:`Section`, :class:`Table`, :class:`GridFigure`, :class:`LineFigure`,
  :class:`Series`, :class:`ViewerSpec`, :class:`ViewerColumn`, :class:`ViewerTrial`, :class:`Timeline`,
  :class:`TimelineEvent`, :class:`ViewerFrame`, and the whole :class:`Report`.

The stages (``run``, ``score``, ``report``) and the suites import these from here; the old paths
(``vidaudit.suites.base``, ``vidaudit.score.records``, ``vidaudit.report.model``) re-export them.
"""

from vidaudit.core.contract.records import SCORE_SCHEMA_VERSION, ParseResult, ScoreRecord, TrialScore
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
from vidaudit.core.contract.suite import Capabilities, ObservedFrame, Prompt, Suite, SuiteInfo, check_suite
from vidaudit.core.registry import get_suite

__all__ = [
    "REPORT_SCHEMA_VERSION", "SCORE_SCHEMA_VERSION", "Capabilities", "Figure", "GridFigure", "LineFigure",
    "ObservedFrame", "ParseResult", "Prompt", "Report", "ScoreRecord", "Section", "Series", "Suite", "SuiteInfo",
    "SuiteReport", "Table", "Timeline", "TimelineEvent", "TrialScore", "ViewerColumn", "ViewerFrame", "ViewerSpec",
    "ViewerTrial", "check_suite", "get_suite",
]
