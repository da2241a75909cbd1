"""Uncertainty for accuracies and differences: Wilson intervals and a clustered paired bootstrap.

Every accuracy vidaudit reports carries a Wilson 95% interval (sound near 0 and 1, unlike the
normal approximation). Differences between two conditions or models are paired by sample and
bootstrapped by resampling whole clusters (samples that share a source video), so that
correlated samples do not shrink the interval.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from vidaudit.core.errors import ConfigError


@functools.lru_cache(maxsize=64)
def _z(confidence: float) -> float:
    """The normal quantile of a two-sided interval (cached: a report asks for the same few thousands of times).
    ``scipy.special.ndtri`` is what ``scipy.stats.norm.ppf`` computes, bit for bit, at a fifth of the import
    (``statistics.NormalDist`` differs in the last bit for most confidences, 0.95 included)."""
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be between 0 and 1 (e.g. 0.95), got {confidence!r}")
    from scipy.special import ndtri  # here, not at the top: scipy costs CPU to import (issue 34)

    return float(ndtri(0.5 + confidence / 2.0))


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Wilson score interval for k successes in n trials; (0.0, 1.0) when n = 0."""
    if n < 0 or k < 0 or k > n:
        raise ConfigError(f"Wilson interval needs 0 <= k <= n, got k={k}, n={n}")
    z = _z(confidence)
    if n == 0:
        return 0.0, 1.0
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    if k == 0:
        lo = 0.0
    if k == n:
        hi = 1.0
    return lo, hi


def wilson_lower(k: int, n: int, confidence: float = 0.95) -> float:
    return wilson_interval(k, n, confidence)[0]


@dataclass(frozen=True)
class BootstrapResult:
    """``estimate`` = mean(b) - mean(a) over paired samples, with a percentile interval."""

    estimate: float
    ci_low: float
    ci_high: float
    mean_a: float
    mean_b: float
    n_pairs: int
    n_groups: int
    n_boot: int
    seed: int
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    groups: Sequence[Hashable],
    *,
    n_boot: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Bootstrap of mean(b - a) resampling whole groups with replacement (seeded, reproducible).

    ``a[i]``, ``b[i]`` are the outcomes (e.g. exact match 0/1) of the same sample under two
    conditions and ``groups[i]`` its cluster key (the source video). The three sequences must
    have the same length: nothing is silently truncated.
    """
    if not (len(a) == len(b) == len(groups)):
        raise ConfigError(
            f"paired bootstrap needs equally long inputs, got a={len(a)}, b={len(b)}, "
            f"groups={len(groups)}; pair the trials by sample before calling it"
        )
    if len(a) == 0:
        raise ConfigError("paired bootstrap got no paired samples; the two arms share no scored sample")
    if n_boot < 1:
        raise ConfigError(f"n_boot must be positive, got {n_boot}")
    _z(confidence)
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    keys: dict[Hashable, int] = {}
    gid = np.array([keys.setdefault(g, len(keys)) for g in groups])
    n_groups = len(keys)
    diff_sum = np.bincount(gid, weights=xb - xa, minlength=n_groups)
    size = np.bincount(gid, minlength=n_groups).astype(float)
    rng = np.random.default_rng(seed)
    est = float((xb - xa).mean())
    stats = np.empty(n_boot)
    chunk = max(1, 2_000_000 // max(n_groups, 1))
    for s in range(0, n_boot, chunk):
        e = min(n_boot, s + chunk)
        idx = rng.integers(0, n_groups, size=(e - s, n_groups))
        stats[s:e] = diff_sum[idx].sum(axis=1) / size[idx].sum(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return BootstrapResult(
        est, float(lo), float(hi), float(xa.mean()), float(xb.mean()), len(xa), n_groups, n_boot, seed, confidence
    )
