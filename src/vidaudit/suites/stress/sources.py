"""A user's clips as the sources of the probes that perturb one (``--source DIR``).

Any file the reader handles (rotated phone clips, variable rate, a late first frame, odd sizes, VP9 /
HEVC / AV1 / MPEG-4) is imported once: decoded upright on the player's clock, resampled to a constant
rate at its nominal fps (``video.io.iter_constant_rate``: frame ``k`` is what a player shows at
``k / fps``), cropped to an even size, and re-encoded video-only by vidaudit's writer. Every perturbation
then runs on that copy, so its frame map (``source_frame``) counts the copy's frames, and the copy's
frame ``k`` is the original's frame on screen at ``k / fps``.

A clip may carry labelled actions (``steps``: time-ordered, non-overlapping ``(start_s, end_s, label)``),
from ``DIR/steps.csv`` or from a dataset loader (``suites/stress/datasets.py``); the tasks that need them
(a temporal gap removes one labelled action) use only clips that have at least three.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.types import VideoRef
from vidaudit.run.jobs import PoolFactory, run_jobs
from vidaudit.video.io import (
    VideoWriter,
    iter_constant_rate,
    iter_frames,
    probe,
    read_frames,
    video_ref,
)
from vidaudit.video.perturb.batch import VIDEO_SUFFIXES

STEPS_CSV = "steps.csv"
STEPS_COLUMNS = ("clip", "start_s", "end_s", "label")


@dataclass(frozen=True)
class Step:
    start_s: float
    end_s: float
    label: str


@dataclass(frozen=True)
class Clip:
    """A user's (or a dataset's) clip before import: its file, a name, what it shows, its labelled actions."""

    path: Path
    name: str                                   # unique and file-name safe (the sample ids use it)
    description: str = ""                       # what the clip shows, in words (a dataset's label), or ""
    steps: tuple[Step, ...] = ()                # times on the clip's own clock (from ``start_s``)
    extra: dict[str, object] = field(default_factory=dict)     # the dataset's own fields, kept in params
    start_s: float = 0.0                        # the part of the file to import (a window of a long video)
    end_s: float | None = None


@dataclass(frozen=True)
class ClipSource:
    """An imported clip: the constant-rate, upright copy the probes perturb (the ``Source`` shape they read)."""

    name: str
    procedure: str                              # what it shows (the description, else the file name)
    video: Path
    steps: tuple[str, ...]                      # action labels in time order ("" steps: none)
    segments: tuple[tuple[float, float], ...]   # their (start_s, end_s) on the copy's clock
    duration_s: float
    origin: str                                 # the original file (as given)
    fps: float
    extra: dict[str, object] = field(default_factory=dict)


def safe_name(text: str) -> str:
    out = "".join(c if c.isalnum() or c in "-_" else "-" for c in text).strip("-")
    return out or "clip"


def list_clips(folder: Path) -> list[Path]:
    """The folder's video files (by suffix), sorted by name; a ConfigError when it is not a folder or holds none."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"--source {folder} is not a folder; pass a folder of video clips")
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in VIDEO_SUFFIXES)
    if not files:
        raise DataError(f"--source {folder} holds no video file ({', '.join(sorted(VIDEO_SUFFIXES))})")
    return files


def is_clip(path: Path) -> bool:
    return path.suffix.lower() in VIDEO_SUFFIXES


@dataclass(frozen=True)
class Still:
    """One frame of a clip as a player shows it: upright RGB, the time asked and the frame on screen then."""

    image: np.ndarray
    t_s: float
    frame: int


def frame_on_screen(path: Path, t_s: float | None = None) -> Still:
    """The frame a player shows at ``t_s`` on the clip's presentation clock (default: the middle of the clip,
    ``duration / 2``), upright: the reader's ``Timeline`` picks it by presentation time (rotation, variable rate
    and a late first frame included), never by index arithmetic. A time outside the clip is a DataError."""
    info = probe(path)       # a file that is not a usable video is a DataError naming it
    clock = info.timeline
    t = clock.duration_s / 2 if t_s is None else float(t_s)
    if not 0 <= t < clock.duration_s:
        raise DataError(f"{path}: no frame at {t:g} s; the clip lasts {clock.duration_s:g} s (--set frame_s=T "
                        "with 0 <= T < its duration)")
    i = clock.on_screen(t)
    return Still(read_frames(path, [i])[0], t, i)


