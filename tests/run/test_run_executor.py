"""The executor against real stores and small *test adapters* written here for its logic.

The test adapters are real ``ModelAdapter``s (they await, answer, raise scripted ModelCallErrors and
count their calls); they stand in for no part under test. What is proved: resume never re-calls an
ok trial and retries errored ones up to max_attempts across sessions; QUOTA and AUTH stop the run
with in-flight calls stored; the budget stops before a call that would exceed it, counting calls in
flight and earlier sessions; per-adapter concurrency is respected and reached; batching adapters get
batches; a prepare failure or an unclassified adapter exception stops the run and is raised; any
text a model returns (lone surrogates, NULs) is stored without losing other answers; the progress
bar consumes the events.
"""

from __future__ import annotations

import asyncio
import io
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import (
    Condition,
    ErrorKind,
    ImagePart,
    ModelSpec,
    Request,
    Response,
    Status,
    TextPart,
    Trial,
    Usage,
)
from vidaudit.models.base import Capabilities, ModelCallError
from vidaudit.run.budget import Budget
from vidaudit.run.executor import AdapterError, CallOptions, PrepareError, run_trials
from vidaudit.run.progress import RichProgress
from vidaudit.run.retry import RetryPolicy
from vidaudit.run.store.reader import StoreReader
from vidaudit.run.store.writer import RunStore
from vidaudit.run.summary import ProgressEvent, StopReason

# --------------------------------------------------------------------------- test adapters


class ScriptedTestAdapter:
    """A test adapter: answers after ``delay_s`` with a fixed usage and cost, or raises what ``script`` says.

    ``script(trial_id, call_number_for_that_trial) -> ModelCallError | Exception | None``.
    """

    def __init__(
        self,
        label: str = "test:scripted",
        *,
        concurrency: int = 4,
        delay_s: float = 0.0,
        script: Callable[[str, int], BaseException | None] | None = None,
        cost_usd: float | None = 0.01,
        tokens: tuple[int, int] = (100, 10),
    ) -> None:
        self.spec = ModelSpec.parse(label)
        self.capabilities = Capabilities(concurrency=concurrency)
        self.delay_s = delay_s
        self.script = script or (lambda tid, n: None)
        self.cost_usd = cost_usd
        self.tokens = tokens
        self.calls: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0

    async def generate(self, request: Request) -> Response:
        self.calls[request.trial_id] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
            err = self.script(request.trial_id, self.calls[request.trial_id])
            if err is not None:
                raise err
            return Response(
                text=f"answer to {request.text}",
                usage=Usage(input_tokens=self.tokens[0], output_tokens=self.tokens[1]),
                latency_s=self.delay_s,
                finish_reason="stop",
                cost_usd=self.cost_usd,
            )
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        pass


class BatchingTestAdapter(ScriptedTestAdapter):
    """A test adapter with ``generate_batch``; records every batch size it was given."""

    def __init__(self, label: str = "test:batch", *, batch_size: int = 4, **kw: object) -> None:
        super().__init__(label, **kw)  # type: ignore[arg-type]
        self.capabilities = Capabilities(concurrency=self.capabilities.concurrency, batch_size=batch_size)
        self.batches: list[int] = []

    async def generate_batch(self, requests: list[Request]) -> list[Response]:
        self.batches.append(len(requests))
        return [await self.generate(r) for r in requests]


# --------------------------------------------------------------------------- plan helpers


@dataclass(frozen=True)
class PlannedTrial:
    trial: Trial

    @property
    def id(self) -> str:
        return self.trial.id


def plan(n: int, label: str = "test:scripted") -> list[PlannedTrial]:
    return [
        PlannedTrial(
            Trial(
                sample_id=f"s{i:03d}",
                video_sha256=None,
                condition=Condition(prompt="structured_trace"),
                model=ModelSpec.parse(label),
            )
        )
        for i in range(n)
    ]


@dataclass
class Preparer:
    """Builds a real request with one frame; can be told to fail for one sample."""

    fail_on: str | None = None
    seen: list[str] = field(default_factory=list)

    def __call__(self, p: PlannedTrial) -> Request:
        self.seen.append(p.trial.sample_id)
        if p.trial.sample_id == self.fail_on:
            raise FileNotFoundError(f"video for {p.trial.sample_id} is missing")
        frame = np.zeros((8, 8, 3), np.uint8)
        return Request(
            trial_id=p.id, parts=(ImagePart(frame, frame_index=12, t=0.4), TextPart(f"count in {p.trial.sample_id}"))
        )


