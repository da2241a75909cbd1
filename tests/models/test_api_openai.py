"""OpenAI / OpenAI-compatible adapter against a real local HTTP server, plus the shared error mapping."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import email.utils
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from httpfake import FakeServer, Reply
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ErrorKind, GenerationSettings, ImagePart, ModelSpec, Request, TextPart, VideoPart
from vidaudit.models import errors_http as eh
from vidaudit.models.base import ModelAdapter, ModelCallError
from vidaudit.models.openai_compat import OpenAIAdapter
from vidaudit.models.provider_content import build_content

KEY = "sk-test-SECRET-0123456789abcdef"
CHAT = "/v1/chat/completions"


def frame(i: int, size: int = 32) -> np.ndarray:
    img = np.zeros((size, size, 3), np.uint8)
    img[..., 0] = (i * 40) % 256
    img[: size // 2, :, 1] = 200
    return img


def frames_request(
    n: int = 3, *, system: str | None = "You count events.", max_tokens: int = 321, seed: int | None = 7
) -> Request:
    parts: list = []
    for i in range(n):
        t = i * 0.25
        parts += [TextPart(f"t={t:.2f}s"), ImagePart(frame(i), frame_index=i * 6, t=t)]
    parts.append(TextPart("How many times does the ball hit a wall?"))
    return Request(
        trial_id="trial-1",
        parts=tuple(parts),
        system=system,
        settings=GenerationSettings(temperature=0.0, max_tokens=max_tokens, seed=seed, top_p=0.9),
    )


def ok_completion(text: str = "\\boxed{3}", **over) -> dict:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text, "refusal": None}}
        ],
        "usage": {
            "prompt_tokens": 1200,
            "completion_tokens": 50,
            "total_tokens": 1250,
            "completion_tokens_details": {"reasoning_tokens": 20},
            "prompt_tokens_details": {"cached_tokens": 200},
        },
    }
    body.update(over)
    return body


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def srv():
    with FakeServer() as s:
        yield s


def hosted(srv: FakeServer, env: pytest.MonkeyPatch, **opts) -> OpenAIAdapter:
    """Hosted mode (no @base_url) with the SDK's own OPENAI_BASE_URL pointing at the local server."""
    env.setenv("OPENAI_API_KEY", KEY)
    env.setenv("OPENAI_BASE_URL", srv.url + "/v1")
    return OpenAIAdapter(ModelSpec.parse("openai:gpt-4o"), **opts)


def run(coro):
    return asyncio.run(coro)


async def call(adapter: OpenAIAdapter, request: Request):
    try:
        return await adapter.generate(request)
    finally:
        await adapter.aclose()


def write_mp4(path: Path, n: int = 6) -> Path:
    from vidaudit.video.encode import write_video

    write_video(path, (frame(i) for i in range(n)), fps=12, width=32, height=32)
    return path


# --------------------------------------------------------------------------- payloads


def test_hosted_frames_payload_usage_and_cost(srv: FakeServer, env) -> None:
    srv.script("POST", CHAT, Reply(json=ok_completion()))
    adapter = hosted(srv, env)
    assert isinstance(adapter, ModelAdapter)
    assert adapter.capabilities.native_video is False and adapter.capabilities.max_images == 500
    resp = run(call(adapter, frames_request(3)))

    (rec,) = srv.requests
    assert rec.headers["authorization"] == f"Bearer {KEY}"
    body = rec.json()
    assert body["model"] == "gpt-4o"
    assert body["max_completion_tokens"] == 321 and "max_tokens" not in body
    assert body["temperature"] == 0.0 and body["seed"] == 7 and body["top_p"] == 0.9
    assert "mm_processor_kwargs" not in body
    system, user = body["messages"]
    assert system == {"role": "system", "content": "You count events."}
    kinds = [p["type"] for p in user["content"]]
    assert kinds == ["text", "image_url"] * 3 + ["text"]
    assert [p["text"] for p in user["content"] if p["type"] == "text"] == [
        "t=0.00s",
        "t=0.25s",
        "t=0.50s",
        "How many times does the ball hit a wall?",
    ]
    for i, p in enumerate(p for p in user["content"] if p["type"] == "image_url"):
        prefix, data = p["image_url"]["url"].split(",", 1)
        assert prefix == "data:image/jpeg;base64"
        img = cv2.imdecode(np.frombuffer(base64.b64decode(data), np.uint8), cv2.IMREAD_COLOR)
        assert img.shape == (32, 32, 3)
        # RGB in, RGB kept: the red channel (BGR index 2) carries the frame's ramp value
        assert abs(int(img[20, 20, 2]) - (i * 40) % 256) <= 4

    assert resp.text == "\\boxed{3}"
    assert resp.finish_reason == "stop" and resp.model_version == "gpt-4o-2024-08-06"
    assert (resp.usage.input_tokens, resp.usage.output_tokens) == (1200, 50)
    assert (resp.usage.reasoning_tokens, resp.usage.cached_tokens) == (20, 200)
    assert resp.latency_s > 0
    # shipped gpt-4o estimate: 2.50 in, 1.25 cached, 10.00 out per million
    assert resp.cost_usd == pytest.approx((1000 * 2.5 + 200 * 1.25 + 50 * 10.0) / 1e6)


