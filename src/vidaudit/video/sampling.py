"""Frame sampling by presentation time: one explicit selection, resolved once and logged per trial.

Every rule asks the video's :class:`~vidaudit.core.timeline.Timeline` which frame a player shows at a
time (``on_screen``), never ``t * fps``: on a variable-rate clip, one with a skipped frame or one that
starts late, index arithmetic picks a frame one step early or late. ``frames@K`` takes the frame on screen
at t = j / K for j = 0, 1, ... while t < duration and logs the requested time (the frame is the one on
screen then); keyframes and every-frame selections log each frame's own time. No adapter resamples
afterwards.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from vidaudit.core.errors import ConfigError
from vidaudit.core.timeline import EPS as _EPS
from vidaudit.core.timeline import Timeline


@dataclass(frozen=True)
class FrameSelection:
    indices: tuple[int, ...]
    times: tuple[float, ...]  # presentation times (seconds) on the video's clock
    rule: str

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.times):
            raise ValueError("indices and times differ in length")

    def __len__(self) -> int:
        return len(self.indices)


def frame_on_screen(t: float, fps: float, n_frames: int) -> int:
    """The frame on screen at ``t`` of a constant-rate clip starting at 0 (a perturbation's own output)."""
    return min(max(int(math.floor(t * fps + _EPS)), 0), n_frames - 1)


@functools.lru_cache(maxsize=1024)
def at_fps(clock: Timeline, k: float) -> FrameSelection:
    """The frame on screen at t = j / K for every j with t inside the clip (memoised: a plan asks the
    same few (clip, rate) pairs tens of thousands of times; the selection is immutable)."""
    if k <= 0:
        raise ConfigError(f"sampling rate must be positive, got {k}")
    count = max(1, int(math.ceil(clock.duration_s * k - _EPS)))
    # the frame is chosen from the exact time j / K; only the logged time is rounded (rounding first
    # made frames@24 of a 120 fps clip take frames 0, 5, 9, 15, ...)
    indices = tuple(clock.on_screen(j / k) for j in range(count))
    times = tuple(round(j / k, 6) for j in range(count))
    return FrameSelection(indices, times, f"fps={k:g}")


@functools.lru_cache(maxsize=1024)
def uniform_count(clock: Timeline, k: int) -> FrameSelection:
    """``frames#K``: exactly K frames, the frame on screen at the centre of each of K equal segments of
    the clip (t_j = (j + 1/2) * duration / K), as InternVL-style K-frame samplers do. When K exceeds the
    frame count, neighbouring segments share a frame and it is sent once."""
    if k < 1:
        raise ConfigError(f"frame count must be >= 1, got {k}")
    duration = clock.duration_s
    picks: dict[int, float] = {}
    for j in range(k):
        t = round((j + 0.5) * duration / k, 6)
        picks.setdefault(clock.on_screen(t), t)
    return FrameSelection(tuple(picks), tuple(picks.values()), f"uniform {k} frames")


def every_frame(clock: Timeline) -> FrameSelection:
    n = clock.n_frames
    return FrameSelection(tuple(range(n)), tuple(round(clock.time_of(i), 6) for i in range(n)), "every frame")


#: Event times are written to 9 decimals, so an event's true time may lie up to half a unit of the last
#: decimal after its written ``t``: a written time that short of a frame boundary is on it (as ``TABLE_SLACK``
#: for frame tables). Without it, 200/30 s written as 6.666666666 s would pick the frame before the boundary.
EVENT_SLACK = 5e-10


def around_events(
    event_times: Sequence[float], event_frames: Sequence[int], clock: Timeline, offset_s: float = 0.1
) -> FrameSelection:
    """The oracle keyframes: for each event, frames at t_i - offset, the event's first frame, t_i + offset.

    The centre frame is the event's own first frame, ``event_frames`` (the trace's, derived from the event's
    exact time; the frame on screen at t_i may precede the event when t_i falls between frames). The other
    two are on screen at t_i -+ offset, read with ``EVENT_SLACK``. With no events (N = 0) the rule is three
    frames at 25%, 50% and 75% of the clip, so a trial never goes out with zero frames.
    """
    n_frames = clock.n_frames
    picks: dict[int, float] = {}
    if not event_times:
        for q in (0.25, 0.5, 0.75):
            t = q * clock.duration_s
            picks.setdefault(clock.on_screen(t), round(t, 6))
        rule = "keyframes: no events, frames at 25/50/75% of the clip"
    else:
        for t, f in zip(event_times, event_frames, strict=True):
            for tt, idx in (
                (t - offset_s, clock.on_screen(t - offset_s + EVENT_SLACK)),
                (t, min(max(f, 0), n_frames - 1)),
                (t + offset_s, clock.on_screen(t + offset_s + EVENT_SLACK)),
            ):
                picks.setdefault(idx, round(max(tt, 0.0), 6))
        rule = f"keyframes: t_i - {offset_s:g}, event frame, t_i + {offset_s:g}"
    order = sorted(picks)
    return FrameSelection(tuple(order), tuple(round(clock.time_of(i), 6) for i in order), rule)
