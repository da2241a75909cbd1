"""When each frame is on screen: a video's presentation timeline, as a player keeps it.

The clock is a player's (ffmpeg's, with its defaults): time 0 is the container's presentation start
(edit lists applied; the earliest start of any stream), and frame ``i`` is on screen from its own
presentation time ``time_of(i)`` until the next frame's. "The frame at t" is the last frame whose time
is at or before ``t``; before the first frame's time, the first frame (a player holds it from the start).

A constant-rate video (every frame exactly at ``start_s + i / fps``, as vidaudit renders them) needs no
table: its times are arithmetic. Any other video (variable rate, a skipped frame, millisecond-rounded
timestamps) carries its frame times, read from the file's packets; both answer the same two questions.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

#: Slack for float time comparisons: a requested time that lands on a frame's start (up to this much
#: before it, through float rounding) shows that frame.
EPS = 1e-9
#: A table of frame times is kept to the microsecond (manifests write 6 decimals), so a time up to half a
#: microsecond before a frame's written stamp may be that frame's true start: it shows that frame. Frames
#: are at least a millisecond apart (``MAX_FPS``), so the slack never reaches the frame before.
TABLE_SLACK = 5e-7


@dataclass(frozen=True)
class Timeline:
    """The frames of one video on its presentation clock (see the module docstring)."""

    n_frames: int
    fps: float  # exact rate (constant) or the average (variable)
    start_s: float = 0.0  # the first frame's time
    times: tuple[float, ...] | None = None  # each frame's time; None: start_s + i / fps
    end_s: float | None = None  # when the last frame leaves the screen (None: arithmetic)
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.n_frames < 1:
            raise ValueError(f"a timeline needs at least one frame, got {self.n_frames}")
        if not (math.isfinite(self.fps) and self.fps > 0):
            raise ValueError(f"frame rate must be a positive number, got {self.fps}")
        if self.times is not None and len(self.times) != self.n_frames:
            raise ValueError(f"{len(self.times)} frame times for {self.n_frames} frames")
        # hashed once: selections are memoised on the timeline, and a variable-rate one holds every time
        object.__setattr__(self, "_hash", hash((self.n_frames, self.fps, self.start_s, self.times, self.end_s)))

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def constant(cls, n_frames: int, fps: float, start_s: float = 0.0) -> Timeline:
        return cls(n_frames=n_frames, fps=fps, start_s=start_s)

    @classmethod
    def of_facts(
        cls, n_frames: int, fps: float, start_s: float, frame_times: tuple[float, ...] | None, duration_s: float
    ) -> Timeline:
        """The clock a video's recorded facts describe (a ``VideoRef`` or a probe): a table of times ends at the
        recorded duration, a constant rate ends where its arithmetic does."""
        return cls(n_frames, fps, start_s, frame_times, duration_s if frame_times is not None else None)

    @property
    def plain(self) -> bool:
        """Constant-rate from time 0 (every clip vidaudit renders): frame ``i`` at ``i / fps``, as index arithmetic
        assumed. Paths that were already exact for such clips keep their old code for them, byte for byte."""
        return self.times is None and self.start_s == 0

    @property
    def duration_s(self) -> float:
        """From the presentation start to the end of the last frame's display interval."""
        if self.end_s is not None:
            return self.end_s
        return self.start_s + self.n_frames / self.fps

    def time_of(self, i: int) -> float:
        """Frame ``i``'s own presentation time."""
        if self.times is not None:
            return self.times[i]
        return self.start_s + i / self.fps

    def on_screen(self, t: float) -> int:
        """The frame a player shows at time ``t`` (clamped to the clip)."""
        if self.times is not None:
            i = bisect.bisect_right(self.times, t + TABLE_SLACK) - 1
        else:
            i = int(math.floor((t - self.start_s) * self.fps + EPS))
        return min(max(i, 0), self.n_frames - 1)


def is_constant(times: Sequence[float], fps: float, tol: float = 1e-9) -> bool:
    """Whether every frame is exactly where ``times[0] + i / fps`` puts it (to float noise, ``tol`` s).

    Exactly, not to half a tick of the time base: a WebM's millisecond stamps at 15 fps put frame 1 at
    0.067 s, so at t = 1/15 s a player still shows frame 0, and arithmetic would send frame 1. A clip whose
    stamps disagree with its nominal rate (a skipped frame, two rates, rounded stamps, a rate header that
    is off) keeps its table of times.
    """
    t0 = times[0] if times else 0.0
    return all(abs(t - (t0 + i / fps)) <= tol for i, t in enumerate(times))


def constant_rate_frames(
    clock: Timeline, fps: float, start_s: float = 0.0, end_s: float | None = None
) -> tuple[int, ...]:
    """The frames a constant-rate copy at ``fps`` shows: frame ``k`` is the one on screen at ``start_s + k / fps``,
    for every ``k`` with that time before ``end_s`` (default: the clip's end). How a variable-rate or late-
    starting clip becomes constant-rate without moving any frame in time by more than one output frame."""
    end = clock.duration_s if end_s is None else end_s
    n = max(1, int(math.ceil((end - start_s) * fps - EPS)))
    return tuple(clock.on_screen(start_s + k / fps) for k in range(n))
