"""Gemini adapter against a real local HTTP server speaking the Gemini API's wire format."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from pathlib import Path

import numpy as np
import pytest

from httpfake import FakeServer, Recorded, Reply
from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.types import ErrorKind, GenerationSettings, ImagePart, ModelSpec, Request, TextPart, VideoPart
from vidaudit.models.base import ModelCallError
from vidaudit.models.gemini import GeminiAdapter
from vidaudit.models.gemini_files import CachedFile, FileCache

KEY = "AIza-test-SECRET-0123456789abcdef"
MODEL = "gemini-2.5-flash"
GEN = f"/v1beta/models/{MODEL}:generateContent"
START_UPLOAD = "/upload/v1beta/files"
UPLOAD_SESSION = "/upload-session/"
FILES = "/v1beta/files/"


def camel(obj):
    """The API accepts proto field names in either spelling; compare in lowerCamel."""
    if isinstance(obj, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): camel(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [camel(v) for v in obj]
    return obj


def frame(i: int) -> np.ndarray:
    img = np.zeros((32, 32, 3), np.uint8)
    img[..., 2] = (i * 50) % 256
    return img


def ok_body(text: str = "\\boxed{2}", **over) -> dict:
    body = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "thinking...", "thought": True}, {"text": text}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 2000,
            "candidatesTokenCount": 40,
            "thoughtsTokenCount": 100,
            "cachedContentTokenCount": 500,
            "totalTokenCount": 2140,
        },
        "modelVersion": "gemini-2.5-flash-001",
    }
    body.update(over)
    return body


def file_json(state: str, name: str = "files/abc123") -> dict:
    return {
        "name": name,
        "uri": f"https://example.invalid/v1beta/{name}",
        "mimeType": "video/mp4",
        "sizeBytes": "1000",
        "state": state,
        "expirationTime": "2999-01-01T00:00:00Z",
    }


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch):
    for name in (
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_GEMINI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    return monkeypatch


@pytest.fixture
def srv():
    with FakeServer() as s:
        yield s


def script_upload(srv: FakeServer, *states: str) -> None:
    """The resumable-upload handshake, then one files.get per extra state."""
    srv.script("POST", START_UPLOAD, Reply(json={}, headers={"x-goog-upload-url": f"{srv.url}{UPLOAD_SESSION}1"}))
    srv.script(
        "POST", UPLOAD_SESSION, Reply(json={"file": file_json(states[0])}, headers={"X-Goog-Upload-Status": "final"})
    )
    for s in states[1:]:
        srv.script("GET", FILES, Reply(json=file_json(s)))


def adapter(srv: FakeServer, tmp_path: Path, **opts) -> GeminiAdapter:
    opts.setdefault("file_cache", tmp_path / "files.json")
    return GeminiAdapter(ModelSpec.parse(f"gemini:{MODEL}"), base_url=srv.url, poll_interval_s=0.01, **opts)


async def call(a: GeminiAdapter, *requests: Request) -> list:
    try:
        return [await a.generate(r) for r in requests]
    finally:
        await a.aclose()


def write_mp4(path: Path) -> Path:
    from vidaudit.video.encode import write_video

    write_video(path, (frame(i) for i in range(5)), fps=10, width=32, height=32)
    return path


def video_request(mp4: Path, fps: float = 1.0) -> Request:
    v = VideoPart(path=str(mp4), sha256=None, fps=fps, duration_s=0.5, n_frames=5, source_fps=10)
    return Request(
        trial_id="t",
        parts=(v, TextPart("How many blinks?")),
        system="Answer in \\boxed{}.",
        settings=GenerationSettings(temperature=0.0, max_tokens=512, seed=3),
    )


# --------------------------------------------------------------------------- payloads


def test_frames_inline_jpeg_system_and_usage(srv: FakeServer, env, tmp_path: Path) -> None:
    srv.script("POST", GEN, Reply(json=ok_body()))
    parts = (
        TextPart("t=0.00s"),
        ImagePart(frame(0), 0, 0.0),
        TextPart("t=0.50s"),
        ImagePart(frame(1), 15, 0.5),
        TextPart("Count."),
    )
    req = Request(trial_id="t", parts=parts, system="Be exact.", settings=GenerationSettings(max_tokens=99, seed=5))
    a = adapter(srv, tmp_path)
    assert a.capabilities.native_video and a.capabilities.default_native_fps == 1.0
    (resp,) = asyncio.run(call(a, req))

    (rec,) = srv.requests
    assert rec.headers["x-goog-api-key"] == KEY
    body = camel(rec.json())
    (content,) = body["contents"]
    assert content["role"] == "user"
    kinds = ["text" if "text" in p else "image" for p in content["parts"]]
    assert kinds == ["text", "image", "text", "image", "text"]
    assert [p["text"] for p in content["parts"] if "text" in p] == ["t=0.00s", "t=0.50s", "Count."]
    for p in content["parts"]:
        if "inlineData" in p:
            blob = p["inlineData"]
            assert blob["mimeType"] == "image/jpeg"
            assert base64.urlsafe_b64decode(blob["data"])[:2] == b"\xff\xd8"
    assert body["systemInstruction"]["parts"] == [{"text": "Be exact."}]
    gen = body["generationConfig"]
    assert gen["maxOutputTokens"] == 99 and gen["seed"] == 5 and gen["temperature"] == 0.0

    assert resp.text == "\\boxed{2}"  # the thought part is not answer text
    assert resp.finish_reason == "STOP" and resp.model_version == "gemini-2.5-flash-001"
    u = resp.usage
    assert (u.input_tokens, u.output_tokens, u.reasoning_tokens, u.cached_tokens) == (2000, 140, 100, 500)
    assert resp.cost_usd == pytest.approx((1500 * 0.30 + 500 * 0.075 + 140 * 2.50) / 1e6)


def test_native_video_uploads_once_polls_and_sends_fps(srv: FakeServer, env, tmp_path: Path) -> None:
    mp4 = write_mp4(tmp_path / "clip.mp4")
    script_upload(srv, "PROCESSING", "PROCESSING", "ACTIVE")
    srv.script("POST", GEN, Reply(json=ok_body()), Reply(json=ok_body()))
    asyncio.run(call(adapter(srv, tmp_path), video_request(mp4, fps=1.0), video_request(mp4, fps=4.0)))

    assert len(srv.requests_to(START_UPLOAD)) == 1  # second request reuses the upload
    (chunk,) = srv.requests_to(UPLOAD_SESSION)
    assert chunk.body == mp4.read_bytes()
    assert "finalize" in chunk.headers["x-goog-upload-command"]
    assert len(srv.requests_to(FILES, "GET")) == 2  # polled until ACTIVE
    gens = srv.requests_to(GEN)
    assert len(gens) == 2
    for rec, fps in zip(gens, (1.0, 4.0), strict=True):
        vpart, tpart = camel(rec.json()["contents"][0]["parts"])
        assert vpart["fileData"] == {"fileUri": file_json("ACTIVE")["uri"], "mimeType": "video/mp4"}
        assert vpart["videoMetadata"] == {"fps": fps}
        assert tpart == {"text": "How many blinks?"}

    cache = json.loads((tmp_path / "files.json").read_text())
    (entries,) = cache.values()
    assert set(entries) == {sha256_file(mp4)} and entries[sha256_file(mp4)]["name"] == "files/abc123"


def test_disk_cache_survives_a_new_adapter(srv: FakeServer, env, tmp_path: Path) -> None:
    mp4 = write_mp4(tmp_path / "clip.mp4")
    script_upload(srv, "ACTIVE")
    srv.script("POST", GEN, Reply(json=ok_body()), Reply(json=ok_body()))
    asyncio.run(call(adapter(srv, tmp_path), video_request(mp4)))
    asyncio.run(call(adapter(srv, tmp_path), video_request(mp4)))
    assert len(srv.requests_to(START_UPLOAD)) == 1 and len(srv.requests_to(GEN)) == 2


def test_failed_processing_and_poll_timeout(srv: FakeServer, env, tmp_path: Path) -> None:
    mp4 = write_mp4(tmp_path / "clip.mp4")
    script_upload(srv, "PROCESSING", "FAILED")
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(adapter(srv, tmp_path), video_request(mp4)))
    assert err.value.kind is ErrorKind.BAD_REQUEST and srv.requests_to(GEN) == []

    srv.clear()
    script_upload(srv, "PROCESSING")
    srv.script("GET", FILES, default=Reply(json=file_json("PROCESSING")))
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(adapter(srv, tmp_path, upload_timeout_s=0.2), video_request(mp4)))
    assert err.value.kind is ErrorKind.TIMEOUT and srv.requests_to(GEN) == []


def test_expired_cache_entry_is_not_used(tmp_path: Path) -> None:
    cache = FileCache(tmp_path / "c.json", "ns", margin_s=60)
    cache.put("a", CachedFile("files/a", "uri-a", "video/mp4", expires_at=time.time() + 30))
    cache.put("b", CachedFile("files/b", "uri-b", "video/mp4", expires_at=time.time() + 3600))
    assert cache.get("a") is None and cache.get("b").name == "files/b"
    again = FileCache(tmp_path / "c.json", "ns", margin_s=60)
    assert again.get("a") is None and again.get("b").uri == "uri-b"
    assert FileCache(tmp_path / "c.json", "other-namespace").get("b") is None


# --------------------------------------------------------------------------- faults


def quota_body(quota_id: str, retry: str | None) -> dict:
    details: list = [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaId": quota_id}]}]
    if retry:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry})
    return {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "details": details,
            "message": "You exceeded your current quota, please check your plan and billing details.",
        }
    }


FAULTS = [
    (
        "429-retry-after",
        Reply(
            status=429,
            json=quota_body("GenerateRequestsPerMinutePerProjectPerModel", None),
            headers={"Retry-After": "5"},
        ),
        ErrorKind.RATE_LIMIT,
        5.0,
    ),
    (
        "429-retryinfo",
        Reply(status=429, json=quota_body("GenerateRequestsPerMinutePerProjectPerModel", "13s")),
        ErrorKind.RATE_LIMIT,
        13.0,
    ),
    (
        "429-daily-quota",
        Reply(status=429, json=quota_body("GenerateRequestsPerDayPerProjectPerModel", None)),
        ErrorKind.QUOTA,
        None,
    ),
    (
        "500",
        Reply(status=500, json={"error": {"code": 500, "status": "INTERNAL", "message": "boom"}}),
        ErrorKind.TRANSIENT,
        None,
    ),
    (
        "503",
        Reply(status=503, json={"error": {"code": 503, "status": "UNAVAILABLE", "message": "overloaded"}}),
        ErrorKind.TRANSIENT,
        None,
    ),
    (
        "400",
        Reply(
            status=400,
            json={"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "Too many images in the request"}},
        ),
        ErrorKind.BAD_REQUEST,
        None,
    ),
    (
        "403",
        Reply(status=403, json={"error": {"code": 403, "status": "PERMISSION_DENIED", "message": "no"}}),
        ErrorKind.AUTH,
        None,
    ),
    ("malformed-json", Reply(body='{"candidates": [ '), ErrorKind.MALFORMED, None),
    ("no-candidates", Reply(json={"usageMetadata": {"promptTokenCount": 3}}), ErrorKind.MALFORMED, None),
    ("blocked-prompt", Reply(json={"promptFeedback": {"blockReason": "SAFETY"}}), ErrorKind.REFUSED, None),
    (
        "safety-finish",
        Reply(json=ok_body(candidates=[{"finishReason": "SAFETY", "index": 0}])),
        ErrorKind.REFUSED,
        None,
    ),
]


@pytest.mark.parametrize(("reply", "kind", "retry_after"), [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS])
def test_faults_after_exactly_one_call(
    srv: FakeServer, env, tmp_path: Path, reply: Reply, kind: ErrorKind, retry_after: float | None
) -> None:
    srv.script("POST", GEN, reply, default=Reply(json=ok_body()))
    req = Request(trial_id="t", parts=(TextPart("t=0.00s"), ImagePart(frame(0), 0, 0.0), TextPart("q")))
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(adapter(srv, tmp_path), req))
    assert err.value.kind is kind, str(err.value)
    assert len(srv.requests) == 1
    assert err.value.retry_after == (pytest.approx(retry_after) if retry_after is not None else None)
    assert KEY not in str(err.value)


def test_timeout_after_one_call(srv: FakeServer, env, tmp_path: Path) -> None:
    srv.script("POST", GEN, Reply(json=ok_body(), delay_s=3.0))
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(adapter(srv, tmp_path, timeout_s=0.3), Request(trial_id="t", parts=(TextPart("q"),))))
    assert err.value.kind is ErrorKind.TIMEOUT and len(srv.requests) == 1


def test_stale_upload_is_dropped_on_404(srv: FakeServer, env, tmp_path: Path) -> None:
    mp4 = write_mp4(tmp_path / "clip.mp4")
    script_upload(srv, "ACTIVE")
    srv.script(
        "POST",
        GEN,
        Reply(
            status=404, json={"error": {"code": 404, "status": "NOT_FOUND", "message": "File files/abc123 not found"}}
        ),
    )
    with pytest.raises(ModelCallError):
        asyncio.run(call(adapter(srv, tmp_path), video_request(mp4)))
    data = json.loads((tmp_path / "files.json").read_text())
    assert all(sha256_file(mp4) not in entries for entries in data.values())
    # and the next attempt uploads again
    srv.clear()
    script_upload(srv, "ACTIVE")
    srv.script("POST", GEN, Reply(json=ok_body()))
    asyncio.run(call(adapter(srv, tmp_path), video_request(mp4)))
    assert len(srv.requests_to(START_UPLOAD)) == 1


def test_missing_key_and_key_never_leaks(srv: FakeServer, env, tmp_path: Path) -> None:
    env.delenv("GEMINI_API_KEY")
    with pytest.raises(ConfigError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        GeminiAdapter(ModelSpec.parse(f"gemini:{MODEL}"), use_disk_cache=False)
    env.setenv("GOOGLE_API_KEY", KEY)

    def echo(rec: Recorded) -> Reply:
        return Reply(
            status=400,
            json={
                "error": {
                    "code": 400,
                    "status": "INVALID_ARGUMENT",
                    "message": f"API key not valid: {rec.headers['x-goog-api-key']}",
                }
            },
        )

    srv.script("POST", GEN, echo)
    a = adapter(srv, tmp_path)
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(a, Request(trial_id="t", parts=(TextPart("q"),))))
    for text in (
        str(err.value),
        repr(err.value),
        str(a),
        repr(a),
        (tmp_path / "files.json").read_text() if (tmp_path / "files.json").exists() else "",
    ):
        assert KEY not in text


# --------------------------------------------------------------------------- the real service's behaviours


class GeminiFiles:
    """The Files API as the service behaves: uploads create live files; generateContent answers 403 for a
    file it does not have ("... or it may not exist"), and 400 for a videoMetadata.fps outside (0, 24]."""

    def __init__(self, srv: FakeServer) -> None:
        self.srv, self.live, self.n = srv, set(), 0
        srv.script("POST", START_UPLOAD, default=self.start)
        srv.script("POST", UPLOAD_SESSION, default=self.finish)
        srv.script("POST", GEN, default=self.generate)

    def start(self, rec: Recorded) -> Reply:
        self.n += 1
        return Reply(json={}, headers={"x-goog-upload-url": f"{self.srv.url}{UPLOAD_SESSION}{self.n}"})

    def finish(self, rec: Recorded) -> Reply:
        name = f"files/live{self.n}"
        self.live.add(name)
        return Reply(json={"file": file_json("ACTIVE", name)}, headers={"X-Goog-Upload-Status": "final"})

    def generate(self, rec: Recorded) -> Reply:
        for part in camel(rec.json())["contents"][0]["parts"]:
            if "fileData" in part:
                name = part["fileData"]["fileUri"].split("/v1beta/", 1)[1]
                if name not in self.live:
                    return Reply(
                        status=403,
                        json={
                            "error": {
                                "code": 403,
                                "status": "PERMISSION_DENIED",
                                "message": f"You do not have permission to access the File {name.split('/')[1]} or it may "
                                "not exist.",
                            }
                        },
                    )
                fps = part.get("videoMetadata", {}).get("fps", 1.0)
                if not 0 < fps <= 24:
                    return Reply(
                        status=400,
                        json={
                            "error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "fps must be in (0, 24]"}
                        },
                    )
        return Reply(json=ok_body())


def test_missing_file_403_reuploads_once_and_succeeds(srv: FakeServer, env, tmp_path: Path) -> None:
    mp4 = write_mp4(tmp_path / "clip.mp4")
    svc = GeminiFiles(srv)
    a = adapter(srv, tmp_path)
    # a cache entry for a file the service deleted (or another key uploaded)
    a.files.put(
        sha256_file(mp4),
        CachedFile(
            "files/gone", "https://example.invalid/v1beta/files/gone", "video/mp4", expires_at=time.time() + 86400
        ),
    )
    (resp,) = asyncio.run(call(a, video_request(mp4)))
    assert resp.text == "\\boxed{2}"
    assert len(srv.requests_to(GEN)) == 2 and len(srv.requests_to(START_UPLOAD)) == 1
    assert a.files.get(sha256_file(mp4)).name == "files/live1" and svc.live == {"files/live1"}


def test_missing_file_twice_is_bad_request_not_auth(srv: FakeServer, env, tmp_path: Path) -> None:
    mp4 = write_mp4(tmp_path / "clip.mp4")
    svc = GeminiFiles(srv)
    svc.finish = lambda rec: Reply(
        json={"file": file_json("ACTIVE", "files/vanishes")},  # never becomes live
        headers={"X-Goog-Upload-Status": "final"},
    )
    srv.script("POST", UPLOAD_SESSION, default=svc.finish)
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(adapter(srv, tmp_path), video_request(mp4)))
    assert err.value.kind is ErrorKind.BAD_REQUEST and "again after uploading" in err.value.message
    assert len(srv.requests_to(GEN)) == 2 and len(srv.requests_to(START_UPLOAD)) == 2


def test_a_real_permission_403_stays_auth(srv: FakeServer, env, tmp_path: Path) -> None:
    srv.script(
        "POST",
        GEN,
        Reply(
            status=403,
            json={
                "error": {
                    "code": 403,
                    "status": "PERMISSION_DENIED",
                    "message": "Method doesn't allow unregistered callers",
                }
            },
        ),
    )
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(adapter(srv, tmp_path), Request(trial_id="t", parts=(TextPart("q"),))))
    assert err.value.kind is ErrorKind.AUTH and len(srv.requests) == 1


def test_fps_over_24_is_refused_before_any_upload(srv: FakeServer, env, tmp_path: Path) -> None:
    from vidaudit.models.base import native_fps_problem

    mp4 = write_mp4(tmp_path / "clip.mp4")
    GeminiFiles(srv)
    a = adapter(srv, tmp_path)
    assert a.capabilities.max_native_fps == 24.0
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(a, video_request(mp4, fps=30.0)))
    assert err.value.kind is ErrorKind.UNSUPPORTED and "at most at 24 fps" in err.value.message
    assert srv.requests == []
    assert native_fps_problem(a.capabilities, 24.0, "g") is None
    assert "K <= 24" in native_fps_problem(a.capabilities, 30.0, "g", "native@all")
    (resp,) = asyncio.run(call(adapter(srv, tmp_path), video_request(mp4, fps=24.0)))  # the limit itself is served
    assert resp.text == "\\boxed{2}"


def test_upload_chunk_failure_is_not_retried_inside_the_sdk(srv: FakeServer, env, tmp_path: Path) -> None:
    mp4 = write_mp4(tmp_path / "clip.mp4")
    srv.script("POST", START_UPLOAD, Reply(json={}, headers={"x-goog-upload-url": f"{srv.url}{UPLOAD_SESSION}1"}))
    # a 503 without X-Goog-Upload-Status: the SDK's own loop would sleep 1 s and send the chunk again
    srv.script(
        "POST",
        UPLOAD_SESSION,
        Reply(status=503, json={"error": {"code": 503, "message": "busy"}}),
        default=Reply(json={"file": file_json("ACTIVE")}, headers={"X-Goog-Upload-Status": "final"}),
    )
    start = time.perf_counter()
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(adapter(srv, tmp_path), video_request(mp4)))
    assert err.value.kind is ErrorKind.TRANSIENT and err.value.status_code == 503
    assert len(srv.requests_to(UPLOAD_SESSION)) == 1 and time.perf_counter() - start < 0.9
    assert srv.requests_to(GEN) == []


def test_aiohttp_connection_errors_are_transient(env, tmp_path: Path) -> None:
    try:
        import aiohttp
    except ImportError:
        print("SKIP reason: aiohttp is not installed, so the SDK cannot switch to it here")
        pytest.skip("aiohttp is not installed, so the SDK cannot switch to it here")
    a = GeminiAdapter(ModelSpec.parse(f"gemini:{MODEL}"), file_cache=tmp_path / "f.json")
    err = a._classify(aiohttp.ServerDisconnectedError())
    assert err is not None and err.kind is ErrorKind.TRANSIENT
    err = a._classify(aiohttp.ServerTimeoutError())
    assert err is not None and err.kind is ErrorKind.TIMEOUT


def test_thinking_budget_static_extraction_part_resolution_and_estimated_frames(
    srv: FakeServer, env, tmp_path: Path
) -> None:
    mp4 = write_mp4(tmp_path / "clip.mp4")
    GeminiFiles(srv)
    a = adapter(srv, tmp_path, part_media_resolution="MEDIA_RESOLUTION_LOW")
    opts = a.request_options()
    assert opts["sent"]["thinking_budget"] == 1024 and opts["media_processing"] == "STATIC"
    (resp,) = asyncio.run(call(a, video_request(mp4, fps=2.0)))
    body = camel(srv.requests_to(GEN)[0].json())
    assert body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 1024}
    vpart = body["contents"][0]["parts"][0]
    assert vpart["mediaProcessing"] == "STATIC" and vpart["mediaResolution"] == {"level": "MEDIA_RESOLUTION_LOW"}
    assert resp.frames_estimated is True  # Gemini sampled the video itself
    # the flag overrides the family default; a model without thinking gets none
    assert adapter(srv, tmp_path, thinking_budget=0).request_options()["sent"]["thinking_budget"] == 0
    plain = GeminiAdapter(ModelSpec.parse("gemini:gemini-2.0-flash"), base_url=srv.url, file_cache=tmp_path / "f")
    assert "thinking_budget" not in plain.request_options()["sent"]
    with pytest.raises(ConfigError):
        adapter(srv, tmp_path, thinking_budget=-5)


def test_max_tokens_spent_thinking_is_truncated(srv: FakeServer, env, tmp_path: Path) -> None:
    srv.script(
        "POST",
        GEN,
        Reply(
            json=ok_body(
                candidates=[
                    {
                        "content": {"role": "model", "parts": [{"text": "let me count...", "thought": True}]},
                        "finishReason": "MAX_TOKENS",
                        "index": 0,
                    }
                ],
                usageMetadata={"promptTokenCount": 2000, "candidatesTokenCount": 0, "thoughtsTokenCount": 512},
            )
        ),
    )
    req = Request(trial_id="t", parts=(TextPart("q"),), settings=GenerationSettings(max_tokens=512))
    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(adapter(srv, tmp_path), req))
    e = err.value
    assert e.kind is ErrorKind.TRUNCATED and "MAX_TOKENS" in e.message
    assert e.response.usage.reasoning_tokens == 512 and e.response.text == ""


def test_the_sdk_stays_on_httpx_even_where_aiohttp_is_installed(tmp_path: Path, env) -> None:
    """google-genai switches to aiohttp when it is importable (datasets and inspect-ai bring it); the adapter pins
    httpx so that its body checks and error classes hold whatever else is installed."""
    with FakeServer() as srv:
        a = adapter(srv, tmp_path)
        assert a._client._api_client._use_aiohttp() is False


def test_a_video_is_uploaded_as_its_own_container_and_an_unreadable_one_is_refused_before(
    srv: FakeServer, env, tmp_path: Path
) -> None:
    """Every file went up declared video/mp4: a WebM (SSv2's clips) was mislabelled, and a Matroska file, which
    Gemini does not read, was uploaded anyway. A WebM now goes up as video/webm; an MKV is refused before any
    byte is read or sent, with the remux that fixes it."""
    import subprocess

    webm, mkv = tmp_path / "clip.webm", tmp_path / "clip.mkv"
    mp4 = write_mp4(tmp_path / "clip.mp4")
    for out in (webm, mkv):
        codec = ["-c:v", "libvpx-vp9"] if out.suffix == ".webm" else ["-c", "copy"]
        subprocess.run(["ffmpeg", "-v", "error", "-i", str(mp4), *codec, str(out)], check=True)
    script_upload(srv, "ACTIVE")
    srv.script("POST", GEN, Reply(json=ok_body()))
    asyncio.run(call(adapter(srv, tmp_path), video_request(webm)))
    (start,) = srv.requests_to(START_UPLOAD)
    assert start.headers["x-goog-upload-header-content-type"] == start.json()["file"]["mime_type"] == "video/webm"

    with pytest.raises(ModelCallError) as err:
        asyncio.run(call(adapter(srv, tmp_path, file_cache=tmp_path / "other.json"), video_request(mkv)))
    assert err.value.kind is ErrorKind.UNSUPPORTED
    assert "clip.mkv is a .mkv file: remux it (ffmpeg -i IN -c copy OUT.mp4" in err.value.message
    assert len(srv.requests_to(START_UPLOAD)) == 1  # nothing more was uploaded
