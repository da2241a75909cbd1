"""Mosaic stimuli (Reveal B.3.2): a word drawn through the centre, or two shapes in two quadrants.

Both are 448 x 448 stills on a light background. A text still holds one word of ``WORDS`` centred on
(W/2, H/2) with ``draw.text_centre`` (Hershey simplex, scale 3.0, 8 px strokes), so every letter is cut
by the row H/2 and lies in a top and a bottom quadrant. An objects still holds two shapes of ``SHAPES``
(one colour, fixed orientation, radius 46 px), each wholly inside its own quadrant: one in the quadrant
the temporal mosaic shows last, the other in one of the three shown before it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vidaudit.sdk import draw, quadrant_boxes, rng_from

WIDTH = HEIGHT = 448
BG = (240, 240, 236)
TEXT_INK = (28, 30, 58)
TEXT_SCALE = 3.0
TEXT_THICKNESS = 8
SHAPE_R = 46.0

WORDS: tuple[str, ...] = (
    "PLANE",
    "RIVER",
    "STONE",
    "CLOUD",
    "LIGHT",
    "HOUSE",
    "MONEY",
    "TRAIN",
    "BREAD",
    "CHAIR",
    "GLASS",
    "HORSE",
    "MUSIC",
    "OCEAN",
    "PAPER",
    "SMILE",
    "TABLE",
    "WATER",
    "FLAME",
    "GRAPE",
    "LEMON",
    "NIGHT",
    "QUEEN",
    "ZEBRA",
)
SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "diamond", "star", "cross", "hexagon")


def shape_points(name: str, centre: tuple[float, float], r: float) -> np.ndarray | None:
    """The outline of a polygonal shape (None for the circle)."""
    cx, cy = centre
    if name == "circle":
        return None
    if name == "square":
        a = r * 0.85
        pts = [(-a, -a), (a, -a), (a, a), (-a, a)]
    elif name == "triangle":
        pts = [(0, -r), (r * 0.95, r * 0.7), (-r * 0.95, r * 0.7)]
    elif name == "diamond":
        pts = [(0, -r), (r * 0.75, 0), (0, r), (-r * 0.75, 0)]
    elif name == "hexagon":
        pts = [(r * np.cos(a), r * np.sin(a)) for a in np.linspace(0, 2 * np.pi, 7)[:-1]]
    elif name == "star":
        pts = [
            (
                (r if i % 2 == 0 else r * 0.42) * np.sin(i * np.pi / 5),
                -(r if i % 2 == 0 else r * 0.42) * np.cos(i * np.pi / 5),
            )
            for i in range(10)
        ]
    elif name == "cross":
        a, b = r, r * 0.34
        pts = [
            (-b, -a),
            (b, -a),
            (b, -b),
            (a, -b),
            (a, b),
            (b, b),
            (b, a),
            (-b, a),
            (-b, b),
            (-a, b),
            (-a, -b),
            (-b, -b),
        ]
    else:
        raise ValueError(f"unknown shape {name!r}; choose from {', '.join(SHAPES)}")
    return np.array([(cx + x, cy + y) for x, y in pts])


def draw_shape(
    img: np.ndarray, name: str, centre: tuple[float, float], colour: tuple[int, int, int], r: float = SHAPE_R
) -> None:
    pts = shape_points(name, centre, r)
    if pts is None:
        draw.circle(img, centre, r, colour)
    else:
        draw.filled_polygon(img, pts, colour)


@dataclass(frozen=True)
class TextStill:
    word: str

    def render(self) -> np.ndarray:
        img = np.full((HEIGHT, WIDTH, 3), BG, np.uint8)
        draw.text_centre(img, self.word, (WIDTH / 2, HEIGHT / 2), TEXT_SCALE, TEXT_INK, TEXT_THICKNESS)
        return img

    def letter_columns(self) -> list[tuple[int, int]]:
        x0 = draw.text_origin(self.word, (WIDTH / 2, HEIGHT / 2), TEXT_SCALE, TEXT_THICKNESS)[0]
        return draw.letter_columns(self.word, x0, TEXT_SCALE, TEXT_THICKNESS)


@dataclass(frozen=True)
class ObjectsStill:
    shapes: tuple[str, str]  # (earlier, last): the last lies in the quadrant shown last
    quadrants: tuple[int, int]
    centres: tuple[tuple[float, float], tuple[float, float]]
    colour: tuple[int, int, int]

    def render(self) -> np.ndarray:
        img = np.full((HEIGHT, WIDTH, 3), BG, np.uint8)
        for name, c in zip(self.shapes, self.centres, strict=True):
            draw_shape(img, name, c, self.colour)
        return img


def text_still(seed: int) -> TextStill:
    return TextStill(WORDS[seed % len(WORDS)])


def objects_still(seed: int, order: list[int]) -> ObjectsStill:
    """Two distinct shapes: the second in quadrant ``order[3]`` (shown last), the first in one of the
    quadrants shown before it; positions keep 8 px between a shape and its quadrant's edges."""
    rng = rng_from("stress", "mosaic", "objects", int(seed))
    i, j = (int(v) for v in rng.choice(len(SHAPES), 2, replace=False))
    quads = (order[int(rng.integers(3))], order[3])
    boxes = quadrant_boxes(WIDTH, HEIGHT)
    centres = []
    for q in quads:
        x0, y0, x1, y1 = boxes[q]
        m = SHAPE_R + 8
        centres.append((float(rng.uniform(x0 + m, x1 - m)), float(rng.uniform(y0 + m, y1 - m))))
    inks = [c for c in draw.FOREGROUNDS if draw.contrast_ratio(c, BG) >= 3.0]
    colour = inks[int(rng.integers(len(inks)))]
    return ObjectsStill((SHAPES[i], SHAPES[j]), quads, (centres[0], centres[1]), colour)