def test_open_server_video_url_fps_and_placeholder_key(srv: FakeServer, env, tmp_path: Path) -> None:
    mp4 = write_mp4(tmp_path / "clip.mp4")
    srv.script("POST", CHAT, Reply(json=ok_completion(model="Qwen/Qwen2.5-VL-7B-Instruct")))
    adapter = OpenAIAdapter(
        ModelSpec.parse(f"openai:Qwen/Qwen2.5-VL-7B-Instruct@{srv.url}/v1", max_tokens=64), video_route="file"
    )
    caps = adapter.capabilities
    assert caps.native_video and caps.default_native_fps == 2.0 and caps.local
    video = VideoPart(path=str(mp4), sha256=None, fps=4.0, duration_s=0.5, n_frames=6, source_fps=12)
    req = Request(
        trial_id="t", parts=(video, TextPart("Count the events.")), settings=GenerationSettings(max_tokens=64)
    )
    resp = run(call(adapter, req))

    body = srv.requests[0].json()
    assert srv.requests[0].headers["authorization"] == "Bearer EMPTY"
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body  # vLLM takes it too
    assert body["mm_processor_kwargs"] == {"fps": 4.0, "do_sample_frames": True}
    assert body["messages"][0]["role"] == "user"  # no system message when none is given
    vpart, tpart = body["messages"][0]["content"]
    assert vpart["type"] == "video_url" and tpart == {"type": "text", "text": "Count the events."}
    prefix, data = vpart["video_url"]["url"].split(",", 1)
    assert prefix == "data:video/mp4;base64" and base64.b64decode(data) == mp4.read_bytes()
    assert resp.cost_usd == 0.0  # self-hosted on loopback
    assert resp.frames_estimated  # the whole file went: the server sampled it by its own rule


def test_open_server_local_path_when_allowed(srv: FakeServer, env, tmp_path: Path) -> None:
    mp4 = write_mp4(tmp_path / "clip.mp4")
    srv.script("POST", CHAT, Reply(json=ok_completion()))
    adapter = OpenAIAdapter(ModelSpec.parse(f"openai:qwen@{srv.url}/v1"), allow_local_paths=True)
    video = VideoPart(path=str(mp4), sha256=None, fps=1.0, duration_s=0.5, n_frames=6, source_fps=12)
    run(call(adapter, Request(trial_id="t", parts=(video, TextPart("q")))))
    url = srv.requests[0].json()["messages"][0]["content"][0]["video_url"]["url"]
    assert url == mp4.resolve().as_uri() and url.startswith("file://")


