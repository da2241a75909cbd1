"""Frame sampling by presentation time: one explicit selection, resolved once and logged per trial.

Frame ``i`` is on screen during [i / fps, (i + 1) / fps). ``frames@K`` takes the frame on screen
at t = j / K for j = 0, 1, ... while t < duration; no adapter resamples afterwards.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from vidaudit.core.errors import ConfigError

_EPS = 1e-9


@dataclass(frozen=True)
class FrameSelection:
    indices: tuple[int, ...]
    times: tuple[float, ...]   # the requested presentation times (seconds)
    rule: str

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.times):
            raise ValueError("indices and times differ in length")

    def __len__(self) -> int:
        return len(self.indices)


def frame_on_screen(t: float, fps: float, n_frames: int) -> int:
    return min(max(int(math.floor(t * fps + _EPS)), 0), n_frames - 1)


@functools.lru_cache(maxsize=1024)
def at_fps(n_frames: int, fps: float, k: float) -> FrameSelection:
    """The frame on screen at t = j / K for every j with t inside the clip (memoised: a plan asks the
    same few (clip, rate) pairs tens of thousands of times; the selection is immutable)."""
    if k <= 0:
        raise ConfigError(f"sampling rate must be positive, got {k}")
    duration = n_frames / fps
    count = max(1, int(math.ceil(duration * k - _EPS)))
    # the frame is chosen from the exact time j / K; only the logged time is rounded (rounding first
    # made frames@24 of a 120 fps clip take frames 0, 5, 9, 15, ...)
    indices = tuple(frame_on_screen(j / k, fps, n_frames) for j in range(count))
    times = tuple(round(j / k, 6) for j in range(count))
    return FrameSelection(indices, times, f"fps={k:g}")


@functools.lru_cache(maxsize=1024)
def uniform_count(n_frames: int, fps: float, k: int) -> FrameSelection:
    """``frames#K``: exactly K frames, the frame on screen at the centre of each of K equal segments of
    the clip (t_j = (j + 1/2) * duration / K), as InternVL-style K-frame samplers do. When K exceeds the
    frame count, neighbouring segments share a frame and it is sent once."""
    if k < 1:
        raise ConfigError(f"frame count must be >= 1, got {k}")
    duration = n_frames / fps
    picks: dict[int, float] = {}
    for j in range(k):
        t = round((j + 0.5) * duration / k, 6)
        picks.setdefault(frame_on_screen(t, fps, n_frames), t)
    return FrameSelection(tuple(picks), tuple(picks.values()), f"uniform {k} frames")


def every_frame(n_frames: int, fps: float) -> FrameSelection:
    return FrameSelection(tuple(range(n_frames)), tuple(round(i / fps, 6) for i in range(n_frames)), "every frame")


def around_events(event_times: Sequence[float], event_frames: Sequence[int], n_frames: int, fps: float,
                  offset_s: float = 0.1) -> FrameSelection:
    """The oracle keyframes: for each event, frames at t_i - offset, the event's first frame, t_i + offset.

    The centre frame is the event's own first frame (the frame on screen at t_i may precede the
    event when t_i falls between frames). With no events (N = 0) the rule is three frames at 25%,
    50% and 75% of the clip, so a trial never goes out with zero frames.
    """
    picks: dict[int, float] = {}
    if not event_times:
        for q in (0.25, 0.5, 0.75):
            t = q * n_frames / fps
            picks.setdefault(frame_on_screen(t, fps, n_frames), round(t, 6))
        rule = "keyframes: no events, frames at 25/50/75% of the clip"
    else:
        for t, f in zip(event_times, event_frames, strict=True):
            for tt, idx in ((t - offset_s, frame_on_screen(t - offset_s, fps, n_frames)),
                            (t, min(max(f, 0), n_frames - 1)),
                            (t + offset_s, frame_on_screen(t + offset_s, fps, n_frames))):
                picks.setdefault(idx, round(max(tt, 0.0), 6))
        rule = f"keyframes: t_i - {offset_s:g}, event frame, t_i + {offset_s:g}"
    order = sorted(picks)
    return FrameSelection(tuple(order), tuple(round(i / fps, 6) for i in order), rule)
