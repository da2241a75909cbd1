"""The event schedule: t_i = t_1 + (i - 1) / F, with t_1 drawn from the sample's seed.

The schedule depends only on (N, F, the seed's "schedule" stream, clip length and the domain's
lead-in/lead-out), never on appearance draws, so restyling a scene cannot move an event.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import rng_from

MARGIN_S = 0.25  # static time kept before the lead-in and after the lead-out


@dataclass(frozen=True)
class Schedule:
    times: tuple[float, ...]
    lead_in_s: float
    lead_out_s: float
    duration_s: float
    fps: float

    @property
    def frames(self) -> tuple[int, ...]:
        return tuple(first_frame_at(t, self.fps) for t in self.times)

    @property
    def active_start(self) -> float:
        return self.times[0] - self.lead_in_s if self.times else 0.0


def first_frame_at(t: float, fps: float) -> int:
    """Index of the first frame whose presentation time j / fps is at or after ``t``."""
    return int(math.ceil(round(t * fps, 9)))


def make_schedule(identity: dict, n: int, f: float, *, lead_in_s: float, lead_out_s: float,
                  duration_s: float, fps: float) -> Schedule:
    """Place N events at rate F so that lead-in, events and lead-out fit inside the clip with a margin."""
    if n == 0:
        return Schedule((), 0.0, 0.0, duration_s, fps)
    span = (n - 1) / f
    lo = MARGIN_S + lead_in_s
    hi = duration_s - MARGIN_S - lead_out_s - span
    if hi < lo:
        need = span + lead_in_s + lead_out_s + 2 * MARGIN_S
        raise ConfigError(
            f"N={n} events at F={f:g} Hz need {need:.2f} s (events {span:.2f} s + lead-in/out "
            f"{lead_in_s + lead_out_s:.2f} s + margins {2 * MARGIN_S:.2f} s) but the clip lasts "
            f"{duration_s:g} s; lower N, raise F or lengthen the clip (--duration)")
    # Start on a frame boundary so that t_1 is exactly representable; later events follow 1/F.
    rng = rng_from(identity, "schedule")
    start = lo + float(rng.random()) * (hi - lo)
    start = min(max(math.ceil(start * fps) / fps, lo), hi) if hi - lo >= 1 / fps else lo
    times = tuple(round(start + i / f, 9) for i in range(n))
    return Schedule(times, lead_in_s, lead_out_s, duration_s, fps)