def run(
    planned: list[PlannedTrial],
    adapters: dict[str, ScriptedTestAdapter],
    store: RunStore,
    options: CallOptions | None = None,
    prepare: Callable[[PlannedTrial], Request] | None = None,
):  # type: ignore[no-untyped-def]
    return asyncio.run(run_trials(planned, adapters, store, prepare or Preparer(), options))  # type: ignore[arg-type]


def transient(msg: str = "503") -> ModelCallError:
    return ModelCallError(ErrorKind.TRANSIENT, msg, status_code=503)


@pytest.fixture
def fast_retry() -> RetryPolicy:
    return RetryPolicy(base_delay_s=0.0, max_delay_s=0.0)


# --------------------------------------------------------------------------- tests


def test_all_ok_is_stored_with_frames(tmp_path: Path) -> None:
    planned = plan(6)
    adapter = ScriptedTestAdapter()
    with RunStore(tmp_path) as store:
        s = run(planned, {"test:scripted": adapter}, store)
        assert (s.planned, s.called, s.calls, s.ok, s.not_run) == (6, 6, 6, 6, 0)
        assert s.stop_reason is StopReason.COMPLETED and not s.stopped_early
        assert s.cost_usd == pytest.approx(0.06) and s.tokens == 6 * 110
        a = store.latest(planned[0].id)
        assert a is not None and a.status is Status.OK and a.attempt == 1
        assert a.frame_indices == (12,) and a.frame_times == (0.4,)
        assert a.response is not None and a.response.text == "answer to count in s000"
        assert a.ended_at >= a.started_at > 1e9  # wall-clock epoch seconds
    assert set(adapter.calls.values()) == {1}


def test_any_text_a_model_returns_is_stored_and_nothing_else_is_lost(tmp_path: Path) -> None:
    """A lone surrogate or NUL in one answer (a JSON body's "\\ud800") once made every later append fail."""
    planned = plan(12)
    odd = {planned[2].id: "\ud800", planned[5].id: "\\boxed{3}\x00\udcff", planned[7].id: "\ud83d\ude00 7"}
    adapter = ScriptedTestAdapter(concurrency=4, delay_s=0.01)
    plain = adapter.generate

    async def generate(request: Request) -> Response:
        r = await plain(request)
        return r.model_copy(update={"text": odd.get(request.trial_id, r.text)})

    adapter.generate = generate  # type: ignore[method-assign]
    with RunStore(tmp_path) as store:
        s = run(planned, {"test:scripted": adapter}, store)
        assert s.ok == 12 and s.stop_reason is StopReason.COMPLETED
    with StoreReader(tmp_path) as store:
        for tid, text in odd.items():
            a = store.latest(tid)
            assert a is not None and a.response is not None and a.response.text == text


def test_resume_skips_ok_retries_errored_and_honours_max_attempts(tmp_path: Path, fast_retry: RetryPolicy) -> None:
    planned = plan(6)
    bad = {planned[1].id, planned[4].id}
    flaky = ScriptedTestAdapter(script=lambda tid, n: transient() if tid in bad else None)
    with RunStore(tmp_path) as store:
        s1 = run(planned, {"test:scripted": flaky}, store, CallOptions(max_attempts=2, retry_policy=fast_retry))
        assert (s1.ok, s1.errored, s1.failed_attempts) == (4, {"api_error": 2}, {"api_error": 4})
        assert all(flaky.calls[t] == 2 for t in bad)

        # same max_attempts: the errored trials are out of attempts, the ok ones are skipped
        healthy = ScriptedTestAdapter()
        s2 = run(planned, {"test:scripted": healthy}, store, CallOptions(max_attempts=2, retry_policy=fast_retry))
        assert (s2.skipped_already_ok, s2.skipped_exhausted, s2.called) == (4, 2, 0)
        assert not healthy.calls

        # more attempts allowed: only the errored ones are called, and their attempt numbers continue
        s3 = run(planned, {"test:scripted": healthy}, store, CallOptions(max_attempts=3, retry_policy=fast_retry))
        assert (s3.skipped_already_ok, s3.called, s3.ok) == (4, 2, 2)
        assert set(healthy.calls) == bad and set(healthy.calls.values()) == {1}
        for t in bad:
            assert [a.status for a in store.attempts(t)] == [Status.API_ERROR, Status.API_ERROR, Status.OK]

        # everything is ok now: nothing is ever called again
        again = ScriptedTestAdapter()
        s4 = run(planned, {"test:scripted": again}, store, CallOptions(max_attempts=10))
        assert s4.skipped_already_ok == 6 and s4.calls == 0 and not again.calls


