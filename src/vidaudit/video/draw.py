"""Drawing helpers: a contrast-checked palette and antialiased shapes at sub-pixel positions."""

from __future__ import annotations

import cv2
import numpy as np

SHIFT = 4  # cv2 fixed-point bits: positions are drawn at 1/16 px so slow motion stays smooth
_SCALE = 1 << SHIFT

# Colours (RGB) that read well on screen and stay distinct after yuv420p compression.
BACKGROUNDS: tuple[tuple[int, int, int], ...] = (
    (16, 18, 28),
    (28, 32, 44),
    (240, 240, 236),
    (226, 232, 240),
    (20, 40, 36),
    (44, 24, 40),
)
FOREGROUNDS: tuple[tuple[int, int, int], ...] = (
    (230, 57, 70),
    (255, 183, 3),
    (33, 158, 188),
    (42, 157, 143),
    (244, 162, 97),
    (131, 56, 236),
    (58, 134, 255),
    (255, 0, 110),
    (6, 214, 160),
    (255, 209, 102),
    (17, 138, 178),
    (239, 71, 111),
)


def relative_luminance(rgb: tuple[int, int, int]) -> float:
    c = np.asarray(rgb, dtype=np.float64) / 255.0
    lin = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2])


def contrast_ratio(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def colour_distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    return float(np.linalg.norm(np.subtract(a, b, dtype=np.float64)))


def pick_colours(
    rng: np.random.Generator, k: int, min_contrast: float = 3.0, min_distance: float = 90.0
) -> tuple[tuple[int, int, int], list[tuple[int, int, int]]]:
    """A background and ``k`` foregrounds, each with WCAG contrast >= ``min_contrast`` against the
    background and RGB distance >= ``min_distance`` from each other."""
    bg = BACKGROUNDS[int(rng.integers(len(BACKGROUNDS)))]
    candidates = [c for c in FOREGROUNDS if contrast_ratio(c, bg) >= min_contrast]
    order = rng.permutation(len(candidates))
    chosen: list[tuple[int, int, int]] = []
    for i in order:
        c = candidates[int(i)]
        if all(colour_distance(c, o) >= min_distance for o in chosen):
            chosen.append(c)
        if len(chosen) == k:
            return bg, chosen
    raise ValueError(f"palette cannot provide {k} contrasting colours on {bg}")  # pragma: no cover


def fixed(v: float) -> int:
    return int(round(v * _SCALE))


def circle(
    img: np.ndarray, centre: tuple[float, float], radius: float, colour: tuple[int, ...], thickness: int = -1
) -> None:
    cv2.circle(img, (fixed(centre[0]), fixed(centre[1])), fixed(radius), colour, thickness, cv2.LINE_AA, SHIFT)


def polygon(img: np.ndarray, pts: np.ndarray, colour: tuple[int, ...]) -> None:
    cv2.fillConvexPoly(img, np.round(np.asarray(pts) * _SCALE).astype(np.int32), colour, cv2.LINE_AA, SHIFT)


def text_centre(
    img: np.ndarray,
    text: str,
    centre: tuple[float, float],
    scale: float,
    colour: tuple[int, int, int],
    thickness: int = 2,
) -> None:
    (w, h), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, thickness)
    org = (int(round(centre[0] - w / 2)), int(round(centre[1] + h / 2)))
    cv2.putText(img, text, org, cv2.FONT_HERSHEY_SIMPLEX, scale, colour, thickness, cv2.LINE_AA)


# --------------------------------------------------------------------------- text and shapes the stress
# probes render (and their observers re-render as templates: one renderer for both)

FONT = cv2.FONT_HERSHEY_SIMPLEX


def filled_polygon(img: np.ndarray, pts: np.ndarray, colour: tuple[int, int, int]) -> None:
    """A filled, antialiased polygon that may be concave (a star, a cross), at 1/16 px."""
    cv2.fillPoly(img, [np.round(np.asarray(pts) * _SCALE).astype(np.int32)], colour, cv2.LINE_AA, SHIFT)


def thick_polyline(img: np.ndarray, pts: np.ndarray, colour: tuple[int, int, int], width: int) -> None:
    """An open polyline ``width`` px thick with round joins (``width`` 1 is a 1 px antialiased line)."""
    cv2.polylines(
        img, [np.round(np.asarray(pts) * _SCALE).astype(np.int32)], False, colour, int(width), cv2.LINE_AA, SHIFT
    )


def text_origin(text: str, centre: tuple[float, float], scale: float, thickness: int = 2) -> tuple[int, int]:
    """The ``putText`` origin (baseline left) that ``text_centre`` uses for ``text``."""
    (w, h), _ = cv2.getTextSize(text, FONT, scale, thickness)
    return int(round(centre[0] - w / 2)), int(round(centre[1] + h / 2))


def text_at(
    img: np.ndarray, text: str, origin: tuple[int, int], scale: float, colour: tuple[int, int, int], thickness: int = 2
) -> None:
    """``text`` with its baseline-left at ``origin``, drawn exactly as ``text_centre`` draws it."""
    cv2.putText(img, text, origin, FONT, scale, colour, thickness, cv2.LINE_AA)


def letter_columns(text: str, origin_x: int, scale: float, thickness: int = 2) -> list[tuple[int, int]]:
    """The pen-advance span [x0, x1) of every character of ``text`` drawn from ``origin_x``."""
    out, x = [], origin_x
    for i in range(len(text)):
        nxt = origin_x + cv2.getTextSize(text[: i + 1], FONT, scale, thickness)[0][0]
        out.append((x, nxt))
        x = nxt
    return out
