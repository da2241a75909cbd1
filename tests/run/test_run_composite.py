"""Composite models (several calls per sample) through ``run_trials`` with the real ``RunStore``.

The test adapters are real ``ModelAdapter``s written here (they await, answer, raise scripted
ModelCallErrors and record every call); the composite is a real ``CompositeAdapter`` ("answer then
judge"). What is proved: a judge failing transiently fails the trial's attempt, which is retried
without calling the answer stage again; a run stopped after stage 1 (QUOTA, or a budget overrun)
resumes calling stage 1 zero times and stage 2 once; a changed sub-request is a new key and is
called, an unchanged one is a hit even for another trial; identical calls in flight at once are
made once; stage calls and composite attempts appear in attempts.jsonl; spend counts each stage call
once; a lost store.sqlite is rebuilt from the log and a resume makes zero calls; a subprocess
SIGKILLed mid-composite against a real local HTTP server resumes repeating no stored stage call.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from httpfake import FakeServer, Recorded, Reply
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import (
    Condition,
    ErrorKind,
    GenerationSettings,
    ImagePart,
    ModelSpec,
    Request,
    Response,
    Status,
    TextPart,
    Trial,
    Usage,
    VideoPart,
)
from vidaudit.models.base import (
    Capabilities,
    CompositeAdapter,
    ModelCallError,
    StageCall,
    StageInterrupted,
    combine_stages,
    is_composite,
)
from vidaudit.run.budget import Budget
from vidaudit.run.executor import AdapterError, CallOptions, run_trials
from vidaudit.run.retry import RetryPolicy
from vidaudit.run.stage_calls import call_key, request_fingerprint
from vidaudit.run.store.reader import StoreReader
from vidaudit.run.store.writer import RunStore
from vidaudit.run.summary import StopReason

SRC = str(Path(__file__).resolve().parents[2] / "src")
FAST = RetryPolicy(base_delay_s=0.0, max_delay_s=0.0)

# --------------------------------------------------------------------------- test adapters


class RecordingAdapter:
    """A plain test adapter: records every request text it gets; ``script(text, n)`` may return an error."""

    def __init__(
        self,
        label: str,
        *,
        reply: Callable[[str], str] = lambda text: "ok",
        cost_usd: float | None = 0.01,
        tokens: tuple[int, int] = (100, 10),
        delay_s: float = 0.0,
        concurrency: int = 4,
        script: Callable[[str, int], BaseException | None] | None = None,
    ) -> None:
        self.spec = ModelSpec.parse(label)
        self.capabilities = Capabilities(concurrency=concurrency)
        self.reply, self.cost_usd, self.tokens, self.delay_s = reply, cost_usd, tokens, delay_s
        self.script = script or (lambda text, n: None)
        self.calls: Counter[str] = Counter()
        self.in_flight = self.max_in_flight = 0

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    async def generate(self, request: Request) -> Response:
        text = request.text
        self.calls[text] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
            err = self.script(text, self.calls[text])
            if err is not None:
                raise err
            return Response(
                text=self.reply(text),
                usage=Usage(input_tokens=self.tokens[0], output_tokens=self.tokens[1]),
                latency_s=self.delay_s,
                finish_reason="stop",
                cost_usd=self.cost_usd,
            )
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        pass


class AnswerThenJudge:
    """A composite: an answer stage on the trial's request, then a judge stage on the answer."""

    composite = True

    def __init__(
        self,
        answerer: RecordingAdapter,
        judge: RecordingAdapter,
        *,
        judge_prompt: str = "Is it right?",
        version: str = "v1",
        concurrency: int = 4,
    ) -> None:
        self.answerer, self.judge, self.judge_prompt = answerer, judge, judge_prompt
        self.spec = ModelSpec(provider="composite", name=f"answer+judge:{version}")
        self.capabilities = Capabilities(concurrency=concurrency)

    async def run(self, request: Request, call: StageCall) -> Response:
        answer = await call("answer", self.answerer, request)
        verdict = await call(
            "judge",
            self.judge,
            Request(
                trial_id=request.trial_id,
                parts=(TextPart(f"{self.judge_prompt}\nQ: {request.text}\nA: {answer.text}"),),
            ),
        )
        return combine_stages(f"{answer.text} | judge: {verdict.text}", [answer, verdict])

    async def aclose(self) -> None:
        pass


