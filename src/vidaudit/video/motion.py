"""Camera motion from pixels alone: which way the camera moved between frames (the ``camera-flow`` observer).

For a pair of grey frames it tracks corners (pyramidal Lucas-Kanade, checked forward and back) away
from the centre and compares two fits of their displacements: one shift shared by all (a pan or tilt)
and a radial field, each corner moving along its line to the centre by its own amount (a 2D zoom, or a
3D dolly whose parallax makes each depth grow at its own rate). Phase correlation (circular, so it
holds across the wrap of a 2D pan) gives the trackers their starting guess and is the fallback on a
frame with too few corners.
Comparing frames a fixed share of the clip apart fails both ways: a long gap aliases a fast pan (the
content laps the frame), a short one drowns a slow zoom in noise. So the gap is chosen from the motion
itself: the smallest power of two (in frames sent) at which the typical displacement reaches
``TARGET_PX``. Over evenly spread pairs at that gap, zoom wins when a radial field (free per corner, so
a dolly's parallax fits) explains the displacements better than one shared shift.

Directions follow the physical camera (``docs/perturbations.md``): content moving right = ``pan_left``,
down = ``tilt_up``, growing = ``zoom_in``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import cv2
import numpy as np

from vidaudit.core.errors import ConfigError

DIRECTIONS = ("zoom_in", "zoom_out", "pan_left", "pan_right", "tilt_up", "tilt_down")
#: every frame is resized (down or up) to this longer side, so thresholds in pixels mean the same share
#: of the frame whatever size a condition sends
SIDE = 192
#: the gap (in frames sent) grows until the typical pair displacement reaches this many pixels (of SIDE)
TARGET_PX = 6.0
#: pairs summed at the chosen gap (evenly spread over the clip) and pairs probed per gap while choosing
MAX_PAIRS = 12
PROBE_PAIRS = 4
_MIN_TRACKS = 8


def _gray(frame: np.ndarray) -> np.ndarray:
    g = cv2.cvtColor(np.ascontiguousarray(frame), cv2.COLOR_RGB2GRAY)
    h, w = g.shape
    f = SIDE / max(h, w)
    if f != 1.0:
        g = cv2.resize(
            g,
            (max(int(round(w * f)), 8), max(int(round(h * f)), 8)),
            interpolation=cv2.INTER_AREA if f < 1.0 else cv2.INTER_LINEAR,
        )
    return g


def _phase_shift(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    win = cv2.createHanningWindow((a.shape[1], a.shape[0]), cv2.CV_32F)
    (dx, dy), _ = cv2.phaseCorrelate(a.astype(np.float32), b.astype(np.float32), win)
    return float(dx), float(dy)


def _track(a: np.ndarray, b: np.ndarray, pts: np.ndarray, guess: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Corners ``pts`` of ``a`` found in ``b`` (pyramidal Lucas-Kanade from ``pts + guess``), kept only
    where tracking back lands within half a pixel of the start."""
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 30, 0.01)
    init = (pts + np.asarray(guess, np.float32)).astype(np.float32)
    fwd, st, _ = cv2.calcOpticalFlowPyrLK(
        a, b, pts, init.copy(), flags=cv2.OPTFLOW_USE_INITIAL_FLOW, winSize=(15, 15), maxLevel=3, criteria=criteria
    )
    back, st2, _ = cv2.calcOpticalFlowPyrLK(
        b, a, fwd, pts.copy(), flags=cv2.OPTFLOW_USE_INITIAL_FLOW, winSize=(15, 15), maxLevel=3, criteria=criteria
    )
    ok = (st.ravel() == 1) & (st2.ravel() == 1) & (np.linalg.norm((back - pts).reshape(-1, 2), axis=1) < 0.5)
    return pts.reshape(-1, 2)[ok], fwd.reshape(-1, 2)[ok]


