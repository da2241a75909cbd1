"""A counting scene: an event schedule, the executable trace it implies, and the frames that show it.

Subclasses say what an event looks like; this base turns per-frame visual states into runs of
identical frames (drawn once, encoded ``repeat`` times) and the schedule into a trace.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from vidaudit.sdk import ConfigError, Trace, rng_from
from vidaudit.suites.counting.grid import GridPoint
from vidaudit.suites.counting.running_count import counting_event, counting_trace
from vidaudit.suites.counting.schedule import Schedule, exact, make_schedule

#: Upper limits that keep a typo (``--fps 30000``) from rendering for days; far above any design's needs.
MAX_DURATION_S = 3600.0
MAX_FPS = 240.0


@dataclass(frozen=True)
class RenderSettings:
    duration_s: float = 24.0
    fps: float = 30.0
    width: int = 854
    height: int = 480

    def __post_init__(self) -> None:
        for flag, value, hi, unit in (("--duration", self.duration_s, MAX_DURATION_S, "seconds"),
                                      ("--fps", self.fps, MAX_FPS, "frames per second")):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                    or not 0 < value <= hi:
                raise ConfigError(f"{flag} must be a finite number of {unit} in (0, {hi:g}], got {value!r}")
        for name, value in (("--width", self.width), ("--height", self.height)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{name} must be an integer number of pixels, got {value!r}")
        if self.n_frames < 1:
            raise ConfigError(f"--duration {self.duration_s:g} s at --fps {self.fps:g} is less than one frame; "
                              "lengthen the clip or raise the frame rate")

    @property
    def n_frames(self) -> int:
        return int(round(self.duration_s * self.fps))


class Scene(ABC):
    domain: str
    event_type: str

    def __init__(self, point: GridPoint, settings: RenderSettings = RenderSettings()) -> None:
        self.point = point
        self.settings = settings
        self.f = point.frequency_hz
        self.f_exact = exact(point.frequency_hz)
        self.fps_exact = exact(settings.fps)
        self.schedule: Schedule = make_schedule(
            point.identity, point.n_events, self.f_exact, lead_in_s=self.lead_in_s(), lead_out_s=self.lead_out_s(),
            duration_s=settings.duration_s, fps=self.fps_exact)
        self.rng = rng_from(point.identity, "appearance")
        self.setup()

    # -- what a subclass defines
    def lead_in_s(self) -> Fraction:
        """Motion shown before the first event (exact: it places the schedule, and so every event frame)."""
        return Fraction(0)

    def lead_out_s(self) -> Fraction:
        return Fraction(0)

    @abstractmethod
    def setup(self) -> None:
        """Draw appearance choices from ``self.rng`` and build the static template."""

    @abstractmethod
    def transitions(self) -> list[tuple[str | None, str | None]]:
        """(state before, state after) for each event, in order."""

    @abstractmethod
    def visual_key(self, t: float) -> Hashable:
        """A value that is equal for two instants exactly when their frames are identical."""

    @abstractmethod
    def draw(self, key: Hashable) -> np.ndarray:
        """The RGB frame for a visual key."""

    # -- shared
    def trace(self) -> Trace:
        return counting_trace(counting_event(t, frame, self.event_type, i + 1, before, after)
                              for i, (t, frame, (before, after)) in enumerate(
                                  zip(self.schedule.times, self.schedule.frames, self.transitions(), strict=True)))

    def frame_runs(self) -> Iterator[tuple[np.ndarray, int]]:
        """(frame, repeat) for consecutive identical frames, covering every frame of the clip."""
        fps, n = self.settings.fps, self.settings.n_frames
        cache: dict[Hashable, np.ndarray] = {}
        run_key, run_len = None, 0
        for j in range(n):
            key = self.visual_key(j / fps)
            if run_len and key == run_key:
                run_len += 1
                continue
            if run_len:
                yield cache[run_key], run_len
            if key not in cache:
                if len(cache) > 64:
                    cache.clear()
                cache[key] = self.draw(key)
            run_key, run_len = key, 1
        if run_len:
            yield cache[run_key], run_len

    def blank(self, colour: tuple[int, int, int]) -> np.ndarray:
        img = np.empty((self.settings.height, self.settings.width, 3), np.uint8)
        img[:, :] = colour
        return img
