"""A YouCook2-format source for the shortcuts probe (``--source DIR``); nothing is downloaded.

DIR holds ``youcook2_annotations.json`` in YouCook2's own layout::

    {"database": {"VIDEO_ID": {"duration": 241.6, "subset": "validation", "recipe_type": "113",
                               "annotations": [{"id": 0, "segment": [90, 102], "sentence": "spread margarine on bread"},
                                               ...]}}}

and the videos as ``DIR/videos/VIDEO_ID.EXT`` (any container a player plays, ``sources.VIDEO_EXTS``). Segments
are taken in annotation order (the canonical order, which YouCook2 annotates chronologically); a video needs
at least 4 segments with distinct sentences, in time order and without overlap. Audio is never read (frames
only). The annotations list the whole release and a user holds a subset: a video whose file is absent is
counted and left out, one with fewer than 4 segments is named with its reason (``SourceLog``), and a
``VIDEO_ID`` that is not a plain file name (absolute, ``..``) is refused for that entry, never read; none
left is a DataError.
"""

from __future__ import annotations

from pathlib import Path

from vidaudit.sdk import DataError, read_json_file
from vidaudit.suites.stress.datasets import MAX_ANNOTATION_BYTES, find_video
from vidaudit.suites.stress.shortcuts.procedure import Source
from vidaudit.suites.stress.sources import SourceLog, reason_of

ANNOTATIONS = "youcook2_annotations.json"
MIN_SEGMENTS = 4


def load_youcook2(root: Path, log: SourceLog | None = None) -> list[Source]:
    log = log if log is not None else SourceLog()
    path = root / ANNOTATIONS
    if not path.is_file():
        raise DataError(
            f"{root} has no {ANNOTATIONS}; the shortcuts probe's --source is a YouCook2-format folder "
            "(see docs/stress.md)"
        )
    data = read_json_file(path, what="YouCook2 annotations", max_bytes=MAX_ANNOTATION_BYTES)
    db = data.get("database") if isinstance(data, dict) else None
    if not isinstance(db, dict) or not db:
        raise DataError(f"{path}: 'database' holds no videos; expected YouCook2's {{\"database\": {{VIDEO_ID: ...}}}}")
    out = []
    absent = 0
    for vid in sorted(db):
        entry = db[vid]
        anns = entry.get("annotations") if isinstance(entry, dict) else None
        if not isinstance(anns, list):
            raise DataError(f"{path}: video {vid!r} has no 'annotations' list")
        segs: list[tuple[float, float]] = []
        steps: list[str] = []
        for i, a in enumerate(anns):
            try:
                start, end = (float(x) for x in a["segment"])
                sentence = str(a["sentence"]).strip()
            except (KeyError, TypeError, ValueError):
                raise DataError(
                    f"{path}: video {vid!r} annotation {i} needs 'segment': [start, end] and 'sentence'"
                ) from None
            if not (0 <= start < end) or (segs and start < segs[-1][1]):
                raise DataError(
                    f"{path}: video {vid!r} annotation {i} segment [{start}, {end}] is empty, negative or "
                    "overlaps the previous one; segments must be in time order"
                )
            if not sentence or sentence in steps:
                raise DataError(
                    f"{path}: video {vid!r} annotation {i} has an empty or repeated sentence "
                    f"{sentence!r}; each step must be told apart by its text"
                )
            segs.append((start, end))
            steps.append(sentence)
        try:
            video = find_video(root, ("videos",), vid, source=f"{path} video {vid!r}")
        except DataError as e:
            log.skip(vid, reason_of(e, root))
            continue
        if video is None:
            absent += 1
            continue
        if len(segs) < MIN_SEGMENTS:
            log.skip(video.name, f"{len(segs)} annotated segments; the probe needs at least {MIN_SEGMENTS}")
            continue
        out.append(Source(vid, video, tuple(steps), tuple(segs), "youcook2"))
    if absent:
        log.count("entries_without_video", absent)
        log.note(f"youcook2: {absent} annotated videos have no file in {root / 'videos'} (skipped)")
    if not out:
        raise DataError(
            f"{path}: no annotated video with at least {MIN_SEGMENTS} segments was found in "
            f"{root / 'videos'} (VIDEO_ID.mp4, .mkv, .webm, ...)" + (f" ({log.reasons()})" if log.skipped else "")
        )
    return out