def pair_motion(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """How grey frame ``b`` follows ``a``, from corners tracked away from the centre (beyond 15% of the
    short side): ``dx``, ``dy`` the median displacement (> 0: content moves right / down); ``scale`` the
    median ratio of the corners' distances from the centre (> 1: content grows); ``radius`` their median
    distance; and the two fits' residuals -- ``res_shift`` (median distance of the displacements from
    their median: 0 for a pan) and ``res_radial`` (median displacement across the line to the centre: 0
    for a zoom, whatever each corner's depth) -- plus ``tracks`` (0 when phase correlation stood in)."""
    h, w = a.shape
    centre = np.array([(w - 1) / 2.0, (h - 1) / 2.0], np.float32)
    guess = _phase_shift(a, b)
    pts = cv2.goodFeaturesToTrack(a, maxCorners=300, qualityLevel=0.01, minDistance=4, blockSize=5)
    best: tuple[np.ndarray, np.ndarray] | None = None
    if pts is not None and len(pts) >= _MIN_TRACKS:
        pts = pts.astype(np.float32)
        for g in dict.fromkeys([guess, (0.0, 0.0)]):
            if best is not None and len(best[0]) * 2 >= len(pts):
                break  # the phase guess already tracked most corners: no second start needed
            p0, p1 = _track(a, b, pts, g)
            far = np.linalg.norm(p0 - centre, axis=1) > 0.15 * min(w, h)
            if best is None or far.sum() > len(best[0]):
                best = (p0[far], p1[far])
    if best is None or len(best[0]) < _MIN_TRACKS:
        shift = math.hypot(*guess)
        return {
            "scale": 1.0,
            "dx": guess[0],
            "dy": guess[1],
            "radius": 0.25 * (w + h) / 2.0,
            "res_shift": 0.0,
            "res_radial": shift,
            "tracks": 0.0,
        }
    p0, p1 = best
    d = p1 - p0
    x0, x1 = p0 - centre, p1 - centre
    r0 = np.linalg.norm(x0, axis=1)
    t = np.median(d, axis=0)
    unit = x0 / r0[:, None]
    across = np.abs(d[:, 0] * unit[:, 1] - d[:, 1] * unit[:, 0])
    ratio = np.linalg.norm(x1, axis=1) / r0
    return {
        "scale": float(np.exp(np.median(np.log(np.maximum(ratio, 1e-3))))),
        "dx": float(t[0]),
        "dy": float(t[1]),
        "radius": float(np.median(r0)),
        "res_shift": float(np.median(np.linalg.norm(d - t, axis=1))),
        "res_radial": float(np.median(across)),
        "tracks": float(len(p0)),
    }


def _magnitude(m: dict[str, float]) -> float:
    return max(abs(m["dx"]), abs(m["dy"]), abs(math.log(m["scale"])) * m["radius"])


def _pairs(n: int, gap: int, most: int) -> list[tuple[int, int]]:
    starts = n - gap
    if starts <= most:
        return [(i, i + gap) for i in range(starts)]
    return [
        (int(round(j * (starts - 1) / (most - 1))), int(round(j * (starts - 1) / (most - 1))) + gap)
        for j in range(most)
    ]


def choose_gap(grey: Sequence[np.ndarray]) -> int:
    """The smallest gap 1, 2, 4, ... (capped at ``len - 1``) whose median pair displacement reaches
    ``TARGET_PX``: long enough to see a slow zoom, short enough that a fast pan does not lap the frame.
    A gap at which most pairs no longer fit (the motion outran the trackers) falls back to the one before."""
    n = len(grey)
    gap, last_fit = 1, 1
    while True:
        ms = [pair_motion(grey[i], grey[j]) for i, j in _pairs(n, gap, PROBE_PAIRS)]
        if sum(m["tracks"] > 0 for m in ms) * 2 < len(ms):
            return last_fit
        last_fit = gap
        if float(np.median([_magnitude(m) for m in ms])) >= TARGET_PX or gap >= n - 1:
            return gap
        gap = min(2 * gap, n - 1)


def classify_motion(frames: Sequence[np.ndarray]) -> tuple[str, dict[str, float]]:
    """The camera motion of RGB ``frames`` (in time order) and the evidence behind it.

    Zoom wins when a radial field fits the displacements better than one shift, by the pairs' mean of
    ``(res_shift - res_radial) / (res_shift + res_radial)`` (each pair one vote in [-1, 1], so a pair whose
    tracks a looming sprite scrambled cannot outweigh the rest); the sign of ``sum log scale`` says in
    (content grows) or out.
    Otherwise the larger component of the summed shift names the pan or tilt: content right =
    ``pan_left``, down = ``tilt_up``.
    """
    if len(frames) < 2:
        raise ConfigError("camera-flow needs at least two frames to see a motion")
    grey = [_gray(f) for f in frames]
    gap = choose_gap(grey)
    tx = ty = logs = res_shift = res_radial = vote = 0.0
    pairs = _pairs(len(grey), gap, MAX_PAIRS)
    for i, j in pairs:
        m = pair_motion(grey[i], grey[j])
        vote += (m["res_shift"] - m["res_radial"]) / max(m["res_shift"] + m["res_radial"], 1e-6) / len(pairs)
        tx += m["dx"]
        ty += m["dy"]
        logs += math.log(m["scale"])
        res_shift += m["res_shift"]
        res_radial += m["res_radial"]
    ev = {
        "tx": tx,
        "ty": ty,
        "log_scale": logs,
        "res_shift": res_shift,
        "res_radial": res_radial,
        "vote": vote,
        "gap": float(gap),
    }
    if vote > 0:
        return ("zoom_in" if logs > 0 else "zoom_out"), ev
    if abs(tx) >= abs(ty):
        return ("pan_left" if tx > 0 else "pan_right"), ev
    return ("tilt_up" if ty > 0 else "tilt_down"), ev
