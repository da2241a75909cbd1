"""Wilson intervals against scipy, the clustered paired bootstrap, and operating boundaries."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from vidaudit.core.errors import ConfigError
from vidaudit.score.stats import cluster_wilson_interval, paired_bootstrap, wilson_interval, wilson_lower
from vidaudit.suites.counting.boundaries import count_boundary, format_value, frequency_boundary, prefix_boundary


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 500), st.data(), st.sampled_from([0.9, 0.95, 0.99]))
def test_wilson_matches_scipy(n: int, data: st.DataObject, conf: float) -> None:
    k = data.draw(st.integers(0, n))
    ref = binomtest(k, n).proportion_ci(confidence_level=conf, method="wilson")
    lo, hi = wilson_interval(k, n, conf)
    assert lo == pytest.approx(ref.low, abs=1e-9) and hi == pytest.approx(ref.high, abs=1e-9)
    assert lo <= k / n <= hi


@settings(max_examples=300)
@given(st.floats(min_value=1e-9, max_value=1 - 1e-9))
def test_the_quantile_is_scipys_bit_for_bit(conf: float) -> None:
    """The z behind every interval is scipy.stats.norm.ppf's value exactly (stored intervals keep their bytes);
    statistics.NormalDist would differ in the last bit for most confidences, 0.95 among them."""
    from scipy.stats import norm

    from vidaudit.score.stats import _z

    assert _z(conf) == float(norm.ppf(0.5 + conf / 2.0))
    assert _z(0.95) == 1.959963984540054


def test_wilson_paper_table4() -> None:
    # Table 4: 143/730 -> 16.9-22.6 %, 501/730 -> 65.2-71.9 %
    lo, hi = wilson_interval(143, 730)
    assert (round(lo * 100, 1), round(hi * 100, 1)) == (16.9, 22.6)
    lo, hi = wilson_interval(501, 730)
    assert (round(lo * 100, 1), round(hi * 100, 1)) == (65.2, 71.9)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ConfigError):
        wilson_interval(5, 3)


def test_bootstrap_seeded_and_clustered() -> None:
    a = [0, 0, 0, 0, 1, 1, 0, 0] * 5
    b = [1, 1, 1, 1, 1, 1, 0, 1] * 5
    groups = [f"v{i // 4}" for i in range(len(a))]  # 10 videos with 4 samples each
    r1 = paired_bootstrap(a, b, groups, n_boot=2000, seed=7)
    r2 = paired_bootstrap(a, b, groups, n_boot=2000, seed=7)
    assert r1 == r2
    assert r1.estimate == pytest.approx(0.625) and r1.n_groups == 10 and r1.n_pairs == 40
    assert r1.ci_low <= r1.estimate <= r1.ci_high
    # clustering widens the interval compared with treating every sample as its own cluster
    r_iid = paired_bootstrap(a, b, list(range(len(a))), n_boot=2000, seed=7)
    assert (r1.ci_high - r1.ci_low) > (r_iid.ci_high - r_iid.ci_low)
    same = paired_bootstrap(a, a, groups, n_boot=500, seed=1)
    assert same.estimate == same.ci_low == same.ci_high == 0.0


def test_bootstrap_refuses_misaligned_inputs() -> None:
    with pytest.raises(ConfigError, match="equally long"):
        paired_bootstrap([1, 0], [1], ["a", "b"])
    with pytest.raises(ConfigError, match="no paired"):
        paired_bootstrap([], [], [])


def cells(accs: dict[float, int], n: int = 10) -> dict[float, tuple[int, int]]:
    return {x: (k, n) for x, k in accs.items()}


def test_count_boundary_prefix_rule() -> None:
    surface = cells({1: 10, 2: 9, 3: 8, 4: 7, 5: 10, 6: 10})  # isolated later success at 5, 6
    b = count_boundary(surface)
    assert (b.value, b.rule) == (3, "point")
    assert count_boundary(cells({1: 7, 2: 10, 3: 10})).value == "<1"
    assert count_boundary(cells({0: 10, 1: 10, 2: 2})).value == 1  # N = 0 is not part of the prefix
    assert count_boundary(cells({1: 10, 2: 10, 3: 10, 12: 10})).value == 12
    assert count_boundary({}).value is None


def test_frequency_boundary_and_strict_rule() -> None:
    surface = {0.5: (10, 10), 1.0: (8, 10), 1.5: (10, 10), 2.0: (5, 10)}
    assert frequency_boundary(surface).value == 1.5
    assert frequency_boundary({0.5: (7, 10), 1.0: (10, 10)}).value == "<0.5"
    strict = frequency_boundary(surface, rule="wilson_lower")
    assert (strict.value, strict.rule) == ("<0.5", "wilson_lower")  # 10/10 has Wilson lower 0.72 < 0.8
    big = {0.5: (100, 100), 1.0: (95, 100), 1.5: (85, 100)}
    assert frequency_boundary(big, rule="wilson_lower").value == 1.0
    assert wilson_lower(85, 100) < 0.8 <= wilson_lower(95, 100)
    with pytest.raises(ConfigError, match="rule"):
        prefix_boundary(big, rule="median")


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(1, 12), st.integers(0, 10), min_size=1))
def test_boundary_property(accs: dict[int, int]) -> None:
    b = count_boundary(cells(accs)).value
    xs = sorted(accs)
    if isinstance(b, str):
        assert b == f"<{xs[0]}" and accs[xs[0]] < 8
    else:
        assert all(accs[x] >= 8 for x in xs if x <= b)
        nxt = [x for x in xs if x > b]
        assert not nxt or accs[nxt[0]] < 8


def test_format_value() -> None:
    assert [format_value(x) for x in (1, 12, 0.5, 1.0, 2.5, 0.125)] == ["1", "12", "0.5", "1.0", "2.5", "0.125"]


def test_the_clustered_interval_covers_where_wilson_over_items_does_not() -> None:
    """16 sources of 7 items each (expectation's paper anomaly cell), each source's accuracy Beta-drawn around 0.5
    with intra-source correlation 0.3: Wilson over the 112 items holds the true 0.5 in 75% of 400 seeded
    draws, the clustered interval in about 96% (benchmarks/cluster_coverage.py measures every preset's shape)."""
    import numpy as np

    rng = np.random.default_rng(7)
    groups = np.repeat(np.arange(16), 7).tolist()
    a = b = 0.5 * (1 - 0.3) / 0.3
    wilson_hits = clustered_hits = 0
    for _ in range(400):
        p = rng.beta(a, b, size=16)
        y = (rng.random(112) < p[groups]).tolist()
        lo, hi = wilson_interval(sum(y), 112)
        wilson_hits += lo <= 0.5 <= hi
        c = cluster_wilson_interval(y, groups)
        clustered_hits += c.ci_low <= 0.5 <= c.ci_high
    assert wilson_hits / 400 < 0.85
    assert clustered_hits / 400 >= 0.92


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=1, max_size=8), min_size=1, max_size=12))
def test_the_clustered_interval_is_never_narrower_than_wilson(clusters: list[list[bool]]) -> None:
    y = [v for c in clusters for v in c]
    groups = [i for i, c in enumerate(clusters) for _ in c]
    lo, hi = wilson_interval(sum(y), len(y))
    c = cluster_wilson_interval(y, groups)
    assert c.ci_low <= lo + 1e-12 and c.ci_high >= hi - 1e-12
    assert c.ci_low <= sum(y) / len(y) <= c.ci_high
    assert c.n_clusters == len(clusters) and c.design_effect >= 1.0
    if all(len(c) == 1 for c in clusters) or len(clusters) == 1:
        assert (c.ci_low, c.ci_high, c.design_effect) == (lo, hi, 1.0)


def test_the_clustered_interval_refuses_unequal_inputs() -> None:
    with pytest.raises(ConfigError, match="one group key per outcome"):
        cluster_wilson_interval([True, False], ["a"])
