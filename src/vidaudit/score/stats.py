"""Uncertainty for accuracies and differences: Wilson intervals and a clustered paired bootstrap.

Every accuracy vidaudit reports carries a Wilson 95% interval (sound near 0 and 1, unlike the
normal approximation). Differences between two conditions or models are paired by sample and
bootstrapped by resampling whole clusters (samples that share a source video), so that
correlated samples do not shrink the interval. An accuracy over items of which several share a source
(one scene moved six ways, several questions on one video) gets a Wilson interval at the effective sample
size of its clusters (``cluster_wilson_interval``): items of one source answer alike, and counted as
independent they make the interval too narrow.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from vidaudit.core.contract.suite import source_unit
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


#: fewest sources (clusters) behind a paired verdict: with the sources as the units (a sign flip of each source's
#: difference under the null), no test reaches 5% two-sided with fewer (2 * 0.5^5 = 6.25%, 2 * 0.5^6 = 3.1%), and a
#: percentile bootstrap over so few covers far less than 95% (of a proportion over 2 sources: 48-50%,
#: benchmarks/cluster_coverage.py)
MIN_SOURCES_VERDICT = 6


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Wilson score interval for k successes in n trials; (0.0, 1.0) when n = 0."""
    if n < 0 or k < 0 or k > n:
        raise ConfigError(f"Wilson interval needs 0 <= k <= n, got k={k}, n={n}")
    z = _z(confidence)
    if n == 0:
        return 0.0, 1.0
    lo, hi = _wilson(k / n, n, z)
    if k == 0:
        lo = 0.0
    if k == n:
        hi = 1.0
    return lo, hi


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``p`` observed over ``n`` (an effective, possibly fractional,
    number of independent trials)."""
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_lower(k: int, n: int, confidence: float = 0.95) -> float:
    return wilson_interval(k, n, confidence)[0]


@dataclass(frozen=True)
class ClusteredInterval:
    """A proportion's interval when its items come in clusters (samples that share a source).

    ``design_effect`` is how many times the binomial variance the proportion's variance is taken to be:
    1.0 where the interval is the plain Wilson one over items (every cluster holds one item, a single
    cluster, or clusters that vary no more than independent items would)."""

    ci_low: float
    ci_high: float
    n_items: int
    n_clusters: int
    design_effect: float

    @property
    def clustered(self) -> bool:
        """True when some cluster holds several items (the items are not independent draws): the interval then
        counts clusters, or, with a single cluster, describes that cluster only."""
        return self.n_clusters < self.n_items


def cluster_wilson_interval(
    outcomes: Sequence[bool], groups: Sequence[Hashable], confidence: float = 0.95
) -> ClusteredInterval:
    """Wilson interval of the share of true ``outcomes`` when ``groups[i]`` is item i's cluster (source) key.

    Items of one source answer alike, so n of them carry less than n independent trials' information. The
    interval is Wilson's at the effective size n / deff (Korn & Graubard 1998): deff is the ratio of the
    proportion's between-cluster (linearised, ratio-estimator) variance to the binomial one, times
    ``(t_{C-1} / z)^2`` for the C - 1 degrees of freedom that variance is estimated with, and never below 1
    (never narrower than Wilson over items: all-correct cells and clusters that agree keep Wilson's). With
    one item per cluster, or a single cluster (nothing to measure between sources), it is the plain Wilson
    interval over items. Why this and not the clustered bootstrap: at the cluster shapes of the stress
    presets (16-36 sources, intra-cluster correlation 0.2-0.5) it covers 94-97% (88-93% with two 18-item
    clusters among 20) where Wilson over items covers 39-85% and a percentile bootstrap 89-95%; at 2 sources
    79-93% against the bootstrap's 48-50% (benchmarks/cluster_coverage.py)."""
    if len(outcomes) != len(groups):
        raise ConfigError(
            f"clustered interval needs one group key per outcome, got {len(outcomes)} outcomes and {len(groups)} keys"
        )
    z = _z(confidence)
    n = len(outcomes)
    k = sum(bool(o) for o in outcomes)
    keys: dict[Hashable, int] = {}
    gid = np.array([keys.setdefault(g, len(keys)) for g in groups], dtype=int)
    c = len(keys)
    if n == 0 or c < 2 or c == n:
        lo, hi = wilson_interval(k, n, confidence)
        return ClusteredInterval(lo, hi, n, c, 1.0)
    from scipy.special import stdtrit  # the t quantile; here, not at the top (issue 34)

    y = np.bincount(gid, weights=np.asarray(outcomes, dtype=float), minlength=c)
    m = np.bincount(gid, minlength=c).astype(float)
    p = k / n
    binomial = p * (1.0 - p) / n
    between = c / (c - 1) * float(((y - p * m) ** 2).sum()) / (n * n)
    ratio = between / binomial if binomial > 0 else 0.0
    deff = max(1.0, ratio * (float(stdtrit(c - 1, 0.5 + confidence / 2.0)) / z) ** 2)
    if deff == 1.0:
        lo, hi = wilson_interval(k, n, confidence)
        return ClusteredInterval(lo, hi, n, c, 1.0)
    lo, hi = _wilson(p, n / deff, z)
    if k == 0:
        lo = 0.0
    if k == n:
        hi = 1.0
    return ClusteredInterval(lo, hi, n, c, deff)


def source_interval(
    outcomes: Sequence[bool], sources: Sequence[tuple[str, str]], confidence: float = 0.95
) -> dict[str, Any]:
    """The interval block a report cell or a compare entry carries for the share of true ``outcomes`` whose items
    come from ``sources`` (``Suite.source_of``): ``ci_low``, ``ci_high`` (``cluster_wilson_interval``), ``ci_unit``
    (what was counted: "item" where every source gives one item, else the sources' unit, ``source_unit``),
    ``n_sources`` and ``design_effect`` (1.0: Wilson's over items)."""
    iv = cluster_wilson_interval(outcomes, sources, confidence)
    return {
        "ci_low": iv.ci_low,
        "ci_high": iv.ci_high,
        "ci_unit": source_unit(sources) if iv.clustered else "item",
        "n_sources": iv.n_clusters,
        "design_effect": iv.design_effect,
    }


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
