"""Optimal matching against brute force, and the cases greedy first-fit gets wrong."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.errors import ConfigError
from vidaudit.suites.counting.matching import _solve_block_dp, _solve_block_lsa, match_times


def brute_force(true: list[float], rep: list[float], delta: float) -> tuple[int, float]:
    """Best (K, -deviation) over every one-to-one matching of allowed pairs."""
    best = (0, 0.0)
    n, m = len(true), len(rep)
    for k in range(min(n, m), 0, -1):
        found = None
        for ti in itertools.combinations(range(n), k):
            for rj in itertools.permutations(range(m), k):
                devs = [abs(true[i] - rep[j]) for i, j in zip(ti, rj, strict=True)]
                if all(d <= delta + 1e-9 for d in devs):
                    s = sum(devs)
                    if found is None or s < found:
                        found = s
        if found is not None:
            return k, found
    return best


times = st.lists(st.floats(0.0, 6.0, allow_nan=False).map(lambda x: round(x, 2)), max_size=5)


@settings(max_examples=200, deadline=None)
@given(times, times, st.sampled_from([0.1, 0.125, 0.25, 0.5, 1.0]))
def test_matches_brute_force(true: list[float], rep: list[float], delta: float) -> None:
    got = match_times(true, rep, delta)
    k, dev = brute_force(true, rep, delta)
    assert got.k == k
    assert got.total_deviation == pytest.approx(dev, abs=1e-9)
    # a valid one-to-one matching within the window
    assert len({i for i, _ in got.pairs}) == len({j for _, j in got.pairs}) == got.k
    assert all(abs(true[i] - rep[j]) <= delta + 1e-9 for i, j in got.pairs)
    assert sorted(got.unmatched_true + [i for i, _ in got.pairs]) == list(range(len(true)))


def test_greedy_first_fit_is_beaten() -> None:
    # greedy pairs report 0 (t=1.0) with true 0 (t=0.6) and loses true 1 (t=1.4): K=1; optimal K=2
    got = match_times([0.6, 1.4], [1.0, 0.2], 0.5)
    assert got.k == 2 and set(got.pairs) == {(0, 1), (1, 0)}


def test_ties_broken_by_deviation() -> None:
    got = match_times([1.0, 2.0], [1.1, 1.9, 2.05], 0.5)
    assert got.k == 2 and set(got.pairs) == {(0, 0), (1, 2)}
    assert got.total_deviation == pytest.approx(0.15)


def test_unsorted_inputs_and_window_edge() -> None:
    got = match_times([3.0, 1.0], [1.25, 2.75], 0.25)  # both exactly on the window edge
    assert set(got.pairs) == {(0, 1), (1, 0)}
    assert match_times([1.0], [1.2501], 0.25).k == 0


def test_empty_and_bad_delta() -> None:
    assert match_times([], [1.0], 0.5).k == 0
    assert match_times([1.0], [], 0.5).unmatched_true == [0]
    with pytest.raises(ConfigError, match="delta"):
        match_times([1.0], [1.0], -0.1)


def _score(pairs: list[tuple[int, int]], t: list[float], r: list[float]) -> tuple[int, float]:
    return len(pairs), sum(abs(t[i] - r[j]) for i, j in pairs)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(0.0, 4.0, allow_nan=False), min_size=1, max_size=14),
    st.lists(st.floats(0.0, 4.0, allow_nan=False), min_size=1, max_size=14),
    st.sampled_from([0.125, 0.5, 2.0]),
)
def test_dp_and_assignment_agree_on_large_blocks(t: list[float], r: list[float], delta: float) -> None:
    t, r = sorted(t), sorted(r)
    k_dp, dev_dp = _score(_solve_block_dp(t, r, delta), t, r)
    k_lsa, dev_lsa = _score(_solve_block_lsa(t, r, delta), t, r)
    assert k_dp == k_lsa and dev_dp == pytest.approx(dev_lsa, abs=1e-9)
    # and the public entry point (which picks either per block) agrees too
    got = match_times(t, r, delta)
    assert got.k == k_dp and got.total_deviation == pytest.approx(dev_dp, abs=1e-9)
