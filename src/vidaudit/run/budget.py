"""Spending limits checked BEFORE each call, counting the calls already in flight.

A call may start only if ``spent + reserved + estimate(next) <= limit`` for every limit set. The
estimate is reserved while the call runs and replaced by the actual usage when it ends. Spent starts
from what the run store already holds, so a resumed run does not get a fresh allowance.

Tokens are ``input_tokens + output_tokens`` as adapters report them (reasoning tokens are counted
inside output tokens, as the OpenAI API reports them). When an ok call reports no cost, its estimate
stands as the cost spent: the tracker never assumes a call was free.

What a server reports is untrusted. Adapters clamp its usage (``models.errors_http.UsageReader``) and
flag the response; here, spending never decreases a total: a negative, NaN or missing amount is
spent as 0, and a total that starts negative (an old store) starts at 0. ``charge`` is what a call
should cost the budget: its reported usage, or its estimate when the usage was clamped or reported
as nothing, whichever is larger.
"""

from __future__ import annotations

import math
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


def _tokens(value: object) -> int:
    """A token amount to spend: an int >= 0 (anything else spends nothing; never gives back)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _cost(value: object) -> float:
    """A cost to spend: a finite float >= 0, or +inf (a cost too large to count stops the run)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value) or value <= 0:
        return 0.0
    return float(value)


def response_tokens(response: Response | None) -> int:
    """Input + output tokens of a response, each counted as at least 0."""
    if response is None:
        return 0
    return _tokens(response.usage.input_tokens) + _tokens(response.usage.output_tokens)


def usage_untrusted(response: Response) -> bool:
    """Whether the adapter had to clamp the usage the server reported (see ``errors_http.flag_finish``)."""
    from vidaudit.models.errors_http import usage_was_clamped

    return usage_was_clamped(response.finish_reason)


def charge(response: Response, estimate: Reservation) -> Reservation:
    """What one ok call costs the budget.

    Tokens: the reported usage; when the adapter clamped it, or the server reported none at all, the
    larger of that and the call's estimate (a server that answers "-1000 tokens" or nothing must not
    make calls free). Cost: the reported cost, or the estimate when none is reported; never negative.
    """
    tokens = response_tokens(response)
    untrusted = usage_untrusted(response)
    if untrusted or tokens == 0:
        tokens = max(tokens, _tokens(estimate.tokens))
    cost = _cost(response.cost_usd) if response.cost_usd is not None else _cost(estimate.cost_usd)
    if untrusted:
        cost = max(cost, _cost(estimate.cost_usd))
    return Reservation(tokens, cost)


class BudgetTracker:
    """Spent and reserved totals against a ``Budget`` (single event loop: no locking needed)."""

    def __init__(self, budget: Budget | None, *, spent_tokens: int = 0, spent_cost_usd: float = 0.0) -> None:
        self.budget = budget or Budget()
        self.spent_tokens = _tokens(spent_tokens)
        self.spent_cost_usd = _cost(spent_cost_usd)
        self.reserved_tokens = 0
        self.reserved_cost_usd = 0.0

    def estimate(self, planned: Any) -> Reservation:
        if self.budget.estimate is None:
            return Reservation(0, 0.0)
        tokens, cost = self.budget.estimate(planned)
        if not (tokens >= 0 and cost >= 0):  # also refuses NaN
            raise ConfigError(f"estimate() returned ({tokens}, {cost}); estimates must be numbers >= 0")
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
        """Add what a call spent; a negative, NaN or non-numeric amount adds nothing (never gives back)."""
        self.spent_tokens += _tokens(tokens)
        self.spent_cost_usd += _cost(cost_usd)

    def settle(self, response: Response, estimate: Reservation) -> Reservation:
        """Spend what ``charge`` says one ok call costs, and return it."""
        c = charge(response, estimate)
        self.spend(c.tokens, c.cost_usd)
        return c

    def describe(self) -> str:
        b = self.budget
        parts = []
        if b.max_cost_usd is not None:
            parts.append(f"${self.spent_cost_usd:.4f} of ${b.max_cost_usd:.4f} spent")
        if b.max_tokens is not None:
            parts.append(f"{self.spent_tokens} of {b.max_tokens} tokens spent")
        return "; ".join(parts)
