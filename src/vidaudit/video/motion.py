"""Camera motion from pixels alone: which way the camera moved between frames (the ``camera-flow`` observer).

For a pair of grey frames it tracks corners (pyramidal Lucas-Kanade, checked forward and back), takes
the translation of the frame centre from a robust (RANSAC) similarity fit and the scale from the median
ratio of the corners' distances from the centre, so a zoom (a 2D crop or a 3D dolly with parallax) reads
as a scale with no translation and a pan or tilt as a translation with unit scale; phase correlation (circular, so it holds across the wrap of
a 2D pan) gives the trackers their starting guess and is the fallback on a frame with too few corners.
Comparing frames a fixed share of the clip apart fails both ways: a long gap aliases a fast pan (the
content laps the frame), a short one drowns a slow zoom in noise. So the gap is chosen from the motion
itself: the smallest power of two (in frames sent) at which the typical displacement reaches
``TARGET_PX``. Evidence is summed over evenly spread pairs at that gap; zoom wins when its radial
displacement (``|sum log s| * radius``) exceeds the larger translation component.

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
        g = cv2.resize(g, (max(int(round(w * f)), 8), max(int(round(h * f)), 8)),
                       interpolation=cv2.INTER_AREA if f < 1.0 else cv2.INTER_LINEAR)
    return g


def _phase_shift(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    win = cv2.createHanningWindow((a.shape[1], a.shape[0]), cv2.CV_32F)
    (dx, dy), _ = cv2.phaseCorrelate(a.astype(np.float32), b.astype(np.float32), win)
    return float(dx), float(dy)


def _track(a: np.ndarray, b: np.ndarray, pts: np.ndarray, guess: tuple[float, float]
           ) -> tuple[np.ndarray, np.ndarray]:
    """Corners ``pts`` of ``a`` found in ``b`` (pyramidal Lucas-Kanade from ``pts + guess``), kept only
    where tracking back lands within half a pixel of the start."""
    lk = dict(winSize=(15, 15), maxLevel=3, criteria=(cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 30, 0.01))
    init = (pts + np.float32(guess)).astype(np.float32)
    fwd, st, _ = cv2.calcOpticalFlowPyrLK(a, b, pts, init.copy(), flags=cv2.OPTFLOW_USE_INITIAL_FLOW, **lk)
    back, st2, _ = cv2.calcOpticalFlowPyrLK(b, a, fwd, pts.copy(), flags=cv2.OPTFLOW_USE_INITIAL_FLOW, **lk)
    ok = (st.ravel() == 1) & (st2.ravel() == 1) & (np.linalg.norm((back - pts).reshape(-1, 2), axis=1) < 0.5)
    return pts.reshape(-1, 2)[ok], fwd.reshape(-1, 2)[ok]


def pair_motion(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """How grey frame ``b`` follows ``a``: ``scale`` (> 1: content grows from the centre), ``dx``, ``dy``
    (the translation of the frame centre from a RANSAC similarity fit; > 0: content moves right / down),
    ``radius`` (the median distance of the tracked corners from the centre) and ``inliers`` (the corners
    the fit kept; 0 when phase correlation stood in). The scale is the median ratio of the corners'
    distances from the centre once the translation is undone."""
    h, w = a.shape
    centre = np.float32([(w - 1) / 2.0, (h - 1) / 2.0])
    guess = _phase_shift(a, b)
    pts = cv2.goodFeaturesToTrack(a, maxCorners=300, qualityLevel=0.01, minDistance=4, blockSize=5)
    best: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
    if pts is not None and len(pts) >= _MIN_TRACKS:
        pts = pts.astype(np.float32)
        for g in dict.fromkeys([guess, (0.0, 0.0)]):
            if best is not None and best[0] * 2 >= len(pts):
                break      # the phase guess already tracked most corners: no second start needed
            p0, p1 = _track(a, b, pts, g)
            if len(p0) < _MIN_TRACKS:
                continue
            m, inl = cv2.estimateAffinePartial2D(p0 - centre, p1 - centre, method=cv2.RANSAC,
                                                 ransacReprojThreshold=2.0, maxIters=500, confidence=0.99,
                                                 refineIters=10)
            if m is None:
                continue
            keep = inl.ravel().astype(bool)
            if best is None or keep.sum() > best[0]:
                best = (int(keep.sum()), m, p0, p1)
    if best is None or best[0] < _MIN_TRACKS:
        return {"scale": 1.0, "dx": guess[0], "dy": guess[1], "radius": 0.25 * (w + h) / 2.0, "inliers": 0.0}
    _, m, p0, p1 = best
    tx, ty = float(m[0, 2]), float(m[1, 2])
    # the scale: the median ratio of distances from the centre once the translation is undone, over corners
    # away from the centre -- robust to the parallax of a dolly (each depth grows at its own rate), where
    # one similarity fits only one depth layer
    r0 = np.linalg.norm(p0 - centre, axis=1)
    r1 = np.linalg.norm(p1 - centre - np.float32([tx, ty]), axis=1)
    far = r0 > 0.15 * min(w, h)
    if far.sum() >= _MIN_TRACKS:
        scale = float(np.exp(np.median(np.log(np.maximum(r1[far], 1e-3) / r0[far]))))
        radius = float(np.median(r0[far]))
    else:
        scale = float(math.sqrt(max(abs(np.linalg.det(m[:, :2])), 1e-12)))
        radius = float(np.mean(r0))
    return {"scale": scale, "dx": tx, "dy": ty, "radius": max(radius, 1.0), "inliers": float(len(p0))}


def _magnitude(m: dict[str, float]) -> float:
    return max(abs(m["dx"]), abs(m["dy"]), abs(math.log(m["scale"])) * m["radius"])


def _pairs(n: int, gap: int, most: int) -> list[tuple[int, int]]:
    starts = n - gap
    if starts <= most:
        return [(i, i + gap) for i in range(starts)]
    return [(int(round(j * (starts - 1) / (most - 1))), int(round(j * (starts - 1) / (most - 1))) + gap)
            for j in range(most)]


def choose_gap(grey: Sequence[np.ndarray]) -> int:
    """The smallest gap 1, 2, 4, ... (capped at ``len - 1``) whose median pair displacement reaches
    ``TARGET_PX``: long enough to see a slow zoom, short enough that a fast pan does not lap the frame.
    A gap at which most pairs no longer fit (the motion outran the trackers) falls back to the one before."""
    n = len(grey)
    gap, last_fit = 1, 1
    while True:
        ms = [pair_motion(grey[i], grey[j]) for i, j in _pairs(n, gap, PROBE_PAIRS)]
        if sum(m["inliers"] > 0 for m in ms) * 2 < len(ms):
            return last_fit
        last_fit = gap
        if float(np.median([_magnitude(m) for m in ms])) >= TARGET_PX or gap >= n - 1:
            return gap
        gap = min(2 * gap, n - 1)


def classify_motion(frames: Sequence[np.ndarray]) -> tuple[str, dict[str, float]]:
    """The camera motion of RGB ``frames`` (in time order) and the evidence behind it.

    Zoom wins when the radial displacement ``|sum log scale| * radius`` exceeds the larger of
    ``|sum dx|`` and ``|sum dy|``; its sign says in (content grows) or out. Otherwise the larger
    translation component names the pan or tilt: content right = ``pan_left``, down = ``tilt_up``.
    """
    if len(frames) < 2:
        raise ConfigError("camera-flow needs at least two frames to see a motion")
    grey = [_gray(f) for f in frames]
    gap = choose_gap(grey)
    tx = ty = logs = 0.0
    radii = []
    for i, j in _pairs(len(grey), gap, MAX_PAIRS):
        m = pair_motion(grey[i], grey[j])
        tx += m["dx"]
        ty += m["dy"]
        logs += math.log(m["scale"])
        radii.append(m["radius"])
    radial = logs * float(np.mean(radii))
    ev = {"tx": tx, "ty": ty, "radial_px": radial, "gap": float(gap)}
    if abs(radial) > max(abs(tx), abs(ty)):
        return ("zoom_in" if radial > 0 else "zoom_out"), ev
    if abs(tx) >= abs(ty):
        return ("pan_left" if tx > 0 else "pan_right"), ev
    return ("tilt_up" if ty > 0 else "tilt_down"), ev
