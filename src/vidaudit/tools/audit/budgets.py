"""The audit's budgets and what their trial counts can resolve."""

from __future__ import annotations

import math

from vidaudit.core.errors import ConfigError

BUDGETS = ("smoke", "standard", "paper")
#: two-sided 95% (z = 1.96) and 80% power (z = 0.84)
Z_ALPHA, Z_POWER = 1.959964, 0.841621


def check_budget(budget: str) -> str:
    if budget not in BUDGETS:
        raise ConfigError(f"unknown budget {budget!r}; choose from {', '.join(BUDGETS)}")
    return budget


def half_width(n: int) -> float | None:
    """The widest 95% interval half-width for n trials (at p = 0.5): 1.96 * sqrt(0.25 / n)."""
    return None if n <= 0 else Z_ALPHA * math.sqrt(0.25 / n)


def min_detectable_difference(n: int) -> float | None:
    """The smallest accuracy difference two models with n trials each tell apart (95%, power 80%, p = 0.5):
    (z_alpha/2 + z_power) * sqrt(2 * 0.25 / n). Paired trials on shared samples do at least as well."""
    return None if n <= 0 else (Z_ALPHA + Z_POWER) * math.sqrt(0.5 / n)
