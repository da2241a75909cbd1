"""Scoring a lane-change answer: the strict option parser over A (lane change) and B (no change)."""

from __future__ import annotations

from vidaudit.sdk import ScoreInput, TrialScore
from vidaudit.suites.stress.common import score_option
from vidaudit.suites.stress.lane_change.options import LABEL_OF, LETTERS


def score_trial(trial: ScoreInput) -> TrialScore:
    return score_option(trial, LETTERS, LABEL_OF, "predicted_label")
