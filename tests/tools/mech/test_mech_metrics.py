"""The probes' statistics: KL, linear CKA, and the linear probe's training (no model needed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("torch", reason="hf extra (torch) not installed")

from vidaudit.core.errors import DataError  # noqa: E402
from vidaudit.tools.mech.layers import default_layers  # noqa: E402
from vidaudit.tools.mech.linear_probe import grouped_split, probe_stage  # noqa: E402
from vidaudit.tools.mech.metrics import kl_divergence, linear_cka  # noqa: E402


def _logsoftmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 300))
def test_kl_of_a_distribution_with_itself_is_zero_and_kl_is_nonnegative(seed, n):
    rng = np.random.default_rng(seed)
    p, q = _logsoftmax(rng.normal(size=n) * 3), _logsoftmax(rng.normal(size=n) * 3)
    assert kl_divergence(p, p) == pytest.approx(0.0, abs=1e-12)
    assert kl_divergence(p, q) > 0


def test_kl_is_in_nats():
    p, q = np.log([0.5, 0.5]), np.log([0.25, 0.75])
    assert kl_divergence(p, q) == pytest.approx(0.5 * np.log(2) + 0.5 * np.log(0.5 / 0.75))
    with pytest.raises(DataError):
        kl_divergence(p, np.log([1 / 3] * 3))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(4, 30), st.integers(2, 12), st.floats(0.01, 100))
def test_cka_is_one_on_itself_and_invariant_to_rotation_and_scaling(seed, n, d, scale):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, d)), rng.normal(size=(n, d + 1))
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    assert linear_cka(x, x) == pytest.approx(1.0)
    assert linear_cka(x @ q, x) == pytest.approx(1.0)
    base = linear_cka(x, y)
    assert 0 <= base <= 1 + 1e-9
    assert linear_cka(scale * (x @ q), y) == pytest.approx(base, rel=1e-6, abs=1e-9)


def test_grouped_split_never_puts_a_group_on_both_sides():
    groups = [f"g{i // 2}" for i in range(40)]
    train, test = grouped_split(groups)
    assert not {groups[i] for i in train} & {groups[i] for i in test}
    assert len(train) + len(test) == 40
    with pytest.raises(DataError, match="at least 2 groups"):
        grouped_split(["a", "a"])


def test_linear_probe_recovers_a_planted_signal_and_not_shuffled_labels():
    rng = np.random.default_rng(0)
    n, d = 1600, 16  # the paper scale (2,200 train items): enough Adam steps at lr 1e-3
    x = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    y = (x @ w > 0).astype(int)
    groups = [f"g{i}" for i in range(n)]
    planted = probe_stage(x, y, groups, 2)
    assert planted.mean >= 0.95
    shuffled = probe_stage(x, rng.permutation(y), groups, 2)
    assert abs(shuffled.mean - 0.5) < 0.07
    y4 = np.argmax(x[:, :4], axis=1)  # a 4-way planted signal (cross-entropy path)
    assert probe_stage(x, y4, groups, 4).mean >= 0.9


def test_default_layers_are_the_papers_on_28_and_scaled_elsewhere():
    assert default_layers(28) == (3, 9, 18, 26)
    assert default_layers(2) == (0, 1)
    assert all(0 <= layer < 14 for layer in default_layers(14))