@dataclass(frozen=True)
class PlannedTrial:
    trial: Trial

    @property
    def id(self) -> str:
        return self.trial.id


def plan(n: int, model: ModelSpec) -> list[PlannedTrial]:
    return [
        PlannedTrial(
            Trial(sample_id=f"s{i:03d}", video_sha256=None, condition=Condition(prompt="structured_trace"), model=model)
        )
        for i in range(n)
    ]


def prepare(p: PlannedTrial) -> Request:
    frame = np.full((8, 8, 3), int(p.trial.sample_id[1:]) % 255, np.uint8)
    return Request(
        trial_id=p.id, parts=(ImagePart(frame, frame_index=12, t=0.4), TextPart(f"count in {p.trial.sample_id}"))
    )


def run(planned: list[PlannedTrial], composite: object, store: RunStore, options: CallOptions | None = None):  # type: ignore[no-untyped-def]
    adapters = {planned[0].trial.model.label: composite}
    options = dataclasses.replace(options or CallOptions(), retry_policy=FAST)
    return asyncio.run(run_trials(planned, adapters, store, prepare, options))  # type: ignore[arg-type]


def judge_text(sample: str) -> str:
    return f"Is it right?\nQ: count in {sample}\nA: ok"


def transient() -> ModelCallError:
    return ModelCallError(ErrorKind.TRANSIENT, "503 from the judge", status_code=503)


# --------------------------------------------------------------------------- protocol and keys


def test_protocol_marks_composites() -> None:
    c = AnswerThenJudge(RecordingAdapter("test:a"), RecordingAdapter("test:j"))
    assert is_composite(c) and isinstance(c, CompositeAdapter)
    assert not is_composite(c.answerer) and not is_composite(object())
    r = combine_stages(
        "x",
        [
            Response(text="a", usage=Usage(input_tokens=3), latency_s=1, cost_usd=0.5),
            Response(text="b", usage=Usage(output_tokens=4), latency_s=2, cost_usd=0.25, finish_reason="stop"),
        ],
    )
    assert r.usage == Usage(input_tokens=3, output_tokens=4) and r.cost_usd == 0.75 and r.latency_s == 3
    assert r.finish_reason == "stop"
    assert combine_stages("x", [Response(text="a", cost_usd=None), Response(text="b", cost_usd=1.0)]).cost_usd is None
    assert combine_stages("x", [Response(text="a")], cost_usd=0.0).cost_usd == 0.0


def test_call_key_covers_the_content_and_only_the_content() -> None:
    frame = np.arange(8 * 8 * 3, dtype=np.uint8).reshape(8, 8, 3)
    video = VideoPart(
        path="v.mp4",
        sha256="ab" * 32,
        fps=2.0,
        duration_s=4.0,
        n_frames=120,
        source_fps=30.0,
        frame_indices=(0, 15),
        timestamps=(0.0, 0.5),
    )
    base = Request(trial_id="t1", parts=(TextPart("q"), ImagePart(frame, 3, 0.1), video), system="sys")
    spec = ModelSpec.parse("test:judge")

    def key(req: Request, stage: str = "judge", s: ModelSpec = spec) -> str:
        return call_key(stage, s, request_fingerprint(req))

    k = key(base)
    assert key(Request(trial_id="another trial", parts=base.parts, system="sys")) == k  # trial id: not content
    frame2 = frame.copy()
    frame2[0, 0, 0] ^= 1
    variants = [
        Request(trial_id="t1", parts=(TextPart("q "), base.parts[1], video), system="sys"),
        Request(trial_id="t1", parts=(TextPart("q"), ImagePart(frame2, 3, 0.1), video), system="sys"),
        Request(trial_id="t1", parts=(TextPart("q"), ImagePart(frame, 4, 0.1), video), system="sys"),
        Request(trial_id="t1", parts=(TextPart("q"), ImagePart(frame, 3, 0.2), video), system="sys"),
        Request(trial_id="t1", parts=(TextPart("q"), ImagePart(frame.reshape(8, 24, 1), 3, 0.1), video), system="sys"),
        Request(
            trial_id="t1",
            parts=(TextPart("q"), base.parts[1], VideoPart(**{**video.__dict__, "fps": 1.0})),
            system="sys",
        ),
        Request(
            trial_id="t1",
            parts=(TextPart("q"), base.parts[1], VideoPart(**{**video.__dict__, "frame_indices": (0, 16)})),
            system="sys",
        ),
        Request(
            trial_id="t1",
            parts=(TextPart("q"), base.parts[1], VideoPart(**{**video.__dict__, "sha256": "cd" * 32})),
            system="sys",
        ),
        Request(trial_id="t1", parts=(base.parts[1], TextPart("q"), video), system="sys"),  # order
        Request(trial_id="t1", parts=base.parts, system="sys2"),
        Request(trial_id="t1", parts=base.parts, system="sys", settings=GenerationSettings(temperature=0.7)),
        Request(trial_id="t1", parts=base.parts, system="sys", metadata={"domain": "x"}),
    ]
    keys = [key(v) for v in variants] + [
        key(base, stage="answer"),
        key(base, s=ModelSpec.parse("test:judge2")),
        key(base, s=ModelSpec.parse("test:judge", temperature=0.5)),
    ]
    assert len(set(keys + [k])) == len(keys) + 1
    # any str hashes, and two lone surrogates are not the character they would pair into
    lone = key(Request(trial_id="t", parts=(TextPart("\ud83d\ude00"),)))
    assert lone != key(Request(trial_id="t", parts=(TextPart("\U0001f600"),)))
    with pytest.raises(TypeError, match="JSON"):
        request_fingerprint(Request(trial_id="t", parts=(TextPart("q"),), metadata={"x": object()}))


