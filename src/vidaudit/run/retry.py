"""The one retry layer: what to do after a failed call, and how long to wait first.

Adapters never retry (SDK retries are set to 0); the executor asks this policy. Classification:

- retried: RATE_LIMIT, TRANSIENT, TIMEOUT, MALFORMED
- never retried: BAD_REQUEST, REFUSED, UNSUPPORTED, TRUNCATED, TOO_LARGE (the same request would fail the
  same way)
- stop the whole run: QUOTA and AUTH (every further call would fail too, and may cost money)

Backoff is exponential with full jitter (a uniform draw in ``[0, min(cap, base * 2**(n-1))]``), raised
to the server's Retry-After when that is larger. The jitter is drawn from a generator seeded by the
trial id and attempt number, so it is reproducible yet spreads trials apart. Time comes from an
injectable ``Clock`` so tests can check backoff without waiting.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import rng_from
from vidaudit.core.types import ErrorKind, Status


class Decision(StrEnum):
    RETRY = "retry"
    GIVE_UP = "give_up"  # this trial ends errored; the run goes on
    STOP_RUN = "stop_run"  # no new calls for the whole run


RETRYABLE = frozenset({ErrorKind.RATE_LIMIT, ErrorKind.TRANSIENT, ErrorKind.TIMEOUT, ErrorKind.MALFORMED})
STOPS_RUN = frozenset({ErrorKind.QUOTA, ErrorKind.AUTH})


def status_for(kind: ErrorKind | None) -> Status:
    """The stored status of a failed attempt: ``timeout``, ``refused``, ``truncated``, or ``api_error``."""
    if kind is ErrorKind.TRUNCATED:
        return Status.TRUNCATED
    if kind is ErrorKind.TIMEOUT:
        return Status.TIMEOUT
    if kind is ErrorKind.REFUSED:
        return Status.REFUSED
    return Status.API_ERROR


class Clock(Protocol):
    """Wall time (epoch seconds, stored in attempts) and a sleep; swap in a fake one in tests."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff parameters; ``max_retry_after_s`` caps an unreasonable server Retry-After."""

    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    max_retry_after_s: float = 600.0

    def __post_init__(self) -> None:
        if self.base_delay_s < 0 or self.max_delay_s < 0 or self.max_retry_after_s < 0:
            raise ConfigError("retry delays must be >= 0 seconds")

    def decide(self, kind: ErrorKind | None) -> Decision:
        """Retry, give up on this trial, or stop the run. An unclassified error (None) is not retried."""
        if kind in STOPS_RUN:
            return Decision.STOP_RUN
        if kind in RETRYABLE:
            return Decision.RETRY
        return Decision.GIVE_UP

    def delay(self, failed_attempt: int, *, retry_after: float | None = None, key: str = "") -> float:
        """Seconds to wait after attempt number ``failed_attempt`` (1-based) failed."""
        if failed_attempt < 1:
            raise ValueError(f"attempt numbers start at 1, got {failed_attempt}")
        ceiling = min(self.max_delay_s, self.base_delay_s * 2.0 ** (failed_attempt - 1))
        jitter = float(rng_from("retry-jitter", key, failed_attempt).uniform(0.0, ceiling)) if ceiling > 0 else 0.0
        if retry_after is not None:
            return max(jitter, min(float(retry_after), self.max_retry_after_s))
        return jitter