def test_errored_trial_from_a_killed_run_is_retried(tmp_path: Path, fast_retry: RetryPolicy) -> None:
    planned = plan(3)
    always_bad = ScriptedTestAdapter(script=lambda tid, n: ModelCallError(ErrorKind.TIMEOUT, "read timeout"))
    with RunStore(tmp_path) as store:
        s1 = run(planned, {"test:scripted": always_bad}, store, CallOptions(max_attempts=1))
        assert s1.errored == {"timeout": 3}
        assert {store.latest(p.id).status for p in planned} == {Status.TIMEOUT}  # type: ignore[union-attr]
    with RunStore(tmp_path) as store:  # a new process opening the same run dir
        good = ScriptedTestAdapter()
        s2 = run(planned, {"test:scripted": good}, store, CallOptions(max_attempts=2))
        assert s2.ok == 3 and sum(good.calls.values()) == 3


@pytest.mark.parametrize("kind,reason", [(ErrorKind.QUOTA, StopReason.QUOTA), (ErrorKind.AUTH, StopReason.AUTH)])
def test_quota_and_auth_stop_the_run(tmp_path: Path, kind: ErrorKind, reason: StopReason) -> None:
    planned = plan(20)
    order: list[str] = []

    def script(tid: str, n: int) -> BaseException | None:
        order.append(tid)
        return (
            ModelCallError(kind, "insufficient_quota" if kind is ErrorKind.QUOTA else "bad key")
            if len(order) == 3
            else None
        )

    adapter = ScriptedTestAdapter(concurrency=1, script=script)
    with RunStore(tmp_path) as store:
        s = run(planned, {"test:scripted": adapter}, store, CallOptions(max_attempts=5))
        assert s.stop_reason is reason and s.stopped_early
        assert kind.value in (s.stop_message or "") and "resume" in (s.stop_message or "")
        assert s.calls == 3 and s.ok == 2 and s.errored == {"api_error": 1} and s.not_run == 17
        assert sum(adapter.calls.values()) == 3  # no call after the stop, no retry of it
        assert sum(store.attempt_counts().values()) == 3
        failed = store.latest(order[2])
        assert failed is not None and failed.error_kind is kind and failed.status is Status.API_ERROR


def test_quota_lets_in_flight_calls_finish_and_be_stored(tmp_path: Path) -> None:
    planned = plan(30)
    first = planned[0].id
    adapter = ScriptedTestAdapter(concurrency=5, delay_s=0.2)
    slow = adapter.generate

    async def generate(request: Request) -> Response:
        """The quota answer lands once all five slots are busy: four siblings are then in flight."""
        if request.trial_id != first:
            return await slow(request)
        adapter.calls[first] += 1
        adapter.in_flight += 1
        try:
            while adapter.in_flight < 5:
                await asyncio.sleep(0.001)
        finally:
            adapter.in_flight -= 1
        raise ModelCallError(ErrorKind.QUOTA, "quota")

    adapter.generate = generate  # type: ignore[method-assign]
    with RunStore(tmp_path) as store:
        s = run(planned, {"test:scripted": adapter}, store)
        made = sum(adapter.calls.values())
        assert s.stop_reason is StopReason.QUOTA
        assert made == 5  # only the first wave was ever started
        assert sum(store.attempt_counts().values()) == made == s.calls
        assert len(store.ok_trial_ids()) == 4 == s.ok


