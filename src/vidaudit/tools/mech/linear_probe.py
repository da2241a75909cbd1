"""Linear probes on frozen features: the paper's recipe, with its open choices fixed.

One linear layer, no hidden layer and no regularisation; Adam, lr 1e-3, 50 epochs, batch 64; features
standardised with the training split's mean and std; a 2-class task is a sigmoid + BCE on one logit,
more classes a softmax + cross-entropy; each seed sets the weights' init and the batch order. The
splits are grouped: every item has a ``group`` (a forward/reverse pair, or a scene) and no group is on
both sides. ``train_eval`` returns test accuracy; ``probe_stage`` the mean and std over seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vidaudit.core.errors import DataError

EPOCHS, LR, BATCH, SEEDS = 50, 1e-3, 64, (0, 1, 2)


@dataclass(frozen=True)
class ProbeResult:
    mean: float
    std: float
    accs: tuple[float, ...]
    n_train: int
    n_test: int


def grouped_split(groups: list[str], test_fraction: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Train/test indices with every group wholly on one side (a seeded shuffle of the distinct groups)."""
    uniq = sorted(set(groups))
    if len(uniq) < 2:
        raise DataError(f"a grouped split needs at least 2 groups (pairs or scenes), got {len(uniq)}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(uniq))
    n_test = min(max(1, round(len(uniq) * test_fraction)), len(uniq) - 1)
    test_groups = {uniq[i] for i in order[:n_test]}
    is_test = np.array([g in test_groups for g in groups])
    return np.flatnonzero(~is_test), np.flatnonzero(is_test)


def train_eval(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    n_classes: int,
    seed: int,
    *,
    epochs: int = EPOCHS,
    lr: float = LR,
    batch: int = BATCH,
) -> float:
    """Test accuracy of one linear layer trained as the module docstring says.

    Written out in numpy (a linear layer's gradient is one matrix product): torch's per-step overhead was
    ~8 ms on a loaded 2-core machine, 100x the arithmetic. Init and Adam are torch's defaults
    (``nn.Linear``'s U(-1/sqrt(d), 1/sqrt(d)); betas 0.9, 0.999, eps 1e-8), the mean loss over each batch."""
    mu, sd = x_train.mean(0), x_train.std(0) + 1e-6
    xt, xe = (x_train - mu) / sd, (x_test - mu) / sd
    rng = np.random.default_rng(seed)
    d, k = xt.shape[1], 1 if n_classes == 2 else n_classes
    bound = 1 / np.sqrt(d)
    params = [rng.uniform(-bound, bound, (d, k)), rng.uniform(-bound, bound, k)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    b1, b2, eps, step = 0.9, 0.999, 1e-8, 0
    onehot = np.eye(n_classes)[y_train] if k > 1 else None
    for _ in range(epochs):
        perm = rng.permutation(len(xt))
        for s in range(0, len(xt), batch):
            idx = perm[s : s + batch]
            z = xt[idx] @ params[0] + params[1]
            if k == 1:
                err = 1 / (1 + np.exp(-z)) - y_train[idx, None]  # d(mean BCE)/dz * B
            else:
                e = np.exp(z - z.max(1, keepdims=True))
                assert onehot is not None  # made above whenever k > 1
                err = e / e.sum(1, keepdims=True) - onehot[idx]  # d(mean CE)/dz * B
            grads = [xt[idx].T @ err / len(idx), err.mean(0)]
            step += 1
            for i, g in enumerate(grads):
                m[i] = b1 * m[i] + (1 - b1) * g
                v[i] = b2 * v[i] + (1 - b2) * g * g
                params[i] -= lr * (m[i] / (1 - b1**step)) / (np.sqrt(v[i] / (1 - b2**step)) + eps)
    z = xe @ params[0] + params[1]
    pred = (z[:, 0] > 0).astype(int) if k == 1 else z.argmax(1)
    return float((pred == y_test).mean())


def probe_stage(
    x: np.ndarray,
    y: np.ndarray,
    groups: list[str],
    n_classes: int,
    *,
    seeds: tuple[int, ...] = SEEDS,
    epochs: int = EPOCHS,
) -> ProbeResult:
    """Mean and std of test accuracy over ``seeds`` on one grouped split."""
    train, test = grouped_split(groups)
    accs = tuple(train_eval(x[train], y[train], x[test], y[test], n_classes, s, epochs=epochs) for s in seeds)
    return ProbeResult(float(np.mean(accs)), float(np.std(accs)), accs, len(train), len(test))
