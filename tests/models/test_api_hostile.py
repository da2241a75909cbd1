"""Hostile and careless servers: every adapter answers a Response or a classified ModelCallError, never a crash.

Each body goes over real HTTP from the local server in ``httpfake`` to the provider's own SDK, for the
OpenAI-compatible, Gemini and Anthropic adapters: lone surrogate escapes (kept as text, losslessly),
invalid UTF-8 and JSON nested past the decoder's limit (MALFORMED), deeply nested braces in the text
(kept), negative, fractional, textual and absurd token usage (clamped and flagged in the finish
reason), HTML error pages and empty bodies (classified by status).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from httpfake import FakeServer, Reply
from vidaudit.core.types import ErrorKind, GenerationSettings, ModelSpec, Request, Response, TextPart
from vidaudit.models import errors_http as eh
from vidaudit.models.anthropic import AnthropicAdapter
from vidaudit.models.base import ModelCallError
from vidaudit.models.gemini import GeminiAdapter
from vidaudit.models.openai_compat import OpenAIAdapter
from vidaudit.run.budget import BudgetTracker, Reservation, charge, response_tokens

MAX_TOKENS = 100
BOUND = eh.output_bound(MAX_TOKENS)


@dataclass(frozen=True)
class Provider:
    """How one provider's success body is spelled, with the text and the usage object as raw JSON."""

    name: str
    path: str
    make: Callable[[str], Any]
    body: Callable[[str, str], str]
    usage: Callable[[str, str], str]  # (input JSON, output JSON) -> the usage object's JSON


def _openai_body(text: str, usage: str) -> str:
    return (
        '{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
        '"finish_reason":"stop","message":{"role":"assistant","content":%s}}],"usage":%s}' % (text, usage)
    )


def _anthropic_body(text: str, usage: str) -> str:
    return (
        '{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":%s}],'
        '"stop_reason":"end_turn","usage":%s}' % (text, usage)
    )


def _gemini_body(text: str, usage: str) -> str:
    return (
        '{"candidates":[{"content":{"role":"model","parts":[{"text":%s}]},"finishReason":"STOP"}],'
        '"usageMetadata":%s}' % (text, usage)
    )


PROVIDERS = {
    "openai": Provider(
        "openai",
        "/v1/chat/completions",
        lambda url: OpenAIAdapter(ModelSpec.parse(f"openai:m@{url}/v1")),
        _openai_body,
        lambda i, o: '{"prompt_tokens": %s, "completion_tokens": %s}' % (i, o),
    ),
    "anthropic": Provider(
        "anthropic",
        "/v1/messages",
        lambda url: AnthropicAdapter(ModelSpec.parse("anthropic:claude-test"), base_url=url),
        _anthropic_body,
        lambda i, o: '{"input_tokens": %s, "output_tokens": %s}' % (i, o),
    ),
    "gemini": Provider(
        "gemini",
        "/v1beta/models/g:generateContent",
        lambda url: GeminiAdapter(ModelSpec.parse("gemini:g"), base_url=url, use_disk_cache=False),
        _gemini_body,
        lambda i, o: '{"promptTokenCount": %s, "candidatesTokenCount": %s}' % (i, o),
    ),
}
NAMES = sorted(PROVIDERS)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch):
    for name in (
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_AUTH_TOKEN",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-0123456789")
    return monkeypatch


@pytest.fixture(scope="module")
def srv():
    with FakeServer() as s:
        yield s


def request() -> Request:
    return Request(trial_id="t", parts=(TextPart("How many?"),), settings=GenerationSettings(max_tokens=MAX_TOKENS))


def call(srv: FakeServer, p: Provider, reply: Reply) -> Response:
    """One call of a fresh adapter against exactly one scripted reply."""
    srv.clear()
    srv.script("POST", p.path, reply)

    async def go() -> Response:
        a = p.make(srv.url)
        try:
            return await a.generate(request())
        finally:
            await a.aclose()

    try:
        return asyncio.run(go())
    finally:
        assert len(srv.requests) == 1  # exactly one call, no SDK retry


def ok(p: Provider, text_json: str = '"\\\\boxed{3}"', usage: tuple[str, str] = ("10", "5")) -> Reply:
    return Reply(body=p.body(text_json, p.usage(*usage)).encode())


# --------------------------------------------------------------------------- text


