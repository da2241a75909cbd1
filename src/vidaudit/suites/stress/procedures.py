"""Synthetic procedural videos: each step a distinct, labelled visual action, in segments of known length.

The language-shortcut and temporal-expectation probes need procedures whose *text* implies an order
(the language prior: one cracks eggs before whisking them) and videos whose pixels show another. Each
procedure here lists its steps in their canonical order; ``render_procedure`` draws any order of them,
one segment per step: a background colour and a moving glyph that belong to the step, and the step's
label written across the frame (so the step is readable from pixels alone, by a VLM or by template
matching). Segment lengths vary (annotated, variable-length segments as in YouCook2).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vidaudit.sdk import (
    ConfigError,
    PoolFactory,
    Sample,
    VideoWriter,
    apply_perturbation,
    draw,
    guard_replace,
    rng_from,
    run_jobs,
    video_ref,
)

#: procedure -> its steps in canonical order (the order a text-only prior predicts)
PROCEDURES: dict[str, tuple[str, ...]] = {
    "omelette": ("crack the eggs", "whisk the eggs", "pour into the pan", "fold the omelette", "serve on a plate"),
    "tea": ("boil the water", "put a tea bag in the cup", "pour the hot water", "add milk", "stir the tea"),
    "pancakes": ("mix flour and milk", "heat the pan", "pour the batter", "flip the pancake", "add syrup"),
    "salad": ("wash the lettuce", "chop the tomatoes", "slice the cucumber", "toss with dressing", "serve the salad"),
    "sandwich": ("slice the bread", "spread the butter", "add the cheese", "close the sandwich", "cut it in half"),
    "pasta": ("boil the water", "add the pasta", "drain the pasta", "add the sauce", "grate the cheese"),
    "planting": ("dig a hole", "place the seed", "cover with soil", "water the soil", "watch it sprout"),
    "laundry": ("sort the clothes", "load the machine", "add detergent", "start the wash", "hang to dry"),
}

#: background colours of step slots (by the step's canonical position) and glyph kinds
_BACKGROUNDS = ((196, 64, 52), (52, 120, 196), (60, 160, 80), (200, 150, 40), (140, 70, 170), (40, 160, 170))
_GLYPHS = ("disc", "square", "triangle", "diamond", "bar", "ring")


@dataclass(frozen=True)
class ProcedurePreset:
    """A preset of a probe that renders the synthetic procedures (expectation, shortcuts): the frame size and
    rate, how many procedures and seeds, and the range a step's duration is drawn from."""

    name: str
    width: int
    height: int
    fps: float
    procedures: int
    seeds: int
    step_s: tuple[float, float]


@dataclass(frozen=True)
class Segment:
    """One step as it appears in a rendered video: [start_s, end_s) and frames [start_frame, end_frame)."""

    step: str
    canonical_index: int
    start_frame: int
    end_frame: int
    start_s: float
    end_s: float


def steps_of(procedure: str) -> tuple[str, ...]:
    if procedure not in PROCEDURES:
        raise ConfigError(f"unknown procedure {procedure!r}; choose from {', '.join(PROCEDURES)}")
    return PROCEDURES[procedure]


def _glyph(img: np.ndarray, kind: str, x: float, y: float, r: float) -> None:
    white = (245, 245, 245)
    if kind == "disc":
        draw.circle(img, (x, y), r, white)
    elif kind == "ring":
        draw.circle(img, (x, y), r, white, thickness=max(2, int(r / 4)))
    elif kind == "square":
        draw.polygon(img, np.array([[x - r, y - r], [x + r, y - r], [x + r, y + r], [x - r, y + r]]), white)
    elif kind == "triangle":
        draw.polygon(img, np.array([[x, y - r], [x + r, y + r], [x - r, y + r]]), white)
    elif kind == "diamond":
        draw.polygon(img, np.array([[x, y - r], [x + r, y], [x, y + r], [x - r, y]]), white)
    else:  # bar
        draw.polygon(
            img,
            np.array(
                [[x - 1.6 * r, y - r / 3], [x + 1.6 * r, y - r / 3], [x + 1.6 * r, y + r / 3], [x - 1.6 * r, y + r / 3]]
            ),
            white,
        )


def step_frame(procedure: str, step: str, phase: float, width: int, height: int) -> np.ndarray:
    """One frame of ``step`` at ``phase`` in [0, 1): its colour, its label, its glyph moving left to right."""
    steps = steps_of(procedure)
    if step not in steps:
        raise ConfigError(f"{step!r} is not a step of {procedure}")
    k = steps.index(step)
    img = np.empty((height, width, 3), np.uint8)
    img[:] = _BACKGROUNDS[k % len(_BACKGROUNDS)]
    scale = max(0.3, width / 560)
    draw.text_centre(
        img, step.upper(), (width / 2, height * 0.22), scale, (255, 255, 255), thickness=max(1, round(scale * 2))
    )
    r = height * 0.09
    x = r + phase * (width - 2 * r)
    _glyph(img, _GLYPHS[k % len(_GLYPHS)], x, height * 0.62, r)
    return img


