"""Per-frame detection for the offline extractor: coloured blobs on the synthetic scenes' known palette.

The offline extractor is a classical perceiver: it knows what a synthetic scene can contain (the
generator's public palette, shapes and size rule -- the same knowledge the ``legend`` prompt gives a
VLM) and nothing of a particular video's record. Per decoded frame it labels every pixel with the
nearest palette colour, finds the connected blobs of each agent colour and of the ball, and reads
off each blob's shape (fill of its bounding box and of its enclosing circle), size class, whether
its ring is lit, whether it is complete (not cut by the frame edge or by another blob), and its
number by matching the digit pixels inside it against digits rendered with the scenes' own font.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np

from vidaudit.sdk import draw
from vidaudit.suites.faithful.scene import (
    BACKGROUND,
    BALL_RGB,
    COLOURS,
    HALO,
    HALO_GAP,
    HALO_WIDTH,
    INRADIUS,
    LARGE_FACTOR,
    SHAPES,
    vertices,
)

#: palette order: background, ring white, ball grey, black text, then the agent colours
NAMES: tuple[str, ...] = ("background", "white", "ball", "black", *COLOURS)
RGB = np.array([BACKGROUND, HALO, BALL_RGB, (0, 0, 0), *COLOURS.values()], dtype=np.float32)
AGENT_LABELS = {name: i for i, name in enumerate(NAMES) if name in COLOURS}
BALL_LABEL, WHITE_LABEL, BLACK_LABEL = 2, 1, 3
#: a digit read is trusted when its rendering's error is below this share of the runner-up's
DIGIT_RATIO = 0.7


@lru_cache(maxsize=1)
def _lut() -> np.ndarray:
    q = np.arange(32, dtype=np.float32) * 8 + 4
    grid = np.stack(np.meshgrid(q, q, q, indexing="ij"), axis=-1).reshape(-1, 1, 3)
    return ((grid - RGB[None, :, :]) ** 2).sum(axis=2).argmin(axis=1).astype(np.uint8).reshape(32, 32, 32)


def label(img: np.ndarray) -> np.ndarray:
    q = img >> 3
    return _lut()[q[..., 0], q[..., 1], q[..., 2]]


def small_radius(width: int, height: int) -> float:
    """The scenes' small circumradius (``SceneSpec.small_radius``): a function of the frame size only."""
    return max(7.0, 0.065 * min(width, height))


@dataclass(frozen=True)
class Blob:
    colour: str
    x: float
    y: float
    radius: float  # enclosing-circle radius of the filled blob
    shape: str | None  # None when the blob is cut (incomplete)
    size: str
    lit: bool | None  # None when the ring cannot be judged (blob cut)
    complete: bool
    number: int | None  # a trusted digit read, else None
    area: int


@dataclass(frozen=True)
class FrameDetections:
    t: float
    blobs: tuple[Blob, ...]
    ball: tuple[float, float] | None
    width: int
    height: int


#: the shape template is compared with the frame in the annulus from this share of the circumradius
#: (inside it every shape is filled and the digit is drawn) to ``SHAPE_OUTER_PX`` beyond it (the ring
#: of a lit agent starts ``HALO_GAP`` px out)
SHAPE_INNER, SHAPE_OUTER_PX = 0.6, 1.5
#: sub-pixel offsets of the template centre tried around the blob's centroid
SHAPE_OFFSETS = (0.0,)
#: and, for the shape found, the offsets searched for the centre the digit reader uses
CENTRE_OFFSETS = tuple(k / 4 for k in range(-3, 4))


def _template_error(
    window: np.ndarray,
    pixels: np.ndarray,
    ring: np.ndarray,
    shape: str,
    rgb: tuple[int, int, int],
    c: tuple[float, float],
    radius: float,
) -> float:
    """Mean squared RGB error, over ``ring``, of ``shape`` drawn at ``c`` on a window the size of
    ``window`` against the frame's ``pixels`` (``window[ring]``)."""
    canvas = np.empty(window.shape, np.uint8)
    canvas[:] = BACKGROUND
    if shape == "circle":
        draw.circle(canvas, c, radius, rgb)
    else:
        draw.polygon(canvas, vertices(shape, radius) + np.asarray(c), rgb)
    return float(((canvas[ring].astype(np.float32) - pixels) ** 2).sum(axis=1).mean())


