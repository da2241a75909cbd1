"""A user's clips as the sources of the probes that perturb one (``--source DIR``).

Any file the reader handles (rotated phone clips, variable rate, a late first frame, odd sizes, VP9 /
HEVC / AV1 / MPEG-4) is imported once: decoded upright on the player's clock, resampled to a constant
rate at its nominal fps (``video.decode.iter_constant_rate``: frame ``k`` is what a player shows at
``k / fps``), cropped to an even size, and re-encoded video-only by vidaudit's writer. Every perturbation
then runs on that copy, so its frame map (``source_frame``) counts the copy's frames, and the copy's
frame ``k`` is the original's frame on screen at ``k / fps``.

A clip may carry labelled actions (``steps``: time-ordered, non-overlapping ``(start_s, end_s, label)``),
from ``DIR/steps.csv`` or from a dataset loader (``suites/stress/datasets.py``); the tasks that need them
(a temporal gap removes one labelled action) use only clips that have at least three.

Nothing in a folder is ignored without a word, and no single clip stops a folder: every file is tried as a
video (its suffix decides nothing: ``.mts``, ``.mpg``, ``.mxf``, ``.flv`` ... are clips when FFmpeg reads a
video stream from them), and whatever is left out (a file that is not a video, a still, a folder, a clip that
does not decode or import) is named with its reason in a ``SourceLog``: printed as ``skipped: NAME: reason``
and kept in the dataset's ``dataset.json``.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from vidaudit.sdk import (
    STILL_IMAGE_SUFFIXES,
    ConfigError,
    DataError,
    PoolFactory,
    VideoRef,
    VideoWriter,
    confined,
    iter_constant_rate,
    iter_frames,
    probe,
    read_frames,
    run_jobs,
    video_ref,
)

STEPS_CSV = "steps.csv"
STEPS_COLUMNS = ("clip", "start_s", "end_s", "label")
#: the suffixes a dataset's video is looked up by (``ID`` + one of them), first match wins: the containers
#: players play (a plain folder is not listed by suffix: every file in it is tried)
VIDEO_EXTS = (
    ".mp4",
    ".webm",
    ".mkv",
    ".avi",
    ".mov",
    ".m4v",
    ".mts",
    ".m2ts",
    ".ts",
    ".mpg",
    ".mpeg",
    ".vob",
    ".mxf",
    ".flv",
    ".wmv",
    ".asf",
    ".ogv",
    ".ogg",
    ".3gp",
    ".3g2",
    ".dv",
)


def printable(text: str) -> str:
    """``text`` on one line: control characters (a line break in a hostile name) escaped, so a printed
    ``skipped:`` line cannot be forged by the name it reports."""
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii") for c in str(text)
    )


@dataclass
class SourceLog:
    """What a ``--source`` loader or generator left out or changed, each said once: printed as it happens
    (``say``; ``skipped: NAME: reason`` for a file, an entry or a clip's task left out) and kept for the
    dataset's ``dataset.json`` (``as_json``), with counts (rows without a video, actions clamped, ...)."""

    say: Callable[[str], None] | None = None
    skipped: list[dict[str, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def skip(self, name: str, reason: str) -> None:
        name, reason = printable(name), printable(reason)
        self.skipped.append({"name": name, "reason": reason})
        if self.say is not None:
            self.say(f"skipped: {name}: {reason}")

    def note(self, text: str) -> None:
        """A summary line (what a loader clamped, how many rows had no video)."""
        text = printable(text)
        self.notes.append(text)
        if self.say is not None:
            self.say(text)

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def as_json(self) -> dict[str, Any]:
        return {
            "n_skipped": len(self.skipped),
            "skipped": [dict(x) for x in self.skipped],
            "counts": dict(self.counts),
            "notes": list(self.notes),
        }

    def reasons(self, limit: int = 3) -> str:
        """The first skips, for an error that says why nothing was left."""
        if not self.skipped:
            return "nothing else was left out"
        more = f" (and {len(self.skipped) - limit} more)" if len(self.skipped) > limit else ""
        return "; ".join(f"{x['name']}: {x['reason']}" for x in self.skipped[:limit]) + more


def reason_of(err: Exception, path: Path | str) -> str:
    """A refusal's message as a skip reason: the file's name for its path, the fix after ';' left out (the
    reason says what is wrong with that file; the user need not fix it for the rest to go on)."""
    text = str(err)
    text = text[len(f"{path}: ") :] if text.startswith(f"{path}: ") else text.replace(str(path), Path(path).name)
    return text.split("; ", 1)[0]


@dataclass(frozen=True)
class Step:
    start_s: float
    end_s: float
    label: str


@dataclass(frozen=True)
class Clip:
    """A user's (or a dataset's) clip before import: its file, a name, what it shows, its labelled actions."""

    path: Path
    name: str  # unique and file-name safe (the sample ids use it)
    description: str = ""  # what the clip shows, in words (a dataset's label), or ""
    steps: tuple[Step, ...] = ()  # times on the clip's own clock (from ``start_s``)
    extra: dict[str, object] = field(default_factory=dict)  # the dataset's own fields, kept in params
    start_s: float = 0.0  # the part of the file to import (a window of a long video)
    end_s: float | None = None

    @property
    def shown_as(self) -> str:
        """How a message names the clip: its file, and the window when only part of it is used."""
        if self.start_s == 0 and self.end_s is None:
            return self.path.name
        return f"{self.path.name} [{self.start_s:g}-{self.end_s if self.end_s is not None else 'end'} s]"


@dataclass(frozen=True)
class ClipSource:
    """An imported clip: the constant-rate, upright copy the probes perturb (the ``Source`` shape they read)."""

    name: str
    procedure: str  # what it shows (the description, else the file name)
    video: Path
    steps: tuple[str, ...]  # action labels in time order ("" steps: none)
    segments: tuple[tuple[float, float], ...]  # their (start_s, end_s) on the copy's clock
    duration_s: float
    origin: str  # the original file (as given)
    fps: float
    extra: dict[str, object] = field(default_factory=dict)


def safe_name(text: str) -> str:
    out = "".join(c if c.isalnum() or c in "-_" else "-" for c in text).strip("-")
    return out or "clip"


def _folder(folder: Path) -> Path:
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"--source {folder} is not a folder; pass a folder of video clips")
    return folder


def clip_problem(path: Path) -> str | None:
    """Why ``path`` is not a clip (``None``: it is): a still image (by its suffix: FFmpeg reads one as a
    one-frame video), a file FFmpeg reads no video stream from, one frame only. ``probe`` decides, so every
    container FFmpeg plays is a clip whatever its suffix."""
    if path.suffix.lower() in STILL_IMAGE_SUFFIXES:
        return "a still image, not a clip"
    try:
        info = probe(path)
    except DataError as e:
        return reason_of(e, path)
    if info.n_frames < 2:
        return "holds one frame: a still, not a clip"
    return None


def list_clips(
    folder: Path, log: SourceLog | None = None, *, images: bool = False, companions: Sequence[str] = (STEPS_CSV,)
) -> list[Path]:
    """Every clip of a folder (``clip_problem``), sorted by name; every other entry (a file that is not a clip, a
    subfolder, a symlink leading out of the folder) is named in ``log`` with its reason. ``images``: still
    images are kept too (camera_motion moves them); ``companions`` are the folder's own annotation files
    (used, not skipped). A ConfigError when it is not a folder, a DataError when it holds no clip."""
    folder = _folder(folder)
    log = log if log is not None else SourceLog()
    files = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        name = entry.name
        if name in companions and entry.is_file():
            continue
        try:
            path = confined(folder, name, what="file", source=f"--source {folder}")
        except DataError as e:
            log.skip(name, reason_of(e, folder).split(": ", 1)[-1])
            continue
        if path.is_dir():
            log.skip(name, "a folder: clips are read from the --source folder itself, not its subfolders")
        elif not path.is_file():
            log.skip(name, "not a regular file")
        elif images and path.suffix.lower() in STILL_IMAGE_SUFFIXES:
            files.append(path)
        elif (why := clip_problem(path)) is not None:
            log.skip(name, why)
        else:
            files.append(path)
    if not files:
        kinds = "still image or video file" if images else "video file"
        raise DataError(
            f"--source {folder} holds no {kinds}"
            + (f" ({log.reasons()})" if log.skipped else "")
            + "; add clips FFmpeg can play"
        )
    return files


def is_clip(path: Path) -> bool:
    """A file that is not a still image (by suffix): what camera_motion reads a frame of."""
    return path.suffix.lower() not in STILL_IMAGE_SUFFIXES


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
    info = probe(path)  # a file that is not a usable video is a DataError naming it
    clock = info.timeline
    t = clock.duration_s / 2 if t_s is None else float(t_s)
    if not 0 <= t < clock.duration_s:
        raise DataError(
            f"{path}: no frame at {t:g} s; the clip lasts {clock.duration_s:g} s (--set frame_s=T "
            "with 0 <= T < its duration)"
        )
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
        for (_, s), (line, t) in pairwise(items):
            if t.start_s < s.end_s:
                problems.append(f"line {line}: {clip}'s action {t.label!r} overlaps {s.label!r}")
        out[clip] = tuple(s for _, s in items)
    if problems:
        raise DataError(f"{path}: " + "; ".join(problems))
    return out


def file_names(paths: Sequence[Path]) -> list[str]:
    """File-safe, unique names of clips: the stem, or, where two stems collide (``clip.mp4`` and ``clip.mts``),
    stem and suffix (``clip-mp4``); ``""`` for a clip whose name still collides (the caller skips it)."""
    stems = [safe_name(p.stem) for p in paths]
    names = [n if stems.count(n) == 1 else safe_name(p.name) for n, p in zip(stems, paths, strict=True)]
    seen: set[str] = set()
    out = []
    for n in names:
        out.append("" if n in seen else n)
        seen.add(n)
    return out


def folder_clips(folder: Path, log: SourceLog | None = None) -> list[Clip]:
    """Every clip of a folder (``list_clips``: anything else is named in ``log``), with its actions from
    ``DIR/steps.csv`` when there is one; an action that ends after its clip is a DataError naming the line."""
    log = log if log is not None else SourceLog()
    files = list_clips(folder, log)
    names = file_names(files)
    for p, n in zip(files, names, strict=True):
        if not n:
            log.skip(p.name, "its name, made file-safe, is another clip's; rename it")
    kept = [(p, n) for p, n in zip(files, names, strict=True) if n]
    csv_path = Path(folder) / STEPS_CSV
    # a row naming a file that was skipped is not an error: the file was named with its reason already
    steps = read_steps(csv_path, sorted(e.name for e in Path(folder).iterdir())) if csv_path.is_file() else {}
    late = []
    for p, _ in kept:
        if steps.get(p.name):
            end = probe(p).duration_s
            late += [
                f"{p.name}'s action {s.label!r} ends at {s.end_s:g} s, after the clip's {end:g} s"
                for s in steps[p.name]
                if s.end_s > end + 1e-6
            ]
    if late:
        raise DataError(f"{csv_path}: " + "; ".join(late) + "; end each action within its clip")
    return [Clip(p, n, "", steps.get(p.name, ())) for p, n in kept]


def import_video(src: Path, dst: Path, start_s: float = 0.0, end_s: float | None = None) -> None:
    """Re-encode the video stream only (audio dropped, odd sizes cropped to even) with vidaudit's writer,
    upright and at a constant rate (a variable-rate clip resampled on the player's clock at its nominal fps);
    ``start_s`` / ``end_s`` keep that window of the player's clock."""
    info = probe(src)  # a file that is not a usable video is a DataError naming it
    w, h = info.width - info.width % 2, info.height - info.height % 2
    if w < 2 or h < 2:
        raise DataError(f"{src}: {info.width}x{info.height} is too small to encode; use a clip of at least 2x2")
    whole = start_s == 0 and end_s is None
    constant = whole and info.timeline.plain
    dst.parent.mkdir(parents=True, exist_ok=True)
    with VideoWriter(dst, info.fps, w, h) as out:
        for f in iter_frames(src) if constant else iter_constant_rate(src, start_s, end_s):
            out.write(f[:h, :w])


def import_job(src: str, out: str, rel: str, redo: bool, start_s: float = 0.0, end_s: float | None = None) -> VideoRef:
    """``import_video`` of one source video into ``out/rel`` (when missing, or ``redo``); its ``VideoRef``."""
    dst = Path(out) / rel
    if redo or not dst.is_file():
        import_video(Path(src), dst, start_s, end_s)
    return video_ref(out, rel)


def try_import_job(
    src: str, out: str, rel: str, redo: bool, start_s: float = 0.0, end_s: float | None = None
) -> VideoRef | str:
    """``import_job``, or why the clip cannot be imported (a ``DataError``'s reason): one clip that does not
    decode is skipped by its caller, never the end of a folder."""
    try:
        return import_job(src, out, rel, redo, start_s, end_s)
    except DataError as e:
        return reason_of(e, src)


def import_clips(
    clips: Sequence[Clip],
    out: Path,
    subdir: str = "sources",
    *,
    workers: int | None = 1,
    pool: PoolFactory | None = None,
    log: SourceLog | None = None,
) -> list[ClipSource]:
    """Import every clip into ``out/subdir/NAME.mp4`` (``try_import_job``s on ``core.jobs``). A clip that does not
    import, or whose labelled actions end after its copy, is left out and named in ``log`` with the reason."""
    log = log if log is not None else SourceLog()
    jobs = [(str(c.path), str(out), f"{subdir}/{c.name}.mp4", True, c.start_s, c.end_s) for c in clips]
    refs = run_jobs(try_import_job, jobs, workers=workers, pool=pool)
    sources = []
    for c, ref in zip(clips, refs, strict=True):
        label = c.shown_as
        if isinstance(ref, str):
            log.skip(label, ref)
            continue
        late = [s.label for s in c.steps if s.end_s > ref.duration_s + 1e-6]
        if late:
            (out / ref.path).unlink(missing_ok=True)
            log.skip(label, f"action(s) {', '.join(late)} end after the {ref.duration_s:g} s copy of the clip")
            continue
        sources.append(
            ClipSource(
                c.name,
                c.description or c.path.stem,
                out / ref.path,
                tuple(s.label for s in c.steps),
                tuple((s.start_s, s.end_s) for s in c.steps),
                ref.duration_s,
                str(c.path),
                ref.fps,
                dict(c.extra),
            )
        )
    return sources
