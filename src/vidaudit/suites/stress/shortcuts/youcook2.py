"""A YouCook2-format source for the shortcuts probe (``--source DIR``); nothing is downloaded.

DIR holds ``youcook2_annotations.json`` in YouCook2's own layout::

    {"database": {"VIDEO_ID": {"duration": 241.6, "subset": "validation", "recipe_type": "113",
                               "annotations": [{"id": 0, "segment": [90, 102], "sentence": "spread margarine on bread"},
                                               ...]}}}

and the videos as ``DIR/videos/VIDEO_ID.{mp4,mkv,webm}``. Segments are taken in annotation order (the
canonical order, which YouCook2 annotates chronologically); a video needs at least 4 segments with
distinct sentences, in time order and without overlap. Audio is never read (frames only).
"""

from __future__ import annotations

import json
from pathlib import Path

from vidaudit.core.errors import DataError
from vidaudit.suites.stress.shortcuts.generate import Source

ANNOTATIONS = "youcook2_annotations.json"
VIDEO_EXTS = (".mp4", ".mkv", ".webm")
MIN_SEGMENTS = 4


def _video(root: Path, vid: str) -> Path:
    for ext in VIDEO_EXTS:
        p = root / "videos" / f"{vid}{ext}"
        if p.is_file():
            return p
    raise DataError(f"{root / ANNOTATIONS}: video {vid!r} has no file videos/{vid}{{{','.join(VIDEO_EXTS)}}}; add "
                    "it or remove its entry")


def load_youcook2(root: Path) -> list[Source]:
    path = root / ANNOTATIONS
    if not path.is_file():
        raise DataError(f"{root} has no {ANNOTATIONS}; the shortcuts probe's --source is a YouCook2-format folder "
                        "(see docs/stress.md)")
    try:
        db = json.loads(path.read_text(encoding="utf-8"))["database"]
    except (ValueError, KeyError, TypeError) as e:
        raise DataError(f"{path} is not YouCook2 annotations JSON with a 'database' object: {e}") from None
    if not isinstance(db, dict) or not db:
        raise DataError(f"{path}: 'database' holds no videos")
    out = []
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
                raise DataError(f"{path}: video {vid!r} annotation {i} needs 'segment': [start, end] and "
                                "'sentence'") from None
            if not (0 <= start < end) or (segs and start < segs[-1][1]):
                raise DataError(f"{path}: video {vid!r} annotation {i} segment [{start}, {end}] is empty, negative or "
                                "overlaps the previous one; segments must be in time order")
            if not sentence or sentence in steps:
                raise DataError(f"{path}: video {vid!r} annotation {i} has an empty or repeated sentence "
                                f"{sentence!r}; each step must be told apart by its text")
            segs.append((start, end))
            steps.append(sentence)
        if len(segs) < MIN_SEGMENTS:
            raise DataError(f"{path}: video {vid!r} has {len(segs)} segments; the probe needs at least {MIN_SEGMENTS}")
        out.append(Source(vid, _video(root, vid), tuple(steps), tuple(segs), "youcook2"))
    return out
