"""The synthetic world's cast: the scene spec (the knobs), the palette, agents and their geometry.

Agents are flat shapes (circle, square, diamond, hexagon) in a named colour, small or large, each
marked with a number. Every agent is re-identifiable: the smallest set of its persistent
attributes that no other agent shares is the identity evidence. ``lookalikes`` pairs share colour,
shape and size and differ only in their number, so telling them apart needs the number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from vidaudit.sdk import ConfigError, draw

#: agent colours, named so that questions can say them (RGB)
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (222, 45, 45),
    "green": (50, 180, 70),
    "blue": (60, 100, 235),
    "yellow": (250, 220, 30),
    "purple": (150, 50, 200),
    "orange": (250, 135, 30),
    "cyan": (40, 210, 230),
    "pink": (245, 95, 200),
}
BACKGROUND = (26, 28, 36)
HALO = (255, 255, 255)  # the ring of a lit agent
BALL_RGB = (200, 200, 200)  # the item passed between agents
SHAPES = ("circle", "square", "diamond", "hexagon")
SIZES = ("small", "large")
#: large agents are this many times the small radius: any large shape hides any small one
LARGE_FACTOR = 2.0
#: a lit agent's ring: radius R + HALO_GAP, this thick
HALO_GAP, HALO_WIDTH = 3.0, 2


@dataclass(frozen=True)
class SceneSpec:
    """One synthetic video: the knobs of ``vidaudit generate faithful`` and its seed."""

    video_id: str
    seed: int
    agents: int = 4
    events: int = 6
    occlusions: int = 1
    lookalikes: int = 0
    duration_s: float = 12.0
    fps: float = 10.0
    width: int = 256
    height: int = 192
    max_targets: int = 6
    #: episodes that repeat an agent's earlier event (it lights up again after going dark, or leaves the scene a
    #: second time): the events a count question can only get right by knowing the two sightings are one agent
    repeats: int = 0

    def __post_init__(self) -> None:
        if not 3 <= self.agents <= 8:
            raise ConfigError(f"agents must be between 3 and 8 (distinct colours and numbers), got {self.agents}")
        if self.events < 3:
            raise ConfigError(f"events must be at least 3 (two comparable events and one between), got {self.events}")
        if not 0 <= self.occlusions <= self.events:
            raise ConfigError(f"occlusions must be between 0 and events ({self.events}), got {self.occlusions}")
        if not 0 <= 2 * self.lookalikes <= self.agents:
            raise ConfigError(
                f"lookalikes is a number of pairs: at most agents/2 = {self.agents // 2}, got {self.lookalikes}"
            )
        if self.width % 2 or self.height % 2 or min(self.width, self.height) < 96:
            raise ConfigError(f"width and height must be even and at least 96, got {self.width}x{self.height}")
        if not (self.fps > 0 and self.duration_s > 0):
            raise ConfigError("fps and duration must be positive")
        if not 0 <= self.repeats <= self.events:
            raise ConfigError(f"repeats must be between 0 and the number of events ({self.events}), got {self.repeats}")
        if self.max_targets < 1:
            raise ConfigError(f"max_targets must be at least 1, got {self.max_targets}")

    @property
    def n_frames(self) -> int:
        return int(round(self.duration_s * self.fps))

    @property
    def small_radius(self) -> float:
        return max(7.0, 0.065 * min(self.width, self.height))

    def knobs(self) -> dict[str, int | float]:
        out = {
            "agents": self.agents,
            "events": self.events,
            "occlusions": self.occlusions,
            "lookalikes": self.lookalikes,
            "duration_s": float(self.duration_s),
            "fps": float(self.fps),
            "width": self.width,
            "height": self.height,
            "max_targets": self.max_targets,
        }
        if self.repeats:  # only when set, so that worlds drawn without repeats keep their seeds
            out["repeats"] = self.repeats
        return out


@dataclass(frozen=True)
class Agent:
    index: int
    colour: str
    shape: str
    size: str
    number: int
    radius: float  # circumradius in pixels
    evidence: tuple[str, ...] = field(default=())

    @property
    def id(self) -> str:
        return f"{self.colour}_{self.shape}_{self.number}"

    @property
    def name(self) -> str:
        return f"the {self.colour} {self.shape} marked {self.number}"

    @property
    def rgb(self) -> tuple[int, int, int]:
        return COLOURS[self.colour]

    @property
    def attributes(self) -> dict[str, str | int]:
        return {"colour": self.colour, "shape": self.shape, "size": self.size, "number": self.number}

    @property
    def footprint(self) -> float:
        """Radius that contains the agent and its ring when lit."""
        return self.radius + HALO_GAP + HALO_WIDTH

    @property
    def inradius(self) -> float:
        return self.radius * INRADIUS[self.shape]

    def outline(self, centre: np.ndarray) -> np.ndarray:
        """The shape as a convex polygon at ``centre`` (a circle as a 48-gon)."""
        if self.shape == "circle":
            a = np.arange(48) * (2 * math.pi / 48)
            pts = np.stack([np.cos(a), np.sin(a)], axis=1) * self.radius
        else:
            pts = vertices(self.shape, self.radius)
        return pts + np.asarray(centre, dtype=float)

    @property
    def text_rgb(self) -> tuple[int, int, int]:
        black, white = (0, 0, 0), (255, 255, 255)
        return black if draw.contrast_ratio(self.rgb, black) >= draw.contrast_ratio(self.rgb, white) else white


#: inradius / circumradius of each shape
INRADIUS = {"circle": 1.0, "square": math.sqrt(0.5), "diamond": math.sqrt(0.5), "hexagon": math.sqrt(3) / 2}


def vertices(shape: str, radius: float) -> np.ndarray:
    """Polygon vertices (relative to the centre, image axes: y down) of a shape of circumradius ``radius``."""
    if shape == "square":
        s = radius * math.sqrt(0.5)
        return np.array([[-s, -s], [s, -s], [s, s], [-s, s]])
    if shape == "diamond":
        return np.array([[0, -radius], [radius, 0], [0, radius], [-radius, 0]], dtype=float)
    if shape == "hexagon":
        return np.array([[radius * math.cos(a), radius * math.sin(a)] for a in np.arange(6) * math.pi / 3])
    raise ValueError(f"{shape} has no vertices")


def gap(p: np.ndarray, q: np.ndarray) -> float:
    """Separation of two convex polygons along their best separating axis (separating-axis theorem):
    positive when apart, zero when they touch, minus the overlap depth when they overlap."""
    best = -math.inf
    for poly in (p, q):
        edges = np.roll(poly, -1, axis=0) - poly
        normals = np.stack([edges[:, 1], -edges[:, 0]], axis=1)
        normals /= np.linalg.norm(normals, axis=1, keepdims=True)
        pa, qa = p @ normals.T, q @ normals.T
        sep = np.maximum(qa.min(axis=0) - pa.max(axis=0), pa.min(axis=0) - qa.max(axis=0))
        best = max(best, float(sep.max()))
    return best


def shape_gap(a: Agent, pa: np.ndarray, b: Agent, pb: np.ndarray) -> float:
    return gap(a.outline(pa), b.outline(pb))


def evidence_for(agent: Agent, cast: list[Agent]) -> tuple[str, ...]:
    """The smallest set of attributes (colour, shape, size, number; in that order of preference) that no
    other agent shares: what re-identifies ``agent`` after a gap."""
    names = ("colour", "shape", "size", "number")
    others = [a for a in cast if a.index != agent.index]
    for k in range(1, len(names) + 1):
        for subset in combinations(names, k):
            mine = tuple(agent.attributes[n] for n in subset)
            if all(tuple(o.attributes[n] for n in subset) != mine for o in others):
                return subset
    raise ValueError(f"agent {agent.id} is indistinguishable from another agent")  # numbers are unique


def make_cast(spec: SceneSpec, rng: np.random.Generator) -> list[Agent]:
    """The agents of one scene: distinct numbers; colours distinct except within look-alike pairs."""
    n, pairs = spec.agents, spec.lookalikes
    n_colours = n - pairs
    colours = [list(COLOURS)[int(i)] for i in rng.permutation(len(COLOURS))[:n_colours]]
    numbers = [int(x) + 1 for x in rng.permutation(9)[:n]]
    sizes = [SIZES[int(rng.integers(2))] for _ in range(n_colours)]
    if spec.occlusions:  # an occlusion needs a large occluder and small agents of other colours
        sizes = ["large"] + ["small"] * min(2, n_colours - 1) + sizes[3:]
        order = rng.permutation(n_colours)
        sizes = [sizes[int(i)] for i in order]
    shapes = [SHAPES[int(rng.integers(len(SHAPES)))] for _ in range(n_colours)]
    # look-alikes: the first ``pairs`` colours appear twice, same shape and size
    slots = list(range(n_colours)) + list(range(pairs))
    r_small = spec.small_radius
    cast = []
    for i, c in enumerate(slots):
        radius = r_small * (LARGE_FACTOR if sizes[c] == "large" else 1.0)
        cast.append(Agent(index=i, colour=colours[c], shape=shapes[c], size=sizes[c], number=numbers[i], radius=radius))
    return [Agent(**{**a.__dict__, "evidence": evidence_for(a, cast)}) for a in cast]
