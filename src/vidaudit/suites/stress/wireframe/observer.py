"""The wireframe probe's integrating observer: unite the frames sent, then trace.

The union (``common.frame_union``: the pixelwise maximum) of the frames sent is the scene wherever some
frame showed it. Ink is every pixel darker than mid-grey. Nodes are the blobs an opening with a disc of
1.6 node radii leaves (lines are at most 10 px wide, nodes 36 px across), after the white letters are
filled in; each node's letter is the generator's own node drawing (``scene.draw_node``) that best
matches it. Connectivity is the connected components of the ink: B's neighbours are the other nodes in
its component. Counting is the number of ink blobs at least a third of a disc's area.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import cv2
import numpy as np

from vidaudit.suites.stress.common import frame_union
from vidaudit.suites.stress.wireframe import scene as sc
from vidaudit.suites.stress.wireframe.tasks import answer_text

_THRESH = 128


def ink_mask(union: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(union, cv2.COLOR_RGB2GRAY) < _THRESH


def _filled(ink: np.ndarray) -> np.ndarray:
    """``ink`` with its enclosed holes (the letters inside the nodes) filled."""
    n, lab = cv2.connectedComponents((~ink).astype(np.uint8), connectivity=4)
    border = set(np.unique(np.concatenate([lab[0], lab[-1], lab[:, 0], lab[:, -1]]))) - {0}
    outside = np.isin(lab, list(border))
    return ~outside


def find_nodes(ink: np.ndarray) -> list[tuple[float, float]]:
    d = int(round(1.6 * sc.NODE_R)) | 1
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (d, d))
    blobs = cv2.morphologyEx(_filled(ink).astype(np.uint8), cv2.MORPH_OPEN, kernel)
    n, lab, stats, cents = cv2.connectedComponentsWithStats(blobs, connectivity=8)
    min_area = 0.5 * np.pi * (d / 2) ** 2
    return [(float(cents[i][0]), float(cents[i][1])) for i in range(1, n) if stats[i, cv2.CC_STAT_AREA] >= min_area]


def _patch(gray: np.ndarray, c: tuple[float, float], r: int) -> np.ndarray:
    x, y = int(round(c[0])), int(round(c[1]))
    pad = np.pad(gray, r, constant_values=255)
    return pad[y : y + 2 * r + 1, x : x + 2 * r + 1]


_TEMPLATES: dict[str, np.ndarray] = {}


def _template(letter: str, r: int) -> np.ndarray:
    if letter not in _TEMPLATES:
        img = np.full((4 * r + 1, 4 * r + 1, 3), sc.BG, np.uint8)
        sc.draw_node(img, letter, (2 * r, 2 * r))
        _TEMPLATES[letter] = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)[r : 3 * r + 1, r : 3 * r + 1] > _THRESH
    return _TEMPLATES[letter]


def read_letter(gray: np.ndarray, c: tuple[float, float]) -> str:
    """The node letter at ``c``: the template with the best IoU of light (letter) pixels inside the disc,
    over shifts of up to 2 px."""
    r = sc.NODE_R
    inside = np.hypot(*np.mgrid[-r : r + 1, -r : r + 1]) <= 0.8 * r
    best, best_score = sc.NODES[0], -1.0
    for letter in sc.NODES:
        t = _template(letter, r) & inside
        for dx in range(-2, 3):
            for dy in range(-2, 3):
                p = (_patch(gray, (c[0] + dx, c[1] + dy), r) > _THRESH) & inside
                score = (t & p).sum() / max((t | p).sum(), 1)
                if score > best_score:
                    best, best_score = letter, score
    return best


def observe(frames: Sequence[Any], metadata: Mapping[str, Any]) -> str:
    w, h = int(metadata["width"]), int(metadata["height"])
    union = frame_union(frames, w, h)
    ink = ink_mask(union)
    task = metadata["task"]
    if task == "counting":
        n, _, stats, _ = cv2.connectedComponentsWithStats(ink.astype(np.uint8), connectivity=8)
        big = sum(stats[i, cv2.CC_STAT_AREA] >= np.pi * sc.COUNT_R**2 / 3 for i in range(1, n))
        return answer_text(task, str(int(big)))
    gray = cv2.cvtColor(union, cv2.COLOR_RGB2GRAY)
    nodes = {read_letter(gray, c): c for c in find_nodes(ink)}
    if task == "spatial":
        x, y = metadata["query"]
        if x not in nodes or y not in nodes:
            return "I cannot find both nodes."
        return answer_text(task, "left" if nodes[x][0] < nodes[y][0] else "right")
    _, lab = cv2.connectedComponents(_filled(ink).astype(np.uint8), connectivity=8)

    def comp(c: tuple[float, float]) -> int:
        return int(lab[int(round(c[1])), int(round(c[0]))]) or -1

    q = metadata["query"][0]
    if q not in nodes:
        return f"I cannot find node {q}."
    linked = sorted(k for k, c in nodes.items() if k != q and comp(c) == comp(nodes[q]))
    return answer_text(task, ", ".join(linked)) if linked else f"Node {q} is joined to no node."