def test_budget_stops_before_exceeding(tmp_path: Path) -> None:
    planned = plan(20)
    adapter = ScriptedTestAdapter(concurrency=1, cost_usd=0.01)
    budget = Budget(max_cost_usd=0.05, estimate=lambda p: (110, 0.01))
    events: list[ProgressEvent] = []
    with RunStore(tmp_path) as store:
        s = run(planned, {"test:scripted": adapter}, store, CallOptions(budget=budget, on_progress=events.append))
        assert s.stop_reason is StopReason.BUDGET and "budget" in (s.stop_message or "")
        assert s.calls == 5 and s.cost_usd == pytest.approx(0.05) and s.not_run == 15
        assert store.summary().cost_usd <= 0.05 + 1e-9
        assert [e.kind for e in events if e.kind == "stop"] == ["stop"]
        # a resumed run counts what the store already spent: the same budget allows nothing more
        s2 = run(planned, {"test:scripted": adapter}, store, CallOptions(budget=budget))
        assert s2.calls == 0 and s2.stop_reason is StopReason.BUDGET
        # a larger budget continues where it stopped
        s3 = run(
            planned,
            {"test:scripted": adapter},
            store,
            CallOptions(budget=Budget(max_cost_usd=0.08, estimate=lambda p: (110, 0.01))),
        )
        assert s3.calls == 3 and s3.skipped_already_ok == 5


def test_budget_counts_calls_in_flight(tmp_path: Path) -> None:
    planned = plan(40)
    adapter = ScriptedTestAdapter(concurrency=8, delay_s=0.02, cost_usd=None, tokens=(900, 100))
    budget = Budget(max_tokens=7_000, estimate=lambda p: (1_000, 0.0))
    with RunStore(tmp_path) as store:
        s = run(planned, {"test:scripted": adapter}, store, CallOptions(budget=budget))
        assert s.stop_reason is StopReason.BUDGET
        assert s.calls == 7 and s.tokens == 7_000 <= budget.max_tokens  # type: ignore[operator]
        assert adapter.max_in_flight <= 7


def test_budget_needs_an_estimate() -> None:
    with pytest.raises(ConfigError, match="estimate"):
        Budget(max_cost_usd=1.0)


def test_concurrency_limit_is_respected_and_reached(tmp_path: Path) -> None:
    a = ScriptedTestAdapter("test:a", concurrency=3, delay_s=0.01)
    b = ScriptedTestAdapter("test:b", concurrency=5, delay_s=0.01)
    planned = plan(24, "test:a") + plan(24, "test:b")
    with RunStore(tmp_path) as store:
        s = run(planned, {"test:a": a, "test:b": b}, store)
    assert s.ok == 48
    assert a.max_in_flight == 3 and b.max_in_flight == 5


def test_batching_adapter_gets_batches(tmp_path: Path, fast_retry: RetryPolicy) -> None:
    planned = plan(10, "test:batch")
    fail_once = {planned[3].id}
    adapter = BatchingTestAdapter(
        batch_size=4, concurrency=1, script=lambda tid, n: transient() if tid in fail_once and n == 1 else None
    )
    with RunStore(tmp_path) as store:
        s = run(planned, {"test:batch": adapter}, store, CallOptions(retry_policy=fast_retry))
        assert s.ok == 10 and s.failed_attempts == {"api_error": 4}  # the whole batch of 4 failed once
        assert max(adapter.batches) == 4 and all(1 <= n <= 4 for n in adapter.batches)
        assert adapter.max_in_flight == 1
        assert [a.attempt for a in store.attempts(planned[3].id)] == [1, 2]


def test_prepare_failure_stops_the_run_and_is_raised(tmp_path: Path) -> None:
    planned = plan(10)
    adapter = ScriptedTestAdapter(concurrency=1)
    prep = Preparer(fail_on="s004")
    with RunStore(tmp_path) as store:
        with pytest.raises(PrepareError, match="s004 is missing") as info:
            run(planned, {"test:scripted": adapter}, store, prepare=prep)
        s = info.value.summary
        assert s is not None and s.stop_reason is StopReason.PREPARE_ERROR
        assert isinstance(info.value.__cause__, FileNotFoundError)
        assert planned[4].id not in adapter.calls
        assert sum(store.attempt_counts().values()) == s.calls == sum(adapter.calls.values()) <= 5
        assert s.not_run == 10 - s.called