def _classify(img: np.ndarray, colour: str, cx: float, cy: float, radius: float) -> tuple[str, float, float] | None:
    """(shape, x, y): the scene shape whose rendering -- the scenes' own anti-aliased drawing, in the
    blob's colour on the background, at the size class's known circumradius, centred within half a
    pixel of the blob's centroid -- is nearest the frame's RGB pixels in the annulus where the shapes
    differ, and the centre (to a quarter pixel) at which it fits best.

    Comparing colours rather than palette labels matters for small shapes: after yuv420p compression
    a small shape's edge pixels mix its colour with the background, and the nearest-palette labels of
    those mixtures (e.g. yellow + dark = orange or green) erode the blob so that a small circle's mask
    looks like a hexagon's. The refined centre is what the digit reader needs: the centroid of an
    eroded mask is off by up to a pixel. None when the annulus leaves the frame."""
    h, w = img.shape[:2]
    half = int(math.ceil(radius + SHAPE_OUTER_PX + 2))
    x0, y0 = int(round(cx)) - half, int(round(cy)) - half
    if x0 < 0 or y0 < 0 or x0 + 2 * half + 1 > w or y0 + 2 * half + 1 > h:
        return None
    crop = img[y0 : y0 + 2 * half + 1, x0 : x0 + 2 * half + 1].astype(np.float32)
    yy, xx = np.mgrid[0 : 2 * half + 1, 0 : 2 * half + 1]
    d2 = (xx + x0 - cx) ** 2 + (yy + y0 - cy) ** 2
    ring = (d2 >= (SHAPE_INNER * radius) ** 2) & (d2 <= (radius + SHAPE_OUTER_PX) ** 2)
    rgb = COLOURS[colour]
    template = crop
    crop = crop[ring]
    best: dict[str, float] = {}
    for shape in SHAPES:
        for dx in SHAPE_OFFSETS:
            for dy in SHAPE_OFFSETS:
                err = _template_error(template, crop, ring, shape, rgb, (cx + dx - x0, cy + dy - y0), radius)
                best[shape] = min(best.get(shape, math.inf), err)
    shape = min(best, key=lambda k: best[k])
    dx = dy = 0.0
    for axis in (0, 1):  # one axis at a time: the fit error is smooth and nearly separable in x and y
        fits = [
            (
                _template_error(
                    template,
                    crop,
                    ring,
                    shape,
                    rgb,
                    (cx + (o if axis == 0 else dx) - x0, cy + (o if axis == 1 else dy) - y0),
                    radius,
                ),
                o,
            )
            for o in CENTRE_OFFSETS
        ]
        if axis == 0:
            dx = min(fits)[1]
        else:
            dy = min(fits)[1]
    return shape, cx + dx, cy + dy


def _text_rgb(colour: str) -> tuple[int, int, int]:
    rgb = COLOURS[colour]
    black, white = (0, 0, 0), (255, 255, 255)
    return black if draw.contrast_ratio(rgb, black) >= draw.contrast_ratio(rgb, white) else white


DIGIT_BLUR = 0.8
DIGIT_SLACK = 0.35


def _soft(a: np.ndarray) -> np.ndarray:
    """Blurred as the encoder blurs thin strokes, so that template and frame are compared at one sharpness."""
    return cv2.GaussianBlur(a, (0, 0), DIGIT_BLUR) if DIGIT_BLUR > 0 else a


def read_digit(img: np.ndarray, colour: str, shape: str, radius: float, cx: float, cy: float) -> int | None:
    """The number drawn inside a blob, by rendering each digit 1-9 the way the scenes draw it (the
    same font, scale rule and anti-aliasing) at the blob's centre, and keeping the digit whose
    rendering is nearest the frame's pixels in the inner disk; None unless it clearly beats the rest.
    The scenes put the text at an integer origin rounded from the true centre; the centre given is
    fitted to a quarter pixel, so each origin coordinate is tried at both roundings when the fitted
    value is within ``DIGIT_SLACK`` px of a rounding boundary (else only the one)."""
    inr = max(radius - 0.5, 1.0) * INRADIUS[shape]
    scale = max(0.28, 0.045 * inr)
    thickness = 1 if inr < 9 else 2
    half = int(math.ceil(inr * 0.85))
    h, w = img.shape[:2]
    x0, y0 = int(round(cx)) - half, int(round(cy)) - half
    if x0 < 0 or y0 < 0 or x0 + 2 * half + 1 > w or y0 + 2 * half + 1 > h:
        return None
    crop = img[y0 : y0 + 2 * half + 1, x0 : x0 + 2 * half + 1].astype(np.float32)
    yy, xx = np.mgrid[0 : 2 * half + 1, 0 : 2 * half + 1]
    disk = (xx - half) ** 2 + (yy - half) ** 2 <= (inr * 0.85) ** 2
    fill, ink = COLOURS[colour], _text_rgb(colour)
    soft = _soft(crop)
    best: dict[int, float] = {}
    for d in range(1, 10):
        (tw, th), _ = cv2.getTextSize(str(d), cv2.FONT_HERSHEY_SIMPLEX, scale, thickness)
        oxs = sorted({int(round(cx - tw / 2 + e)) for e in (-DIGIT_SLACK, DIGIT_SLACK)})
        oys = sorted({int(round(cy + th / 2 + e)) for e in (-DIGIT_SLACK, DIGIT_SLACK)})
        for ox in oxs:
            for oy in oys:
                canvas = np.empty_like(crop, dtype=np.uint8)
                canvas[:] = fill
                org = (ox - x0, oy - y0)
                cv2.putText(canvas, str(d), org, cv2.FONT_HERSHEY_SIMPLEX, scale, ink, thickness, cv2.LINE_AA)
                err = float(((_soft(canvas.astype(np.float32)) - soft) ** 2).sum(axis=2)[disk].mean())
                best[d] = min(best.get(d, math.inf), err)
    ranked = sorted(best.items(), key=lambda kv: kv[1])
    (d1, e1), (_, e2) = ranked[0], ranked[1]
    return d1 if e1 < DIGIT_RATIO * e2 else None