def test_hosted_refuses_native_video_and_too_many_images_without_calling(srv: FakeServer, env, tmp_path) -> None:
    adapter = hosted(srv, env, max_images=2)
    video = VideoPart(path=str(tmp_path / "x.mp4"), sha256="0" * 64, fps=1.0, duration_s=1, n_frames=1, source_fps=1)
    with pytest.raises(ModelCallError) as e1:
        run(adapter.generate(Request(trial_id="t", parts=(video, TextPart("q")))))
    with pytest.raises(ModelCallError) as e2:
        run(call(adapter, frames_request(3)))
    assert e1.value.kind is e2.value.kind is ErrorKind.UNSUPPORTED
    assert "3 images exceed the limit of 2" in str(e2.value)
    assert srv.requests == []


def test_missing_key_for_hosted_is_a_config_error(env) -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIAdapter(ModelSpec.parse("openai:gpt-4o"))
    env.setenv("MY_KEY", KEY)
    with pytest.raises(ConfigError, match="OTHER_KEY"):
        OpenAIAdapter(ModelSpec.parse("openai:gpt-4o"), api_key_env="OTHER_KEY")


# --------------------------------------------------------------------------- faults

HTTP_DATE_IN_30S = "__date__"

FAULTS = [
    (
        "429-retry-after",
        Reply(
            status=429,
            json={"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}},
            headers={"Retry-After": "7"},
        ),
        ErrorKind.RATE_LIMIT,
        7.0,
    ),
    (
        "429-http-date",
        Reply(status=429, json={"error": {"message": "slow down"}}, headers={"Retry-After": HTTP_DATE_IN_30S}),
        ErrorKind.RATE_LIMIT,
        30.0,
    ),
    (
        "429-quota",
        Reply(
            status=429,
            json={
                "error": {
                    "message": "You exceeded your current quota, please check your plan and billing details.",
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                }
            },
        ),
        ErrorKind.QUOTA,
        None,
    ),
    ("500", Reply(status=500, json={"error": {"message": "server error"}}), ErrorKind.TRANSIENT, None),
    (
        "503-retry-after",
        Reply(status=503, json={"error": {"message": "busy"}}, headers={"Retry-After": "2"}),
        ErrorKind.TRANSIENT,
        2.0,
    ),
    ("529", Reply(status=529, json={"error": {"message": "overloaded"}}), ErrorKind.TRANSIENT, None),
    ("408", Reply(status=408, json={"error": {"message": "request timeout"}}), ErrorKind.TRANSIENT, None),
    (
        "400-too-many-images",
        Reply(
            status=400,
            json={
                "error": {
                    "message": "Too many images in request: 51, maximum allowed: 50",
                    "type": "invalid_request_error",
                }
            },
        ),
        ErrorKind.BAD_REQUEST,
        None,
    ),
    ("413", Reply(status=413, json={"error": {"message": "payload too large"}}), ErrorKind.BAD_REQUEST, None),
    ("403", Reply(status=403, json={"error": {"message": "forbidden"}}), ErrorKind.AUTH, None),
    ("malformed-json", Reply(body='{"choices": [ {"message": '), ErrorKind.MALFORMED, None),
    ("json-without-fields", Reply(json={"object": "chat.completion"}), ErrorKind.MALFORMED, None),
    ("html-200", Reply(body="<html>gateway</html>", content_type="text/html"), ErrorKind.MALFORMED, None),
    (
        "content-filter",
        Reply(
            json=ok_completion(
                choices=[
                    {"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant", "content": None}}
                ]
            )
        ),
        ErrorKind.REFUSED,
        None,
    ),
    (
        "refusal-field",
        Reply(
            json=ok_completion(
                choices=[
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."},
                    }
                ]
            )
        ),
        ErrorKind.REFUSED,
        None,
    ),
]


@pytest.mark.parametrize(("reply", "kind", "retry_after"), [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS])
def test_faults_are_classified_after_exactly_one_call(
    srv: FakeServer, env, reply: Reply, kind: ErrorKind, retry_after: float | None
) -> None:
    if reply.headers.get("Retry-After") == HTTP_DATE_IN_30S:
        reply = dataclasses.replace(
            reply, headers={"Retry-After": email.utils.formatdate(time.time() + 30, usegmt=True)}
        )
    srv.script("POST", CHAT, reply, default=Reply(json=ok_completion()))
    with pytest.raises(ModelCallError) as err:
        run(call(hosted(srv, env), frames_request(1)))
    assert err.value.kind is kind, str(err.value)
    assert len(srv.requests) == 1  # no SDK retry
    if retry_after is None:
        assert err.value.retry_after is None
    else:
        assert err.value.retry_after == pytest.approx(retry_after, abs=2.0)
    assert KEY not in str(err.value)


