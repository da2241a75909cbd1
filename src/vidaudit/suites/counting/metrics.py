"""Trace metrics of one trial (Low-Frequency Trap, eq. 3-4 and appendix C.15).

For N true events, M reported events and K matched pairs: P = K/M, R = K/N, F1 their harmonic
mean, VOR = M/N. P = F1 = 0 when M = 0. For N = 0 the ratios are undefined (None): such a trial
is scored by exact match only. ACR marks a correct count whose trace F1 < 0.80 (unsupported),
RFR a wrong count whose trace F1 >= 0.80 (faithful trace, wrong tally); both are defined on
positive-event trials only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from vidaudit.sdk import ConfigError

F1_FAITHFUL = 0.80


@dataclass(frozen=True)
class TraceMetrics:
    """P, R, F1, VOR of one trial (None when N = 0) plus its ACR / RFR flags (None when N = 0)."""

    n_true: int
    n_reported: int
    n_matched: int
    precision: float | None
    recall: float | None
    f1: float | None
    vor: float | None
    acr: bool | None
    rfr: bool | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def trace_metrics(
    n_true: int, n_reported: int, n_matched: int, correct: bool, f1_faithful: float = F1_FAITHFUL
) -> TraceMetrics:
    """Metrics from the three counts and exact-match correctness (see the module docstring)."""
    if min(n_true, n_reported, n_matched) < 0 or n_matched > min(n_true, n_reported):
        raise ConfigError(
            f"impossible trace counts N={n_true}, M={n_reported}, K={n_matched}: K must be between 0 and min(N, M)"
        )
    if n_true == 0:
        return TraceMetrics(0, n_reported, 0, None, None, None, None, None, None)
    recall = n_matched / n_true
    precision = n_matched / n_reported if n_reported else 0.0
    f1 = 2 * n_matched / (n_true + n_reported)  # = 2PR/(P+R), exact, and 0 when M = 0
    faithful = f1 >= f1_faithful - 1e-12  # 2K/(N+M) = 0.8 must count as 0.8
    return TraceMetrics(
        n_true,
        n_reported,
        n_matched,
        precision,
        recall,
        f1,
        n_reported / n_true,
        acr=bool(correct and not faithful),
        rfr=bool((not correct) and faithful),
    )
