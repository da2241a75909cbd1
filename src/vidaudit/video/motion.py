"""Camera motion from pixels alone: which way the camera moved between frames (the ``camera-flow`` observer).

- translation by phase correlation of the whole frame (circular, so it holds across the wrap of a 2D pan);
- radial scale from the dense optical flow (OpenCV Farneback) left after undoing that translation: its
  least-squares divergence per pixel of radius (content grows from the centre: > 0);
- the evidence is summed over the pairs a quarter of the frames apart, and the larger of zoom and translation wins.

Directions follow the physical camera (``docs/perturbations.md``): content moving right = ``pan_left``,
down = ``tilt_up``, growing = ``zoom_in``.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from vidaudit.core.errors import ConfigError

DIRECTIONS = ("zoom_in", "zoom_out", "pan_left", "pan_right", "tilt_up", "tilt_down")
_MAX_SIDE = 192
#: frames compared are ``(len - 1) // GAP_DIVISOR`` apart (at least 1): a step large enough that a zoom's
#: radial flow stands above the resampling blur it changes, small enough for the flow to track
GAP_DIVISOR = 4


def _gray(frame: np.ndarray) -> np.ndarray:
    g = cv2.cvtColor(np.ascontiguousarray(frame), cv2.COLOR_RGB2GRAY).astype(np.float32)
    h, w = g.shape
    f = min(1.0, _MAX_SIDE / max(h, w))
    if f < 1.0:
        g = cv2.resize(g, (max(int(w * f), 8), max(int(h * f), 8)), interpolation=cv2.INTER_AREA)
    return g


def _shift(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    win = cv2.createHanningWindow((a.shape[1], a.shape[0]), cv2.CV_32F)
    (dx, dy), _ = cv2.phaseCorrelate(a, b, win)
    return float(dx), float(dy)


def pair_motion(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """How grey frame ``b`` follows ``a``: the translation (dx, dy: the phase-correlation shift, circular,
    rounded, plus the mean flow left after it) and
    the radial rate ``k`` (> 0: content grows from the centre), the least-squares divergence of the dense
    optical flow (Farneback) left between ``b`` and ``a`` shifted by the rounded translation, per pixel of
    radius, over the frame less an eighth at each border."""
    h, w = a.shape
    dx, dy = _shift(a, b)
    rolled = np.roll(a, (int(round(dy)), int(round(dx))), axis=(0, 1))
    flow = cv2.calcOpticalFlowFarneback(np.clip(rolled, 0, 255).astype(np.uint8), np.clip(b, 0, 255).astype(np.uint8),
                                        None, 0.5, 3, 9, 3, 5, 1.1, 0)
    my, mx = max(h // 8, 1), max(w // 8, 1)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    X, Y = (xx - (w - 1) / 2.0)[my:h - my, mx:w - mx], (yy - (h - 1) / 2.0)[my:h - my, mx:w - mx]
    u, v = flow[my:h - my, mx:w - mx, 0], flow[my:h - my, mx:w - mx, 1]
    mu, mv = float(u.mean()), float(v.mean())
    k = float(np.sum((u - mu) * X + (v - mv) * Y) / max(float(np.sum(X * X + Y * Y)), 1e-9))
    # the translation: the whole-pixel shift undone, plus the mean flow left after it
    return {"dx": round(dx) + mu, "dy": round(dy) + mv, "k": k, "radius": float(np.mean(np.hypot(X, Y))),
            "phase_dx": dx, "phase_dy": dy}


def classify_motion(frames: Sequence[np.ndarray]) -> tuple[str, dict[str, float]]:
    """The camera motion of RGB ``frames`` (in time order) and the evidence summed over frame pairs ``gap`` apart.

    Zoom wins when the radial displacement at the mean tile radius (``|sum k| * radius``) exceeds the
    larger translation component; its sign says in (content grows) or out. Otherwise the larger of
    ``|sum dx|`` and ``|sum dy|`` names the pan or tilt: content right = ``pan_left``, down = ``tilt_up``.
    """
    if len(frames) < 2:
        raise ConfigError("camera-flow needs at least two frames to see a motion")
    grey = [_gray(f) for f in frames]
    tx = ty = ksum = 0.0
    radius = 1.0
    gap = max(1, (len(grey) - 1) // GAP_DIVISOR)
    for a, b in zip(grey, grey[gap:], strict=False):
        m = pair_motion(a, b)
        tx += m["dx"]
        ty += m["dy"]
        ksum += m["k"]
        radius = m["radius"]
    radial = ksum * radius
    ev = {"tx": tx, "ty": ty, "radial_px": radial}
    if abs(radial) > max(abs(tx), abs(ty)):
        return ("zoom_in" if radial > 0 else "zoom_out"), ev
    if abs(tx) >= abs(ty):
        return ("pan_left" if tx > 0 else "pan_right"), ev
    return ("tilt_up" if ty > 0 else "tilt_down"), ev