@pytest.mark.parametrize("name", NAMES)
def test_lone_surrogate_comes_back_as_text_losslessly(srv: FakeServer, env, name: str) -> None:
    p = PROVIDERS[name]
    resp = call(srv, p, ok(p, '"count \\ud800 then \\udfff: \\\\boxed{3}"'))
    assert resp.text == "count \ud800 then \udfff: \\boxed{3}"
    assert eh.split_finish(resp.finish_reason)[1] == []


@pytest.mark.parametrize("name", NAMES)
def test_invalid_utf8_is_malformed(srv: FakeServer, env, name: str) -> None:
    p = PROVIDERS[name]
    body = p.body('"a\x00PLACE b"', p.usage("1", "1")).encode().replace(b"\x00PLACE", b"\xff\xfe\xc3")
    with pytest.raises(ModelCallError) as err:
        call(srv, p, Reply(body=body))
    assert err.value.kind is ErrorKind.MALFORMED, str(err.value)


@pytest.mark.parametrize("name", NAMES)
def test_json_nested_past_the_decoder_limit_is_malformed(srv: FakeServer, env, name: str) -> None:
    p = PROVIDERS[name]
    with pytest.raises(ModelCallError) as err:
        call(srv, p, ok(p, "[" * 100_000 + "]" * 100_000))
    assert err.value.kind is ErrorKind.MALFORMED and "nested too deeply" in err.value.message


@pytest.mark.parametrize("name", NAMES)
def test_deeply_nested_braces_in_the_text_are_kept(srv: FakeServer, env, name: str) -> None:
    p = PROVIDERS[name]
    text = "\\boxed{" * 20_000 + "4" + "}" * 20_000
    resp = call(srv, p, ok(p, json.dumps(text)))
    assert resp.text == text


# --------------------------------------------------------------------------- usage


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "raw_in, raw_out, want_in, want_out, flagged",
    [
        ("-1000", "-5", 0, 0, ["input_tokens", "output_tokens"]),
        ("99999999999999999999999", "1", eh.MAX_CALL_TOKENS, 1, ["input_tokens"]),
        ("12", str(MAX_TOKENS * 50), 12, BOUND, ["output_tokens"]),
        ("12", str(MAX_TOKENS), 12, MAX_TOKENS, []),  # at the limit asked: believed
        ("null", "null", 0, 0, []),  # absent: nothing to flag
    ],
)
def test_usage_is_clamped_and_flagged(
    srv: FakeServer, env, name: str, raw_in: str, raw_out: str, want_in: int, want_out: int, flagged: list[str]
) -> None:
    p = PROVIDERS[name]
    resp = call(srv, p, ok(p, usage=(raw_in, raw_out)))
    assert (resp.usage.input_tokens, resp.usage.output_tokens) == (want_in, want_out)
    finish, notes = eh.split_finish(resp.finish_reason)
    assert notes == flagged and eh.usage_was_clamped(resp.finish_reason) == bool(flagged)
    assert finish == {"openai": "stop", "anthropic": "end_turn", "gemini": "STOP"}[name]
    assert resp.cost_usd is None or (math.isfinite(resp.cost_usd) and resp.cost_usd >= 0)


@pytest.mark.parametrize("name", ["openai", "anthropic"])  # the SDKs that do not check types
def test_textual_and_fractional_usage_is_clamped_and_flagged(srv: FakeServer, env, name: str) -> None:
    p = PROVIDERS[name]
    resp = call(srv, p, ok(p, usage=('"lots"', "5.5")))
    assert (resp.usage.input_tokens, resp.usage.output_tokens) == (0, 6)  # rounded up, never down
    assert eh.split_finish(resp.finish_reason)[1] == ["input_tokens", "output_tokens"]
    resp = call(srv, p, ok(p, usage=("1e300", "[1]")))
    assert (resp.usage.input_tokens, resp.usage.output_tokens) == (eh.MAX_CALL_TOKENS, 0)


def test_gemini_sdk_refuses_textual_usage_as_malformed(srv: FakeServer, env) -> None:
    p = PROVIDERS["gemini"]
    with pytest.raises(ModelCallError) as err:
        call(srv, p, ok(p, usage=('"lots"', "5")))
    assert err.value.kind is ErrorKind.MALFORMED


def test_negative_usage_never_gives_budget_back(srv: FakeServer, env) -> None:
    p = PROVIDERS["openai"]
    resp = call(srv, p, ok(p, usage=("-1000000", "-5")))
    tracker = BudgetTracker(None, spent_tokens=500, spent_cost_usd=0.5)
    est = Reservation(tokens=1200, cost_usd=0.01)
    assert response_tokens(resp) == 0
    c = tracker.settle(resp, est)
    assert c.tokens == 1200  # flagged usage costs at least the estimate
    assert tracker.spent_tokens == 1700 and tracker.spent_cost_usd >= 0.5
    tracker.spend(-(10**9), -5.0)
    tracker.spend(0, float("nan"))
    assert tracker.spent_tokens == 1700 and tracker.spent_cost_usd == pytest.approx(0.51)
    assert BudgetTracker(None, spent_tokens=-50, spent_cost_usd=-1.0).spent_tokens == 0


