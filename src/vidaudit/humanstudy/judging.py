"""The judge hook for free-text human answers.

``judge_for_run(run_dir)`` is THE hook: it returns the run's configured judge as a callable
``(suite, sample, text) -> TrialScore``, or None when the run configures none. vidaudit's judge
mechanism (``--judge SPEC``) is being built separately; until it lands no run configures a judge, so this
returns None and free-text answers that the suite's own parser cannot read are counted as "not judged"
(see ``scoring.py``). The judge work replaces the body of this function, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from vidaudit.core.types import Sample
from vidaudit.score.records import TrialScore
from vidaudit.suites.base import Suite

Judge = Callable[[Suite, Sample, str], TrialScore]


def judge_for_run(run_dir: Path) -> Judge | None:
    """The run's judge of free-text answers; None: no judge is configured (today, always)."""
    return None