# --------------------------------------------------------------------------- retries and resume


def test_a_failed_judge_is_retried_without_calling_the_answer_again(tmp_path: Path) -> None:
    judge = RecordingAdapter(
        "test:judge", cost_usd=0.001, script=lambda text, n: transient() if "s001" in text and n == 1 else None
    )
    answerer = RecordingAdapter("test:answer", cost_usd=0.01)
    composite = AnswerThenJudge(answerer, judge)
    planned = plan(3, composite.spec)
    failing = planned[1].id
    with RunStore(tmp_path) as store:
        s = run(planned, composite, store)
        assert s.ok == 3 and s.calls == 4 and s.failed_attempts == {"api_error": 1}
        assert answerer.calls == Counter({f"count in s{i:03d}": 1 for i in range(3)})  # never repeated
        assert judge.calls[judge_text("s001")] == 2 and judge.total == 4
        first, second = store.attempts(failing)
        assert first.status is Status.API_ERROR and first.error_kind is ErrorKind.TRANSIENT
        assert first.error_message == "stage judge: 503 from the judge"
        assert second.status is Status.OK and second.response is not None
        assert second.response.text == "ok | judge: ok" and second.frame_indices == (12,)
        assert second.response.usage == Usage(input_tokens=200, output_tokens=20)  # its stages' sum
        refs = store.attempt_stages(failing, 2)
        assert refs is not None and [(r.stage, r.cached, r.status) for r in refs] == [
            ("answer", True, Status.OK),
            ("judge", False, Status.OK),
        ]
        assert [(r.stage, r.status) for r in store.attempt_stages(failing, 1) or []] == [
            ("answer", Status.OK),
            ("judge", Status.API_ERROR),
        ]
        calls = store.stage_calls(failing)
        assert [(c.stage, c.attempt, c.trial_attempt, c.status) for c in calls] == [
            ("answer", 1, 1, Status.OK),
            ("judge", 1, 1, Status.API_ERROR),
            ("judge", 2, 2, Status.OK),
        ]
        assert calls[1].error_kind is ErrorKind.TRANSIENT and calls[1].response is None
        assert calls[0].model == answerer.spec and calls[0].request["parts"][1] == {"text": "count in s001"}
        # spend counts each stage call once: 3 answers and 3 ok judges, never a composite attempt's sum
        summary = store.summary()
        assert summary.stage_calls == 7 and summary.cost_usd == pytest.approx(3 * 0.011) == s.cost_usd
        assert summary.tokens == 6 * 110 == s.tokens
        # a second session calls nothing
        again = run(planned, composite, store)
        assert again.calls == 0 and again.skipped_already_ok == 3 and answerer.total == 3 and judge.total == 4