def test_charge_trusts_unflagged_usage() -> None:
    r = Response(text="x", usage={"input_tokens": 30, "output_tokens": 20}, finish_reason="stop", cost_usd=0.002)
    assert charge(r, Reservation(1000, 0.5)) == Reservation(50, 0.002)
    none = Response(text="x", finish_reason="stop", cost_usd=None)  # no usage, no cost: the estimate stands
    assert charge(none, Reservation(1000, 0.5)) == Reservation(1000, 0.5)


# --------------------------------------------------------------------------- error pages and empty bodies


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "reply, kind",
    [
        (
            Reply(status=502, body="<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html"),
            ErrorKind.TRANSIENT,
        ),
        (
            Reply(status=200, body="<html><body>login required</body></html>", content_type="text/html"),
            ErrorKind.MALFORMED,
        ),
        (Reply(status=200, body=b""), ErrorKind.MALFORMED),
        (Reply(status=500, body=b""), ErrorKind.TRANSIENT),
        (Reply(status=500, body=b'{"error": "\xff\xfe broken"}'), ErrorKind.TRANSIENT),
        (Reply(status=400, body="[" * 100_000), ErrorKind.BAD_REQUEST),
        (Reply(status=200, body="null"), ErrorKind.MALFORMED),
        (Reply(status=200, body='"just a string"'), ErrorKind.MALFORMED),
    ],
    ids=["html-502", "html-200", "empty-200", "empty-500", "bad-utf8-500", "deep-400", "null", "string"],
)
def test_error_pages_and_empty_bodies_are_classified(
    srv: FakeServer, env, name: str, reply: Reply, kind: ErrorKind
) -> None:
    with pytest.raises(ModelCallError) as err:
        call(srv, PROVIDERS[name], reply)
    assert err.value.kind is kind, str(err.value)
    assert len(err.value.message) <= eh.MAX_MESSAGE_CHARS + 3


# --------------------------------------------------------------------------- any JSON at all

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _slots(name: str, text: Any, usage: Any, finish: Any, extra: Any) -> Any:
    if name == "openai":
        return {
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": extra,
            "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}],
            "usage": usage,
        }
    if name == "anthropic":
        return {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": extra,
            "stop_reason": finish,
            "content": [{"type": "text", "text": text}],
            "usage": usage,
        }
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish}],
        "usageMetadata": usage,
        "modelVersion": extra,
    }


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=JSON, usage=JSON, finish=JSON, extra=JSON, whole=st.booleans())
def test_any_json_body_is_a_response_or_classified(
    srv: FakeServer, env, name: str, text: Any, usage: Any, finish: Any, extra: Any, whole: bool
) -> None:
    body = text if whole else _slots(name, text, usage, finish, extra)
    try:
        payload = json.dumps(body)
    except ValueError:  # NaN/inf are not JSON
        payload = json.dumps(body, allow_nan=True)
    try:
        resp = call(srv, PROVIDERS[name], Reply(body=payload))
    except ModelCallError:
        return
    u = resp.usage
    assert all(
        0 <= v <= eh.MAX_CALL_TOKENS for v in (u.input_tokens, u.output_tokens, u.cached_tokens, u.reasoning_tokens)
    )
    assert u.output_tokens <= BOUND and u.reasoning_tokens <= u.output_tokens and u.cached_tokens <= u.input_tokens
    assert isinstance(resp.text, str)
    assert resp.cost_usd is None or (math.isfinite(resp.cost_usd) and resp.cost_usd >= 0)


# --------------------------------------------------------------------------- the reader itself


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_usage_reader_always_lands_in_range(value: Any) -> None:
    r = eh.UsageReader()
    n = r.count("input_tokens", value)
    assert isinstance(n, int) and 0 <= n <= eh.MAX_CALL_TOKENS
    plain = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= eh.MAX_CALL_TOKENS
    assert (r.clamped == []) == (
        value is None or plain or (isinstance(value, float) and value.is_integer() and 0 <= value <= eh.MAX_CALL_TOKENS)
    )
    if plain:
        assert n == value


