"""``vidaudit generate stress --probe lane_change --source DIR``: a user's annotated driving clips.

The format (docs/stress.md): ``DIR/annotations.csv`` with a header and the columns

- ``clip``: a video's path relative to ``DIR`` (any container PyAV decodes);
- ``label``: ``lane_change`` or ``no_change``;
- ``start_s``, ``end_s`` (optional, both or neither, may be blank): the segment of the clip to ask about;
  without them the whole clip is used.

Each row becomes one sample; a segment is cut (re-encoded, frames ``floor(start*fps)`` up to but not including
``floor(end*fps)``) into ``OUT/videos/``, a whole clip is copied byte for byte. Every problem in the file is
reported at once, by line, and nothing is written until all rows check out; ``clip`` joins ``DIR`` through
``core.confine.confined`` (an absolute or ``..`` path, or a symlink out of ``DIR``, is such a problem, and
nothing outside ``DIR`` is read). A clip that is there but does not decode is not the file's fault: its row is
left out and named with the reason (``SourceLog``: printed, and in ``dataset.json``), never the end of the set.
"""

from __future__ import annotations

import csv
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidaudit.sdk import (
    ConfigError,
    DataError,
    PoolFactory,
    Sample,
    VideoRef,
    VideoWriter,
    atomic_path,
    confined,
    dataset_dir,
    iter_constant_rate,
    iter_frames,
    probe,
    run_jobs,
    video_ref,
)
from vidaudit.suites.stress.lane_change.options import LABELS, LETTER_OF, QUESTION
from vidaudit.suites.stress.probe import guard_planned, write_dataset
from vidaudit.suites.stress.sources import SourceLog, reason_of

PROBE = "lane_change"
ANNOTATIONS = "annotations.csv"
COLUMNS = ("clip", "label", "start_s", "end_s")


@dataclass(frozen=True)
class Row:
    line: int
    clip: str
    label: str
    start_s: float | None
    end_s: float | None


def _float(text: str | None) -> float | None:
    t = (text or "").strip()
    return None if t == "" else float(t)


def _check_row(root: Path, raw: dict[str | None, Any], line: int, width: int) -> tuple[Row, Path, list[str]]:
    """(the row, its clip's resolved file, what is wrong with it: nothing when it is fine)."""
    rec = {k.strip(): (v or "").strip() for k, v in raw.items() if isinstance(k, str)}
    clip, label = rec.get("clip", ""), rec.get("label", "").lower()
    why = []
    if None in raw:  # an unquoted comma, e.g. a decimal comma: "1,5" would read as 1 and shift the rest
        why.append(
            f"{width + len(raw[None])} fields but the header has {width}; quote a field "
            "holding a comma, and write times with a decimal point (1.5, not 1,5)"
        )
    file = Path(clip)
    if not clip:
        why.append("no clip")
    else:
        try:
            file = confined(root, clip, what="clip")
            if not file.is_file():
                why.append(f"clip {clip!r} is not a file under {root}")
            file = file.resolve()
        except DataError as e:
            why.append(str(e).split("; ", 1)[0])
    if label not in LABELS:
        why.append(f"label {rec.get('label', '')!r} is not lane_change or no_change")
    try:
        start, end = _float(rec.get("start_s")), _float(rec.get("end_s"))
    except ValueError:
        why.append(f"start_s/end_s {rec.get('start_s')!r}, {rec.get('end_s')!r} are not numbers")
        start = end = None
    if (start is None) != (end is None):
        why.append("give both start_s and end_s, or neither")
    elif start is not None and end is not None and not (0 <= start < end and math.isfinite(end)):
        why.append(f"segment {start:g}-{end:g} s is not 0 <= start_s < end_s")
    return Row(line, clip, label, start, end), file, why