def test_quota_after_stage_one_then_resume_calls_only_stage_two(tmp_path: Path) -> None:
    quota = {"on": True}
    judge = RecordingAdapter(
        "test:judge", script=lambda text, n: ModelCallError(ErrorKind.QUOTA, "quota exhausted") if quota["on"] else None
    )
    answerer = RecordingAdapter("test:answer")
    composite = AnswerThenJudge(answerer, judge, concurrency=1)
    planned = plan(3, composite.spec)
    with RunStore(tmp_path) as store:
        s = run(planned, composite, store)
        assert s.stop_reason is StopReason.QUOTA and "quota exhausted" in (s.stop_message or "")
        assert answerer.total == 1 and judge.total == 1 and s.not_run == 2
        (tid,) = store.attempt_counts()
        assert store.latest(tid).error_kind is ErrorKind.QUOTA  # type: ignore[union-attr]
        assert [(c.stage, c.status) for c in store.stage_calls()] == [
            ("answer", Status.OK),
            ("judge", Status.API_ERROR),
        ]
    quota["on"] = False
    answerer.calls.clear()
    judge.calls.clear()
    with RunStore(tmp_path) as store:  # a new session, as a resume is
        s2 = run(planned, composite, store)
        assert s2.stop_reason is StopReason.COMPLETED and s2.ok == 3
        stopped_sample = next(r.sample_id for r, _ in store.results() if r.trial_id == tid)
        assert answerer.calls[f"count in {stopped_sample}"] == 0  # stage 1: zero times
        assert judge.calls[judge_text(stopped_sample)] == 1  # stage 2: once
        assert answerer.total == 2 and judge.total == 3


def test_budget_overrun_after_stage_one_stops_before_stage_two(tmp_path: Path) -> None:
    answerer = RecordingAdapter("test:answer", cost_usd=0.02)  # costs twice the trial's estimate
    judge = RecordingAdapter("test:judge", cost_usd=0.001)
    composite = AnswerThenJudge(answerer, judge, concurrency=1)
    planned = plan(2, composite.spec)
    estimate = lambda p: (0, 0.01)  # noqa: E731
    with RunStore(tmp_path) as store:
        s = run(planned, composite, store, CallOptions(budget=Budget(max_cost_usd=0.015, estimate=estimate)))
        assert s.stop_reason is StopReason.BUDGET and "budget" in (s.stop_message or "")
        assert answerer.total == 1 and judge.total == 0
        assert store.attempt_counts() == {}  # the interrupted trial stored no attempt: nothing failed
        assert s.calls == 0 and s.called == 0 and s.not_run == 2
        assert [c.stage for c in store.stage_calls()] == ["answer"]
        assert store.summary().cost_usd == pytest.approx(0.02) == s.cost_usd
        s2 = run(planned, composite, store, CallOptions(budget=Budget(max_cost_usd=1.0, estimate=estimate)))
        assert s2.ok == 2 and answerer.total == 2 and judge.total == 2
        assert answerer.calls["count in s000"] == 1 and judge.calls[judge_text("s000")] == 1


def test_a_stage_reporting_no_cost_is_charged_its_estimate(tmp_path: Path) -> None:
    composite = AnswerThenJudge(
        RecordingAdapter("test:answer", cost_usd=None), RecordingAdapter("test:judge", cost_usd=0.001), concurrency=1
    )
    planned = plan(5, composite.spec)
    with RunStore(tmp_path) as store:
        s = run(planned, composite, store, CallOptions(budget=Budget(max_cost_usd=0.1, estimate=lambda p: (0, 0.03))))
        assert s.stop_reason is StopReason.BUDGET and s.ok == 3
        assert s.cost_usd == pytest.approx(0.09)  # never assumed free: each trial charged its estimate


def test_changed_sub_request_is_a_new_call_unchanged_is_a_hit(tmp_path: Path) -> None:
    answerer, judge = RecordingAdapter("test:answer"), RecordingAdapter("test:judge")
    v1 = AnswerThenJudge(answerer, judge, judge_prompt="Is it right?", version="v1")
    v2 = AnswerThenJudge(answerer, judge, judge_prompt="Is the count right?", version="v2")
    with RunStore(tmp_path) as store:
        run(plan(2, v1.spec), v1, store)
        assert answerer.total == 2 and judge.total == 2
        s = run(plan(2, v2.spec), v2, store)  # new trials (new composite spec), same answer requests
        assert s.ok == 2
        assert answerer.total == 2  # unchanged sub-request: a hit, made by another trial
        assert judge.total == 4 and judge.calls["Is the count right?\nQ: count in s000\nA: ok"] == 1
        v2_trial = plan(1, v2.spec)[0].id
        assert [r.cached for r in store.attempt_stages(v2_trial, 1) or []] == [True, False]
        assert [c.stage for c in store.stage_calls(v2_trial)] == ["judge"]