def test_unclassified_adapter_exception_is_stored_and_raised(tmp_path: Path) -> None:
    planned = plan(3)
    adapter = ScriptedTestAdapter(concurrency=1, script=lambda tid, n: KeyError("choices"))
    with RunStore(tmp_path) as store:
        with pytest.raises(AdapterError, match="ModelCallError") as info:
            run(planned, {"test:scripted": adapter}, store)
        assert info.value.summary is not None and info.value.summary.calls == 1
        (tid,) = store.attempt_counts()
        a = store.latest(tid)
        assert a is not None and a.status is Status.API_ERROR and a.error_kind is None
        assert "KeyError" in (a.error_message or "")


def test_plan_is_validated_before_any_call(tmp_path: Path) -> None:
    planned = plan(2)
    adapter = ScriptedTestAdapter()
    with RunStore(tmp_path) as store:
        with pytest.raises(ConfigError, match="no adapter for model"):
            run(planned, {"test:other": adapter}, store)
        with pytest.raises(ConfigError, match="planned twice"):
            run(planned + planned[:1], {"test:scripted": adapter}, store)
        with pytest.raises(ConfigError, match="max_attempts"):
            run(planned, {"test:scripted": adapter}, store, CallOptions(max_attempts=0))

        @dataclass(frozen=True)
        class WrongId:
            trial: Trial
            id: str = "row-7"

        with pytest.raises(ConfigError, match="content id"):
            run([WrongId(planned[0].trial)], {"test:scripted": adapter}, store)  # type: ignore[list-item]
    assert not adapter.calls


def test_rich_progress_consumes_events(tmp_path: Path) -> None:
    planned = plan(5)
    adapter = ScriptedTestAdapter(script=lambda tid, n: transient() if tid == planned[0].id else None)
    buf = io.StringIO()
    with RunStore(tmp_path) as store, RichProgress("counting", console=Console(file=buf, width=120)) as bar:
        s = run(planned, {"test:scripted": adapter}, store, CallOptions(max_attempts=1, on_progress=bar))
    assert bar.last is not None and bar.last.kind == "end"
    assert (bar.last.total, bar.last.done, bar.last.ok, bar.last.errors) == (5, 5, 4, 1)
    assert s.describe().startswith("5 planned")
    assert "counting" in buf.getvalue()


# ---------------------------------------------------------------- an ok attempt built without validation


_FLOATS = st.floats(allow_nan=False) | st.integers(-10, 10) | st.just(float("inf"))


@settings(max_examples=200, deadline=None)
@given(
    trial_id=st.text(max_size=8),
    attempt=st.integers(1, 5) | st.booleans(),
    idx=st.lists(st.integers(0, 10**6) | st.booleans(), max_size=4),
    ts=st.lists(_FLOATS, max_size=4),
    started=_FLOATS,
    ended=_FLOATS,
)
def test_an_ok_attempt_built_unvalidated_is_the_validated_one(
    trial_id: str, attempt: int, idx: list, ts: list, started: float, ended: float
) -> None:
    """``lanes.ok_attempt`` skips validation only where it would change nothing: the same fields, values and
    types (ints stay ints, floats floats: what the store's JSON writes), dump and fields set as ``Attempt(...)``."""
    from vidaudit.core.types import Attempt, Response, Status
    from vidaudit.run.lanes import ok_attempt as _ok_attempt

    resp = Response(text="\\boxed{3}", latency_s=0.5, finish_reason="stop", cost_usd=0.0)
    got = _ok_attempt(trial_id, attempt, resp, list(idx), list(ts), started, ended)
    want = Attempt(
        trial_id=trial_id,
        attempt=attempt,
        status=Status.OK,
        response=resp,
        frame_indices=tuple(idx),
        frame_times=tuple(ts),
        started_at=started,
        ended_at=ended,
    )
    assert got == want and got.model_fields_set == want.model_fields_set
    assert got.model_dump_json() == want.model_dump_json()
    assert [type(v) for v in got.__dict__.values()] == [type(v) for v in want.__dict__.values()]
    assert [type(v) for v in got.frame_indices + got.frame_times] == [
        type(v) for v in want.frame_indices + want.frame_times
    ]
