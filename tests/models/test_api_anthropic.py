"""Anthropic adapter against a real local HTTP server speaking the Messages API's wire format."""

from __future__ import annotations

import asyncio
import base64
import time

import cv2
import numpy as np
import pytest

from httpfake import FakeServer, Reply
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ErrorKind, GenerationSettings, ImagePart, ModelSpec, Request, TextPart, VideoPart
from vidaudit.models.anthropic import AnthropicAdapter
from vidaudit.models.base import ModelCallError

KEY = "sk-ant-test-SECRET-0123456789abcdef"
MODEL = "claude-sonnet-4-test"  # priced by the shipped "anthropic:claude-sonnet-4*" estimate
MESSAGES = "/v1/messages"


def frame(i: int) -> np.ndarray:
    img = np.zeros((32, 32, 3), np.uint8)
    img[..., 1] = (i * 30) % 256
    return img


def frames_request(n: int, **settings) -> Request:
    parts: list = []
    for i in range(n):
        parts += [TextPart(f"t={i * 0.5:.2f}s"), ImagePart(frame(i), i * 12, i * 0.5)]
    parts.append(TextPart("How many state changes?"))
    return Request(
        trial_id="t",
        parts=tuple(parts),
        system="Report a ledger.",
        settings=GenerationSettings(**({"max_tokens": 777, "temperature": 0.0, "seed": 9} | settings)),
    )


def ok_message(text: str = "\\boxed{4}", **over) -> dict:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 900,
            "output_tokens": 30,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 0,
        },
    }
    body.update(over)
    return body


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return monkeypatch


@pytest.fixture
def srv():
    with FakeServer() as s:
        yield s


def adapter(srv: FakeServer, **opts) -> AnthropicAdapter:
    return AnthropicAdapter(ModelSpec.parse(f"anthropic:{MODEL}"), base_url=srv.url, **opts)


async def call(a: AnthropicAdapter, req: Request):
    try:
        return await a.generate(req)
    finally:
        await a.aclose()


def test_payload_usage_and_cost(srv: FakeServer, env) -> None:
    srv.script("POST", MESSAGES, Reply(json=ok_message()))
    a = adapter(srv)
    caps = a.capabilities
    assert caps.native_video is False and caps.max_images == 100 and caps.max_request_bytes == 32 * 1024 * 1024
    resp = asyncio.run(call(a, frames_request(3)))

    (rec,) = srv.requests
    # the SDK authenticates with x-api-key or (2.x) a bearer token; either way it is the env's key
    assert rec.headers.get("x-api-key") == KEY or rec.headers.get("authorization") == f"Bearer {KEY}"
    body = rec.json()
    assert body["model"] == MODEL and body["max_tokens"] == 777
    assert body["system"] == "Report a ledger."
    assert "seed" not in body  # the Messages API has no seed
    assert body["temperature"] == 0.0 and "top_p" not in body  # what the settings ask, sent (extra_body)
    (msg,) = body["messages"]
    assert msg["role"] == "user"
    assert [b["type"] for b in msg["content"]] == ["text", "image"] * 3 + ["text"]
    assert [b["text"] for b in msg["content"] if b["type"] == "text"] == [
        "t=0.00s",
        "t=0.50s",
        "t=1.00s",
        "How many state changes?",
    ]
    for i, b in enumerate(b for b in msg["content"] if b["type"] == "image"):
        assert b["source"]["type"] == "base64" and b["source"]["media_type"] == "image/jpeg"
        img = cv2.imdecode(np.frombuffer(base64.b64decode(b["source"]["data"]), np.uint8), cv2.IMREAD_COLOR)
        assert img.shape == (32, 32, 3) and abs(int(img[5, 5, 1]) - (i * 30) % 256) <= 4

    assert resp.text == "\\boxed{4}" and resp.finish_reason == "end_turn"
    assert resp.model_version == "claude-sonnet-4-5-20250929"
    u = resp.usage
    assert (u.input_tokens, u.output_tokens, u.cached_tokens, u.reasoning_tokens) == (1000, 30, 100, 0)
    assert resp.cost_usd == pytest.approx((900 * 3.0 + 100 * 0.30 + 30 * 15.0) / 1e6)


def claude(rec) -> Reply:
    """Newer Claude models: 400 when temperature and top_p come together."""
    body = rec.json()
    if "temperature" in body and "top_p" in body:
        return Reply(
            status=400,
            json=err_body(
                "invalid_request_error",
                "`temperature` and `top_p` cannot both be specified for this model. Please use only one.",
            ),
        )
    return Reply(json=ok_message())


def test_one_sampling_param_for_newer_models_and_what_was_sent_is_recorded(srv: FakeServer, env) -> None:
    srv.script("POST", MESSAGES, default=claude)
    a = AnthropicAdapter(ModelSpec.parse(f"anthropic:{MODEL}", top_p=0.5), base_url=srv.url)
    opts = a.request_options()
    assert opts["sent"] == {"temperature": 0.0, "max_tokens": 2048} and opts["not_sent"][0].startswith("top_p")
    asyncio.run(call(a, frames_request(1, top_p=0.5)))
    body = srv.requests[0].json()
    assert body["temperature"] == 0.0 and "top_p" not in body
    # only top_p asked: top_p is sent
    srv.clear()
    srv.script("POST", MESSAGES, default=claude)
    asyncio.run(call(adapter(srv), frames_request(1, temperature=None, top_p=0.5)))
    body = srv.requests[0].json()
    assert body["top_p"] == 0.5 and "temperature" not in body
    # older models take both
    old = AnthropicAdapter(ModelSpec.parse("anthropic:claude-3-5-haiku", top_p=0.5), base_url=srv.url)
    assert old.request_options()["sent"] == {"temperature": 0.0, "top_p": 0.5, "max_tokens": 2048}
    # sampling off: nothing sent and the record says so (not the settings' temperature 0.0)
    off = AnthropicAdapter(ModelSpec.parse(f"anthropic:{MODEL}"), base_url=srv.url, send_sampling_params=False)
    assert off.request_options()["sent"] == {"max_tokens": 2048}
    assert off.request_options() != a.request_options()  # so the trial ids differ


