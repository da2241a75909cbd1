"""What a run session did, and the progress events the executor emits while it runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from vidaudit.core.types import Attempt, Status


class StopReason(StrEnum):
    COMPLETED = "completed"  # every planned trial is ok or has used its attempts
    QUOTA = "quota"  # the provider says the quota is exhausted
    AUTH = "auth"  # the provider rejected the credentials
    BUDGET = "budget"  # the next call would have exceeded max_cost_usd / max_tokens
    PREPARE_ERROR = "prepare_error"  # building a request failed: a harness bug or bad input
    ADAPTER_ERROR = "adapter_error"  # an adapter raised something other than ModelCallError
    STORE_ERROR = "store_error"  # an attempt could not be stored (e.g. it carried a secret)


@dataclass(frozen=True)
class ProgressEvent:
    """Sent to ``on_progress`` at start, after every stored attempt, on a stop, and at the end.

    ``total`` is the number of trials this session will call; ``done`` those finished (ok or out of
    attempts); ``errors`` failed attempts; cost and tokens are this session's.
    """

    kind: str  # "start" | "attempt" | "stage" (a composite's stage call) | "stop" | "end"
    total: int
    done: int
    ok: int
    errors: int
    cost_usd: float
    tokens: int
    skipped: int
    message: str | None = None


@dataclass(frozen=True)
class RunSummary:
    """Counts for one ``run_trials`` session (the store holds the run's whole history)."""

    planned: int
    skipped_already_ok: int
    skipped_exhausted: int  # errored on every allowed attempt in earlier sessions
    called: int  # trials called at least once in this session
    calls: int  # attempts made in this session (a batch counts one per trial)
    ok: int  # trials that ended ok in this session
    errored: dict[str, int] = field(default_factory=dict)  # called trials not ok, by last status
    failed_attempts: dict[str, int] = field(default_factory=dict)  # failed attempts, by status
    not_run: int = 0  # trials left uncalled because the run stopped
    cost_usd: float = 0.0
    tokens: int = 0
    stop_reason: StopReason = StopReason.COMPLETED
    stop_message: str | None = None

    @property
    def stopped_early(self) -> bool:
        return self.stop_reason is not StopReason.COMPLETED

    def describe(self) -> str:
        err = sum(self.errored.values())
        failed_attempts = sum(self.failed_attempts.values())
        # the progress line's "failed attempts" count, said the same way: attempts that failed (each retried while
        # the trial had attempts left), beside the trials that ended errored
        failed = (
            f" after {failed_attempts} failed attempt{'s' if failed_attempts != 1 else ''}" if failed_attempts else ""
        )
        line = (
            f"{self.planned} planned: {self.skipped_already_ok} already ok, {self.skipped_exhausted} out of "
            f"attempts, {self.called} called ({self.ok} ok, {err} errored{failed}), {self.not_run} not run; "
            f"{self.calls} calls, ${self.cost_usd:.4f}, {self.tokens} tokens"
        )
        if self.stopped_early:
            line += f". Stopped ({self.stop_reason.value}): {self.stop_message}"
        return line


@dataclass(frozen=True)
class FailureCause:
    """Trials whose latest attempt failed the same way: one line of a run's closing summary."""

    count: int
    status: str
    kind: str | None
    message: str

    def line(self) -> str:
        kind = f" ({self.kind})" if self.kind and self.kind != self.status else ""
        return f"{self.count} {self.status}{kind}: {self.message}"


def failure_causes(attempts: Iterable[Attempt]) -> list[FailureCause]:
    """Group failed latest attempts by (status, error kind, message); the most frequent cause first."""
    counts: Counter[tuple[str, str | None, str]] = Counter()
    for a in attempts:
        if a.status is Status.OK:
            continue
        kind = a.error_kind.value if a.error_kind is not None else None
        counts[(a.status.value, kind, " ".join((a.error_message or "no message stored").split()))] += 1
    return [
        FailureCause(n, status, kind, message)
        for (status, kind, message), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][2]))
    ]
