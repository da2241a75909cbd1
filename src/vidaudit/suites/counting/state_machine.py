"""State machine: a diagram of labelled states with exactly one highlighted.

At each t_i the highlight jumps to a different state drawn from the seed and persists until the
next event: a persistent change, in contrast with the transient blink.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Hashable
from itertools import pairwise

import cv2
import numpy as np

from vidaudit.sdk import draw, rng_from
from vidaudit.suites.counting.scene import Scene

LABELS = ("A", "B", "C", "D")


class StateMachine(Scene):
    domain = "state_machine"
    event_type = "transition"

    def setup(self) -> None:
        s, rng = self.settings, self.rng
        self.bg, (self.node_colour, self.hi_colour) = draw.pick_colours(rng, 2, min_contrast=3.0, min_distance=120)
        self.radius = float(rng.uniform(38.0, 50.0))
        ring = float(rng.uniform(130.0, 170.0))
        rot = float(rng.uniform(0, 2 * math.pi))
        cx, cy = s.width / 2.0, s.height / 2.0
        k = len(LABELS)
        self.nodes = [
            (cx + ring * 1.45 * math.cos(rot + 2 * math.pi * i / k), cy + ring * math.sin(rot + 2 * math.pi * i / k))
            for i in range(k)
        ]
        seq_rng = rng_from(self.point.identity, "states")
        state = int(seq_rng.integers(k))
        self.sequence = [state]
        for _ in range(self.point.n_events):
            state = int((state + 1 + seq_rng.integers(k - 1)) % k)  # always a different state
            self.sequence.append(state)
        self.template = self.blank(self.bg)
        for i in range(k):
            a, b = self.nodes[i], self.nodes[(i + 1) % k]
            cv2.line(
                self.template,
                (draw.fixed(a[0]), draw.fixed(a[1])),
                (draw.fixed(b[0]), draw.fixed(b[1])),
                self.node_colour,
                3,
                cv2.LINE_AA,
                draw.SHIFT,
            )
        self.cache: dict[int, np.ndarray] = {}

    def transitions(self) -> list[tuple[str | None, str | None]]:
        labels = [LABELS[s] for s in self.sequence]
        return list(pairwise(labels))

    def visual_key(self, t: float) -> Hashable:
        # events take effect on the first frame at or after t_i (frame times are j / fps)
        j = int(round(t * self.settings.fps))
        return self.sequence[bisect.bisect_right(self.schedule.frames, j)]

    def draw(self, key: Hashable) -> np.ndarray:
        state = int(key)  # type: ignore[call-overload]
        if state not in self.cache:
            img = self.template.copy()
            text_colour = self.bg
            for i, (x, y) in enumerate(self.nodes):
                fill = self.hi_colour if i == state else self.node_colour
                draw.circle(img, (x, y), self.radius * (1.12 if i == state else 1.0), fill)
                draw.text_centre(img, LABELS[i], (x, y), 1.3, text_colour, 3)
            self.cache[state] = img
        return self.cache[state]
