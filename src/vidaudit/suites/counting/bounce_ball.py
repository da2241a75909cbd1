"""Bounce ball: constant speed between two parallel walls, a contact exactly at each t_i.

No easing: the ball moves at v = L * F everywhere it moves, so a contact is an instantaneous
reversal that looks the same at every F (the paper's released renderer eased into the wall).
Before the lead-in and after the lead-out the ball rests a quarter of the travel from the wall.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from fractions import Fraction
from itertools import pairwise

import numpy as np

from vidaudit.sdk import draw
from vidaudit.suites.counting.scene import Scene

_Q = 16  # sub-pixel quantisation of the ball position in visual keys
#: pixels around the ball's radius that its box adds (the antialiased rim is within 1 px)
BALL_BOX_MARGIN = 3.0


class BounceBall(Scene):
    domain = "bounce_ball"
    event_type = "contact"

    def lead_in_s(self) -> Fraction:
        return 1 / (4 * self.f_exact)

    def lead_out_s(self) -> Fraction:
        return 1 / (4 * self.f_exact)

    def setup(self) -> None:
        s, rng = self.settings, self.rng
        self.bg, (self.ball_colour, self.wall_colour) = draw.pick_colours(rng, 2)
        theta = float(rng.uniform(0.0, math.pi))
        self.u = np.array([math.cos(theta), math.sin(theta)])
        self.radius = float(rng.uniform(14.0, 24.0))
        self.wall_th = float(rng.uniform(10.0, 14.0))
        self.wall_len = float(rng.uniform(140.0, 220.0))
        self.gap = float(rng.uniform(280.0, 420.0))  # distance between the walls' inner faces
        self.first_wall = int(rng.integers(2))  # 0: wall A (s = 0) is hit first
        self.centre = np.array([s.width / 2.0, s.height / 2.0])
        while not self._fits():
            self.gap *= 0.95
            self.wall_len *= 0.95
        self.travel = self.gap - 2.0 * self.radius
        self.wall_names = self._wall_names()
        self.template = self.blank(self.bg)
        for w in self._walls():
            draw.polygon(self.template, w, self.wall_colour)
        # the ball centre at s = 0 and the axis, as floats: ``_ball_centre`` adds s times the axis to the start,
        # the same IEEE operations as the arrays' (so the same pixels), without numpy's per-call cost
        start = self.centre - (self.gap / 2.0 - self.radius) * self.u
        self._start = (float(start[0]), float(start[1]))
        self._axis = (float(self.u[0]), float(self.u[1]))
        self._boxes: dict[Hashable, tuple[int, int, int, int]] = {}  # ``ball_box`` by key: a run asks for 3

    def _walls(self) -> list[np.ndarray]:
        perp = np.array([-self.u[1], self.u[0]])
        out = []
        for sign in (-1.0, 1.0):
            inner = self.centre + sign * (self.gap / 2.0) * self.u
            outer = inner + sign * self.wall_th * self.u
            h = perp * self.wall_len / 2.0
            out.append(np.array([inner - h, inner + h, outer + h, outer - h]))
        return out

    def _fits(self, margin: float = 8.0) -> bool:
        pts = np.concatenate(self._walls())
        return bool(
            (pts.min(axis=0) >= margin).all()
            and (pts[:, 0].max() <= self.settings.width - margin)
            and (pts[:, 1].max() <= self.settings.height - margin)
        )

    def _wall_names(self) -> tuple[str, str]:
        ux, uy = self.u
        if abs(ux) >= abs(uy):
            return ("left", "right") if ux > 0 else ("right", "left")
        return ("top", "bottom") if uy > 0 else ("bottom", "top")

    def _contact_s(self, k: int) -> float:
        return 0.0 if (k + self.first_wall) % 2 == 0 else self.travel

    def position(self, t: float) -> float:
        """Distance of the ball centre from its wall-A contact position, along the axis."""
        times, L = self.schedule.times, self.travel
        if not times:
            return L / 2.0
        v = L * self.f
        first, last = self._contact_s(0), self._contact_s(len(times) - 1)
        away_first = 1.0 if first == 0.0 else -1.0
        away_last = 1.0 if last == 0.0 else -1.0
        if t <= times[0]:
            return first + away_first * min(v * (times[0] - t), L / 4.0)
        if t >= times[-1]:
            return last + away_last * min(v * (t - times[-1]), L / 4.0)
        k = min(int((t - times[0]) * self.f), len(times) - 2)
        while t > times[k + 1]:
            k += 1
        a = self._contact_s(k)
        return a + (1.0 if a == 0.0 else -1.0) * v * (t - times[k])

    def transitions(self) -> list[tuple[str | None, str | None]]:
        """The state is the last wall touched (None before the first contact)."""
        walls: list[str | None] = [
            self.wall_names[0] if self._contact_s(k) == 0.0 else self.wall_names[1] for k in range(self.point.n_events)
        ]
        return list(pairwise([None, *walls]))

    def visual_key(self, t: float) -> Hashable:
        return int(round(self.position(t) * _Q))

    def _ball_centre(self, key: Hashable) -> tuple[float, float]:
        s = int(key) / _Q  # type: ignore[call-overload]
        return self._start[0] + s * self._axis[0], self._start[1] + s * self._axis[1]

    def draw(self, key: Hashable) -> np.ndarray:
        return self.draw_into(key, np.empty_like(self.template))

    def draw_into(self, key: Hashable, out: np.ndarray, drawn: Hashable = None) -> np.ndarray:
        if drawn is None:
            np.copyto(out, self.template)
        else:  # ``out`` is the frame of ``drawn``: the template outside that ball's box
            x0, y0, x1, y1 = self.ball_box(drawn)
            out[y0:y1, x0:x1] = self.template[y0:y1, x0:x1]
        draw.circle(out, self._ball_centre(key), self.radius, self.ball_colour)
        return out

    def ball_box(self, key: Hashable) -> tuple[int, int, int, int]:
        """The even-aligned box outside which the frame of ``key`` is the template: the ball's bounding square,
        its antialiased rim and a margin (``draw.circle`` writes within radius + 1 px of the centre)."""
        got = self._boxes.get(key)
        if got is not None:
            return got
        cx, cy = self._ball_centre(key)
        r = self.radius + BALL_BOX_MARGIN
        w, h = self.settings.width, self.settings.height
        x0, y0 = max(0, math.floor(cx - r)), max(0, math.floor(cy - r))
        x1, y1 = min(w, math.ceil(cx + r) + 1), min(h, math.ceil(cy + r) + 1)
        box = x0 - x0 % 2, y0 - y0 % 2, min(w, x1 + x1 % 2), min(h, y1 + y1 % 2)
        if len(self._boxes) >= 64:
            self._boxes.clear()
        self._boxes[key] = box
        return box

    def changed_box(self, before: Hashable, key: Hashable) -> tuple[int, int, int, int] | None:
        a, b = self.ball_box(before), self.ball_box(key)
        return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])