def _ring_lit(labels: np.ndarray, x: float, y: float, radius: float) -> bool | None:
    """Whether the white ring is drawn around the shape of circumradius ``radius`` centred at (x, y):
    at least half of 32 points on the ring's centre line (or half a pixel inside or outside it: the
    best of the three) are labelled white. ``radius`` is the size class's known circumradius, not the
    blob's: an eroded or merged blob's enclosing circle misses the 2 px ring."""
    h, w = labels.shape
    angles = np.arange(32) * (2 * math.pi / 32)
    best: float | None = None
    for dr in (-0.5, 0.0, 0.5):
        r = radius + HALO_GAP + HALO_WIDTH / 2 + dr
        xs = np.round(x + r * np.cos(angles)).astype(int)
        ys = np.round(y + r * np.sin(angles)).astype(int)
        inside = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
        if inside.sum() < 16:
            return None
        share = float((labels[ys[inside], xs[inside]] == WHITE_LABEL).mean())
        best = share if best is None else max(best, share)
    return bool(best is not None and best >= 0.5)


def _components(labels: np.ndarray, min_area: int) -> list[tuple[str, np.ndarray]]:
    """(colour, filled mask) of every agent-coloured blob large enough to be an agent."""
    out = []
    for colour, lab in AGENT_LABELS.items():
        mask = (labels == lab).astype(np.uint8)
        if mask.sum() < min_area:
            continue
        n, comp, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
        for k in range(1, n):
            if stats[k, cv2.CC_STAT_AREA] < min_area:
                continue
            own = (comp == k).astype(np.uint8)
            contours, _ = cv2.findContours(own, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
            filled = np.zeros_like(own)
            cv2.drawContours(filled, contours, -1, 1, thickness=cv2.FILLED)
            out.append((colour, filled))
    return out


def detect(img: np.ndarray, t: float) -> FrameDetections:
    """Every agent-coloured blob and the ball in one RGB frame."""
    labels = label(img)
    h, w = labels.shape
    r_small = small_radius(w, h)
    min_area = max(6, int(0.12 * math.pi * r_small * r_small))
    comps = _components(labels, min_area)
    kernel = np.ones((5, 5), np.uint8)
    grown = [cv2.dilate(m, kernel) > 0 for _, m in comps]
    blobs: list[Blob] = []
    for i, (colour, filled) in enumerate(comps):
        ys, xs = np.nonzero(filled)
        pts = np.stack([xs, ys], axis=1).astype(np.float32)
        (_, _), r_enc = cv2.minEnclosingCircle(pts)
        r_enc = float(r_enc) + 0.5
        x0, y0, x1, y1 = xs.min(), ys.min(), xs.max(), ys.max()
        area = float(filled.sum())
        edge = x0 <= 1 or y0 <= 1 or x1 >= w - 2 or y1 >= h - 2
        touching = any(j != i and bool((grown[i] & (comps[j][1] > 0)).any()) for j in range(len(comps)))
        complete = not edge and not touching
        size = "large" if r_enc > r_small * (1 + LARGE_FACTOR) / 2 else "small"
        mx, my = float(xs.mean()), float(ys.mean())
        r_true = r_small * (LARGE_FACTOR if size == "large" else 1.0)
        fit = _classify(img, colour, mx, my, r_true) if complete else None
        shape, number = None, None
        if fit is not None:
            shape, fx, fy = fit
            number = read_digit(img, colour, shape, r_true + 0.5, fx, fy)
        rx, ry = (fx, fy) if fit is not None else (mx, my)
        lit = _ring_lit(labels, rx, ry, r_true) if not edge else None
        blobs.append(
            Blob(
                colour=colour,
                x=mx,
                y=my,
                radius=r_enc,
                shape=shape,
                size=size,
                lit=lit,
                complete=complete,
                number=number,
                area=int(area),
            )
        )
    ball = None
    bmask = (labels == BALL_LABEL).astype(np.uint8)
    for b in comps:  # digits can alias to grey: only grey outside every agent blob is the ball
        bmask[b[1] > 0] = 0
    n, comp, stats, cents = cv2.connectedComponentsWithStats(bmask, connectivity=8)
    best = 0
    for k in range(1, n):
        a = stats[k, cv2.CC_STAT_AREA]
        if a >= 4 and a > best:
            best, ball = a, (float(cents[k][0]), float(cents[k][1]))
    return FrameDetections(t=t, blobs=tuple(blobs), ball=ball, width=w, height=h)
