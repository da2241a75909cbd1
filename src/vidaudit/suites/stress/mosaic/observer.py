"""The mosaic probe's integrating observer: unite the frames sent, then read.

The union is ``common.frame_union`` (the pixelwise maximum); a ``spatial_tiled`` image is first put
back together (cell q of the grid holds the masked frame q at half size, its quadrant q in place).
Text is read left to right by template matching against the generator's own renderer
(``draw.text_at``, same font, scale and stroke): the next letter is the one whose rendering of the word
so far best matches (IoU of ink) the ink seen up to its right edge. Shapes are the ink blobs of the union,
each matched (IoU, centres aligned) against the generator's ``draw_shape`` of every shape; the answer is
the option naming the two shapes found (else the option sharing most with them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import cv2
import numpy as np

from vidaudit.sdk import draw, quadrant_boxes
from vidaudit.suites.stress.common import LETTERS, frame_union, mcq_answer_text
from vidaudit.suites.stress.mosaic import scene as sc

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_MAX_LETTERS = 12
_SHORTLIST = 6  # letters judged with a look-ahead (by their own IoU first)


def reassemble_tiled(img: np.ndarray) -> np.ndarray:
    h, w = img.shape[:2]
    out = np.zeros_like(img)
    for x0, y0, x1, y1 in quadrant_boxes(w, h):
        cell = cv2.resize(img[y0:y1, x0:x1], (w, h), interpolation=cv2.INTER_LINEAR)
        out[y0:y1, x0:x1] = cell[y0:y1, x0:x1]
    return out


def _text_ink(img: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY) < 128


def _rendered(text: str, origin: tuple[int, int], shape: tuple[int, int], scale: float, thick: int) -> np.ndarray:
    m = np.zeros((*shape, 3), np.uint8)
    draw.text_at(m, text, origin, scale, (255, 255, 255), thick)
    return m[..., 0] > 127


def read_word(ink: np.ndarray, scale: float, thick: int) -> str:
    h, w = ink.shape
    cols = np.flatnonzero(ink.any(axis=0))
    if not len(cols):
        return ""
    left, right = int(cols[0]), int(cols[-1])
    (_, th), _ = cv2.getTextSize("A", draw.FONT, scale, thick)
    base = int(round(h / 2 + th / 2))
    top, bottom = max(base - th - 2 * thick, 0), min(base + th // 2 + 2 * thick, h)
    band = ink[top:bottom]
    y = base - top

    def render(text: str, ox: int) -> tuple[np.ndarray, int]:
        r = _rendered(text, (ox, y), band.shape, scale, thick)
        rc = np.flatnonzero(r.any(axis=0))
        return r, int(rc[-1]) if len(rc) else -1

    def iou(r: np.ndarray, end: int) -> float:
        a, b = r[:, : end + 1], band[:, : end + 1]
        return float((a & b).sum() / max((a | b).sum(), 1))

    first = {}
    for ch in _ALPHABET:  # the first letter fixes the origin: its left ink edge on the word's
        rc = np.flatnonzero(_rendered(ch, (0, y), band.shape, scale, thick).any(axis=0))
        first[ch] = left - int(rc[0]) if len(rc) else left
    word, x0 = "", None
    while len(word) < _MAX_LETTERS:
        plain = []
        for ch in _ALPHABET:
            ox = first[ch] if x0 is None else x0
            r, edge = render(word + ch, ox)
            if edge >= 0:
                plain.append((iou(r, edge), ch, ox, edge))
        best, best_score, best_edge, best_x0 = None, -1.0, -1, x0
        for _, ch, ox, edge in sorted(plain, reverse=True)[:_SHORTLIST]:
            score = iou(render(word + ch, ox)[0], edge) if edge >= right - 3 else 0.0
            # a letter is judged with the best letter after it, over the columns both cover, so a
            # narrow letter matching only the stem of a wide one loses to the wide one
            for nxt in _ALPHABET if edge < right - 3 else ():
                r2, e2 = render(word + ch + nxt, ox)
                score = max(score, iou(r2, min(e2, right)))
            if score > best_score:
                best, best_score, best_edge, best_x0 = ch, score, edge, ox
        if best is None:
            break
        word, x0 = word + best, best_x0
        if best_edge >= right - 3:
            break
    return word


_SHAPE_TEMPLATES: dict[str, np.ndarray] = {}


def _shape_template(name: str) -> np.ndarray:
    if name not in _SHAPE_TEMPLATES:
        s = int(2 * sc.SHAPE_R + 9)
        m = np.zeros((s, s, 3), np.uint8)
        sc.draw_shape(m, name, (s / 2, s / 2), (255, 255, 255))
        _SHAPE_TEMPLATES[name] = m[..., 0] > 127
    return _SHAPE_TEMPLATES[name]


def _centred(mask: np.ndarray, size: int) -> np.ndarray:
    ys, xs = np.nonzero(mask)
    cy, cx = (ys.min() + ys.max()) / 2, (xs.min() + xs.max()) / 2
    out = np.zeros((size, size), bool)
    yy, xx = ys + int(np.floor(size / 2 - cy)), xs + int(np.floor(size / 2 - cx))  # one shift: no pixel collides
    ok = (yy >= 0) & (yy < size) & (xx >= 0) & (xx < size)
    out[yy[ok], xx[ok]] = True
    return out


def classify_shape(mask: np.ndarray) -> str:
    size = int(2 * sc.SHAPE_R + 21)
    m = _centred(mask, size)
    scores = {}
    for name in sc.SHAPES:
        t = _centred(_shape_template(name), size)
        scores[name] = (m & t).sum() / max((m | t).sum(), 1)
    return max(scores, key=lambda k: scores[k])


def find_shapes(img: np.ndarray) -> list[str]:
    diff = np.abs(img.astype(np.int16) - np.array(sc.BG, np.int16)).max(axis=2)
    ink = (diff > 60).astype(np.uint8)
    n, lab, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    min_area = 0.25 * np.pi * sc.SHAPE_R**2
    return [classify_shape(lab == i) for i in range(1, n) if stats[i, cv2.CC_STAT_AREA] >= min_area]


def observe(frames: Sequence[Any], metadata: Mapping[str, Any]) -> str:
    w, h = int(metadata["width"]), int(metadata["height"])
    union = frame_union(frames, w, h)
    if metadata.get("arrangement") == "spatial_tiled":
        union = reassemble_tiled(union)
    if metadata["stimulus"] == "text":
        word = read_word(_text_ink(union), float(metadata["text_scale"]), int(metadata["text_thickness"]))
        return f"\\boxed{{{word}}}" if word else "I see no word."
    found = set(find_shapes(union))
    options: list[str] = list(metadata["options"])

    def overlap(o: str) -> int:
        return sum(f" {s}" in f" {o}" for s in found)

    exact = [i for i, o in enumerate(options) if overlap(o) == 2 and len(found) == 2]
    i = exact[0] if exact else max(range(len(options)), key=lambda j: overlap(options[j]))
    return mcq_answer_text(LETTERS[i], options[i])
