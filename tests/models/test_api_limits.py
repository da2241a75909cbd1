"""Every HTTP adapter holds a call to a total deadline and a response to a size cap (``models/http_base``).

Against a real local server: one that trickles its answer a byte every 2 s (no read ever waits long enough
for the SDK's per-read timeout), one that answers a 50 MB body, announced or chunked, and one that answers
a gzip bomb (300 KB on the wire, 300 MiB decoded) although the client asked for identity encoding.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from clirun import counting_run_args
from httpfake import FakeServer, Reply
from vidaudit.core.types import (
    ErrorKind,
    GenerationSettings,
    ImagePart,
    ModelSpec,
    Request,
    TextPart,
)
from vidaudit.models.base import ModelCallError
from vidaudit.models.http_base import DEADLINE_FACTOR, DEFAULT_MAX_RESPONSE_BYTES

KEY = "sk-test-limits-0123456789abcdef"
BIG = 50 * 1024 * 1024
BOMB_MIB = 300


def _request() -> Request:
    img = np.zeros((16, 16, 3), np.uint8)
    return Request(
        trial_id="t1",
        parts=(TextPart("t=0.00s"), ImagePart(img, frame_index=0, t=0.0), TextPart("How many?")),
        settings=GenerationSettings(temperature=0.0, max_tokens=64),
    )


def _openai(url: str, **opts):
    from vidaudit.models.openai_compat import OpenAIAdapter

    return (
        OpenAIAdapter(ModelSpec.parse(f"openai:m@{url}/v1"), **opts),
        "/v1/chat/completions",
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "\\boxed{3}"}}
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        },
    )


def _anthropic(url: str, **opts):
    from vidaudit.models.anthropic import AnthropicAdapter

    return (
        AnthropicAdapter(ModelSpec.parse("anthropic:claude-test"), base_url=url, **opts),
        "/v1/messages",
        {
            "id": "msg",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": "\\boxed{3}"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 5, "output_tokens": 3},
        },
    )


def _gemini(url: str, **opts):
    from vidaudit.models.gemini import GeminiAdapter

    return (
        GeminiAdapter(ModelSpec.parse("gemini:gemini-2.5-flash"), base_url=url, use_disk_cache=False, **opts),
        "/v1beta/models/gemini-2.5-flash:generateContent",
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": "\\boxed{3}"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3},
        },
    )


PROVIDERS: dict[str, Callable] = {"openai": _openai, "anthropic": _anthropic, "gemini": _gemini}


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, KEY)
    for name in ("OPENAI_BASE_URL", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)


async def _generate(adapter) -> object:
    try:
        return await adapter.generate(_request())
    finally:
        await adapter.aclose()


def _fails(adapter) -> ModelCallError:
    with pytest.raises(ModelCallError) as info:
        asyncio.run(_generate(adapter))
    return info.value


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_trickling_server_is_cut_at_the_deadline(provider: str, keys: None) -> None:
    with FakeServer() as srv:
        adapter, path, body = PROVIDERS[provider](srv.url, timeout_s=5.0, deadline_s=2.5)
        srv.script("POST", path, Reply(json=body, trickle_s=2.0))  # ~100 bytes: minutes without a deadline
        t0 = time.monotonic()
        err = _fails(adapter)
        elapsed = time.monotonic() - t0
    assert err.kind is ErrorKind.TIMEOUT
    assert "deadline_s=2.5" in err.message and f"{provider}.deadline_s" in err.message
    assert 2.4 <= elapsed < 8.0, elapsed  # the read timeout (5 s) alone would never have fired


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_50_mb_body_is_not_read(provider: str, keys: None) -> None:
    with FakeServer() as srv:
        adapter, path, _ = PROVIDERS[provider](srv.url)
        srv.script("POST", path, Reply(body=b'{"x": "' + b"a" * BIG + b'"}'))
        err = _fails(adapter)
    assert err.kind is ErrorKind.TOO_LARGE
    assert f"max_response_bytes={DEFAULT_MAX_RESPONSE_BYTES:,}" in err.message
    assert f"Content-Length {BIG + 9:,}; not read" in err.message
    assert len(err.message) < 600


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_chunked_body_is_cut_once_past_the_cap(provider: str, keys: None) -> None:
    with FakeServer() as srv:
        adapter, path, _ = PROVIDERS[provider](srv.url, max_response_bytes=1 << 20)
        srv.script("POST", path, Reply(body=b'{"x": "' + b"a" * BIG + b'"}', chunked=True))
        err = _fails(adapter)
    assert err.kind is ErrorKind.TOO_LARGE
    assert "grew past the cap while being read" in err.message and "max_response_bytes=1,048,576" in err.message


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_defaults_and_bad_values(provider: str, keys: None) -> None:
    from vidaudit.core.errors import ConfigError

    adapter, _, _ = PROVIDERS[provider]("http://127.0.0.1:9", timeout_s=7.0)
    assert adapter.deadline_s == DEADLINE_FACTOR * 7.0
    assert adapter.max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES
    asyncio.run(adapter.aclose())
    for bad in ({"deadline_s": 0}, {"deadline_s": "soon"}, {"max_response_bytes": 0}, {"timeout_s": -1}):
        with pytest.raises(ConfigError, match=f"{provider}\\.(deadline_s|max_response_bytes|timeout_s)"):
            PROVIDERS[provider]("http://127.0.0.1:9", **bad)


def test_a_run_says_what_happened_and_stores_none_of_the_body(smoke_dir: Path, tmp_path: Path, keys: None) -> None:
    from vidaudit.cli import app
    from vidaudit.run.store.reader import StoreReader

    run_dir = tmp_path / "run"
    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", default=Reply(body=b"x" * (4 << 20), chunked=True))
        r = CliRunner().invoke(
            app,
            [
                *counting_run_args(smoke_dir, srv.url, 2),
                "--adapter-option",
                "openai.max_response_bytes=1000000",
                "--out",
                str(run_dir),
            ],
        )
    assert r.exit_code == 1, r.output
    flat = " ".join(r.output.split())
    assert "2 api_error (too_large): openai:m@" in flat and "max_response_bytes=1,000,000" in flat, r.output
    assert (run_dir / "store.sqlite").stat().st_size < 1_000_000
    with StoreReader(run_dir) as store:
        attempts = [a for row in store.trial_rows() for a in store.attempts(row.trial_id)]
    assert len(attempts) == 2 and all(a.response is None for a in attempts)  # not retried, nothing kept


# --------------------------------------------------------------------------- encoded bodies: the cap counts decoded bytes


def _compress(pieces, wbits: int) -> bytes:
    """``pieces`` (an iterable of bytes) compressed as one zlib stream (31: gzip, 15: zlib, -15: raw deflate)."""
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return b"".join([*(c.compress(p) for p in pieces), c.flush()])


def _gzip_bomb(head: bytes, tail: bytes) -> bytes:
    """``head + 300 MiB of "a" + tail``, gzip-encoded to about 300 KB (compressed a MiB at a time)."""
    block = b"a" * (1 << 20)
    data = _compress([head, *(block for _ in range(BOMB_MIB)), tail], 31)
    assert len(data) < 1_000_000
    return data


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """A JSON body of 300 MiB, gzip-encoded to about 300 KB."""
    return _gzip_bomb(b'{"x": "', b'"}')


@pytest.fixture(scope="module")
def completion_bomb() -> bytes:
    """A valid OpenAI chat completion whose answer is 300 MiB long (the issue's case: once stored as "ok")."""
    head = (
        b'{"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0, '
        b'"finish_reason": "stop", "message": {"role": "assistant", "content": "'
    )
    return _gzip_bomb(head, b'"}}], "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}')


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_gzip_bomb_is_cut_once_its_decoded_bytes_pass_the_cap(provider: str, keys: None, bomb: bytes) -> None:
    with FakeServer() as srv:
        adapter, path, _ = PROVIDERS[provider](srv.url)
        srv.script("POST", path, Reply(body=bomb, headers={"Content-Encoding": "gzip"}))
        err = _fails(adapter)
        sent = srv.requests_to(path)
    assert err.kind is ErrorKind.TOO_LARGE, err
    assert "grew past the cap while being read" in err.message
    assert f"max_response_bytes={DEFAULT_MAX_RESPONSE_BYTES:,}" in err.message
    assert [r.headers.get("accept-encoding") for r in sent] == ["identity"]  # the SDK's "gzip, deflate" replaced


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize(
    "coding,wbits",
    [
        ("gzip", (31,)),
        ("x-gzip", (31,)),
        ("deflate", (15,)),
        ("deflate", (-15,)),
        ("gzip, deflate", (31, 15)),
        ("identity, gzip", (31,)),
    ],
)
def test_an_encoded_answer_within_the_cap_is_decoded_and_read(
    provider: str, coding: str, wbits: tuple[int, ...], keys: None
) -> None:
    """A server (or proxy) that compresses although identity was asked for still gets its answer read."""
    with FakeServer() as srv:
        adapter, path, body = PROVIDERS[provider](srv.url, max_response_bytes=4096)
        data = json.dumps(body).encode() + b" " * 3000  # 3 kB decoded: under the cap, as is the wire size
        for w in wbits:
            data = _compress([data], w)
        srv.script("POST", path, Reply(body=data, headers={"Content-Encoding": coding}, chunked=True))
        resp = asyncio.run(_generate(adapter))
    assert resp.text == "\\boxed{3}"


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_an_answer_that_decodes_past_a_small_cap_is_refused(provider: str, keys: None) -> None:
    """The same answer as above, padded to 5 kB decoded (1.2 kB on the wire) under a 4,096-byte cap."""
    with FakeServer() as srv:
        adapter, path, body = PROVIDERS[provider](srv.url, max_response_bytes=4096)
        data = _compress([json.dumps(body).encode() + b" " * 5000], 31)
        assert len(data) < 4096
        srv.script("POST", path, Reply(body=data, headers={"Content-Encoding": "gzip"}))
        err = _fails(adapter)
    assert err.kind is ErrorKind.TOO_LARGE and "max_response_bytes=4,096" in err.message


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("coding", ["br", "zstd", "gzip, br", "gzip, gzip, gzip, gzip"])
def test_a_body_in_a_coding_that_cannot_be_counted_is_not_read(provider: str, coding: str, keys: None) -> None:
    with FakeServer() as srv:
        adapter, path, body = PROVIDERS[provider](srv.url)
        srv.script("POST", path, Reply(json=body, headers={"Content-Encoding": coding}))
        err = _fails(adapter)
    assert err.kind is ErrorKind.UNSUPPORTED, err
    assert f"Content-Encoding {coding!r} although identity was asked for" in err.message, err.message
    assert "nothing of it is stored" in err.message.lower()


_PEAK_WRAPPER = (
    "import atexit, os, runpy, sys\n"
    "def _hwm():\n"
    "    line = next(x for x in open('/proc/self/status') if x.startswith('VmHWM:'))\n"
    "    open(os.environ['VIDAUDIT_TEST_VMHWM'], 'w').write(line)\n"
    "atexit.register(_hwm)\n"
    "sys.argv = ['vidaudit', *sys.argv[1:]]\n"
    "runpy.run_module('vidaudit.cli', run_name='__main__')\n"
)


def test_a_run_against_a_gzip_bomb_stores_nothing_and_stays_small(
    smoke_dir: Path, tmp_path: Path, keys: None, completion_bomb: bytes
) -> None:
    """``vidaudit run`` in its own process against a server answering every call with the 300 MiB gzip bomb:
    each trial errors as too_large, the store stays under 50 MB and the process's peak memory is bounded."""
    from vidaudit.run.store.reader import StoreReader

    run_dir = tmp_path / "run"
    with FakeServer() as srv:
        srv.script(
            "POST", "/v1/chat/completions", default=Reply(body=completion_bomb, headers={"Content-Encoding": "gzip"})
        )
        hwm = tmp_path / "vmhwm.txt"
        env = {**os.environ, "OPENAI_API_KEY": KEY, "VIDAUDIT_TEST_VMHWM": str(hwm)}
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                _PEAK_WRAPPER,
                *counting_run_args(smoke_dir, srv.url, 2),
                "--out",
                str(run_dir),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        output = proc.stdout.decode()
    # the child's own high-water mark (VmHWM of its address space), read by itself at exit: ru_maxrss from wait4
    # also counts the parent's, because Linux carries the forking process's peak across exec (a pytest worker of
    # 1.2 GB made this test fail in a full run)
    peak_mb = int(hwm.read_text().split()[1]) / 1024  # "VmHWM:  123456 kB"
    assert proc.returncode == 1, output
    flat = " ".join(output.split())
    assert "2 api_error (too_large)" in flat, output
    assert (run_dir / "store.sqlite").stat().st_size < 50_000_000
    with StoreReader(run_dir) as store:
        attempts = [a for row in store.trial_rows() for a in store.attempts(row.trial_id)]
    assert len(attempts) == 2 and all(a.response is None for a in attempts)
    # measured: 355 MB peak and a 45 KB store with the cap on decoded bytes (the interpreter, the SDK, numpy
    # and the run's frames); above the old wire-byte cap httpx inflated both answers: "2 ok", 1.86 GB peak, a
    # 630 MB store
    assert peak_mb < 600, f"peak RSS {peak_mb:.0f} MB"
