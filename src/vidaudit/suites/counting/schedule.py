"""The event schedule: t_i = t_1 + (i - 1) / F, with t_1 drawn from the sample's seed.

The schedule depends only on (N, F, the seed's "schedule" stream, clip length and the domain's
lead-in/lead-out), never on appearance draws, so restyling a scene cannot move an event.

Times are exact rationals (``Schedule.exact``): t_1 is a frame boundary k / fps (or the lead-in's end,
itself rational), F, fps and the clip length are the decimals they were given as, so t_i is a fraction
and "the first frame at or after t_i" is ``ceil(t_i * fps)`` with no rounding. The float ``times`` (9
decimals) are what the manifest shows; a frame is never derived from them (200/30 s written as
6.666666667 s is 200.00000001 frames, one frame late by ``ceil``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from vidaudit.sdk import ConfigError, rng_from

MARGIN_S = Fraction(1, 4)  # static time kept before the lead-in and after the lead-out
#: decimals of the float event times written to a manifest
TIME_DECIMALS = 9


def exact(x: float | int | Fraction) -> Fraction:
    """A setting as the exact decimal it was written as (a float's shortest repr: 29.97 is 2997/100, not the
    binary double nearest it); a Fraction is kept."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        raise ConfigError(f"{x!r} is not a finite number")
    return Fraction(x) if isinstance(x, int) else Fraction(repr(float(x)))


def first_frame_at(t: Fraction, fps: Fraction) -> int:
    """Index of the first frame whose presentation time j / fps is at or after ``t`` (both exact)."""
    if not isinstance(t, Fraction) or not isinstance(fps, Fraction):
        raise TypeError("first_frame_at takes exact times and rates (Fraction); a float time is rounded")
    return math.ceil(t * fps)


@dataclass(frozen=True)
class Schedule:
    exact: tuple[Fraction, ...]  # event times in seconds, exactly
    lead_in_s: Fraction
    lead_out_s: Fraction
    duration_s: Fraction
    fps: Fraction
    #: the event times as the manifest writes them (``TIME_DECIMALS`` decimals): for readers only
    times: tuple[float, ...] = field(init=False)
    #: each event's first frame at or after its exact time
    frames: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "times", tuple(round(float(t), TIME_DECIMALS) for t in self.exact))
        object.__setattr__(self, "frames", tuple(first_frame_at(t, self.fps) for t in self.exact))

    @property
    def active_start(self) -> Fraction:
        return self.exact[0] - self.lead_in_s if self.exact else Fraction(0)


def make_schedule(
    identity: dict,
    n: int,
    f: float | Fraction,
    *,
    lead_in_s: Fraction,
    lead_out_s: Fraction,
    duration_s: float | Fraction,
    fps: float | Fraction,
    n_frames: int | None = None,
) -> Schedule:
    """Place N events at rate F so that lead-in, events and lead-out fit inside the clip with a margin.

    ``n_frames``: the clip's frames (the last shown at (n_frames - 1) / fps). The lead-out also ends by that last
    frame: below 4 fps, or when duration * fps is not whole, it can come more than the margin before the clip's
    end, and an event placed after it was on no frame of the video."""
    fq, dq, rq = exact(f), exact(duration_s), exact(fps)
    lead_in, lead_out = exact(lead_in_s), exact(lead_out_s)
    if n == 0:
        return Schedule((), Fraction(0), Fraction(0), dq, rq)
    span = (n - 1) / fq
    lo = MARGIN_S + lead_in
    end = dq - MARGIN_S if n_frames is None else min(dq - MARGIN_S, (n_frames - 1) / rq)
    hi = end - lead_out - span
    if hi < lo:
        need = span + lead_in + lead_out + 2 * MARGIN_S
        last = "" if end == dq - MARGIN_S else f", its last frame at {float(end):g} s"
        raise ConfigError(
            f"N={n} events at F={float(fq):g} Hz need {float(need):.2f} s (events {float(span):.2f} s + lead-in/out "
            f"{float(lead_in + lead_out):.2f} s + margins {float(2 * MARGIN_S):.2f} s) but the clip lasts "
            f"{float(dq):g} s{last}; lower N, raise F or lengthen the clip (--duration)"
        )
    # Start on the first frame boundary at or after a drawn instant of [lo, hi] (clamped into it); later
    # events follow 1/F. The draw is a float (the seed's stream); everything after it is exact.
    rng = rng_from(identity, "schedule")
    drawn = float(lo) + float(rng.random()) * float(hi - lo)
    start = min(max(Fraction(math.ceil(drawn * float(rq))) / rq, lo), hi) if hi - lo >= 1 / rq else lo
    return Schedule(tuple(start + i / fq for i in range(n)), lead_in, lead_out, dq, rq)