def test_flag_finish_round_trip() -> None:
    assert eh.flag_finish("stop", []) == "stop"
    f = eh.flag_finish("length", ["input_tokens", "output_tokens"])
    assert f == "length;usage_clamped=input_tokens,output_tokens"
    assert eh.split_finish(f) == ("length", ["input_tokens", "output_tokens"])
    assert eh.split_finish(eh.flag_finish(None, ["output_tokens"])) == (None, ["output_tokens"])
    assert eh.split_finish(None) == (None, []) and eh.split_finish("stop") == ("stop", [])


# --------------------------------------------------------------------------- budget estimates for self-hosted servers


@pytest.mark.parametrize("condition", ["native", "frames@1", "keyframes"])
def test_self_hosted_endpoints_estimate_tokens_not_zero(env, condition: str) -> None:
    """A --max-tokens budget over a vLLM/SGLang server reserves real token estimates (only the cost is 0)."""
    from vidaudit.core.registry import get_suite
    from vidaudit.core.types import Event, Sample, Trace, VideoRef
    from vidaudit.run.conditions import parse_condition
    from vidaudit.run.plan import PlanStream
    from vidaudit.run.session import _estimate

    sample = Sample(
        sample_id="s",
        suite="counting",
        params={"domain": "blinking", "n_events": 1, "frequency_hz": 1.0, "seed": 0},
        question="How many?",
        answer=1,
        trace=Trace(events=(Event(t=1.0, frame=30, type="blink", count=1),)),
        video=VideoRef(path="v.mp4", sha256="0" * 64, fps=30, width=854, height=480, n_frames=720, duration_s=24.0),
    )
    spec = ModelSpec.parse("openai:qwen@http://127.0.0.1:8000/v1", max_tokens=256)
    adapter = OpenAIAdapter(spec)
    (planned,) = PlanStream(
        [sample],
        [parse_condition(condition, "structured_trace")],
        [spec],
        suite=get_suite("counting"),
        caps_by_model={spec.label: adapter.capabilities},
    ).planned()
    tokens, cost = _estimate(planned, adapter.capabilities)
    assert adapter.capabilities.local and cost == 0.0
    assert tokens > 256 + 100  # the image or video tokens, the prompt and the answer, not 0


def _lying_run(tmp_path, usage: tuple[str, str]):
    """20 trials against the real local server answering with ``usage``, under --max-tokens 3,000 with an
    estimate of 1,000 tokens a call."""
    from vidaudit.core.types import Condition, ImagePart, Trial
    from vidaudit.run.budget import Budget
    from vidaudit.run.executor import CallOptions, run_trials
    from vidaudit.run.store.writer import RunStore

    @dataclass(frozen=True)
    class Planned:
        trial: Trial

        @property
        def id(self) -> str:
            return self.trial.id

    import numpy as np

    with FakeServer() as s:
        p = PROVIDERS["openai"]
        s.script("POST", p.path, default=ok(p, usage=usage))
        spec = ModelSpec.parse(f"openai:m@{s.url}/v1")
        adapter = OpenAIAdapter(spec, concurrency=1)
        cond = Condition(prompt="structured_trace")
        planned = [
            Planned(Trial(sample_id=f"s{i:02d}", video_sha256=None, condition=cond, model=spec)) for i in range(20)
        ]

        def prepare(pl: Planned) -> Request:
            return Request(
                trial_id=pl.id,
                parts=(ImagePart(np.zeros((8, 8, 3), np.uint8), 0, 0.0), TextPart("q")),
                settings=GenerationSettings(max_tokens=MAX_TOKENS),
            )

        async def go(store: RunStore):  # type: ignore[no-untyped-def]
            try:
                return await run_trials(
                    planned,
                    {spec.label: adapter},
                    store,
                    prepare,  # type: ignore[arg-type]
                    CallOptions(budget=Budget(max_tokens=3_000, estimate=lambda _: (1_000, 0.0))),
                )
            finally:
                await adapter.aclose()

        with RunStore(tmp_path) as store:
            return asyncio.run(go(store)), len(s.requests), store.summary()


def test_negative_usage_does_not_lower_what_a_run_spent(tmp_path, env) -> None:
    summary, calls, stored = _lying_run(tmp_path, ("-1000000", "-5"))
    assert calls >= 1 and summary.tokens >= 0 and stored.tokens >= 0


def test_lying_server_cannot_make_calls_free(tmp_path, env) -> None:
    summary, calls, _ = _lying_run(tmp_path, ("-1000000", "-5"))
    assert calls == 3  # 3,000 tokens at the 1,000-token estimate a call