def test_timeout_is_timeout_after_one_call(srv: FakeServer, env) -> None:
    srv.script("POST", CHAT, Reply(json=ok_completion(), delay_s=3.0))
    start = time.perf_counter()
    with pytest.raises(ModelCallError) as err:
        run(call(hosted(srv, env, timeout_s=0.3), frames_request(1)))
    assert err.value.kind is ErrorKind.TIMEOUT
    assert time.perf_counter() - start < 2.5 and len(srv.requests) == 1


def test_connection_refused_is_transient(env) -> None:
    with FakeServer() as s:
        url = s.url
    adapter = OpenAIAdapter(ModelSpec.parse(f"openai:m@{url}/v1"), timeout_s=2)
    with pytest.raises(ModelCallError) as err:
        run(call(adapter, frames_request(1)))
    assert err.value.kind is ErrorKind.TRANSIENT


def test_key_never_leaks_into_errors_or_repr(srv: FakeServer, env) -> None:
    srv.script(
        "POST",
        CHAT,
        Reply(
            status=401,
            json={
                "error": {
                    "message": f"Incorrect API key provided: {KEY}. You can find your API key at ...",
                    "code": "invalid_api_key",
                }
            },
        ),
    )
    adapter = hosted(srv, env)
    with pytest.raises(ModelCallError) as err:
        run(call(adapter, frames_request(1)))
    assert err.value.kind is ErrorKind.AUTH
    for text in (str(err.value), repr(err.value), err.value.message, str(adapter), repr(adapter)):
        assert KEY not in text
    assert eh.REDACTED in err.value.message


# --------------------------------------------------------------------------- shared pieces (properties)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=12).map(TextPart),
            st.integers(0, 255).map(lambda v: ImagePart(np.full((8, 8, 3), v, np.uint8), 0, 0.0)),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_builder_keeps_every_part_in_order(parts: list) -> None:
    class Kinds:
        def text(self, text):
            return ("text", text)

        def image(self, jpeg, part):
            assert jpeg[:2] == b"\xff\xd8"  # a JPEG
            return ("image", part)

        def video(self, part):
            return ("video", part)

    built = build_content(Request(trial_id="t", parts=tuple(parts)), Kinds())
    assert [k for k, _ in built.parts] == ["text" if isinstance(p, TextPart) else "image" for p in parts]
    assert [v for k, v in built.parts if k == "text"] == [p.text for p in parts if isinstance(p, TextPart)]
    assert built.n_images == sum(isinstance(p, ImagePart) for p in parts)


@given(st.integers(0, 10**6))
def test_retry_after_seconds_roundtrip(n: int) -> None:
    assert eh.parse_retry_after(str(n)) == float(n)
    assert eh.retry_after_from({"retry-after-ms": str(n)}) == pytest.approx(n / 1000)


@given(st.integers(1, 10**6))
def test_retry_after_http_date(n: int) -> None:
    now = 1_700_000_000.0
    got = eh.parse_retry_after(email.utils.formatdate(now + n, usegmt=True), now=now)
    assert got == pytest.approx(n, abs=1.0)


@given(st.text(max_size=30))
def test_retry_after_never_raises_and_is_non_negative(value: str) -> None:
    got = eh.parse_retry_after(value)
    assert got is None or got >= 0


@given(st.integers(400, 599), st.text(max_size=40))
def test_every_error_status_gets_a_kind(status: int, body: str) -> None:
    kind = eh.kind_for_status(status, body)
    if status in (401, 403):
        assert kind in (ErrorKind.AUTH, ErrorKind.QUOTA)
    elif status == 429:
        assert kind in (ErrorKind.RATE_LIMIT, ErrorKind.QUOTA)
    elif status >= 500 or status in (408, 409):
        assert kind is ErrorKind.TRANSIENT
    else:
        assert kind in (ErrorKind.BAD_REQUEST, ErrorKind.QUOTA)


