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
#: distinct frames ``keyed_runs`` keeps to hand out again when their key comes back. Few: each is a full frame
#: (1.2 MB at 854x480), and holding many made every new one land in fresh memory, which cost a bouncing ball
#: clip more in page faults than drawing it (blinking and state machine scenes keep their own few frames)
FRAME_CACHE = 8
#: the same for a scene that draws into buffers used again (``keyed_runs(reuse=True)``): a moving ball's key seldom
#: comes back, and each buffer's first drawing copies a whole template into fresh memory
DRAWN_CACHE = 2


@dataclass(frozen=True)
class RenderSettings:
    duration_s: float = 24.0
    fps: float = 30.0
    width: int = 854
    height: int = 480

    def __post_init__(self) -> None:
        for flag, value, hi, unit in (
            ("--duration", self.duration_s, MAX_DURATION_S, "seconds"),
            ("--fps", self.fps, MAX_FPS, "frames per second"),
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0 < value <= hi
            ):
                raise ConfigError(f"{flag} must be a finite number of {unit} in (0, {hi:g}], got {value!r}")
        for name, value in (("--width", self.width), ("--height", self.height)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{name} must be an integer number of pixels, got {value!r}")
        if self.n_frames < 1:
            raise ConfigError(
                f"--duration {self.duration_s:g} s at --fps {self.fps:g} is less than one frame; "
                "lengthen the clip or raise the frame rate"
            )

    @property
    def n_frames(self) -> int:
        return int(round(self.duration_s * self.fps))


#: the settings a scene, ``make_scene`` and ``generate`` take when given none (frozen: one instance serves all)
DEFAULT_SETTINGS = RenderSettings()


class Scene(ABC):
    domain: str
    event_type: str

    def __init__(self, point: GridPoint, settings: RenderSettings = DEFAULT_SETTINGS) -> None:
        self.point = point
        self.settings = settings
        self.f = point.frequency_hz
        self.f_exact = exact(point.frequency_hz)
        self.fps_exact = exact(settings.fps)
        self.schedule: Schedule = make_schedule(
            point.identity,
            point.n_events,
            self.f_exact,
            lead_in_s=self.lead_in_s(),
            lead_out_s=self.lead_out_s(),
            duration_s=settings.duration_s,
            fps=self.fps_exact,
            n_frames=settings.n_frames,
        )
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
        return counting_trace(
            counting_event(t, frame, self.event_type, i + 1, before, after)
            for i, (t, frame, (before, after)) in enumerate(
                zip(self.schedule.times, self.schedule.frames, self.transitions(), strict=True)
            )
        )

    def changed_box(self, before: Hashable, key: Hashable) -> tuple[int, int, int, int] | None:
        """A box (x0, y0, x1, y1), even-aligned, outside which the frames of visual keys ``before`` and ``key`` are
        identical (None: they may differ anywhere). A renderer that analyses what it draws needs to look at
        this box only (``render.render_checked``); ``tests/suites/counting/test_counting_videos.py`` checks every
        key's frame against the box a scene gives."""
        return None

    def draw_into(self, key: Hashable, out: np.ndarray, drawn: Hashable = None) -> np.ndarray | None:
        """The frame of ``key`` drawn into ``out`` (a frame-sized array), for a scene that draws every frame afresh;
        ``drawn``: the key whose frame ``out`` holds (None: anything). None: this scene hands out arrays of its own
        (``draw``)."""
        return None

    def frame_runs(self) -> Iterator[tuple[np.ndarray, int]]:
        """(frame, repeat) for consecutive identical frames, covering every frame of the clip."""
        for _, frame, repeat in self.keyed_runs():
            yield frame, repeat

    def keyed_runs(self, reuse: bool = False) -> Iterator[tuple[Hashable, np.ndarray, int]]:
        """``frame_runs`` with each run's visual key: (key, frame, repeat).

        ``reuse``: a scene that draws every frame afresh (``draw_into``) draws into a few buffers used again, so a
        frame is valid only until the next run is asked for: for a consumer that is done with each frame by then
        (a renderer), not one that keeps them. Fresh memory for every frame cost more in page faults than drawing."""
        fps, n = self.settings.fps, self.settings.n_frames
        into = reuse and type(self).draw_into is not Scene.draw_into
        keep = DRAWN_CACHE if into else FRAME_CACHE
        cache: dict[Hashable, np.ndarray] = {}
        spare: list[tuple[Hashable, np.ndarray]] = []  # frames dropped from the cache, to draw into again (``into``)
        run_key, run_len = None, 0
        for j in range(n):
            key = self.visual_key(j / fps)
            if run_len and key == run_key:
                run_len += 1
                continue
            if run_len:
                yield run_key, cache[run_key], run_len
            if key not in cache:
                if len(cache) >= keep:
                    if into:
                        spare.extend(cache.items())
                    cache.clear()
                if into:
                    drawn, out = (
                        spare.pop()
                        if spare
                        else (None, np.empty((self.settings.height, self.settings.width, 3), np.uint8))
                    )
                    frame = self.draw_into(key, out, drawn)
                    assert frame is out, "draw_into draws into the array it is given"
                else:
                    frame = self.draw(key)
                cache[key] = frame
            run_key, run_len = key, 1
        if run_len:
            yield run_key, cache[run_key], run_len

    def blank(self, colour: tuple[int, int, int]) -> np.ndarray:
        img = np.empty((self.settings.height, self.settings.width, 3), np.uint8)
        img[0] = colour
        img[1:] = img[0]  # row by row: broadcasting the colour to every pixel at once is 50x slower
        return img
