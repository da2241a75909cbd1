"""The built-in synthetic source: clips whose answers are exact functions of their pixels.

A clip is a sequence of segments; each segment holds one flat shape of one colour at the centre of a
grey frame for ``hold`` source frames. Within a clip every shape and every colour differs, so "the red
circle" names one segment. The questions (NExT-QA type codes in brackets) need information spread over
frames: what came right after / right before an object [TN / TP], the colour of a shape [DO], how many
shapes were shown [DC]. Everything the integrating observer's reader needs (the palette, the shape
masks) comes from this module, so the reader matches the generator's templates exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from vidaudit.sdk import PoolFactory, VideoWriter, rng_from, run_jobs
from vidaudit.suites.stress.common import place_at
from vidaudit.suites.stress.cross_frame.nextqa import write_csv

#: name -> RGB; saturated and far apart in hue so the reader separates them after H.264 and masking
PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (230, 40, 40),
    "green": (40, 200, 60),
    "blue": (50, 80, 230),
    "yellow": (235, 220, 40),
    "magenta": (220, 50, 220),
    "cyan": (40, 210, 220),
}
SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "diamond", "cross")
BACKGROUND = (128, 128, 128)
COUNT_WORDS = ("one", "two", "three", "four", "five")
#: template -> NExT-QA type code
TEMPLATES: dict[str, str] = {"after": "TN", "before": "TP", "colour_of": "DO", "count": "DC"}


@dataclass(frozen=True)
class Segment:
    colour: str
    shape: str

    @property
    def text(self) -> str:
        return f"the {self.colour} {self.shape}"

    @property
    def option(self) -> str:
        return f"a {self.colour} {self.shape}"


def shape_mask(shape: str, width: int, height: int) -> np.ndarray:
    """The boolean mask of ``shape`` as the generator draws it (centred, about half the frame height)."""
    m = np.zeros((height, width), np.uint8)
    cx, cy, r = width // 2, height // 2, int(0.28 * min(width, height))
    if shape == "circle":
        cv2.circle(m, (cx, cy), r, 1, -1, lineType=cv2.LINE_8)
    elif shape == "square":
        a = int(r * 0.85)
        m[cy - a : cy + a, cx - a : cx + a] = 1
    elif shape == "triangle":
        pts = np.array([[cx, cy - r], [cx - r, cy + int(0.8 * r)], [cx + r, cy + int(0.8 * r)]], np.int32)
        cv2.fillPoly(m, [pts], 1)
    elif shape == "diamond":
        pts = np.array([[cx, cy - r], [cx + r, cy], [cx, cy + r], [cx - r, cy]], np.int32)
        cv2.fillPoly(m, [pts], 1)
    elif shape == "cross":
        t = max(2, r // 3)
        m[cy - r : cy + r, cx - t : cx + t] = 1
        m[cy - t : cy + t, cx - r : cx + r] = 1
    else:
        raise ValueError(f"unknown shape {shape!r}")
    return m.astype(bool)


def render_frame(seg: Segment, width: int, height: int) -> np.ndarray:
    img = np.empty((height, width, 3), np.uint8)
    img[:] = BACKGROUND
    img[shape_mask(seg.shape, width, height)] = PALETTE[seg.colour]
    return img


@dataclass(frozen=True)
class Clip:
    segments: tuple[Segment, ...]
    hold: int

    @property
    def n_frames(self) -> int:
        return len(self.segments) * self.hold

    def frames(self, width: int, height: int):
        for seg in self.segments:
            f = render_frame(seg, width, height)
            for _ in range(self.hold):
                yield f


def make_clip(index: int, hold: int, seed: int = 0) -> Clip:
    rng = rng_from("stress", "cross_frame", "clip", seed, index)
    n = 3 + int(rng.integers(0, 2))
    shapes = rng.permutation(len(SHAPES))[:n]
    colours = rng.permutation(len(PALETTE))[:n]
    names = list(PALETTE)
    return Clip(tuple(Segment(names[int(c)], SHAPES[int(s)]) for s, c in zip(shapes, colours, strict=True)), hold)


def _objects_distractors(answer: Segment, clip: Clip, rng: np.random.Generator) -> list[str]:
    """Four wrong objects: the clip's other segments first, then drawn objects it does not show."""
    pool = [Segment(c, s).option for c in PALETTE for s in SHAPES]
    others = [s.option for s in clip.segments if s != answer]
    rest = [o for o in pool if o not in others and o != answer.option]
    return (others + [rest[int(i)] for i in rng.permutation(len(rest))])[:4]