def read_steps(path: Path, names: Sequence[str]) -> dict[str, tuple[Step, ...]]:
    """``steps.csv`` (columns clip, start_s, end_s, label; one row per action): each clip's actions in time
    order. Every problem is collected and reported by line: an unknown column or clip, a bad time, an empty
    label, overlapping actions."""
    problems: list[str] = []
    rows: dict[str, list[tuple[int, Step]]] = {}
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        cols = tuple(reader.fieldnames or ())
        if set(cols) != set(STEPS_COLUMNS):
            raise DataError(f"{path}: the header must be exactly {', '.join(STEPS_COLUMNS)} (got {', '.join(cols)})")
        for line, r in enumerate(reader, start=2):
            clip = (r["clip"] or "").strip()
            if clip not in names:
                problems.append(f"line {line}: clip {clip!r} is not a video file of the folder")
                continue
            try:
                a, b = float(r["start_s"]), float(r["end_s"])
            except (TypeError, ValueError):
                problems.append(f"line {line}: start_s/end_s must be numbers, got {r['start_s']!r}, {r['end_s']!r}")
                continue
            if not 0 <= a < b:
                problems.append(f"line {line}: needs 0 <= start_s < end_s, got {a:g}, {b:g}")
                continue
            label = (r["label"] or "").strip()
            if not label:
                problems.append(f"line {line}: empty label")
                continue
            rows.setdefault(clip, []).append((line, Step(a, b, label)))
    out = {}
    for clip, items in rows.items():
        items.sort(key=lambda x: x[1].start_s)
        for (_, s), (line, t) in zip(items, items[1:]):
            if t.start_s < s.end_s:
                problems.append(f"line {line}: {clip}'s action {t.label!r} overlaps {s.label!r}")
        out[clip] = tuple(s for _, s in items)
    if problems:
        raise DataError(f"{path}: " + "; ".join(problems))
    return out


def folder_clips(folder: Path) -> list[Clip]:
    """Every clip of a folder (``list_clips``), with its actions from ``DIR/steps.csv`` when there is one."""
    files = list_clips(folder)
    steps = read_steps(folder / STEPS_CSV, [p.name for p in files]) if (folder / STEPS_CSV).is_file() else {}
    names = [safe_name(p.stem) for p in files]
    if len(set(names)) != len(names):
        raise DataError(f"--source {folder}: two clips share a name once made file-safe ({', '.join(names)}); "
                        "rename them")
    return [Clip(p, n, "", steps.get(p.name, ())) for p, n in zip(files, names, strict=True)]


def import_video(src: Path, dst: Path, start_s: float = 0.0, end_s: float | None = None) -> None:
    """Re-encode the video stream only (audio dropped, odd sizes cropped to even) with vidaudit's writer,
    upright and at a constant rate (a variable-rate clip resampled on the player's clock at its nominal fps);
    ``start_s`` / ``end_s`` keep that window of the player's clock."""
    info = probe(src)       # a file that is not a usable video is a DataError naming it
    w, h = info.width - info.width % 2, info.height - info.height % 2
    if w < 2 or h < 2:
        raise DataError(f"{src}: {info.width}x{info.height} is too small to encode; use a clip of at least 2x2")
    whole = start_s == 0 and end_s is None
    constant = whole and info.timeline.plain
    dst.parent.mkdir(parents=True, exist_ok=True)
    with VideoWriter(dst, info.fps, w, h) as out:
        for f in (iter_frames(src) if constant else iter_constant_rate(src, start_s, end_s)):
            out.write(f[:h, :w])


def import_job(src: str, out: str, rel: str, redo: bool, start_s: float = 0.0, end_s: float | None = None
               ) -> VideoRef:
    """``import_video`` of one source video into ``out/rel`` (when missing, or ``redo``); its ``VideoRef``."""
    dst = Path(out) / rel
    if redo or not dst.is_file():
        import_video(Path(src), dst, start_s, end_s)
    return video_ref(out, rel)


def import_clips(clips: Sequence[Clip], out: Path, subdir: str = "sources", *, workers: int | None = 1,
                 pool: PoolFactory | None = None) -> list[ClipSource]:
    """Import every clip into ``out/subdir/NAME.mp4`` (``import_job``s on ``run.jobs``); actions that end past
    the copy are a DataError naming the clip."""
    jobs = [(str(c.path), str(out), f"{subdir}/{c.name}.mp4", True, c.start_s, c.end_s) for c in clips]
    refs = run_jobs(import_job, jobs, workers=workers, pool=pool)
    sources = []
    for c, ref in zip(clips, refs, strict=True):
        late = [s.label for s in c.steps if s.end_s > ref.duration_s + 1e-6]
        if late:
            raise DataError(f"{c.path}: action(s) {', '.join(late)} end after the clip's {ref.duration_s:g} s")
        sources.append(ClipSource(c.name, c.description or c.path.stem, out / ref.path,
                                  tuple(s.label for s in c.steps), tuple((s.start_s, s.end_s) for s in c.steps),
                                  ref.duration_s, str(c.path), ref.fps, dict(c.extra)))
    return sources
