"""The retry layer: classification, stored statuses, and backoff (with a fake clock, so no real waiting).

What is proved: every ErrorKind gets the documented decision; failed attempts are stored as
api_error / timeout / refused; backoff is full-jitter exponential, reproducible, bounded, and never
shorter than the server's Retry-After (up to its cap); in the executor a RATE_LIMIT with
Retry-After delays the next call to that adapter by at least that long on the injected clock, and
non-retryable kinds are called once.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import Condition, ErrorKind, ModelSpec, Request, Response, Status, TextPart, Trial
from vidaudit.models.base import Capabilities, ModelCallError
from vidaudit.run.executor import CallOptions, run_trials
from vidaudit.run.retry import Decision, RetryPolicy, status_for
from vidaudit.run.store.writer import RunStore

EXPECTED = {
    ErrorKind.RATE_LIMIT: Decision.RETRY,
    ErrorKind.TRANSIENT: Decision.RETRY,
    ErrorKind.TIMEOUT: Decision.RETRY,
    ErrorKind.MALFORMED: Decision.RETRY,
    ErrorKind.BAD_REQUEST: Decision.GIVE_UP,
    ErrorKind.AUTH: Decision.STOP_RUN,
    ErrorKind.REFUSED: Decision.GIVE_UP,
    ErrorKind.UNSUPPORTED: Decision.GIVE_UP,
    ErrorKind.QUOTA: Decision.STOP_RUN,
    ErrorKind.TRUNCATED: Decision.GIVE_UP,
    ErrorKind.TOO_LARGE: Decision.GIVE_UP,
}


def test_every_kind_is_classified() -> None:
    assert set(EXPECTED) == set(ErrorKind)  # a new kind must be classified here on purpose
    policy = RetryPolicy()
    for kind, decision in EXPECTED.items():
        assert policy.decide(kind) is decision, kind
    assert policy.decide(None) is Decision.GIVE_UP


def test_stored_status_of_failures() -> None:
    assert status_for(ErrorKind.TIMEOUT) is Status.TIMEOUT
    assert status_for(ErrorKind.REFUSED) is Status.REFUSED
    assert status_for(ErrorKind.TRUNCATED) is Status.TRUNCATED
    others = set(ErrorKind) - {ErrorKind.TIMEOUT, ErrorKind.REFUSED, ErrorKind.TRUNCATED}
    assert {status_for(k) for k in others} == {Status.API_ERROR}
    assert status_for(None) is Status.API_ERROR


@given(n=st.integers(1, 30), base=st.floats(0.01, 5), cap=st.floats(0.01, 120), key=st.text(max_size=20))
def test_backoff_is_bounded_full_jitter_and_reproducible(n: int, base: float, cap: float, key: str) -> None:
    p = RetryPolicy(base_delay_s=base, max_delay_s=cap)
    d = p.delay(n, key=key)
    assert 0.0 <= d <= min(cap, base * 2 ** (n - 1)) + 1e-12
    assert d == p.delay(n, key=key)


@given(n=st.integers(1, 10), retry_after=st.floats(0, 2000), key=st.text(max_size=10))
def test_backoff_honours_retry_after_up_to_its_cap(n: int, retry_after: float, key: str) -> None:
    p = RetryPolicy(base_delay_s=1.0, max_delay_s=30.0, max_retry_after_s=600.0)
    jitter = p.delay(n, key=key)
    d = p.delay(n, retry_after=retry_after, key=key)
    assert d == max(jitter, min(retry_after, 600.0))
    assert d >= min(retry_after, 600.0)


def test_jitter_spreads_and_grows() -> None:
    p = RetryPolicy(base_delay_s=1.0, max_delay_s=1000.0)
    first = {round(p.delay(1, key=f"t{i}"), 6) for i in range(50)}
    assert len(first) > 40 and max(first) <= 1.0  # spread across trials
    late = [p.delay(8, key=f"t{i}") for i in range(200)]
    assert max(late) > 64 and max(late) <= 128  # the ceiling doubles per attempt
    with pytest.raises(ValueError):
        p.delay(0)
    with pytest.raises(ConfigError):
        RetryPolicy(base_delay_s=-1)


# --------------------------------------------------------------------------- in the executor


class FakeClock:
    """An injectable clock: ``sleep`` advances time at once and is recorded."""

    def __init__(self) -> None:
        self.t = 1_700_000_000.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += max(0.0, seconds)
        await asyncio.sleep(0)


class FailThenAnswerTestAdapter:
    """A test adapter: raises ``errors[k]`` on call k (per trial) while there are any, then answers.

    Records the fake-clock time of every call.
    """

    def __init__(self, clock: FakeClock, errors: list[ModelCallError]) -> None:
        self.spec = ModelSpec.parse("test:retry")
        self.capabilities = Capabilities(concurrency=1)
        self.clock = clock
        self.errors = errors
        self.calls: Counter[str] = Counter()
        self.call_times: list[float] = []

    async def generate(self, request: Request) -> Response:
        self.calls[request.trial_id] += 1
        self.call_times.append(self.clock.now())
        k = self.calls[request.trial_id] - 1
        if k < len(self.errors):
            raise self.errors[k]
        return Response(text="4")

    async def aclose(self) -> None:
        pass


class _P:
    def __init__(self, i: int) -> None:
        self.trial = Trial(
            sample_id=f"s{i}",
            video_sha256=None,
            condition=Condition(prompt="structured_trace"),
            model=ModelSpec.parse("test:retry"),
        )
        self.id = self.trial.id


def _prepare(p: _P) -> Request:
    return Request(trial_id=p.id, parts=(TextPart("how many?"),))


def _run(
    tmp_path: Path,
    errors: list[ModelCallError],
    *,
    n: int = 1,
    max_attempts: int = 5,
    policy: RetryPolicy | None = None,
):  # type: ignore[no-untyped-def]
    clock = FakeClock()
    adapter = FailThenAnswerTestAdapter(clock, errors)
    planned = [_P(i) for i in range(n)]
    with RunStore(tmp_path) as store:
        summary = asyncio.run(
            run_trials(
                planned,
                {"test:retry": adapter},
                store,
                _prepare,
                CallOptions(
                    max_attempts=max_attempts,
                    clock=clock,
                    retry_policy=policy or RetryPolicy(base_delay_s=1.0, max_delay_s=8.0),
                ),
            )
        )
        attempts = store.attempts(planned[0].id)
    return summary, adapter, clock, attempts


def test_rate_limit_waits_for_retry_after(tmp_path: Path) -> None:
    errors = [ModelCallError(ErrorKind.RATE_LIMIT, "429", status_code=429, retry_after=37.0)]
    s, adapter, clock, attempts = _run(tmp_path, errors)
    assert s.ok == 1 and s.failed_attempts == {"api_error": 1}
    assert [a.status for a in attempts] == [Status.API_ERROR, Status.OK]
    assert attempts[0].error_kind is ErrorKind.RATE_LIMIT
    assert adapter.call_times[1] - adapter.call_times[0] >= 37.0  # Retry-After (37) beat the jitter (<= 1)
    assert sum(clock.sleeps) == pytest.approx(37.0)
    assert attempts[1].started_at == adapter.call_times[1]  # stored times come from the injected clock


def test_transient_errors_back_off_exponentially(tmp_path: Path) -> None:
    errors = [ModelCallError(ErrorKind.TRANSIENT, "502")] * 3 + [ModelCallError(ErrorKind.MALFORMED, "bad json")]
    s, _, clock, attempts = _run(tmp_path, errors, max_attempts=5)
    assert s.ok == 1 and len(attempts) == 5
    assert len(clock.sleeps) == 4
    for n, slept in enumerate(clock.sleeps, start=1):
        assert 0.0 <= slept <= min(8.0, 2.0 ** (n - 1))
    assert clock.sleeps == [
        RetryPolicy(base_delay_s=1.0, max_delay_s=8.0).delay(n, key=attempts[0].trial_id) for n in range(1, 5)
    ]


def test_timeout_is_retried_and_stored_as_timeout(tmp_path: Path) -> None:
    s, adapter, _, attempts = _run(tmp_path, [ModelCallError(ErrorKind.TIMEOUT, "read timeout")] * 9, max_attempts=3)
    assert [a.status for a in attempts] == [Status.TIMEOUT] * 3  # max_attempts caps the retries
    assert s.errored == {"timeout": 1} and sum(adapter.calls.values()) == 3


@pytest.mark.parametrize(
    "kind,status",
    [
        (ErrorKind.BAD_REQUEST, Status.API_ERROR),
        (ErrorKind.REFUSED, Status.REFUSED),
        (ErrorKind.UNSUPPORTED, Status.API_ERROR),
    ],
)
def test_never_retried_kinds_are_called_once(tmp_path: Path, kind: ErrorKind, status: Status) -> None:
    s, adapter, clock, attempts = _run(tmp_path, [ModelCallError(kind, "no")], n=3)
    assert sum(adapter.calls.values()) == 3 and set(adapter.calls.values()) == {1}
    assert [a.status for a in attempts] == [status] and attempts[0].error_kind is kind
    assert not clock.sleeps and s.errored == {status.value: 3}
    assert s.stop_reason.value == "completed"  # a give-up does not stop the run


def test_rate_limit_pauses_the_whole_adapter(tmp_path: Path) -> None:
    """Retry-After applies to the provider: the next trial's call also waits it out."""
    clock = FakeClock()
    adapter = FailThenAnswerTestAdapter(clock, [])
    planned = [_P(i) for i in range(3)]
    limited = planned[0].id
    original = adapter.generate

    async def generate(request: Request) -> Response:
        if request.trial_id == limited and adapter.calls[limited] == 0:
            adapter.calls[limited] += 1
            adapter.call_times.append(clock.now())
            await asyncio.sleep(0.05)  # long enough for the next trial to be queued on the semaphore
            raise ModelCallError(ErrorKind.RATE_LIMIT, "429", retry_after=120.0)
        return await original(request)

    adapter.generate = generate  # type: ignore[method-assign]
    with RunStore(tmp_path) as store:
        s = asyncio.run(
            run_trials(
                planned,
                {"test:retry": adapter},
                store,
                _prepare,
                CallOptions(clock=clock, retry_policy=RetryPolicy(base_delay_s=0.5, max_delay_s=0.5)),
            )
        )
    assert s.ok == 3
    assert all(t >= adapter.call_times[0] + 120.0 for t in adapter.call_times[1:])
