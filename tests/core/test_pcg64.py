"""``core.pcg64.Draws`` draws what ``numpy.random.default_rng(seed)`` draws, and the simulated model answers
what it answered with numpy's generator (its stored answers stay the same)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.hashing import rng_from, seed_from
from vidaudit.core.pcg64 import Draws, _seed_state_loops, seed_state
from vidaudit.suites.counting import simulated
from vidaudit.suites.counting.simulated import simulated_count, wrong_count

seeds = st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 1, 2**32 - 1, 2**32, 2**63, 2**64 - 1]))
#: exclusive upper bounds past low: 1 (nothing drawn), small, and spans where Lemire's rejection is likely
spans = st.one_of(
    st.integers(1, 64),
    st.integers(1, 2**32 - 1),
    st.sampled_from([2, 3, 2**31 + 1, 3_000_000_000, 2**32 - 2, 2**32 - 1]),
)
ops = st.lists(st.one_of(st.just(None), st.tuples(st.integers(-1000, 1000), spans)), min_size=1, max_size=8)


@settings(max_examples=400, deadline=None)
@given(seed=seeds, steps=ops)
def test_every_draw_is_numpys(seed: int, steps: list[tuple[int, int] | None]) -> None:
    ours, theirs = Draws(seed), np.random.default_rng(seed)
    for step in steps:
        if step is None:
            assert ours.random() == float(theirs.random())
        else:
            low, span = step
            assert ours.integers(low, low + span) == int(theirs.integers(low, low + span))


@settings(max_examples=200, deadline=None)
@given(seed=seeds)
def test_the_seeded_state_is_numpys(seed: int) -> None:
    state = np.random.PCG64(seed).state["state"]
    ours = Draws(seed)
    assert (ours._state, ours._inc) == (state["state"], state["inc"])
    u = [int(x) for x in np.random.SeedSequence(seed).generate_state(4, np.uint64)]
    assert seed_state(seed) == ((u[0] << 64) | u[1], (u[2] << 64) | u[3])  # PCG64 takes u[0] as the high half
    assert _seed_state_loops(seed) == seed_state(seed)  # the loops the unrolled code is generated from


def test_out_of_range_is_refused() -> None:
    for bad in (-1, 2**64):
        for f in (seed_state, _seed_state_loops):
            with pytest.raises(ValueError, match="seed must be in"):
                f(bad)
    with pytest.raises(ValueError):
        Draws(2**64)
    with pytest.raises(ValueError):
        Draws(-1)
    with pytest.raises(ValueError):
        Draws(1).integers(0, 2**32)  # past the 32-bit range it draws
    with pytest.raises(ValueError):
        Draws(1).integers(3, 3)


def numpy_count(trial_id: str, truth: int, accuracy: float) -> int:
    """The simulated model's count as it was drawn before ``Draws``: numpy's generator per trial."""
    rng = rng_from("simulated", trial_id)
    if float(rng.random()) < accuracy:
        return truth
    direction = float(rng.random())
    size = int(rng.integers(1, max(1, math.ceil(truth / 2)) + 1))
    return wrong_count(truth, direction, size)


@settings(max_examples=500, deadline=None)
@given(
    trial_id=st.one_of(st.text(max_size=70), st.text("0123456789abcdef", min_size=64, max_size=64)),
    truth=st.one_of(st.integers(0, 20), st.integers(0, 10**6), st.sampled_from([2**33 - 2, 2**33, 2**40])),
    accuracy=st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.15, 1.0])),
)
def test_the_simulated_model_answers_as_before(trial_id: str, truth: int, accuracy: float) -> None:
    assert simulated._seed(trial_id) == seed_from("simulated", trial_id)
    assert simulated_count(trial_id, truth, accuracy) == numpy_count(trial_id, truth, accuracy)