def test_gemini_style_429s() -> None:
    per_minute = (
        '{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "You exceeded your current '
        'quota, please check your plan and billing details.", "details": [{"quotaId": '
        '"GenerateRequestsPerMinutePerProjectPerModel"}, {"@type": "type.googleapis.com/google.rpc.'
        'RetryInfo", "retryDelay": "21s"}]}}'
    )
    err = eh.error_from_status("gemini", 429, per_minute, {})
    assert err.kind is ErrorKind.RATE_LIMIT and err.retry_after == 21.0
    per_day = per_minute.replace("PerMinute", "PerDay")
    assert eh.error_from_status("gemini", 429, per_day, {}).kind is ErrorKind.QUOTA
    exhausted = '{"error": {"status": "RESOURCE_EXHAUSTED", "message": "Quota exceeded for this project."}}'
    assert eh.error_from_status("gemini", 429, exhausted, {}).kind is ErrorKind.QUOTA


@given(st.text(min_size=8, max_size=20).filter(lambda s: s.strip() == s and "\x00" not in s), st.text(max_size=50))
def test_redact_removes_secret(secret: str, around: str) -> None:
    assert secret not in eh.redact(around + secret + around, [secret])


# --------------------------------------------------------------------------- the real services' behaviours


def reasoning_server(rec) -> Reply:
    """OpenAI (or Azure, OpenRouter) serving gpt-5 / o-series: temperature, top_p and max_tokens are refused."""
    body = rec.json()
    for name in ("temperature", "top_p", "max_tokens"):
        if name in body:
            hint = (
                "Use 'max_completion_tokens' instead."
                if name == "max_tokens"
                else "Only the default (1) value is supported."
            )
            return Reply(
                status=400,
                json={
                    "error": {
                        "message": f"Unsupported parameter: '{name}' is not supported with this model. {hint}",
                        "type": "invalid_request_error",
                        "param": name,
                        "code": "unsupported_parameter",
                    }
                },
            )
    return Reply(json=ok_completion(model="gpt-5-2025-08-07"))


@pytest.mark.parametrize("where", ["hosted", "base_url"])
def test_reasoning_models_get_only_what_they_accept(srv: FakeServer, env, where: str) -> None:
    srv.script("POST", CHAT, default=reasoning_server)
    if where == "hosted":
        env.setenv("OPENAI_API_KEY", KEY)
        env.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        adapter = OpenAIAdapter(ModelSpec.parse("openai:gpt-5-mini", top_p=0.9, seed=7))
    else:  # an Azure / OpenRouter / proxy deployment behind @base_url
        adapter = OpenAIAdapter(ModelSpec.parse(f"openai:gpt-5-mini@{srv.url}/v1", top_p=0.9, seed=7))
    opts = adapter.request_options()
    assert opts["family"] == "openai:gpt-5*" and opts["sent"] == {"seed": 7, "max_completion_tokens": 2048}
    assert [n.split()[0] for n in opts["not_sent"]] == ["temperature", "top_p"]
    resp = run(call(adapter, frames_request(1)))
    body = srv.requests[0].json()
    assert resp.text == "\\boxed{3}" and len(srv.requests) == 1
    assert body["max_completion_tokens"] == 321 and body["seed"] == 7
    assert not {"temperature", "top_p", "max_tokens"} & set(body)


def test_unsupported_parameter_400_names_the_params_file(srv: FakeServer, env, tmp_path: Path) -> None:
    """An unknown model gets the safe Chat Completions default; a service that refuses it says how to fix it."""
    srv.script("POST", CHAT, default=reasoning_server)
    adapter = OpenAIAdapter(ModelSpec.parse(f"openai:my-reasoner@{srv.url}/v1"))
    assert adapter.request_options()["family"] == "openai:*"
    with pytest.raises(ModelCallError) as err:
        run(call(adapter, frames_request(1)))
    assert err.value.kind is ErrorKind.BAD_REQUEST and "params.yaml" in err.value.message
    table = tmp_path / "params.yaml"
    table.write_text(
        'version: 1\nfamilies:\n  "openai:my-reasoner*": {family: reasoning, accepts: [seed, max_tokens],'
        " token_param: max_completion_tokens, reasoning: true}\n"
    )
    resp = run(
        call(OpenAIAdapter(ModelSpec.parse(f"openai:my-reasoner@{srv.url}/v1"), params=table), frames_request(1))
    )
    assert resp.text == "\\boxed{3}"


