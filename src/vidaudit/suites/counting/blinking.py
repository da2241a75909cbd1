"""Blinking: one object that is OFF (dim outline) except for N ON-pulses starting at each t_i.

The pulse lasts a fixed fraction of the period (``PULSE_FRACTION / F``) with a floor of two
frames: blinks are transient by design, so a sparse sampler can miss them entirely, which is
the paper's point. The event is the OFF -> ON onset.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from fractions import Fraction

import numpy as np

from vidaudit.sdk import ConfigError, draw
from vidaudit.suites.counting.scene import Scene
from vidaudit.suites.counting.schedule import first_frame_at

PULSE_FRACTION = Fraction(3, 10)
MIN_PULSE_FRAMES = 2
SHAPES = ("circle", "square", "diamond", "triangle", "hexagon")


class Blinking(Scene):
    domain = "blinking"
    event_type = "blink"

    def pulse_s(self) -> Fraction:
        return max(PULSE_FRACTION / self.f_exact, MIN_PULSE_FRAMES / self.fps_exact)

    def lead_out_s(self) -> Fraction:
        return self.pulse_s()

    def setup(self) -> None:
        s, rng = self.settings, self.rng
        self.bg, (self.colour,) = draw.pick_colours(rng, 1, min_contrast=3.0)
        self.shape = SHAPES[int(rng.integers(len(SHAPES)))]
        self.size = float(rng.uniform(50.0, 90.0))
        self.centre = (s.width / 2.0 + float(rng.uniform(-150, 150)), s.height / 2.0 + float(rng.uniform(-60, 60)))
        self.dim = tuple(int(round(0.25 * c + 0.75 * b)) for b, c in zip(self.bg, self.colour, strict=True))
        pulse_frames = max(MIN_PULSE_FRAMES, first_frame_at(PULSE_FRACTION / self.f_exact, self.fps_exact))
        self._check_apart(pulse_frames)
        self.on_frames = {j for onset in self.schedule.frames for j in range(onset, onset + pulse_frames)}
        self.frames = {False: self._render(False), True: self._render(True)}

    def _check_apart(self, pulse_frames: int) -> None:
        """Refuse onsets too close for an OFF frame between two pulses: the blinks would merge into one on screen
        and the video would show fewer events than its trace (found after rendering, in the detector's words)."""
        onsets = self.schedule.frames
        gap = min((b - a for a, b in zip(onsets, onsets[1:], strict=False)), default=None)
        if gap is not None and gap <= pulse_frames:
            fps = float(self.settings.fps)
            raise ConfigError(
                f"blinking at F={self.f:g} Hz and {fps:g} fps: two blinks start {gap} frames apart but each stays "
                f"on {pulse_frames} frames, so they would merge into one on screen; keep F at most "
                f"{fps / (pulse_frames + 1):.3g} Hz (fps / {pulse_frames + 1}) or raise --fps"
            )

    def _points(self) -> np.ndarray:
        cx, cy = self.centre
        k = {"square": 4, "diamond": 4, "triangle": 3, "hexagon": 6}[self.shape]
        rot = {"square": math.pi / 4, "diamond": 0.0, "triangle": -math.pi / 2, "hexagon": 0.0}[self.shape]
        ang = rot + np.arange(k) * 2 * math.pi / k
        return np.stack([cx + self.size * np.cos(ang), cy + self.size * np.sin(ang)], axis=1)

    def _render(self, on: bool) -> np.ndarray:
        img = self.blank(self.bg)
        colour = self.colour if on else self.dim
        if self.shape == "circle":
            draw.circle(img, self.centre, self.size, colour)
        else:
            draw.polygon(img, self._points(), colour)
        return img

    def transitions(self) -> list[tuple[str | None, str | None]]:
        return [("off", "on")] * self.point.n_events

    def visual_key(self, t: float) -> Hashable:
        return int(round(t * self.settings.fps)) in self.on_frames

    def draw(self, key: Hashable) -> np.ndarray:
        return self.frames[bool(key)]