def test_identical_calls_in_flight_are_made_once(tmp_path: Path) -> None:
    class SameQuestion(AnswerThenJudge):
        async def run(self, request: Request, call: StageCall) -> Response:
            same = Request(trial_id=request.trial_id, parts=(TextPart("one shared question"),))
            a, b = await asyncio.gather(call("extract", self.answerer, same), call("extract", self.answerer, same))
            return combine_stages(a.text + b.text, [a, b])

    answerer = RecordingAdapter("test:answer", delay_s=0.05)
    composite = SameQuestion(answerer, RecordingAdapter("test:judge"), concurrency=4)
    with RunStore(tmp_path) as store:
        s = run(plan(6, composite.spec), composite, store)
        assert s.ok == 6 and answerer.total == 1 and len(store.stage_calls()) == 1


def test_stage_calls_and_composite_attempts_are_in_the_audit_log(tmp_path: Path) -> None:
    judge = RecordingAdapter("test:judge", script=lambda text, n: transient() if n == 1 else None)
    composite = AnswerThenJudge(RecordingAdapter("test:answer"), judge)
    planned = plan(2, composite.spec)
    with RunStore(tmp_path) as store:
        run(planned, composite, store)
        stored = {(c.trial_id, c.stage, c.attempt): c for c in store.stage_calls()}
    log = [json.loads(x) for x in (tmp_path / "attempts.jsonl").read_text().splitlines()]
    logged = {
        (r["stage_call"]["trial_id"], r["stage_call"]["stage"], r["stage_call"]["attempt"]): r["stage_call"]
        for r in log
        if "stage_call" in r
    }
    assert set(logged) == set(stored) and len(logged) == 6  # 2 answers, 2 failed + 2 ok judges
    for k, c in stored.items():
        assert logged[k] == c.model_dump(mode="json")
    attempts = [r for r in log if "attempt" in r]
    assert len(attempts) == 4 and all(len(r["stages"]) == 2 for r in attempts)
    assert {r["trial_id"] for r in log if "trial" in r} == {p.id for p in planned}