def test_length_with_empty_text_is_truncated_not_an_answer(srv: FakeServer, env) -> None:
    srv.script(
        "POST",
        CHAT,
        Reply(
            json=ok_completion(
                model="o4-mini",
                choices=[
                    {
                        "index": 0,
                        "finish_reason": "length",
                        "message": {"role": "assistant", "content": "", "refusal": None},
                    }
                ],
                usage={
                    "prompt_tokens": 900,
                    "completion_tokens": 321,
                    "total_tokens": 1221,
                    "completion_tokens_details": {"reasoning_tokens": 321},
                },
            )
        ),
    )
    with pytest.raises(ModelCallError) as err:
        run(call(hosted(srv, env), frames_request(1)))
    e = err.value
    assert e.kind is ErrorKind.TRUNCATED and "321 of them reasoning" in e.message
    assert e.response is not None and e.response.usage.output_tokens == 321 and e.response.cost_usd > 0
    from vidaudit.core.types import Status
    from vidaudit.run.retry import Decision, RetryPolicy, status_for

    assert status_for(e.kind) is Status.TRUNCATED and RetryPolicy().decide(e.kind) is Decision.GIVE_UP
    # text cut by the limit is still an answer: the suite's parser decides
    srv.script(
        "POST",
        CHAT,
        Reply(
            json=ok_completion(
                choices=[
                    {
                        "index": 0,
                        "finish_reason": "length",
                        "message": {"role": "assistant", "content": "The count is \\boxed{3} because", "refusal": None},
                    }
                ]
            )
        ),
    )
    assert run(call(hosted(srv, env), frames_request(1))).finish_reason == "length"


# ---- a vLLM-style server that loads the video and checks the processor's frames against its metadata


def colour_mp4(path: Path, n: int, fps: float) -> Path:
    from vidaudit.video.encode import write_video

    def f(i: int) -> np.ndarray:
        img = np.zeros((32, 32, 3), np.uint8)
        for b in range(8):  # the frame's index in binary, 4-pixel stripes: readable after a lossy encode
            img[:, 4 * b : 4 * b + 4] = 255 * ((i >> b) & 1)
        return img

    write_video(path, (f(i) for i in range(n)), fps=fps, width=32, height=32)
    return path


class VLLMQwen:
    """vLLM's default loader keeps ``num_frames`` frames uniformly, with the whole file's frame count and fps
    as metadata; Qwen3-VL's processor (do_sample_frames defaults to true) then takes linspace(0, total-1,
    duration*fps) and indexes the loaded frames with it; Qwen2.5-VL refuses an fps without metadata."""

    def __init__(self, family: str, num_frames: int = 32) -> None:
        self.family, self.num_frames, self.seen = family, num_frames, []

    def __call__(self, rec) -> Reply:
        from vidaudit.video.decode import iter_frames
        from vidaudit.video.probe import probe

        body = rec.json()
        kw = body.get("mm_processor_kwargs") or {}
        url = body["messages"][0]["content"][0]["video_url"]["url"]
        clip = Path(tempfile.mkdtemp()) / "v.mp4"
        clip.write_bytes(base64.b64decode(url.split(",", 1)[1]))
        info = probe(clip)
        frames = list(iter_frames(clip))
        keep = (
            frames
            if self.num_frames < 0 or len(frames) <= self.num_frames
            else [frames[int(i)] for i in np.linspace(0, len(frames) - 1, self.num_frames).round()]
        )
        if self.family == "qwen2.5" and "fps" in kw:
            return Reply(status=400, json={"error": {"message": "Qwen2.5-VL: fps given but no video metadata"}})
        if self.family == "qwen3" and kw.get("do_sample_frames", True):
            want = max(1, int(info.n_frames / info.fps * float(kw.get("fps", 2))))
            idx = np.linspace(0, info.n_frames - 1, want).round().astype(int)
            if idx.max() >= len(keep):
                return Reply(
                    status=500,
                    json={"error": {"message": f"index {idx.max()} is out of bounds for axis 0 with size {len(keep)}"}},
                )
            keep = [keep[i] for i in idx]
        self.seen = [sum(int(k[:, 4 * b : 4 * b + 4].mean() > 127) << b for b in range(8)) for k in keep]
        return Reply(json=ok_completion(text=f"\\boxed{{{len(keep)}}}"))


