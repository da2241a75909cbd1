"""What the attempt loop works with: a lane (one model's queue, gate and pause), the items it takes, the session's
counters, an ok attempt built without validation where that changes nothing, the commit-group sizes, and how a
composite's grouped stage failures and the calls in flight at a stop are reported."""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from vidaudit.core.types import Attempt, Request, Response, Status, unvalidated
from vidaudit.models.base import AnyAdapter, ModelCallError
from vidaudit.run.budget import Reservation
from vidaudit.run.retry import STOPS_RUN
from vidaudit.run.stage_calls import StageInterrupted
from vidaudit.run.summary import StopReason


@dataclass
class Item:
    planned: Any
    trial_id: str
    attempts: int  # stored attempts so far, all sessions
    limit: int  # the attempt number after which it is out of attempts
    request: Request | None = None
    called: bool = False
    finished: bool = False
    last_status: str | None = None
    #: the budget's estimate of its call, made when the call was reserved (``_reserve``) and settled with it
    estimate: Reservation | None = None


#: the fields an ok attempt sets (``ok_attempt``); None when ``Attempt``'s fields are not the ones it knows
_OK_GIVEN: frozenset[str] | None = (
    frozenset({"trial_id", "attempt", "status", "response", "frame_indices", "frame_times", "started_at", "ended_at"})
    if tuple(Attempt.model_fields)
    == (
        "trial_id",
        "attempt",
        "status",
        "error_kind",
        "error_message",
        "response",
        "frame_indices",
        "frame_times",
        "started_at",
        "ended_at",
    )
    else None
)


def ok_attempt(
    trial_id: str, attempt: int, response: Response, idx: list[int], ts: list[float], started: float, ended: float
) -> Attempt:
    """``Attempt(status=OK, ...)``, built without validating when every value is already its field's exact type (what
    validation returns unchanged: ``tests/run/test_run_executor.py`` compares the two); otherwise validated."""
    if (
        _OK_GIVEN is not None
        and type(trial_id) is str
        and type(attempt) is int
        and type(response) is Response
        and type(started) is float
        and type(ended) is float
        and (not idx or all(type(i) is int for i in idx))
        and (not ts or all(type(t) is float for t in ts))
    ):
        return unvalidated(
            Attempt,
            {
                "trial_id": trial_id,
                "attempt": attempt,
                "status": Status.OK,
                "error_kind": None,
                "error_message": None,
                "response": response,
                "frame_indices": tuple(idx),
                "frame_times": tuple(ts),
                "started_at": started,
                "ended_at": ended,
            },
            _OK_GIVEN,
        )
    return Attempt(
        trial_id=trial_id,
        attempt=attempt,
        status=Status.OK,
        response=response,
        frame_indices=tuple(idx),
        frame_times=tuple(ts),
        started_at=started,
        ended_at=ended,
    )


class Batched(Protocol):
    """An adapter that also takes several requests in one call (``hf``, ``vllm``; a lane with ``batch_size > 1``)."""

    async def generate_batch(self, requests: list[Request]) -> Sequence[Response]: ...


#: attempts per commit group, and the longest an ended attempt waits for its group's commit (seconds)
GROUP_ROWS = 256
GROUP_DELAY_S = 0.05
#: attempts a synthetic model's lane stores between two yields to the event loop (its calls answer without
#: awaiting; a model's lane yields after every attempt, which lets a worker waiting for the lane's semaphore
#: start its call before this one's bookkeeping, at the cost of a loop cycle a slow call does not notice)
YIELD_EVERY = 16


@dataclass
class Lane:
    """One adapter's queue, concurrency gate and Retry-After pause.

    ``source`` is the rest of this model's plan, read ``window`` trials ahead of the workers: trials
    done in the store are skipped as they are read, so the lane holds at most its window."""

    label: str
    adapter: AnyAdapter
    queue: deque[Item]
    semaphore: asyncio.Semaphore
    batch_size: int
    not_before: float = 0.0
    composite: bool = False
    source: Iterator[Any] | None = None
    window: int = 0
    #: look the trials read from ``source`` up in the store (False: none had attempts when registered)
    lookup: bool = True
    #: attempts stored between two yields to the loop (``YIELD_EVERY`` for a synthetic model, else 1)
    yield_every: int = 1
    #: every request of this lane is built on the loop (``prepare.inline_model(label)``), none asked one by one
    inline: bool = False


@dataclass
class LoopState:
    total: int
    skipped: int
    done: int = 0
    ok: int = 0
    calls: int = 0
    called: int = 0
    cost_usd: float = 0.0
    tokens: int = 0
    failed_attempts: Counter[str] = field(default_factory=Counter)
    errored: Counter[str] = field(default_factory=Counter)
    stop_reason: StopReason = StopReason.COMPLETED
    stop_message: str | None = None
    fatal: BaseException | None = None
    stage_calls: int = 0
    stage_hits: int = 0
    unstored: int = 0  # ended attempts the store could not take (a full disk): their calls are made again
    failed_ids: set[str] = field(default_factory=set)  # trials with a failed attempt this session

    @property
    def stopped(self) -> bool:
        return self.stop_reason is not StopReason.COMPLETED


def in_flight(unstored: int) -> str:
    """What became of the calls in flight when the run stopped (never "stored" when some were not)."""
    if not unstored:
        return "calls in flight were stored"
    return (
        f"{unstored} answered call(s) could not be stored: their answers are lost (and paid for, if the "
        "provider charges) and the calls are made again on resume"
    )


def leaves(group: BaseExceptionGroup) -> list[BaseException]:
    out: list[BaseException] = []
    for e in group.exceptions:
        out.extend(leaves(e) if isinstance(e, BaseExceptionGroup) else [e])
    return out


def composite_error(error: BaseException | None) -> BaseException | None:
    """A composite's stages run concurrently (a TaskGroup) fail as a group: take the stage failure inside.

    A group of ``ModelCallError``s (and interruptions) is the first that stops the run, else the first;
    a group of interruptions only is an interruption; anything else stays what it is (unclassified).
    """
    if not isinstance(error, BaseExceptionGroup):
        return error
    found = leaves(error)
    if not all(isinstance(e, ModelCallError | StageInterrupted) for e in found):
        return error
    calls = [e for e in found if isinstance(e, ModelCallError)]
    if calls:
        return next((e for e in calls if e.kind in STOPS_RUN), calls[0])
    return found[0] if found else error
