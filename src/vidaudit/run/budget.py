"""Spending limits checked BEFORE each call, counting the calls already in flight.

A call may start only if ``spent + reserved + estimate(next) <= limit`` for every limit set. The
estimate is reserved while the call runs and replaced by the actual usage when it ends. Spent starts
from what the run store already holds, so a resumed run does not get a fresh allowance.

The estimate a run reserves (``run.session``) is a call's *worst case*, a ``Reservation`` that names
its bound: at most ``errors_http.input_bound(estimated input)`` input tokens and
``errors_http.output_bound(max_tokens)`` output tokens, priced with the adapter's own price table. A
call is believed to bill no more than that: a response reporting more is clamped to the bound and
flagged like any clamped usage (``bounded``), and ``charge`` never spends more than was reserved. So
the spend can reach the limit but never pass it, however many calls are in flight and whatever in-range
counts a server reports (``tests/run/test_budget_bound.py``). An estimate without a bound (a plain
``(tokens, cost)``) is reserved as it is and its call is charged what it reports.

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
from vidaudit.models.errors_http import flag_finish, split_finish, usage_was_clamped

Estimate = Callable[[Any], tuple[int, float] | tuple[int, float, int, int]]
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
            raise ConfigError(
                "a budget limit needs an estimate(planned) -> (tokens, cost_usd) callable, so "
                "that the run stops before a call that would exceed it"
            )

    @property
    def limited(self) -> bool:
        return self.max_cost_usd is not None or self.max_tokens is not None


@dataclass(frozen=True)
class Reservation:
    """Tokens and cost reserved for a call (or a batch); ``input_tokens`` / ``output_tokens``, when set, are
    the bound the tokens add up to: what the call is believed to bill at most (``bounded``)."""

    tokens: int
    cost_usd: float
    input_tokens: int | None = None
    output_tokens: int | None = None

    @property
    def is_bound(self) -> bool:
        return self.input_tokens is not None and self.output_tokens is not None


#: the estimate of a call when the budget has no estimate function (shared: a ``Reservation`` is immutable)
_NOTHING = Reservation(0, 0.0)


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
    return usage_was_clamped(response.finish_reason)


def bounded(response: Response, bound: Reservation) -> Response:
    """``response`` with its usage believed only up to ``bound`` (a worst-case ``Reservation``): input and output
    tokens above it are clamped to it and flagged in the finish reason (``errors_http.flag_finish``, as the
    adapters flag what they clamp), and the cost is at most the bound's. Unchanged when within it, or when
    ``bound`` states no bound."""
    if not bound.is_bound:
        return response
    assert bound.input_tokens is not None and bound.output_tokens is not None
    u = response.usage
    fields = [
        name
        for name, value, top in (
            ("input_tokens", u.input_tokens, bound.input_tokens),
            ("output_tokens", u.output_tokens, bound.output_tokens),
        )
        if value > top
    ]
    cost = response.cost_usd
    over_cost = cost is not None and math.isfinite(cost) and cost > bound.cost_usd + _EPS
    if not fields and not over_cost and (cost is None or math.isfinite(cost)):
        return response
    inp, out = min(u.input_tokens, bound.input_tokens), min(u.output_tokens, bound.output_tokens)
    usage = u.model_copy(
        update={
            "input_tokens": inp,
            "output_tokens": out,
            "reasoning_tokens": min(u.reasoning_tokens, out),
            "cached_tokens": min(u.cached_tokens, inp),
        }
    )
    finish, already = split_finish(response.finish_reason)
    names = already + [f for f in fields or ["cost_usd"] if f not in already]
    return response.model_copy(
        update={
            "usage": usage,
            "finish_reason": flag_finish(finish, names),
            "cost_usd": None if cost is None else min(cost, bound.cost_usd),
        }
    )


def charge(response: Response, estimate: Reservation) -> Reservation:
    """What one ok call costs the budget.

    Tokens: the reported usage; when the adapter clamped it, or the server reported none at all, the
    larger of that and the call's estimate (a server that answers "-1000 tokens" or nothing must not
    make calls free). Cost: the reported cost, or the estimate when none is reported; never negative.
    When the estimate is a bound (``Reservation.is_bound``), never more than it: a call is believed to
    bill at most its worst case, which is what was reserved for it.
    """
    tokens = response_tokens(response)
    untrusted = usage_untrusted(response)
    if untrusted or tokens == 0:
        tokens = max(tokens, _tokens(estimate.tokens))
    cost = _cost(response.cost_usd) if response.cost_usd is not None else _cost(estimate.cost_usd)
    if untrusted:
        cost = max(cost, _cost(estimate.cost_usd))
    if estimate.is_bound:
        tokens, cost = min(tokens, _tokens(estimate.tokens)), min(cost, _cost(estimate.cost_usd))
    # nothing (a local or synthetic model's call): the shared ``_NOTHING`` rather than one more per call
    return _NOTHING if tokens == 0 and cost == 0.0 else Reservation(tokens, cost)


class BudgetTracker:
    """Spent and reserved totals against a ``Budget`` (single event loop: no locking needed)."""

    def __init__(self, budget: Budget | None, *, spent_tokens: int = 0, spent_cost_usd: float = 0.0) -> None:
        self.budget = budget or Budget()
        self.spent_tokens = _tokens(spent_tokens)
        self.spent_cost_usd = _cost(spent_cost_usd)
        self.reserved_tokens = 0
        self.reserved_cost_usd = 0.0

    def estimate(self, planned: Any) -> Reservation:
        """The budget's estimate of one call: ``(tokens, cost)``, or a bound ``(tokens, cost, input, output)``
        (its worst case: ``input + output == tokens`` and ``cost`` their price)."""
        if self.budget.estimate is None:
            return _NOTHING
        got = tuple(self.budget.estimate(planned))
        tokens, cost = got[0], got[1]
        if not (tokens >= 0 and cost >= 0) or len(got) not in (2, 4) or not all(x >= 0 for x in got[2:]):
            raise ConfigError(
                f"estimate() returned {got}; estimates must be (tokens, cost) or (tokens, cost, "
                "input_tokens, output_tokens), numbers >= 0"
            )
        bound = (int(got[2]), int(got[3])) if len(got) == 4 else (None, None)
        return Reservation(int(tokens), float(cost), *bound)

    def fits(self, tokens: int, cost_usd: float) -> bool:
        b = self.budget
        if b.max_tokens is not None and self.spent_tokens + self.reserved_tokens + tokens > b.max_tokens:
            return False
        over_cost = (
            b.max_cost_usd is not None
            and self.spent_cost_usd + self.reserved_cost_usd + cost_usd > b.max_cost_usd + _EPS
        )
        return not over_cost

    def reserve(self, estimates: list[Reservation]) -> Reservation | None:
        """Reserve the sum of ``estimates`` if it fits under every limit, else None (reserve nothing)."""
        total = (
            estimates[0]
            if len(estimates) == 1
            else Reservation(sum(e.tokens for e in estimates), sum(e.cost_usd for e in estimates))
        )
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
        self.spent_tokens += c.tokens  # what ``spend`` adds: ``charge``'s amounts are counts >= 0 already
        self.spent_cost_usd += c.cost_usd
        return c

    def describe(self) -> str:
        b = self.budget
        parts = []
        if b.max_cost_usd is not None:
            parts.append(f"${self.spent_cost_usd:.4f} of ${b.max_cost_usd:.4f} spent")
        if b.max_tokens is not None:
            parts.append(f"{self.spent_tokens} of {b.max_tokens} tokens spent")
        return "; ".join(parts)

    def why_not(self, next_call: Reservation) -> str:
        """Why ``next_call`` may not start: its worst case against what is spent and reserved, limit by limit."""
        b = self.budget
        parts = []
        if b.max_cost_usd is not None:
            parts.append(
                f"could bill ${next_call.cost_usd:.4f}, and ${self.spent_cost_usd:.4f} spent + "
                f"${self.reserved_cost_usd:.4f} reserved by calls in flight leave "
                f"${max(0.0, b.max_cost_usd - self.spent_cost_usd - self.reserved_cost_usd):.4f} "
                f"of the ${b.max_cost_usd:.4f} cap"
            )
        if b.max_tokens is not None:
            parts.append(
                f"could bill {next_call.tokens:,} tokens, and {self.spent_tokens:,} spent + "
                f"{self.reserved_tokens:,} reserved leave "
                f"{max(0, b.max_tokens - self.spent_tokens - self.reserved_tokens):,} of {b.max_tokens:,}"
            )
        return "; ".join(parts)
