"""Trials for the HTML trace viewer: which ones to keep, how big they may be, and their thumbnails.

A run can hold tens of thousands of trials; the report keeps every incorrect one up to a cap per
model x condition x group (spread round-robin over the suite's design points, ``grid_point``),
plus a few correct ones, preferring those the suite marks ``preferred`` (counting: a correct count
with an unfaithful trace, accidental correctness). What reaches the page is bounded: at most
``MAX_FRAMES_PER_TRIAL`` thumbnails (checked to be base64 JPEG) and ``MAX_RAW_TEXT_CHARS`` of text.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from vidaudit.core.contract.report import ViewerFrame, ViewerTrial
from vidaudit.core.errors import DataError

MAX_FRAMES_PER_TRIAL = 24
MAX_RAW_TEXT_CHARS = 20_000
MAX_THUMBNAIL_SIDE = 2048
_B64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


def thumbnail_jpeg_b64(rgb: np.ndarray, width: int = 160, quality: int = 80) -> str:
    """A JPEG thumbnail of one RGB frame, ``width`` pixels wide, as base64 for a data: URL.

    The aspect ratio is kept; a frame so tall that its thumbnail would exceed
    ``MAX_THUMBNAIL_SIDE`` pixels is scaled to that height instead (JPEG caps sides at 65,500).
    """
    if not isinstance(rgb, np.ndarray) or rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        got = f"{rgb.dtype} array of shape {rgb.shape}" if isinstance(rgb, np.ndarray) else type(rgb).__name__
        raise DataError(f"thumbnail needs an (H, W, 3) uint8 RGB frame, got {got}; pass a frame from read_frames")
    if width < 1:
        raise DataError(f"thumbnail width must be >= 1 pixel, got {width}")
    h, w = rgb.shape[:2]
    if h == 0 or w == 0:
        raise DataError("thumbnail of an empty frame; check the frame indices you decoded")
    height = max(1, round(h * width / w))
    if height > MAX_THUMBNAIL_SIDE:
        height = MAX_THUMBNAIL_SIDE
        width = max(1, round(w * height / h))
    interp = cv2.INTER_AREA if width < w else cv2.INTER_LINEAR
    small = cv2.resize(rgb, (width, height), interpolation=interp)
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(small, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:  # pragma: no cover - cv2 encodes any uint8 image within JPEG's size limits
        raise DataError("OpenCV could not encode the thumbnail as JPEG")
    return base64.b64encode(buf.tobytes()).decode("ascii")


def _even_subset(items: list[Any], k: int) -> list[Any]:
    """At most k items, evenly spaced, first and last kept, order kept."""
    if len(items) <= k:
        return list(items)
    if k <= 0:
        return []
    idx = np.linspace(0, len(items) - 1, k).round().astype(int)
    return [items[i] for i in dict.fromkeys(idx.tolist())]


def attach_frames(
    trial: ViewerTrial,
    frames: Sequence[tuple[int | None, float | None, np.ndarray]],
    max_frames: int = MAX_FRAMES_PER_TRIAL,
    width: int = 160,
) -> ViewerTrial:
    """A copy of ``trial`` with thumbnails of ``frames`` ((source index, time, RGB) as sent), evenly subset first."""
    kept = _even_subset(list(frames), max_frames)
    return attach_thumbnails(trial, [(i, t, thumbnail_jpeg_b64(rgb, width)) for i, t, rgb in kept], max_frames)


def attach_thumbnails(
    trial: ViewerTrial, thumbs: Sequence[tuple[int | None, float | None, str]], max_frames: int = MAX_FRAMES_PER_TRIAL
) -> ViewerTrial:
    """A copy of ``trial`` with ready thumbnails ((source index, time, JPEG base64)), evenly subset first:
    the report stage makes each (video, frame) thumbnail once and shares it between the trials that sent it."""
    kept = _even_subset(list(thumbs), max_frames)
    return trial.model_copy(
        update={"frames": [ViewerFrame(index=i, t=_finite_or_none(t), jpeg_b64=b64) for i, t, b64 in kept]}
    )


# --------------------------------------------------------------------------- selection


def _num(v: Any) -> float:
    if isinstance(v, bool):
        return float(v)
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.inf
    return x if math.isfinite(x) else math.inf


def _point_key(point: tuple[Any, ...]) -> tuple[tuple[float, str], ...]:
    return tuple((_num(v), str(v)) for v in point)


def _spread(trials: list[ViewerTrial], k: int) -> list[ViewerTrial]:
    """Up to k trials taken round-robin over design points, deterministic by trial_id."""
    by_point: dict[tuple[Any, ...], list[ViewerTrial]] = {}
    for t in sorted(trials, key=lambda t: t.trial_id):
        by_point.setdefault(tuple(t.grid_point), []).append(t)
    queues = [by_point[p] for p in sorted(by_point, key=_point_key)]
    out: list[ViewerTrial] = []
    depth = 0
    while len(out) < k and any(depth < len(q) for q in queues):
        for q in queues:
            if depth < len(q) and len(out) < k:
                out.append(q[depth])
        depth += 1
    return out


def select_trials_for_viewer(
    trials: Sequence[ViewerTrial], per_cell: int = 4, max_incorrect_per_cell: int = 40
) -> list[ViewerTrial]:
    """Keep the report small: per model x condition x group, incorrect trials up to a cap plus a few correct.

    Incorrect includes errored and unparseable trials (``correct`` not True), spread over
    ``grid_point``; among correct trials, ``preferred`` ones come first. The result does not depend
    on the input order; a trial_id listed twice is an error.
    """
    if per_cell < 0 or max_incorrect_per_cell < 0:
        raise DataError("per_cell and max_incorrect_per_cell must be >= 0")
    groups: dict[tuple[str, str, str], list[ViewerTrial]] = {}
    seen: set[str] = set()
    for i, t in enumerate(trials):
        if not isinstance(t, ViewerTrial):
            raise DataError(
                f"trials[{i}] is a {type(t).__name__}, not a ViewerTrial; build it with the suite's viewer_trial"
            )
        if t.trial_id in seen:
            raise DataError(f"trial {t.trial_id} appears twice; each trial must be listed once")
        seen.add(t.trial_id)
        groups.setdefault((t.model, t.condition, t.group), []).append(t)
    kept: list[ViewerTrial] = []
    for key in sorted(groups):
        group = groups[key]
        wrong = [t for t in group if t.correct is not True]
        right = [t for t in group if t.correct is True]
        preferred = [t for t in right if t.preferred]
        others = [t for t in right if not t.preferred]
        chosen_right = _spread(preferred, per_cell)
        chosen_right += _spread(others, per_cell - len(chosen_right))
        kept.extend(_spread(wrong, max_incorrect_per_cell) + chosen_right)
    return kept


# --------------------------------------------------------------------------- what the page reads


def _finite_or_none(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _scalar(v: Any) -> str | int | float | bool | None:
    """JSON scalars as they are (non-finite floats become None); anything else its string."""
    if v is None or isinstance(v, (str, bool, int)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    return str(v)


def _check_jpeg(trial_id: str, b64: str) -> None:
    if not isinstance(b64, str) or not b64 or not _B64.match(b64):
        raise DataError(f"trial {trial_id}: a frame's jpeg_b64 is not base64; build thumbnails with thumbnail_jpeg_b64")
    try:
        head = base64.b64decode(b64[:8] + "=" * (-len(b64[:8]) % 4))
    except binascii.Error as e:  # pragma: no cover - the regex above already filters
        raise DataError(f"trial {trial_id}: bad base64 thumbnail ({e})") from e
    if not head.startswith(b"\xff\xd8"):
        raise DataError(f"trial {trial_id}: a thumbnail is not a JPEG; use thumbnail_jpeg_b64")


def viewer_payload(trial: ViewerTrial) -> dict[str, Any]:
    """The JSON the page's script reads for one trial: bounded, frames checked to be base64 JPEG."""
    if not isinstance(trial, ViewerTrial):
        raise DataError(f"a viewer trial must be a ViewerTrial, got {type(trial).__name__}")
    tid = trial.trial_id
    frames = []
    for f in trial.frames:
        _check_jpeg(tid, f.jpeg_b64)
        frames.append({"index": f.index, "t": _finite_or_none(f.t), "jpeg_b64": f.jpeg_b64})
    frames = _even_subset(frames, MAX_FRAMES_PER_TRIAL)
    timeline = None
    if trial.timeline is not None:
        tl = trial.timeline
        true_events = [{"t": _finite_or_none(e.t), "label": e.label} for e in tl.true_events]
        reported = [{"t": _finite_or_none(e.t), "label": e.label} for e in tl.reported_events]
        matches = []
        for pair in tl.matches:
            i, j = pair
            if not (0 <= i < len(true_events) and 0 <= j < len(reported)):
                raise DataError(
                    f"trial {tid}: match {list(pair)!r} does not index its true and reported events; "
                    "matches are (true_idx, reported_idx) pairs"
                )
            matches.append([i, j])
        window = _finite_or_none(tl.window_s)
        timeline = {
            "duration_s": _finite_or_none(tl.duration_s),
            "true_events": true_events,
            "reported_events": reported,
            "matches": matches,
            "window_s": window if window is not None and window > 0 else None,
        }
    raw = trial.raw_text
    truncated = len(raw) > MAX_RAW_TEXT_CHARS
    return {
        "trial_id": tid,
        "sample_id": trial.sample_id,
        "model": trial.model,
        "condition": trial.condition,
        "group": trial.group,
        "status": trial.status,
        "correct": trial.correct,
        "columns": {str(k): _scalar(v) for k, v in trial.columns.items()},
        "facts": [[str(k), str(v)] for k, v in trial.facts],
        "timeline": timeline,
        "frames": frames,
        "raw_text": raw[:MAX_RAW_TEXT_CHARS] + ("\n… [truncated]" if truncated else ""),
    }
