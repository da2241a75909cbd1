"""Spending limits checked BEFORE each call, counting the calls already in flight.

A call may start only if ``spent + reserved + estimate(next) <= limit`` for every limit set. The
estimate is reserved while the call runs and replaced by the actual usage when it ends. Spent starts
from what the run store already holds, so a resumed run does not get a fresh allowance.

Tokens are ``input_tokens + output_tokens`` as adapters report them (reasoning tokens are counted
inside output tokens, as the OpenAI API reports them). When an ok call reports no cost, its estimate
stands as the cost spent: the tracker never assumes a call was free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import Response

Estimate = Callable[[Any], tuple[int, float]]
_EPS = 1e-9


@dataclass(frozen=True)
class Budget:
    """Limits for a run and the caller's estimate of one call: ``estimate(planned) -> (tokens, cost_usd)``."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    estimate: Estimate | None = None

    def __post_init__(self) -> None:
        if self.max_cost_usd is not None and self.max_cost_usd < 0:
            raise ConfigError(f"max_cost_usd must be >= 0, got {self.max_cost_usd}")
        if self.max_tokens is not None and self.max_tokens < 0:
            raise ConfigError(f"max_tokens must be >= 0, got {self.max_tokens}")
        if (self.max_cost_usd is not None or self.max_tokens is not None) and self.estimate is None:
            raise ConfigError("a budget limit needs an estimate(planned) -> (tokens, cost_usd) callable, so "
                              "that the run stops before a call that would exceed it")

    @property
    def limited(self) -> bool:
        return self.max_cost_usd is not None or self.max_tokens is not None


@dataclass(frozen=True)
class Reservation:
    tokens: int
    cost_usd: float


def response_tokens(response: Response | None) -> int:
    return 0 if response is None else response.usage.input_tokens + response.usage.output_tokens


class BudgetTracker:
    """Spent and reserved totals against a ``Budget`` (single event loop: no locking needed)."""

    def __init__(self, budget: Budget | None, *, spent_tokens: int = 0, spent_cost_usd: float = 0.0) -> None:
        self.budget = budget or Budget()
        self.spent_tokens = spent_tokens
        self.spent_cost_usd = spent_cost_usd
        self.reserved_tokens = 0
        self.reserved_cost_usd = 0.0

    def estimate(self, planned: Any) -> Reservation:
        if self.budget.estimate is None:
            return Reservation(0, 0.0)
        tokens, cost = self.budget.estimate(planned)
        if tokens < 0 or cost < 0:
            raise ConfigError(f"estimate() returned negative ({tokens}, {cost}); estimates must be >= 0")
        return Reservation(int(tokens), float(cost))

    def fits(self, tokens: int, cost_usd: float) -> bool:
        b = self.budget
        if b.max_tokens is not None and self.spent_tokens + self.reserved_tokens + tokens > b.max_tokens:
            return False
        if b.max_cost_usd is not None and \
                self.spent_cost_usd + self.reserved_cost_usd + cost_usd > b.max_cost_usd + _EPS:
            return False
        return True

    def reserve(self, estimates: list[Reservation]) -> Reservation | None:
        """Reserve the sum of ``estimates`` if it fits under every limit, else None (reserve nothing)."""
        total = Reservation(sum(e.tokens for e in estimates), sum(e.cost_usd for e in estimates))
        if not self.fits(total.tokens, total.cost_usd):
            return None
        self.reserved_tokens += total.tokens
        self.reserved_cost_usd += total.cost_usd
        return total

    def release(self, reservation: Reservation) -> None:
        self.reserved_tokens -= reservation.tokens
        self.reserved_cost_usd -= reservation.cost_usd

    def spend(self, tokens: int, cost_usd: float) -> None:
        self.spent_tokens += tokens
        self.spent_cost_usd += cost_usd

    def describe(self) -> str:
        b = self.budget
        parts = []
        if b.max_cost_usd is not None:
            parts.append(f"${self.spent_cost_usd:.4f} of ${b.max_cost_usd:.4f} spent")
        if b.max_tokens is not None:
            parts.append(f"{self.spent_tokens} of {b.max_tokens} tokens spent")
        return "; ".join(parts)