def segment_frames(durations_s: Sequence[float], fps: float) -> list[tuple[int, int]]:
    """Frame ranges of consecutive segments of the given lengths (each at least one frame)."""
    out, t = [], 0
    for d in durations_s:
        n = max(1, round(d * fps))
        out.append((t, t + n))
        t += n
    return out


def render_procedure(
    procedure: str,
    order: Sequence[int],
    durations_s: Sequence[float],
    out: Path,
    *,
    width: int,
    height: int,
    fps: float,
) -> list[Segment]:
    """Write the steps ``order`` (canonical indices) with the given segment lengths; returns the segments."""
    steps = steps_of(procedure)
    if len(order) != len(durations_s):
        raise ConfigError(f"{len(order)} steps but {len(durations_s)} durations")
    if sorted(set(order)) != sorted(order) or any(not 0 <= j < len(steps) for j in order):
        raise ConfigError(f"order {list(order)} is not a selection of distinct steps of {procedure}")
    ranges = segment_frames(durations_s, fps)
    segs = []
    with VideoWriter(out, fps, width, height) as w:
        for j, (a, b) in zip(order, ranges, strict=True):
            for i in range(a, b):
                w.write(step_frame(procedure, steps[j], (i - a) / max(1, b - a), width, height))
            segs.append(Segment(steps[j], j, a, b, round(a / fps, 6), round(b / fps, 6)))
    return segs


@dataclass(frozen=True)
class RenderedProcedure:
    """A procedure rendered in canonical order: ``DIR/sources/PROC-sSEED-WxH.mp4`` and its segments."""

    name: str
    procedure: str
    video: Path
    steps: tuple[str, ...]
    segments: tuple[tuple[float, float], ...]
    duration_s: float


def render_source_job(
    procedure: str, seed: int, step_s: tuple[float, float], out: str, width: int, height: int, fps: float, stream: str
) -> RenderedProcedure:
    """Procedure ``procedure`` seed ``seed`` in canonical order, each step's length drawn uniformly from
    ``step_s`` by ``rng_from("stress", stream, procedure, seed)``, written to ``OUT/sources/``."""
    steps = PROCEDURES[procedure]
    rng = rng_from("stress", stream, procedure, seed)
    durs = [round(float(rng.uniform(*step_s)), 3) for _ in steps]
    path = Path(out) / "sources" / f"{procedure}-s{seed}-{width}x{height}.mp4"
    segs = render_procedure(procedure, list(range(len(steps))), durs, path, width=width, height=height, fps=fps)
    return RenderedProcedure(
        f"{procedure}-s{seed}", procedure, path, steps, tuple((g.start_s, g.end_s) for g in segs), segs[-1].end_s
    )


def planned_sources(n_procedures: int, n_seeds: int) -> list[tuple[str, int]]:
    """(procedure, seed) of every source ``render_sources`` renders, in its order (a source is named
    ``PROC-sSEED``); lets a preset's answer key be checked without rendering."""
    if n_seeds < 1:
        raise ConfigError(f"--seeds must be at least 1, got {n_seeds}")
    return [(proc, seed) for proc in list(PROCEDURES)[:n_procedures] for seed in range(n_seeds)]


def render_sources(
    pre: ProcedurePreset,
    seeds: int | None,
    out: Path,
    *,
    stream: str,
    workers: int | None = 1,
    pool: PoolFactory | None = None,
) -> list[RenderedProcedure]:
    """``pre``'s first procedures x its seeds (``seeds``, where given, replaces their number), each
    ``render_source_job`` (one stream per probe), run as ``core.jobs`` runs them."""
    (out / "sources").mkdir(parents=True, exist_ok=True)
    jobs = [
        (proc, seed, pre.step_s, str(out), pre.width, pre.height, pre.fps, stream)
        for proc, seed in planned_sources(pre.procedures, pre.seeds if seeds is None else seeds)
    ]
    return run_jobs(render_source_job, jobs, workers=workers, pool=pool)


def apply_job(source: str, spec: Any, out: str, rel: str, seed: int, second_source: str | None = None):
    """One perturbed video: ``video.perturb.apply`` of ``spec`` with ``seed`` into ``out/rel``; returns the op's
    metadata and the file's ``VideoRef`` (a pure function of its arguments, for ``core.jobs``)."""
    res = apply_perturbation(source, spec, Path(out) / rel, seed=seed, second_source=second_source)
    return res.meta, video_ref(out, rel)


@contextmanager
def staging_dir(out: Path) -> Iterator[Path]:
    """A fresh ``OUT/.staging`` to render a dataset into before its replace-guard passes; always removed."""
    staging = out / ".staging"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def publish(
    staging: Path, out: Path, samples: Sequence[Sample], *, force: bool, subdirs: Sequence[str] = ("sources", "videos")
) -> None:
    """Refuse to replace a dataset in ``out`` whose samples differ from ``samples`` (by params, answer and question;
    ``force`` replaces it), then move the staged files into ``out`` (each a rename within one file system)."""
    guard_replace(out, samples, force=force, key=lambda s: (s.params, s.answer, s.question), command="generate stress")
    for sub in subdirs:
        if (staging / sub).is_dir():
            (out / sub).mkdir(exist_ok=True)
            for f in sorted((staging / sub).iterdir()):
                f.replace(out / sub / f.name)
