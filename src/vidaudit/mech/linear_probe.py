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


def train_eval(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray, n_classes: int,
               seed: int, *, epochs: int = EPOCHS, lr: float = LR, batch: int = BATCH) -> float:
    """Test accuracy of one linear layer trained as the module docstring says."""
    import torch

    mu, sd = x_train.mean(0), x_train.std(0) + 1e-6
    xt = torch.as_tensor((x_train - mu) / sd, dtype=torch.float32)
    xe = torch.as_tensor((x_test - mu) / sd, dtype=torch.float32)
    yt = torch.as_tensor(y_train)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    binary = n_classes == 2
    layer = torch.nn.Linear(xt.shape[1], 1 if binary else n_classes)
    opt = torch.optim.Adam(layer.parameters(), lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss() if binary else torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        perm = torch.randperm(len(xt), generator=gen)
        for k in range(0, len(xt), batch):
            idx = perm[k:k + batch]
            out = layer(xt[idx])
            loss = loss_fn(out[:, 0], yt[idx].float()) if binary else loss_fn(out, yt[idx].long())
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        out = layer(xe)
        pred = (out[:, 0] > 0).long() if binary else out.argmax(1)
    return float((pred.numpy() == y_test).mean())


def probe_stage(x: np.ndarray, y: np.ndarray, groups: list[str], n_classes: int, *,
                seeds: tuple[int, ...] = SEEDS, epochs: int = EPOCHS) -> ProbeResult:
    """Mean and std of test accuracy over ``seeds`` on one grouped split."""
    train, test = grouped_split(groups)
    accs = tuple(train_eval(x[train], y[train], x[test], y[test], n_classes, s, epochs=epochs) for s in seeds)
    return ProbeResult(float(np.mean(accs)), float(np.std(accs)), accs, len(train), len(test))
