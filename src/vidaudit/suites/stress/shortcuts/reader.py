"""A pixel reader for the synthetic procedures: which step each frame sent shows, by template matching.

Each step's label is drawn in white across the top of its frames (``procedures.step_frame``). The
reader renders the label of every step of the procedure at the frame's size and correlates the
"whiteness" (the smallest of the three channels: high only on white text) of the frame's top band with
each template's (normalised cross-correlation, robust to the encoder's blur of thin strokes). A frame
whose best match is below ``MATCH_NCC`` shows none of them (a blank frame, or another procedure's
step); so does one whose best match does not beat the runner-up by ``MARGIN``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from vidaudit.sdk import ConfigError
from vidaudit.suites.stress.procedures import step_frame, steps_of
from vidaudit.suites.stress.shortcuts.questions import ABSTAIN, LETTERS, sequence_text

MATCH_NCC = 0.8
MARGIN = 0.15
BAND = 0.42  # the top share of the frame that holds the label


def _whiteness(rgb: np.ndarray) -> np.ndarray:
    """The top band's smallest channel, centred and scaled to unit norm (zeros for a flat band)."""
    band = rgb[: max(1, int(rgb.shape[0] * BAND))].min(axis=-1).astype(np.float64)
    band -= band.mean()
    n = np.linalg.norm(band)
    return band / n if n > 1e-9 else np.zeros_like(band)


@lru_cache(maxsize=256)
def _templates(procedure: str, width: int, height: int) -> tuple[tuple[str, np.ndarray], ...]:
    return tuple((s, _whiteness(step_frame(procedure, s, 0.0, width, height))) for s in steps_of(procedure))


def read_step(rgb: np.ndarray, procedure: str) -> str | None:
    """The step a frame shows, or None when no step's label matches well enough."""
    h, w = rgb.shape[:2]
    x = _whiteness(rgb)
    if not x.any():
        return None
    scores = sorted(((float((x * t).sum()), step) for step, t in _templates(procedure, w, h)), reverse=True)
    best, step = scores[0]
    runner_up = scores[1][0] if len(scores) > 1 else -1.0
    return step if best >= MATCH_NCC and best - runner_up >= MARGIN else None


def answer_from_frames(frames: Sequence[tuple[int, float, np.ndarray]], metadata: Mapping[str, Any]) -> str:
    """The letter the frames support, formatted as the D.5 answer ("Answer with just the letter")."""
    procedure = metadata.get("procedure")
    if metadata.get("source") != "synthetic" or not procedure:
        raise ConfigError(
            "the shortcuts reader reads only vidaudit's synthetic procedures (no reader exists for a YouCook2 video)"
        )
    options = list(metadata.get("options") or [])
    q = metadata.get("question_kind")
    ordered = sorted(frames, key=lambda f: (f[1], f[0]))
    labels = [read_step(img, str(procedure)) for _, _, img in ordered]
    seen = [x for x in labels if x is not None]
    if len(seen) * 2 < len(labels) or not seen:  # most frames show no step of this procedure
        return LETTERS[options.index(ABSTAIN)] if ABSTAIN in options else "I cannot tell."
    if q == "first":
        target = seen[0]
    elif q == "last":
        target = seen[-1]
    else:
        target = sequence_text(list(dict.fromkeys(seen)))
    return LETTERS[options.index(target)] if target in options else "I cannot tell."
