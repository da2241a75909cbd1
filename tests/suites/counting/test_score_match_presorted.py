"""The scorer's matching with the trace's side sorted once (``match_presorted``) and the one-report-per-time
shortcut (``_singles``) give exactly the pairs, deviation and counts of the block-by-block solution (issue 24)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.suites.counting.matching import (
    WINDOW_EPS,
    _block_runs,
    _bounds,
    _solve_block_dp,
    match_presorted,
    match_times,
    max_match_count,
    window_edges,
)

TIMES = st.lists(st.integers(0, 60).map(lambda k: k * 0.1), max_size=8)
JITTER = st.sampled_from([0.0, 0.0, 0.01, -0.02, 0.3])


def _by_blocks(t: list[float], r: list[float], delta: float) -> tuple[list[tuple[int, int]], float]:
    """Every block solved (1 x 1 ones included) as the previous implementation did."""
    t_order = sorted(range(len(t)), key=t.__getitem__)
    r_order = sorted(range(len(r)), key=r.__getitem__)
    ts, rs = [t[i] for i in t_order], [r[j] for j in r_order]
    lo, hi = _bounds(ts, rs, delta + WINDOW_EPS)
    pairs, total = [], 0.0
    for a, b in _block_runs(lo, hi):
        r0, r1 = lo[a], hi[b]
        local = [(0, 0)] if b == a and r1 - r0 == 1 else _solve_block_dp(ts[a : b + 1], rs[r0:r1], delta)
        for i, j in local:
            pairs.append((t_order[a + i], r_order[r0 + j]))
            total += abs(ts[a + i] - rs[r0 + j])
    return sorted(pairs), total


@settings(max_examples=300, deadline=None)
@given(
    TIMES,
    st.lists(st.tuples(st.integers(0, 60), JITTER).map(lambda p: p[0] * 0.1 + p[1]), max_size=8),
    st.booleans(),
    st.sampled_from([0.125, 0.2, 0.25, 0.5, 1.0]),
)
def test_presorted_matching_is_the_block_solution(t: list[float], r: list[float], in_order: bool, delta: float) -> None:
    if in_order:
        r = sorted(r)
    got = match_times(t, r, delta)
    if len(t) * len(r) <= 64:  # small enough for the DP everywhere
        pairs, total = _by_blocks(t, r, delta)
        assert list(got.pairs) == pairs and got.total_deviation == total
    assert max_match_count(t, r, delta) == got.k
    if t and r:
        order = sorted(range(len(t)), key=t.__getitem__)
        mp, rs = match_presorted(order, [float(t[i]) for i in order], r, delta)
        assert mp == got and mp.total_deviation == got.total_deviation and rs == sorted(map(float, r))
        if order == list(range(len(t))):  # as the scorer calls it for a trace in time order, with kept edges
            ts = tuple(map(float, t))
            kept, _ = match_presorted(range(len(t)), ts, r, delta, window_edges(ts, delta + WINDOW_EPS))
            assert kept == got and kept.total_deviation == got.total_deviation


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 60), unique=True, max_size=8).map(sorted),
    st.lists(JITTER, min_size=8, max_size=8),
    st.lists(st.integers(0, 60).map(lambda k: k * 0.1), max_size=2),
    st.sampled_from([0.05, 0.125, 0.25, 0.5]),
)
def test_faithful_ledgers_match_as_the_block_solution(
    ks: list[int], jitter: list[float], extra: list[float], delta: float
) -> None:
    """A ledger with one report near each true time (the i-th report on the i-th time: the diagonal shortcut), some
    with extra reports after them, matched with the trace in order and kept edges, as the scorer calls it."""
    t = [k * 0.1 for k in ks]
    r = [x + j for x, j in zip(t, jitter, strict=False)] + sorted(extra)
    got = match_times(t, r, delta)
    if len(t) * len(r) <= 64:
        pairs, total = _by_blocks(t, r, delta)
        assert list(got.pairs) == pairs and got.total_deviation == total
    if t and r:
        ts = tuple(map(float, t))
        kept, rs = match_presorted(range(len(t)), ts, r, delta, window_edges(ts, delta + WINDOW_EPS))
        assert kept == got and kept.total_deviation == got.total_deviation and rs == sorted(map(float, r))
        assert max_match_count(t, r, delta) == got.k
