"""max_match_count is the K of match_times, on any times, including reports exactly on a window edge."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.errors import ConfigError
from vidaudit.suites.counting.matching import match_times, max_match_count

times = st.lists(st.floats(0, 30, allow_nan=False), max_size=14)
grid_times = st.lists(st.integers(0, 60).map(lambda i: i * 0.25), max_size=14)  # many exact window edges
deltas = st.sampled_from([0.0, 0.125, 0.25, 0.5, 1.0, 1 / 3, 2.0]) | st.floats(0, 3, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(st.one_of(times, grid_times), st.one_of(times, grid_times), deltas)
def test_count_equals_optimal_matching(true_t, rep_t, delta):
    assert max_match_count(true_t, rep_t, delta) == match_times(true_t, rep_t, delta).k


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 30, allow_nan=False), min_size=1, max_size=12), st.data(), deltas)
def test_count_on_edges_and_jitter(true_t, data, delta):
    """Reports placed at t +- delta (the window's edge) and a tiny float step either side of it."""
    offsets = data.draw(
        st.lists(
            st.sampled_from([-delta, delta, 0.0, delta * (1 - 1e-15), -delta * (1 + 1e-15)]),
            min_size=len(true_t),
            max_size=len(true_t),
        )
    )
    rep_t = [t + o for t, o in zip(true_t, offsets, strict=True)] + data.draw(times)
    assert max_match_count(true_t, rep_t, delta) == match_times(true_t, rep_t, delta).k


def test_count_examples_and_bad_window():
    assert max_match_count([1.0, 2.0, 3.0], [1.1, 1.2, 2.9], 0.25) == 2
    assert max_match_count([1.0, 1.3], [1.2], 0.25) == 1 and max_match_count([], [1.0], 1.0) == 0
    assert max_match_count([1.0, 2.0], [1.6, 1.4], 0.5) == 2  # greedy first-fit by report would lose one
    with pytest.raises(ConfigError, match="delta"):
        max_match_count([1.0], [1.0], float("nan"))
