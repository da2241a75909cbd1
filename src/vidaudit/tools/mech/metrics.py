"""The probes' statistics: KL divergence of next-token distributions and linear CKA.

KL is in **nats** (natural log) over the model's full vocabulary: ``KL(P || Q) = sum_i p_i (log p_i - log q_i)``,
from log-probabilities, so a token with ``p_i = 0`` contributes 0. Linear CKA is Kornblith et al. (2019):
``||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F)`` on column-centred ``X`` (n x d1) and ``Y`` (n x d2), the rows
being matched examples; it is invariant to orthogonal transforms and isotropic scaling of either side.
"""

from __future__ import annotations

import numpy as np

from vidaudit.core.errors import DataError

LOG_BASE = "e (nats)"


def kl_divergence(logp: np.ndarray, logq: np.ndarray) -> float:
    """KL(P || Q) in nats from two log-probability vectors over the same vocabulary."""
    logp, logq = np.asarray(logp, np.float64), np.asarray(logq, np.float64)
    if logp.shape != logq.shape:
        raise DataError(f"KL needs distributions over one vocabulary, got shapes {logp.shape} and {logq.shape}")
    p = np.exp(logp)
    with np.errstate(invalid="ignore"):
        terms = np.where(p > 0, p * (logp - logq), 0.0)
    return float(max(terms.sum(), 0.0))


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA between representations ``x`` (n x d1) and ``y`` (n x d2) of the same n examples."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise DataError(f"CKA needs two matrices with the same rows, got {x.shape} and {y.shape}")
    if x.shape[0] < 2:
        raise DataError("CKA needs at least 2 matched rows")
    x = x - x.mean(0)
    y = y - y.mean(0)
    hsic = np.linalg.norm(y.T @ x) ** 2
    den = np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y)
    if den == 0:
        return float("nan")
    return float(hsic / den)