def read_annotations(root: Path) -> list[Row]:
    """The rows of ``root/annotations.csv``, checked: every error, by line, in one DataError."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(
            f"--source {root} is not a folder; lane_change reads a folder holding {ANNOTATIONS} "
            "and the clips it names (see docs/stress.md)"
        )
    path = root / ANNOTATIONS
    if not path.is_file():
        raise DataError(f"{root} has no {ANNOTATIONS}; write one with the header clip,label[,start_s,end_s]")
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in (reader.fieldnames or [])]
        missing = [c for c in ("clip", "label") if c not in header]
        unknown = [c for c in header if c not in COLUMNS]
        if missing or unknown:
            raise DataError(
                f"{path}: header {header} "
                + (f"lacks {', '.join(missing)}; " if missing else "")
                + (f"has unknown columns {', '.join(unknown)}; " if unknown else "")
                + f"the columns are {', '.join(COLUMNS)} (start_s, end_s optional)"
            )
        rows, errors = [], []
        seen: dict[tuple[Path, float | None, float | None], int] = {}
        for raw in reader:
            i = reader.line_num  # the file's own line (a blank line is skipped, not counted as a row)
            row, file, why = _check_row(root, raw, i, len(header))
            key = (file, row.start_s, row.end_s)
            if not why and key in seen:  # one clip and segment twice: a repeated or contradicting answer
                why.append(f"clip {row.clip!r} with the same segment is on line {seen[key]} already; keep one row")
            if why:
                errors.append(f"line {i}: " + "; ".join(why))
            else:
                seen[key] = i
                rows.append(row)
    if errors:
        raise DataError(f"{path}: {len(errors)} bad rows: " + " | ".join(errors[:8]))
    if not rows:
        raise DataError(f"{path} lists no clips; add rows clip,label[,start_s,end_s]")
    return rows


def _cut(src: Path, dst: Path, start_s: float, end_s: float, fps: float, width: int, height: int) -> int:
    clock = probe(src).timeline
    if not clock.plain:  # not constant-rate from 0: cut on the player's clock
        n = 0
        with VideoWriter(dst, fps, width, height) as w:
            for frame in iter_constant_rate(src, start_s, end_s):
                w.write(frame)
                n += 1
        return n
    first, stop = int(math.floor(start_s * fps + 1e-9)), int(math.floor(end_s * fps + 1e-9))
    n = 0
    with VideoWriter(dst, fps, width, height) as w:
        for i, frame in enumerate(iter_frames(src)):
            if i >= stop:
                break
            if i >= first:
                w.write(frame)
                n += 1
    return n


def clip_job(
    src: str, out: str, rel: str, segment: tuple[float, float] | None, fps: float, width: int, height: int
) -> VideoRef:
    """One sample's video: ``segment`` of ``src`` cut (re-encoded) into ``out/rel``, or the whole clip copied byte
    for byte; its ``VideoRef`` (a pure function of its arguments, for ``core.jobs``)."""
    if segment is not None:
        _cut(Path(src), Path(out) / rel, segment[0], segment[1], fps, width, height)
    else:
        with atomic_path(Path(out) / rel) as tmp:
            shutil.copyfile(src, tmp)
    return video_ref(out, rel)


def generate(
    out: Path,
    source: Path,
    *,
    force: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
    workers: int | None = 1,
    pool: PoolFactory | None = None,
    log: SourceLog | None = None,
) -> Path:
    root = Path(source)
    log = log if log is not None else SourceLog()
    rows = read_annotations(root)
    checked: list[tuple[Row, Any]] = []
    errors = []
    for r in rows:
        path = confined(root, r.clip, what="clip", source=f"{root / ANNOTATIONS} line {r.line}")
        try:
            info = probe(path)
        except DataError as e:
            log.skip(r.clip, f"line {r.line}: {reason_of(e, path)}")
            continue
        if r.end_s is not None and r.end_s > info.duration_s + 1e-6:
            errors.append(f"line {r.line}: end_s {r.end_s:g} is past the end of {r.clip} ({info.duration_s:g} s)")
        elif (
            r.start_s is not None
            and r.end_s is not None
            and math.floor(r.end_s * info.fps + 1e-9) - math.floor(r.start_s * info.fps + 1e-9) < 2
        ):
            errors.append(f"line {r.line}: segment {r.start_s:g}-{r.end_s:g} s of {r.clip} holds fewer than two frames")
        elif (info.width % 2 or info.height % 2) and r.start_s is not None:
            errors.append(
                f"line {r.line}: {r.clip} is {info.width}x{info.height}; a segment is re-encoded as "
                "yuv420p, which needs an even size"
            )
        checked.append((r, info))
    if errors:
        raise DataError(f"{root / ANNOTATIONS}: " + " | ".join(errors[:8]))
    if not checked:
        raise DataError(f"{root / ANNOTATIONS}: no clip it names decodes ({log.reasons()})")
    out = dataset_dir(out)

    def sid(i: int, r: Row) -> str:
        return f"stress-{PROBE}-{i:04d}-{Path(r.clip).stem}"

    def params(r: Row) -> dict[str, Any]:
        return {
            "probe": PROBE,
            "label": r.label,
            "option": LETTER_OF[r.label],
            "clip": r.clip,
            "start_s": r.start_s,
            "end_s": r.end_s,
            "source_line": r.line,
        }

    guard_planned(out, [(sid(i, r), params(r), r.label) for i, (r, _) in enumerate(checked)], force=force)
    (out / "videos").mkdir(parents=True, exist_ok=True)
    jobs = [
        (
            str(confined(root, r.clip, what="clip")),
            str(out),
            f"videos/{sid(i, r)}{'.mp4' if r.start_s is not None else Path(r.clip).suffix.lower()}",
            (r.start_s, r.end_s) if r.start_s is not None and r.end_s is not None else None,
            info.fps,
            info.width,
            info.height,
        )
        for i, (r, info) in enumerate(checked)
    ]
    refs = run_jobs(clip_job, jobs, workers=workers, pool=pool, on_progress=on_progress)
    samples = [
        Sample(sample_id=sid(i, r), suite="stress", params=params(r), question=QUESTION, answer=r.label, video=ref)
        for i, ((r, _), ref) in enumerate(zip(checked, refs, strict=True))
    ]
    return write_dataset(
        out,
        samples,
        PROBE,
        source=str(root),
        n_lane_change=sum(s.answer == "lane_change" for s in samples),
        source_log=log,
    )
