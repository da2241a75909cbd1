"""The N x F grid of the Low-Frequency Trap paper (section 3.1, A.1) and its presets."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from vidaudit.sdk import ConfigError

SUITE = "counting"
DOMAINS: tuple[str, ...] = ("bounce_ball", "blinking", "state_machine")
COUNTS: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6, 8, 10, 12)
FREQUENCIES: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0)
NOMINAL_F_FOR_ZERO = 1.0  # N = 0 has no frequency; the paper renders it at nominal 1.0 Hz

#: Verbatim from the paper, appendix C.1.
QUESTIONS: dict[str, str] = {
    "bounce_ball": "How many times did the ball contact the walls?",
    "blinking": "How many times did the object blink?",
    "state_machine": "How many state transitions occurred in the video?",
}


@dataclass(frozen=True, order=True)
class GridPoint:
    """One sample's identity: (domain, N, F, seed index)."""

    domain: str
    n_events: int
    frequency_hz: float
    seed: int

    @property
    def sample_id(self) -> str:
        """Readable and unique: F to one decimal (the paper's grid, 'F2.0') unless that is not F itself, which is
        then written in full ('F2.25', not 'F2.2' shared with F = 2.2: the manifest held one sample twice and
        both renders wrote one file)."""
        f = float(self.frequency_hz)
        fs = f"{f:.1f}" if float(f"{f:.1f}") == f else repr(f)
        return f"{SUITE}-{self.domain}-N{self.n_events:02d}-F{fs}-s{self.seed:02d}"

    @property
    def identity(self) -> dict[str, object]:
        return {
            "suite": SUITE,
            "domain": self.domain,
            "n_events": self.n_events,
            "frequency_hz": self.frequency_hz,
            "seed": self.seed,
        }


def validate(domain: str, n: int, f: float, seed: int) -> None:
    if domain not in DOMAINS:
        raise ConfigError(f"unknown domain {domain!r}; choose from {', '.join(DOMAINS)}")
    if not isinstance(n, int) or n < 0:
        raise ConfigError(f"event count N must be a non-negative integer, got {n!r}")
    if not (isinstance(f, (int, float)) and math.isfinite(f) and f > 0):
        raise ConfigError(f"frequency F must be a positive number of Hz, got {f!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")


def grid(
    domains: Iterable[str] = DOMAINS,
    counts: Iterable[int] = COUNTS,
    frequencies: Iterable[float] = FREQUENCIES,
    seeds: Iterable[int] = range(10),
) -> list[GridPoint]:
    """All grid points; N = 0 appears once per seed, at the nominal frequency (paper A.1)."""
    domains, counts, freqs, seeds = list(domains), list(counts), [float(f) for f in frequencies], list(seeds)
    points: set[GridPoint] = set()
    for d in domains:
        for n in counts:
            for f in [NOMINAL_F_FOR_ZERO] if n == 0 else freqs:
                for s in seeds:
                    validate(d, n, f, s)
                    points.add(GridPoint(d, n, f, s))
    return sorted(
        points,
        key=lambda p: (DOMAINS.index(p.domain) if p.domain in DOMAINS else 99, p.n_events, p.frequency_hz, p.seed),
    )


def preset(name: str, domains: Sequence[str] = DOMAINS) -> list[GridPoint]:
    """``paper``: the full 2,190-video design; ``smoke``: a small set with its extreme corners."""
    if name == "paper":
        return grid(domains)
    if name == "smoke":
        pts = grid(domains, counts=(0, 1, 12), frequencies=(0.5, 4.0), seeds=(0,))
        pts += grid(domains, counts=(3,), frequencies=(2.0,), seeds=(0,))
        return sorted(set(pts), key=lambda p: (DOMAINS.index(p.domain), p.n_events, p.frequency_hz, p.seed))
    raise ConfigError(f"unknown preset {name!r}; choose 'paper' or 'smoke'")
