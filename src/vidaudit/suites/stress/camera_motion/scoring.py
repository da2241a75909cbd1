"""Scoring a camera-motion answer with the strict option parser (never "the last letter anywhere")."""

from __future__ import annotations

from vidaudit.sdk import Sample, TrialScore
from vidaudit.suites.stress.camera_motion.options import DIRECTION_OF, LETTERS
from vidaudit.suites.stress.common import score_option


def score_trial(sample: Sample, text: str | None, status: str) -> TrialScore:
    return score_option(sample, text, status, LETTERS, DIRECTION_OF, "predicted_motion")