def make_question(index: int, template: str, clip: Clip, seed: int = 0) -> dict[str, Any]:
    """A NExT-QA-format row (question, a0..a4, answer index, type) plus the template's public arguments.

    The correct option is at position ``index mod 5`` (``common.place_at``), so over any 5 consecutive items
    every letter is the answer once; the distractors are placed by the drawn rng."""
    rng = rng_from("stress", "cross_frame", "question", seed, index, template)
    segs = clip.segments
    args: dict[str, Any]
    if template in ("after", "before"):
        k = int(rng.integers(0, len(segs) - 1)) + (1 if template == "before" else 0)
        anchor = segs[k]
        answer = segs[k + 1] if template == "after" else segs[k - 1]
        q = f"What appeared right {template} {anchor.text}?"
        correct, wrong = answer.option, _objects_distractors(answer, clip, rng)
        args = {"anchor": [anchor.colour, anchor.shape]}
    elif template == "colour_of":
        seg = segs[int(rng.integers(0, len(segs)))]
        q = f"What colour was the {seg.shape}?"
        others = [c for c in PALETTE if c != seg.colour]
        correct, wrong = seg.colour, [others[int(i)] for i in rng.permutation(len(others))[:4]]
        args = {"shape": seg.shape}
    elif template == "count":
        q = "How many shapes appeared in the video, one after another?"
        correct = COUNT_WORDS[len(segs) - 1]
        wrong, args = [w for w in COUNT_WORDS if w != correct], {}
    else:
        raise ValueError(f"unknown template {template!r}")
    options = place_at(correct, wrong, index % 5, rng)
    return {
        "question": q,
        "options": options,
        "answer": options.index(correct),
        "type": TEMPLATES[template],
        "template": template,
        "template_args": args,
    }


# --------------------------------------------------------------------------- the set on disk


def synthetic_clip_job(index: int, hold: int, fps: float, width: int, height: int, path: str) -> None:
    """Encode synthetic clip ``index`` to ``path`` (a pure function of its arguments)."""
    clip = make_clip(index, hold)
    with VideoWriter(path, fps, width, height) as w:
        for f in clip.frames(width, height):
            w.write(f)


TEMPLATE_ORDER = ("after", "colour_of", "before", "count")


def synthetic_rows(n_items: int, hold: int) -> list[dict[str, Any]]:
    """The synthetic set's NExT-QA rows (no video written): one clip per item (``hold`` frames a segment),
    templates cycling after / colour_of / before / count so both splits are filled, the correct option at
    ``item mod 5``."""
    return [
        {
            "video": f"synth{i:03d}",
            "qid": "0",
            **make_question(i, TEMPLATE_ORDER[i % len(TEMPLATE_ORDER)], make_clip(i, hold)),
        }
        for i in range(n_items)
    ]


def write_synthetic(
    root: Path,
    n_items: int,
    *,
    hold: int,
    fps: float,
    width: int,
    height: int,
    workers: int | None = 1,
    pool: PoolFactory | None = None,
) -> Path:
    """The synthetic set in NExT-QA format under ``root`` (``questions.csv`` + ``videos/``, ``synthetic_rows``);
    a clip already there is kept."""
    (root / "videos").mkdir(parents=True, exist_ok=True)
    jobs = [
        (i, hold, fps, width, height, str(root / "videos" / f"synth{i:03d}.mp4"))
        for i in range(n_items)
        if not (root / "videos" / f"synth{i:03d}.mp4").is_file()
    ]
    run_jobs(synthetic_clip_job, jobs, workers=workers, pool=pool)
    return write_csv(root / "questions.csv", synthetic_rows(n_items, hold))
