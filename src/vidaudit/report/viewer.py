"""Trials for the HTML trace viewer: which ones to keep, how big they may be, and their thumbnails.

A run can hold tens of thousands of trials; the report keeps every incorrect one up to a
cap per model x condition x domain (spread over the N x F grid), plus a few correct ones,
preferring correct answers with an unfaithful trace (accidental correctness, paper F.6).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vidaudit.core.errors import DataError

MAX_FRAMES_PER_TRIAL = 24
MAX_RAW_TEXT_CHARS = 20_000
_B64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


def thumbnail_jpeg_b64(rgb: np.ndarray, width: int = 160, quality: int = 80) -> str:
    """A JPEG thumbnail of one RGB frame, ``width`` pixels wide, as base64 for a data: URL."""
    import cv2

    if not isinstance(rgb, np.ndarray) or rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        got = f"{rgb.dtype} array of shape {rgb.shape}" if isinstance(rgb, np.ndarray) else type(rgb).__name__
        raise DataError(f"thumbnail needs an (H, W, 3) uint8 RGB frame, got {got}; pass a frame from read_frames")
    if width < 1:
        raise DataError(f"thumbnail width must be >= 1 pixel, got {width}")
    h, w = rgb.shape[:2]
    if h == 0 or w == 0:
        raise DataError("thumbnail of an empty frame; check the frame indices you decoded")
    height = max(1, round(h * width / w))
    interp = cv2.INTER_AREA if width < w else cv2.INTER_LINEAR
    small = cv2.resize(rgb, (width, height), interpolation=interp)
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(small, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:  # pragma: no cover - cv2 encodes any uint8 image
        raise DataError("OpenCV could not encode the thumbnail as JPEG")
    return base64.b64encode(buf.tobytes()).decode("ascii")


def _is_correct(trial: Mapping[str, Any]) -> bool:
    return trial.get("correct") is True


def _cell_key(trial: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(trial.get("model")), str(trial.get("condition")), str(trial.get("domain")))


def _spread(trials: list[Mapping[str, Any]], k: int) -> list[Mapping[str, Any]]:
    """Up to k trials taken round-robin over (N, F) so the sample covers the grid, deterministic by trial_id."""
    by_point: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for t in sorted(trials, key=lambda t: str(t.get("trial_id"))):
        by_point.setdefault((t.get("n_events"), t.get("frequency_hz")), []).append(t)
    queues = [by_point[p] for p in sorted(by_point, key=lambda p: (_num(p[0]), _num(p[1])))]
    out: list[Mapping[str, Any]] = []
    depth = 0
    while len(out) < k and any(depth < len(q) for q in queues):
        for q in queues:
            if depth < len(q) and len(out) < k:
                out.append(q[depth])
        depth += 1
    return out


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.inf


def select_trials_for_viewer(
    trials: Sequence[Mapping[str, Any]],
    per_cell: int = 4,
    max_incorrect_per_cell: int = 40,
) -> list[dict[str, Any]]:
    """Keep the report small: per model x condition x domain, incorrect trials up to a cap plus a few correct.

    Incorrect includes errored and unparseable trials (``correct`` not True). Correct trials whose
    trace F1 is below 0.8 (accidental correctness) are preferred over faithful ones.
    """
    if per_cell < 0 or max_incorrect_per_cell < 0:
        raise DataError("per_cell and max_incorrect_per_cell must be >= 0")
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    seen: set[str] = set()
    for i, t in enumerate(trials):
        if not isinstance(t, Mapping) or "trial_id" not in t:
            raise DataError(f"trials[{i}] has no trial_id; pass the scored trial records")
        if str(t["trial_id"]) in seen:
            raise DataError(f"trial {t['trial_id']} appears twice; each trial must be listed once")
        seen.add(str(t["trial_id"]))
        groups.setdefault(_cell_key(t), []).append(t)
    kept: list[dict[str, Any]] = []
    for key in sorted(groups):
        group = groups[key]
        wrong = [t for t in group if not _is_correct(t)]
        right = [t for t in group if _is_correct(t)]
        accidental = [t for t in right if isinstance(t.get("f1"), (int, float)) and t["f1"] < 0.8]
        faithful = [t for t in right if t not in accidental]
        chosen = _spread(wrong, max_incorrect_per_cell)
        chosen_right = _spread(accidental, per_cell)
        chosen_right += _spread(faithful, per_cell - len(chosen_right))
        kept.extend(dict(t) for t in chosen + chosen_right)
    return kept


def _finite_or_none(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _even_subset(items: list[Any], k: int) -> list[Any]:
    if len(items) <= k:
        return items
    idx = np.linspace(0, len(items) - 1, k).round().astype(int)
    return [items[i] for i in dict.fromkeys(idx.tolist())]


def viewer_record(trial: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON the page's script reads for one trial: typed, bounded, frames checked to be base64 JPEG."""
    frames = []
    for f in trial.get("frames") or []:
        b64 = f.get("jpeg_b64") if isinstance(f, Mapping) else None
        if not isinstance(b64, str) or not b64 or not _B64.match(b64):
            raise DataError(f"trial {trial.get('trial_id')}: a frame's jpeg_b64 is not base64; "
                            "build thumbnails with thumbnail_jpeg_b64")
        try:
            head = base64.b64decode(b64[:8] + "=" * (-len(b64[:8]) % 4))
        except binascii.Error as e:  # pragma: no cover - regex above already filters
            raise DataError(f"trial {trial.get('trial_id')}: bad base64 thumbnail ({e})") from e
        if not head.startswith(b"\xff\xd8"):
            raise DataError(f"trial {trial.get('trial_id')}: a thumbnail is not a JPEG; use thumbnail_jpeg_b64")
        frames.append({"index": f.get("index"), "t": _finite_or_none(f.get("t")), "jpeg_b64": b64})
    frames = _even_subset(frames, MAX_FRAMES_PER_TRIAL)
    raw = trial.get("raw_text")
    raw = "" if raw is None else str(raw)
    truncated = len(raw) > MAX_RAW_TEXT_CHARS
    true_events = [{"t": _finite_or_none(e.get("t")), "frame": e.get("frame"), "state_after": _scalar(e.get("state_after"))}
                   for e in trial.get("true_events") or [] if isinstance(e, Mapping)]
    reported = [{"t": _finite_or_none(e.get("t")), "label": _scalar(e.get("label"))}
                for e in trial.get("reported_events") or [] if isinstance(e, Mapping)]
    matches = []
    for pair in trial.get("matches") or []:
        if (isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(i, int) for i in pair)
                and 0 <= pair[0] < len(true_events) and 0 <= pair[1] < len(reported)):
            matches.append([pair[0], pair[1]])
        else:
            raise DataError(f"trial {trial.get('trial_id')}: match {pair!r} does not index its true and "
                            "reported events; matches are [true_idx, reported_idx] pairs")
    return {
        "trial_id": str(trial.get("trial_id")),
        "sample_id": _scalar(trial.get("sample_id")),
        "model": str(trial.get("model")),
        "condition": str(trial.get("condition")),
        "domain": str(trial.get("domain")),
        "n_events": trial.get("n_events") if isinstance(trial.get("n_events"), int) else None,
        "frequency_hz": _finite_or_none(trial.get("frequency_hz")),
        "duration_s": _finite_or_none(trial.get("duration_s")),
        "status": _scalar(trial.get("status")),
        "answer": _scalar(trial.get("answer")),
        "predicted_count": _scalar(trial.get("predicted_count")),
        "parse_method": _scalar(trial.get("parse_method")),
        "correct": trial.get("correct") if isinstance(trial.get("correct"), bool) else None,
        "f1": _finite_or_none(trial.get("f1")),
        "window_s": _finite_or_none(trial.get("window_s")),
        "true_events": true_events,
        "reported_events": reported,
        "matches": matches,
        "raw_text": raw[:MAX_RAW_TEXT_CHARS] + ("\n… [truncated]" if truncated else ""),
        "frames": frames,
    }


def _scalar(v: Any) -> str | int | float | bool | None:
    """Keep JSON scalars as they are; anything else becomes its string (the page shows it as text)."""
    if v is None or isinstance(v, (str, bool, int)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    return str(v)
