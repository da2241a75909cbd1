"""Wireframe stimuli (Reveal B.7): labelled nodes joined by bent lines, counting discs, at 448 x 448.

A connectivity scene has six nodes A-F (filled discs with a white letter) and two disjoint stars of two
lines each: B joined to two nodes, and a second hub joined to two others, so every node has a line and the
connected components of the ink are exactly the stars (an observer may trace by connected components).
Each line runs from its hub to a *cut* column and bends there towards its leaf, so neither half of a line
predicts where the other half goes: the cut is x = W/2 (the Adversarial split) in a ``cross`` scene, and
x = W/4 or 3W/4 (the x = 112 spatial-window boundary of a 448 px image) in a ``window`` scene, whose
stars then lie wholly inside one half. Layouts are drawn from ``rng_from("stress", "wireframe", ...)``
and rejected until no line comes within ``6 + width`` px of another star or of a node it does not join.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import cv2
import numpy as np

from vidaudit.sdk import draw, rng_from

WIDTH = HEIGHT = 448
NODE_R = 18
LABEL_SCALE = 0.8
LABEL_THICKNESS = 2
BG = (245, 245, 245)
INK = (24, 24, 32)
LABEL = (255, 255, 255)
NODES = tuple("ABCDEF")
QUERY = "B"
#: B's possible neighbour pairs, in the order seeds cycle through them (seed 0 is the paper's D, F)
PAIRS: tuple[tuple[str, str], ...] = (("D", "F"),) + tuple(p for p in combinations("ACDEF", 2) if p != ("D", "F"))
COUNTS = (3, 4, 5, 6, 7, 8)
COUNT_R = 20
_TRIES = 2000


@dataclass(frozen=True)
class Wire:
    hub: str
    leaf: str
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Scene:
    kind: str  # cross, window, counting
    line_width: int
    nodes: dict[str, tuple[float, float]] = field(default_factory=dict)
    wires: tuple[Wire, ...] = ()
    discs: tuple[tuple[float, float], ...] = ()
    width: int = WIDTH
    height: int = HEIGHT

    def neighbours(self, letter: str) -> list[str]:
        return sorted({w.leaf for w in self.wires if w.hub == letter} | {w.hub for w in self.wires if w.leaf == letter})


def draw_node(img: np.ndarray, letter: str, centre: tuple[float, float]) -> None:
    draw.circle(img, centre, NODE_R, INK)
    draw.text_centre(img, letter, centre, LABEL_SCALE, LABEL, LABEL_THICKNESS)


def render(scene: Scene) -> np.ndarray:
    """The control image of ``scene`` (RGB uint8)."""
    img = np.full((scene.height, scene.width, 3), BG, np.uint8)
    for w in scene.wires:
        draw.thick_polyline(img, np.array(w.points), INK, scene.line_width)
    for letter, c in scene.nodes.items():
        draw_node(img, letter, c)
    for c in scene.discs:
        draw.circle(img, c, COUNT_R, INK)
    return img


def _mask_of(
    shape: tuple[int, int],
    wires: Sequence[Wire] = (),
    discs: Sequence[tuple[float, float]] = (),
    width: int = 1,
    radius: float = NODE_R,
) -> np.ndarray:
    m = np.zeros((*shape, 3), np.uint8)
    for w in wires:
        draw.thick_polyline(m, np.array(w.points), (255, 255, 255), width)
    for c in discs:
        draw.circle(m, c, radius, (255, 255, 255))
    return m[..., 0] > 0


def _clear(scene_nodes: dict[str, tuple[float, float]], stars: list[list[Wire]], width: int) -> bool:
    shape = (HEIGHT, WIDTH)
    margin = 6 + width
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * margin + 1, 2 * margin + 1))
    masks = []
    for star in stars:
        ends = {star[0].hub} | {w.leaf for w in star}
        m = _mask_of(shape, star, [scene_nodes[k] for k in ends], width)
        masks.append(m)
        near = []
        for w in star:
            near.append(cv2.dilate(_mask_of(shape, [w], width=width).astype(np.uint8), kernel) > 0)
            others = [scene_nodes[k] for k in scene_nodes if k not in (w.hub, w.leaf)]
            if (near[-1] & _mask_of(shape, discs=others)).any():
                return False
        # the two lines of a star part at the hub and never meet again
        hub = _mask_of(shape, discs=[scene_nodes[star[0].hub]], radius=3 * NODE_R + 2 * width)
        if (near[0] & _mask_of(shape, [star[1]], width=width) & ~hub).any():
            return False
    grown = cv2.dilate(masks[0].astype(np.uint8), kernel) > 0
    return not (grown & masks[1]).any()


def _spread(points: list[tuple[float, float]], min_d: float) -> bool:
    return all(np.hypot(a[0] - b[0], a[1] - b[1]) >= min_d for a, b in combinations(points, 2))


def _pair(rng: np.random.Generator, lo: float, hi: float, gap: float) -> list[float] | None:
    if hi - lo < gap:
        return None
    a = float(rng.uniform(lo, hi - gap))
    return [a, float(rng.uniform(a + gap, hi))]


def _star(
    rng: np.random.Generator,
    hub: str,
    leaves: tuple[str, str],
    hub_x: tuple[float, float],
    leaf_x: tuple[float, float],
    cut: float,
    band: tuple[float, float],
    gap: float,
) -> tuple[dict[str, tuple[float, float]], list[Wire]]:
    """A hub and two leaves inside the rows ``band``; the bends keep the leaves' vertical order, ``gap``
    px apart, so the two lines part at the hub and do not cross."""
    nodes = {hub: (float(rng.uniform(*hub_x)), float(rng.uniform(*band)))}
    ys, bends = _pair(rng, *band, gap), _pair(rng, *band, gap)
    if ys is None or bends is None:
        return nodes, []
    wires = []
    for leaf, y, by in zip(leaves, ys, bends, strict=True):
        nodes[leaf] = (float(rng.uniform(*leaf_x)), y)
        wires.append(Wire(hub, leaf, (nodes[hub], (cut, by), nodes[leaf])))
    return nodes, wires


def connectivity_scene(seed: int, line_width: int, kind: str = "cross") -> Scene:
    """Scene ``seed``: B's neighbours are ``PAIRS[seed % 10]``; ``kind`` cross (lines cross x = W/2) or
    window (lines cross x = W/4 and 3W/4 only, each star inside one half)."""
    if kind not in ("cross", "window"):
        raise ValueError(f"unknown wireframe scene kind {kind!r}")
    rng = rng_from("stress", "wireframe", kind, int(seed), int(line_width))
    pair = PAIRS[seed % len(PAIRS)]
    rest = [x for x in NODES if x != QUERY and x not in pair]
    rest = [rest[int(i)] for i in rng.permutation(len(rest))]
    hub2, leaves2 = rest[0], (rest[1], rest[2])
    half, quarter, pad = WIDTH / 2, WIDTH / 4, NODE_R + 22
    for _ in range(_TRIES):
        gap = 3 * NODE_R + 2 * line_width
        lo, hi = 30 + NODE_R, HEIGHT - 30 - NODE_R
        b1: tuple[float, float]
        b2: tuple[float, float]
        if kind == "window":
            b1 = b2 = (lo, hi)
        else:  # one star above the other (which one is drawn), so their lines need not cross
            m = float(rng.uniform(0.42, 0.58)) * HEIGHT
            b1, b2 = ((lo, m - 12), (m + 12, hi))[:: 1 if rng.random() < 0.5 else -1]
        if kind == "cross":
            n1, w1 = _star(rng, QUERY, pair, (pad, half - pad - 20), (half + pad + 20, WIDTH - pad), half, b1, gap)
            n2, w2 = _star(rng, hub2, leaves2, (half + pad + 20, WIDTH - pad), (pad, half - pad - 20), half, b2, gap)
        else:
            n1, w1 = _star(rng, QUERY, pair, (pad - 10, quarter - pad), (quarter + pad, half - pad), quarter, b1, gap)
            n2, w2 = _star(
                rng,
                hub2,
                leaves2,
                (3 * quarter + pad, WIDTH - pad + 10),
                (half + pad, 3 * quarter - pad),
                3 * quarter,
                b2,
                gap,
            )
        if not w1 or not w2:
            continue
        nodes = n1 | n2
        if not _spread(list(nodes.values()), 3 * NODE_R + line_width):
            continue
        if _clear(nodes, [w1, w2], line_width):
            return Scene(kind=kind, line_width=int(line_width), nodes=dict(sorted(nodes.items())), wires=tuple(w1 + w2))
    raise RuntimeError(f"no clear wireframe layout for seed {seed}, width {line_width}")  # pragma: no cover


def counting_scene(seed: int) -> Scene:
    """``COUNTS[seed % 6]`` discs anywhere in the frame, at least one disc diameter apart."""
    rng = rng_from("stress", "wireframe", "counting", int(seed))
    n = COUNTS[seed % len(COUNTS)]
    lo, hi = 24 + COUNT_R, WIDTH - 24 - COUNT_R
    for _ in range(_TRIES):
        discs = [(float(rng.uniform(lo, hi)), float(rng.uniform(lo, hi))) for _ in range(n)]
        if _spread(discs, 4 * COUNT_R):
            return Scene(kind="counting", line_width=0, discs=tuple(discs))
    raise RuntimeError(f"no counting layout for seed {seed}")  # pragma: no cover


# --------------------------------------------------------------------------- the three conditions

ARRANGEMENTS = ("control", "adversarial", "interleaved")
N_FRAMES = 4
INTERLEAVE_STRIDE = 4


def visible_masks(arrangement: str, width: int = WIDTH, height: int = HEIGHT) -> list[np.ndarray]:
    """Which pixels each of the 4 frames shows. control: all, in every frame. adversarial: x < W/2 in
    frames 0 and 1 (temporal group 0 of a 2-frame patch), x >= W/2 in frames 2 and 3 (group 1).
    interleaved: frame t shows the columns x with x mod 4 == t."""
    xs = np.arange(width)[None, :].repeat(height, 0)
    if arrangement == "control":
        return [np.ones((height, width), bool) for _ in range(N_FRAMES)]
    if arrangement == "adversarial":
        left = xs < width // 2
        return [left, left, ~left, ~left]
    if arrangement == "interleaved":
        return [xs % INTERLEAVE_STRIDE == t for t in range(N_FRAMES)]
    raise ValueError(f"unknown arrangement {arrangement!r}; choose from {', '.join(ARRANGEMENTS)}")


def arrange(img: np.ndarray, arrangement: str) -> list[np.ndarray]:
    """The 4 frames of ``arrangement``: ``img`` where the frame's mask shows it, black elsewhere."""
    return [
        np.where(m[..., None], img, 0).astype(np.uint8) for m in visible_masks(arrangement, img.shape[1], img.shape[0])
    ]