@pytest.mark.parametrize(
    "model,family", [("Qwen/Qwen3-VL-8B-Instruct", "qwen3"), ("Qwen/Qwen2.5-VL-7B-Instruct", "qwen2.5")]
)
def test_vllm_qwen_sees_exactly_the_selected_frames(
    srv: FakeServer, env, tmp_path: Path, model: str, family: str
) -> None:
    from vidaudit.core.timeline import Timeline
    from vidaudit.video.sampling import at_fps

    mp4 = colour_mp4(tmp_path / "v.mp4", n=64, fps=32.0)  # 2 s: more frames than vLLM's default 32
    sel = at_fps(Timeline.constant(64, 32.0), 4.0)
    server = VLLMQwen(family)
    srv.script("POST", CHAT, default=server)
    video = VideoPart(
        path=str(mp4),
        sha256=None,
        fps=4.0,
        duration_s=2.0,
        n_frames=64,
        source_fps=32.0,
        frame_indices=sel.indices,
        timestamps=sel.times,
    )
    req = Request(trial_id="t", parts=(video, TextPart("Count.")))

    # what vidaudit sent before: the whole file with do_sample_frames forced on
    old = OpenAIAdapter(ModelSpec.parse(f"openai:{model}@{srv.url}/v1"), video_route="file")
    with pytest.raises(ModelCallError) as err:
        run(call(old, req))
    assert ("out of bounds" if family == "qwen3" else "no video metadata") in err.value.message

    adapter = OpenAIAdapter(ModelSpec.parse(f"openai:{model}@{srv.url}/v1"))
    assert adapter.request_options()["video_route"] == "clip"
    resp = run(call(adapter, req))
    assert server.seen == list(sel.indices)  # the model saw exactly the frames recorded
    assert resp.frames_sent is None and resp.frames_estimated is False
    body = srv.requests[-1].json()
    assert body.get("mm_processor_kwargs", {}) == ({"do_sample_frames": False} if family == "qwen3" else {})


def test_clip_longer_than_the_server_keeps_is_refused(srv: FakeServer, env, tmp_path: Path) -> None:
    from vidaudit.core.timeline import Timeline
    from vidaudit.video.sampling import at_fps

    mp4 = colour_mp4(tmp_path / "v.mp4", n=64, fps=32.0)
    sel = at_fps(Timeline.constant(64, 32.0), 20.0)  # 40 frames > 32
    video = VideoPart(
        path=str(mp4),
        sha256=None,
        fps=20.0,
        duration_s=2.0,
        n_frames=64,
        source_fps=32.0,
        frame_indices=sel.indices,
        timestamps=sel.times,
    )
    req = Request(trial_id="t", parts=(video, TextPart("Count.")))
    with pytest.raises(ModelCallError) as err:
        run(call(OpenAIAdapter(ModelSpec.parse(f"openai:Qwen/Qwen3-VL-8B@{srv.url}/v1")), req))
    assert err.value.kind is ErrorKind.UNSUPPORTED and "num_frames" in err.value.message and srv.requests == []
    server = VLLMQwen("qwen3", num_frames=-1)  # started with --media-io-kwargs '{"video": {"num_frames": -1}}'
    srv.script("POST", CHAT, default=server)
    run(call(OpenAIAdapter(ModelSpec.parse(f"openai:Qwen/Qwen3-VL-8B@{srv.url}/v1"), server_num_frames=-1), req))
    assert server.seen == list(sel.indices)
