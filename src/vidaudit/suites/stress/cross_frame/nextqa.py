"""The NExT-QA format: what ``--source DIR`` reads (and what the synthetic source writes).

``DIR/<name>.csv`` (UTF-8, a header row) with at least the columns ``video``, ``question``, ``a0`` ...
``a4``, ``answer`` (the index 0-4 of the correct option) and ``type`` (NExT-QA's question-type code),
plus an optional ``qid``; other columns (NExT-QA's ``frame_count``, ``width``, ``height``) are ignored.
The videos are ``DIR/videos/<video>.mp4`` (or any container a player plays, ``sources.VIDEO_EXTS``):
NExT-QA's release nests them by folder (``map_vid_vidorID.json``); flatten them to that layout first. A small
set of a user's own clips may keep them beside the CSV instead (used when ``DIR/videos/`` does not exist).
A user often holds only some of the videos: the questions of an absent video are left out and the videos
missing counted (``SourceLog``: printed, and in ``dataset.json``); none present is a DataError naming where
they were looked for. A ``video`` that is not a plain file name (absolute, ``..``) is refused for its row,
never read. ``template`` and
``template_args`` (JSON) are vidaudit's own columns, written only by the synthetic source, read by the
integrating observer's reader.

Split (as the paper, NExT-QA-T / NExT-QA-S): NExT-QA's temporal types ``TN`` (next), ``TC`` (current),
``TP`` (previous) are ``T``; the causal (``CW``, ``CH``) and descriptive (``DC``, ``DL``, ``DO``) types
are ``S``. Any other code is an error naming the row.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidaudit.sdk import ConfigError, DataError, write_text_atomic
from vidaudit.suites.stress.datasets import find_video
from vidaudit.suites.stress.sources import VIDEO_EXTS, SourceLog, reason_of

REQUIRED = ("video", "question", "a0", "a1", "a2", "a3", "a4", "answer", "type")
TEMPORAL_TYPES = ("TN", "TC", "TP")
OTHER_TYPES = ("CW", "CH", "DC", "DL", "DO")
N_OPTIONS = 5


def split_of(type_code: str) -> str | None:
    """``T`` for NExT-QA's temporal types, ``S`` for the causal and descriptive ones, None otherwise."""
    t = type_code.strip().upper()
    if t in TEMPORAL_TYPES:
        return "T"
    if t in OTHER_TYPES:
        return "S"
    return None


@dataclass(frozen=True)
class Item:
    """One question of a NExT-QA-format set (``line`` is the CSV line it came from, for messages)."""

    line: int
    qid: str
    video: str
    video_path: Path
    question: str
    options: tuple[str, ...]
    answer: int
    type: str
    split: str
    template: str | None = None
    template_args: dict[str, Any] = field(default_factory=dict)

    @property
    def item_id(self) -> str:
        return f"{self.video}-{self.qid}"


def find_csv(source: Path, name: str | None = None) -> Path:
    source = Path(source)
    if source.is_file() and source.suffix.lower() == ".csv":
        return source
    if not source.is_dir():
        raise ConfigError(f"--source {source} is not a NExT-QA-format directory (a CSV and a videos/ folder)")
    if name:
        p = source / name
        if not p.is_file():
            raise ConfigError(f"--set csv={name}: no such file in {source}")
        return p
    found = sorted(source.glob("*.csv"))
    if len(found) != 1:
        what = "no CSV" if not found else f"{len(found)} CSVs ({', '.join(p.name for p in found)})"
        raise ConfigError(
            f"--source {source} holds {what}; it must hold exactly one question CSV, or name one "
            "with --set csv=NAME.csv"
        )
    return found[0]


def load_items(source: Path, csv_name: str | None = None, log: SourceLog | None = None) -> list[Item]:
    """Every row of the set whose video is present, checked: a missing column, an answer outside 0-4, an unknown
    type, an empty question or option or a repeated (video, qid) is a ``DataError`` naming the row. A row
    whose video is absent is left out (the videos missing are counted in ``log``); a hostile ``video`` name is
    named in ``log`` with its reason; no video present at all is a ``DataError``."""
    log = log if log is not None else SourceLog()
    path = find_csv(source, csv_name)
    videos = path.parent / "videos"
    if not videos.is_dir():  # a user's small set: the clips beside the CSV
        videos = path.parent
    header, reader = _rows(path)
    items: list[Item] = []
    seen: set[str] = set()
    absent: dict[str, int] = {}  # a missing video -> its questions
    refused: set[str] = set()
    for n, row in enumerate(reader, start=2):
        where = f"{path.name} line {n}"
        vals, answer, split = _checked_values(where, row, header)
        qid = vals.get("qid") or str(n - 1)
        video_file = _row_video(log, videos, where, vals["video"], absent, refused)
        if video_file is None:
            continue
        args = _template_args(where, vals)
        item = Item(
            line=n,
            qid=qid,
            video=vals["video"],
            video_path=video_file,
            question=vals["question"],
            options=tuple(vals[f"a{i}"] for i in range(N_OPTIONS)),
            answer=answer,
            type=vals["type"].upper(),
            split=split,
            template=vals.get("template") or None,
            template_args=args if isinstance(args, dict) else {},
        )
        if item.item_id in seen:
            raise DataError(f"{where}: video {item.video!r} with qid {qid!r} is listed twice")
        seen.add(item.item_id)
        items.append(item)
    _say_missing(log, path, videos, items, absent, refused)
    return items


