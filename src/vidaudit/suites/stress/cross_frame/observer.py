"""The integrating observer: the union of the frames sent, strip by strip, read with the generator's templates.

It looks at pixels only. Masked areas are the fill colour (black, which no synthetic stimulus uses), so
a pixel whose brightest channel exceeds ``VISIBLE_MIN`` is visible in that frame; the running
reconstruction keeps, for every pixel, its last visible value. Each reconstructed frame is read with the
synthetic source's own templates (the palette and the shape masks of ``synthetic.py``); the sequence of
objects read is the clip's timeline, from which the question's template is answered. On a raw video the
union is the frame itself. It has no reader for real NExT-QA questions.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vidaudit.sdk import ConfigError
from vidaudit.suites.stress.common import LETTERS, mcq_answer_text
from vidaudit.suites.stress.cross_frame import synthetic
from vidaudit.suites.stress.cross_frame.options import ABSTAIN

VISIBLE_MIN = 48  # a masked pixel decodes near 0; the grey background is 128
SATURATION_MIN = 60  # max - min channel: a shape's pixel (the background and the fill have ~0)
IOU_MIN = 0.6


@functools.lru_cache(maxsize=64)
def _templates(width: int, height: int) -> tuple[tuple[str, np.ndarray], ...]:
    return tuple((s, synthetic.shape_mask(s, width, height)) for s in synthetic.SHAPES)


_PALETTE = np.array(list(synthetic.PALETTE.values()), np.float32)
_NAMES = list(synthetic.PALETTE)


def integrate(frames: Sequence[tuple[int, float, np.ndarray]]) -> list[np.ndarray]:
    """The running union of ``frames`` in time order: one reconstruction after each frame."""
    ordered = sorted(frames, key=lambda f: (f[1], f[0]))
    acc: np.ndarray | None = None
    out = []
    for _, _, img in ordered:
        if acc is None or acc.shape != img.shape:
            acc = np.zeros_like(img)
        vis = img.max(axis=2) > VISIBLE_MIN
        acc[vis] = img[vis]
        out.append(acc.copy())
    return out


def read_object(img: np.ndarray) -> synthetic.Segment | None:
    """The one shape in ``img`` (colour and shape) by template IoU, or None when none fits."""
    h, w = img.shape[:2]
    i16 = img.astype(np.int16)
    fg = (i16.max(axis=2) - i16.min(axis=2)) > SATURATION_MIN
    if fg.sum() < 0.2 * min(t.sum() for _, t in _templates(w, h)):
        return None
    best, best_iou = None, 0.0
    for name, t in _templates(w, h):
        iou = float((fg & t).sum()) / float((fg | t).sum())
        if iou > best_iou:
            best, best_iou = name, iou
    if best is None or best_iou < IOU_MIN:
        return None
    colour = np.median(img[fg].astype(np.float32), axis=0)
    c = _NAMES[int(np.argmin(((_PALETTE - colour) ** 2).sum(axis=1)))]
    return synthetic.Segment(c, best)


def read_timeline(frames: Sequence[tuple[int, float, np.ndarray]]) -> list[synthetic.Segment]:
    """The objects shown, in order: readings of the reconstructions, runs collapsed, unreadable ones dropped."""
    runs: list[list[Any]] = []  # [object, consecutive readings]
    for rec in integrate(frames):
        obj = read_object(rec)
        if runs and runs[-1][0] == obj:
            runs[-1][1] += 1
        else:
            runs.append([obj, 1])
    # While a reconstruction mixes two segments (for a coverage window after a change) it may read as a
    # third object, once. When segments are seen more than 3 times each, a single reading is such a blend.
    longest = max((n for o, n in runs if o is not None), default=0)
    min_run = 2 if longest > 3 else 1
    seq: list[synthetic.Segment] = []
    for obj, n in runs:
        if obj is not None and n >= min_run and (not seq or seq[-1] != obj):
            seq.append(obj)
    return seq


def answer_template(template: str, args: Mapping[str, Any], timeline: Sequence[synthetic.Segment]) -> str | None:
    """The correct option's text for a synthetic template, from the timeline read; None if it cannot say."""
    if template in ("after", "before"):
        anchor = synthetic.Segment(*args.get("anchor", ("", "")))
        if anchor not in timeline:
            return None
        k = list(timeline).index(anchor) + (1 if template == "after" else -1)
        return timeline[k].option if 0 <= k < len(timeline) else None
    if template == "colour_of":
        hits = [s.colour for s in timeline if s.shape == args.get("shape")]
        return hits[0] if len(hits) == 1 else None
    if template == "count":
        n = len(timeline)
        return synthetic.COUNT_WORDS[n - 1] if 1 <= n <= len(synthetic.COUNT_WORDS) else None
    return None


def observe(frames: Sequence[tuple[int, float, np.ndarray]], metadata: Mapping[str, Any]) -> str:
    template = metadata.get("template")
    if metadata.get("source") != "synthetic" or not template:
        raise ConfigError(
            "the integrating observer has no reader for real NExT-QA questions (it reads only the "
            "synthetic source's templates); run it on `generate stress --probe cross_frame` without "
            "--source"
        )
    options = list(metadata.get("options") or [])
    text = answer_template(str(template), metadata.get("template_args") or {}, read_timeline(frames))
    if text is not None and text in options:
        i = options.index(text)
        return mcq_answer_text(LETTERS[i], text)
    if ABSTAIN in options:
        i = options.index(ABSTAIN)
        return mcq_answer_text(LETTERS[i], ABSTAIN)
    return "The frames do not show enough to answer."