def test_max_tokens_with_no_text_is_truncated(srv: FakeServer, env) -> None:
    srv.script(
        "POST",
        MESSAGES,
        Reply(
            json=ok_message(
                content=[{"type": "thinking", "thinking": "...", "signature": "s"}], stop_reason="max_tokens"
            )
        ),
    )
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(adapter(srv), frames_request(1)))
    assert err.value.kind is ErrorKind.TRUNCATED and err.value.response.usage.output_tokens == 30


def test_image_limit_and_video_refused_up_front(srv: FakeServer, env, tmp_path) -> None:
    a = adapter(srv)
    with pytest.raises(ModelCallError) as err:
        asyncio.run(a.generate(frames_request(101)))
    assert err.value.kind is ErrorKind.UNSUPPORTED and "101 images exceed the limit of 100" in str(err.value)
    video = VideoPart(path=str(tmp_path / "v.mp4"), sha256=None, fps=1, duration_s=1, n_frames=1, source_fps=1)
    with pytest.raises(ModelCallError) as err:
        asyncio.run(a.generate(Request(trial_id="t", parts=(video, TextPart("q")))))
    assert err.value.kind is ErrorKind.UNSUPPORTED
    small = adapter(srv, max_request_bytes=1000)
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(small, frames_request(5)))
    assert err.value.kind is ErrorKind.UNSUPPORTED and "MB" in str(err.value)
    asyncio.run(a.aclose())
    assert srv.requests == []


def err_body(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


FAULTS = [
    (
        "429-retry-after",
        Reply(
            status=429,
            json=err_body("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
            headers={"retry-after": "11"},
        ),
        ErrorKind.RATE_LIMIT,
        11.0,
    ),
    (
        "400-credit",
        Reply(
            status=400,
            json=err_body("invalid_request_error", "Your credit balance is too low to access the Anthropic API."),
        ),
        ErrorKind.QUOTA,
        None,
    ),
    ("500", Reply(status=500, json=err_body("api_error", "Internal server error")), ErrorKind.TRANSIENT, None),
    ("529", Reply(status=529, json=err_body("overloaded_error", "Overloaded")), ErrorKind.TRANSIENT, None),
    (
        "400-too-many-images",
        Reply(status=400, json=err_body("invalid_request_error", "messages: Too many images in request (max 100)")),
        ErrorKind.BAD_REQUEST,
        None,
    ),
    (
        "413",
        Reply(status=413, json=err_body("request_too_large", "Request exceeds the maximum size")),
        ErrorKind.BAD_REQUEST,
        None,
    ),
    ("401", Reply(status=401, json=err_body("authentication_error", "invalid x-api-key")), ErrorKind.AUTH, None),
    ("malformed-json", Reply(body='{"content": [{"type": "text", '), ErrorKind.MALFORMED, None),
    ("no-content", Reply(json={"id": "msg_1", "type": "message"}), ErrorKind.MALFORMED, None),
    ("refusal", Reply(json=ok_message(content=[], stop_reason="refusal")), ErrorKind.REFUSED, None),
]


@pytest.mark.parametrize(("reply", "kind", "retry_after"), [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS])
def test_faults_after_exactly_one_call(
    srv: FakeServer, env, reply: Reply, kind: ErrorKind, retry_after: float | None
) -> None:
    srv.script("POST", MESSAGES, reply, default=Reply(json=ok_message()))
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(adapter(srv), frames_request(1)))
    assert err.value.kind is kind, str(err.value)
    assert len(srv.requests) == 1
    assert err.value.retry_after == (pytest.approx(retry_after) if retry_after is not None else None)


def test_timeout_after_one_call(srv: FakeServer, env) -> None:
    srv.script("POST", MESSAGES, Reply(json=ok_message(), delay_s=3.0))
    start = time.perf_counter()
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(adapter(srv, timeout_s=0.3), frames_request(1)))
    assert err.value.kind is ErrorKind.TIMEOUT and len(srv.requests) == 1
    assert time.perf_counter() - start < 2.5


def test_missing_key_and_no_leak(srv: FakeServer, env) -> None:
    env.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicAdapter(ModelSpec.parse(f"anthropic:{MODEL}"))
    env.setenv("ANTHROPIC_API_KEY", KEY)
    srv.script("POST", MESSAGES, Reply(status=401, json=err_body("authentication_error", f"invalid x-api-key {KEY}")))
    a = adapter(srv)
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(a, frames_request(1)))
    assert err.value.kind is ErrorKind.AUTH
    for text in (str(err.value), repr(err.value), err.value.message, str(a), repr(a)):
        assert KEY not in text