def _rows(path: Path) -> tuple[list[str], csv.DictReader]:
    """(the header, a reader of the rows) of a question CSV that is UTF-8 text with every required column."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"cannot read {path}: {e}; the question CSV must be UTF-8 text") from None
    reader = csv.DictReader(text.splitlines())
    header = list(reader.fieldnames or [])
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise DataError(
            f"{path}: missing column(s) {', '.join(missing)}; a NExT-QA-format CSV has "
            f"{', '.join(REQUIRED)} (and optionally qid)"
        )
    return header, reader


def _checked_values(where: str, row: dict[str | None, Any], header: list[str]) -> tuple[dict[str, str], int, str]:
    """(the row's stripped values, its answer index, its split): a row with extra fields, an empty video, question
    or option, an answer that is not 0-4 or an unknown type is refused, naming the row."""
    if None in row:
        raise DataError(f"{where}: more fields than the header has columns; quote fields that hold commas")
    vals = {k: (row.get(k) or "").strip() for k in header}
    empty = [c for c in ("video", "question", *(f"a{i}" for i in range(N_OPTIONS))) if not vals[c]]
    if empty:
        raise DataError(f"{where}: empty {', '.join(empty)}; every row needs a video, a question and five options")
    try:
        answer = int(vals["answer"])
    except ValueError:
        raise DataError(f"{where}: answer {vals['answer']!r} is not an option index; write 0-4") from None
    if not 0 <= answer < N_OPTIONS:
        raise DataError(f"{where}: answer index {answer} is out of range; it must be 0-4 (a0..a4)")
    split = split_of(vals["type"])
    if split is None:
        raise DataError(
            f"{where}: unknown question type {vals['type']!r}; NExT-QA's codes are "
            f"{', '.join(TEMPORAL_TYPES + OTHER_TYPES)}"
        )
    return vals, answer, split


def _row_video(
    log: SourceLog, videos: Path, where: str, video: str, absent: dict[str, int], refused: set[str]
) -> Path | None:
    """The row's video file; None when it is absent (its questions counted in ``absent``) or its name is hostile
    (named once in ``log``, and remembered in ``refused``)."""
    try:
        video_file = find_video(videos, (".",), video, what="video", source=where)
    except DataError as e:
        if video not in refused:
            refused.add(video)
            log.skip(video, reason_of(e, videos))
        return None
    if video_file is None:
        absent[video] = absent.get(video, 0) + 1
    return video_file


def _template_args(where: str, vals: dict[str, str]) -> Any:
    """The synthetic source's ``template_args`` column, parsed (an empty dict when the row has none)."""
    args: Any = {}
    if vals.get("template_args"):
        try:
            args = json.loads(vals["template_args"])
        except json.JSONDecodeError as e:
            raise DataError(f"{where}: template_args is not JSON ({e.msg})") from None
    return args


def _say_missing(
    log: SourceLog, path: Path, videos: Path, items: list[Item], absent: dict[str, int], refused: set[str]
) -> None:
    """Count and say the videos missing; refuse a set none of whose videos (or questions) is there."""
    if absent:
        log.count("videos_missing", len(absent))
        log.count("questions_without_video", sum(absent.values()))
        log.note(
            f"nextqa: {len(absent)} of {len(absent) + len({it.video for it in items})} videos are missing from "
            f"{videos} ({sum(absent.values())} questions left out), e.g. {', '.join(sorted(absent)[:5])}"
        )
    if not items:
        if absent or refused:
            raise DataError(
                f"{path}: none of its {len(absent) + len(refused)} videos was found in {videos} (as "
                f"VIDEO{VIDEO_EXTS[0]}, {', '.join(VIDEO_EXTS[1:5])} ...); flatten NExT-QA's folders into "
                "videos/ (or keep a small set's clips beside the CSV)"
            )
        raise DataError(f"{path} has a header but no questions")


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Rows (``video``, ``qid``, ``question``, ``options``, ``answer``, ``type``, ...) as a NExT-QA CSV."""
    cols = [
        "video",
        "qid",
        "question",
        *(f"a{i}" for i in range(N_OPTIONS)),
        "answer",
        "type",
        "template",
        "template_args",
    ]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(
            {
                "video": r["video"],
                "qid": r["qid"],
                "question": r["question"],
                **{f"a{i}": o for i, o in enumerate(r["options"])},
                "answer": r["answer"],
                "type": r["type"],
                "template": r.get("template", ""),
                "template_args": json.dumps(r.get("template_args", {}), sort_keys=True),
            }
        )
    write_text_atomic(path, buf.getvalue())
    return path