def test_a_lost_store_is_rebuilt_and_a_resume_makes_no_call(tmp_path: Path) -> None:
    judge = RecordingAdapter(
        "test:judge",
        reply=lambda t: "\ud800 yes",
        script=lambda text, n: transient() if "s002" in text and n == 1 else None,
    )
    answerer = RecordingAdapter("test:answer")
    composite = AnswerThenJudge(answerer, judge)
    planned = plan(4, composite.spec)
    with RunStore(tmp_path) as store:
        run(planned, composite, store)
        before = (store.summary(), store.stage_calls(), [store.attempts(p.id) for p in planned])
    calls = (answerer.total, judge.total)
    for name in ("store.sqlite", "store.sqlite-wal", "store.sqlite-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    with RunStore(tmp_path) as store:
        assert store.recovery.rebuilt is not None and store.recovery.rebuilt.stage_calls == 9
        assert (store.summary(), store.stage_calls(), [store.attempts(p.id) for p in planned]) == before
        s = run(planned, composite, store)
        assert s.calls == 0 and s.skipped_already_ok == 4
    assert (answerer.total, judge.total) == calls == (4, 5)


# --------------------------------------------------------------------------- failure semantics


def test_a_stage_raising_unclassified_stops_the_run_with_adapter_error(tmp_path: Path) -> None:
    judge = RecordingAdapter("test:judge", script=lambda text, n: KeyError("choices"))
    composite = AnswerThenJudge(RecordingAdapter("test:answer"), judge, concurrency=1)
    planned = plan(3, composite.spec)
    with RunStore(tmp_path) as store:
        with pytest.raises(AdapterError, match="ModelCallError"):
            run(planned, composite, store)
        (tid,) = store.attempt_counts()
        a = store.latest(tid)
        assert a is not None and a.error_kind is None and "stage judge" in (a.error_message or "")
        assert "KeyError" in (store.stage_calls(tid)[-1].error_message or "")


def test_a_composite_swallowing_quota_still_stops_the_run(tmp_path: Path) -> None:
    class Forgiving(AnswerThenJudge):
        async def run(self, request: Request, call: StageCall) -> Response:
            answer = await call("answer", self.answerer, request)
            try:
                await call("judge", self.judge, request)
            except (ModelCallError, StageInterrupted):
                pass
            return answer

    judge = RecordingAdapter("test:judge", script=lambda text, n: ModelCallError(ErrorKind.QUOTA, "no credit"))
    composite = Forgiving(RecordingAdapter("test:answer"), judge, concurrency=1)
    with RunStore(tmp_path) as store:
        s = run(plan(4, composite.spec), composite, store)
        assert s.stop_reason is StopReason.QUOTA and judge.total == 1 and s.not_run == 3


def test_concurrent_stages_failing_as_a_group_are_classified(tmp_path: Path) -> None:
    class Parallel(AnswerThenJudge):
        async def run(self, request: Request, call: StageCall) -> Response:
            async with asyncio.TaskGroup() as tg:
                a = tg.create_task(call("answer", self.answerer, request))
                j = tg.create_task(call("judge", self.judge, request))
            return combine_stages("x", [a.result(), j.result()])

    judge = RecordingAdapter("test:judge", script=lambda text, n: transient() if n == 1 else None)
    composite = Parallel(RecordingAdapter("test:answer"), judge, concurrency=1)
    planned = plan(2, composite.spec)
    with RunStore(tmp_path) as store:
        s = run(planned, composite, store)
        assert s.ok == 2 and s.failed_attempts == {"api_error": 2}
        first = store.attempts(planned[0].id)[0]
        assert first.error_kind is ErrorKind.TRANSIENT and first.error_message == "stage judge: 503 from the judge"


def test_composites_and_their_stages_are_validated(tmp_path: Path) -> None:
    composite = AnswerThenJudge(RecordingAdapter("test:answer"), RecordingAdapter("test:judge"))
    composite.capabilities = Capabilities(batch_size=2)
    with RunStore(tmp_path) as store:
        with pytest.raises(ConfigError, match="batch_size must be 1"):
            run(plan(1, composite.spec), composite, store)

        class Nested(AnswerThenJudge):
            async def run(self, request: Request, call: StageCall) -> Response:
                return await call("inner", composite, request)  # type: ignore[arg-type]

        nested = Nested(composite.answerer, composite.judge, version="nested")
        with pytest.raises(AdapterError, match="not a plain ModelAdapter"):
            run(plan(1, nested.spec), nested, store)


def test_sub_adapter_concurrency_is_its_own(tmp_path: Path) -> None:
    answerer = RecordingAdapter("test:answer", delay_s=0.02, concurrency=2)
    composite = AnswerThenJudge(answerer, RecordingAdapter("test:judge"), concurrency=6)
    with RunStore(tmp_path) as store:
        assert run(plan(12, composite.spec), composite, store).ok == 12
    assert answerer.max_in_flight == 2


# --------------------------------------------------------------------------- SIGKILL mid-composite

_DRIVER = r"""
import asyncio, sys
from vidaudit.core.types import Condition, ModelSpec, Request, TextPart, Trial
from vidaudit.models.base import Capabilities, combine_stages
from vidaudit.models.openai_compat import OpenAIAdapter
from vidaudit.run.executor import CallOptions, run_trials
from vidaudit.run.retry import RetryPolicy
from vidaudit.run.store.writer import RunStore
from vidaudit.run.store.reader import StoreReader

run_dir, url = sys.argv[1], sys.argv[2]

class AnswerThenJudge:
    composite = True
    def __init__(self):
        self.answerer = OpenAIAdapter(ModelSpec.parse(f"openai:answerer@{url}/v1"))
        self.judge = OpenAIAdapter(ModelSpec.parse(f"openai:judge@{url}/v1"))
        self.spec = ModelSpec(provider="composite", name="answer+judge")
        self.capabilities = Capabilities(concurrency=3)
    async def run(self, request, call):
        a = await call("answer", self.answerer, request)
        j = await call("judge", self.judge, Request(trial_id=request.trial_id,
                       parts=(TextPart(f"judge: {request.text} -> {a.text}"),)))
        return combine_stages(a.text + " / " + j.text, [a, j])
    async def aclose(self):
        await self.answerer.aclose(); await self.judge.aclose()

class P:
    def __init__(self, t): self.trial, self.id = t, t.id

async def main():
    c = AnswerThenJudge()
    planned = [P(Trial(sample_id=f"s{i}", video_sha256=None, condition=Condition(prompt="structured_trace"),
                         model=c.spec)) for i in range(8)]
    prep = lambda p: Request(trial_id=p.id, parts=(TextPart(f"count in {p.trial.sample_id}"),))
    try:
        with RunStore(run_dir) as store:
            fast = CallOptions(retry_policy=RetryPolicy(base_delay_s=0))
            s = await run_trials(planned, {c.spec.label: c}, store, prep, fast)
            print(s.describe(), flush=True)
    finally:
        await c.aclose()

asyncio.run(main())
"""


def _chat_reply(rec: Recorded) -> Reply:
    body = rec.json()
    text = body["messages"][-1]["content"]
    text = text if isinstance(text, str) else " ".join(p.get("text", "") for p in text)
    answer = "yes" if body["model"] == "judge" else f"\\boxed{{{len(text) % 7}}}"
    return Reply(
        json={
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 3, "total_tokens": 53},
        },
        delay_s=0.3,
    )


