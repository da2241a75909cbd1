"""Scoring a camera-motion answer with the strict option parser (never "the last letter anywhere")."""

from __future__ import annotations

from vidaudit.sdk import ScoreInput, TrialScore
from vidaudit.suites.stress.camera_motion.options import DIRECTION_OF, LETTERS
from vidaudit.suites.stress.common import score_option


def score_trial(trial: ScoreInput) -> TrialScore:
    return score_option(trial, LETTERS, DIRECTION_OF, "predicted_motion")