def _stored(db: Path) -> tuple[int, int]:
    """(ok stage calls, trials with an ok answer stage but no attempt yet): read-only, while it is written."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        ok = con.execute("select count(*) from stage_calls where status='ok'").fetchone()[0]
        mid = con.execute(
            "select count(*) from stage_calls s where stage='answer' and status='ok' and not exists "
            "(select 1 from attempts a where a.trial_id = s.trial_id)"
        ).fetchone()[0]
    return int(ok), int(mid)


def test_sigkill_mid_composite_then_resume_repeats_no_stored_stage_call(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", default=_chat_reply)
        cmd = [sys.executable, "-c", _DRIVER, str(run_dir), srv.url]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        deadline, mid_composite = time.time() + 60, False
        while time.time() < deadline and proc.poll() is None:
            db = run_dir / "store.sqlite"
            try:
                ok, mid = _stored(db) if db.exists() else (0, 0)
            except sqlite3.Error:
                ok, mid = 0, 0
            if ok >= 5 and mid >= 1:  # some trials done, some between their answer and their judge
                mid_composite = True
                break
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        out1 = proc.communicate()[0].decode()
        assert mid_composite, "the run should have been killed between a trial's answer and its judge\n" + out1
        with StoreReader(run_dir) as store:
            done = {(c.trial_id, c.stage): c for c in store.stage_calls() if c.status is Status.OK}
            ok_before = store.ok_trial_ids()
            attempts_before = sum(store.attempt_counts().values())
        assert 5 <= len(done) < 16
        settle = time.time() + 5  # a request the killed client had already sent may still be read by the server
        n = -1
        while time.time() < settle and n != len(srv.requests):
            n = len(srv.requests)
            time.sleep(0.5)
        stored_bodies = {hashlib.sha256(r.body).hexdigest() for r in srv.requests}
        srv.requests.clear()
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stdout + res.stderr
        second = [r for r in srv.requests]
    assert len(second) == 16 - len(done), "a stored stage call was called again"
    assert len({hashlib.sha256(r.body).hexdigest() for r in second}) == len(second)
    with RunStore(run_dir) as store:
        assert store.recovery.clean or store.recovery.torn_tail_bytes  # the killed writer left at most a torn line
        assert len(store.ok_trial_ids()) == 8
        oks = Counter((c.trial_id, c.stage) for c in store.stage_calls() if c.status is Status.OK)
        assert set(oks.values()) == {1} and len(oks) == 16  # every stage call made exactly once
        for (tid, stage), c in done.items():  # the stored ones are the ones used
            assert store.stage_calls(tid)[0 if stage == "answer" else -1].call_key == c.call_key
        for row, att in store.results():
            assert att is not None and att.status is Status.OK
            refs = store.attempt_stages(row.trial_id, att.attempt)
            assert refs is not None and [r.stage for r in refs] == ["answer", "judge"]
            if row.trial_id in ok_before:
                assert [r.cached for r in refs] == [False, False]
            else:  # resumed: what was stored before the kill is a hit, the rest was called
                assert [r.cached for r in refs] == [(row.trial_id, "answer") in done, (row.trial_id, "judge") in done]
        assert sum(store.attempt_counts().values()) == attempts_before + 8 - len(ok_before)
    assert stored_bodies  # the first session did reach the server
