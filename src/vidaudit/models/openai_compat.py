"""OpenAI Chat Completions, hosted (api.openai.com) or any OpenAI-compatible server (vLLM, SGLang) at ``@base_url``.

Frames go as base64 JPEG ``image_url`` data URLs, each after its ``t=...s`` text line. Native video
is only for ``@base_url`` servers: a ``video_url`` part (a data URL of the mp4 bytes, or a
``file://`` path with ``allow_local_paths=True`` when the server shares the filesystem and was
started with ``--allowed-local-media-path``), and the sampling rate asked of the server goes in
``extra_body={"mm_processor_kwargs": {"fps": K, "do_sample_frames": True}}``. That is the per-request
route vLLM added for Qwen-VL models (vllm-project/vllm PR #13533; Qwen3-VL's serving notes, PR #1644);
it only takes effect when the server keeps every decoded frame (``--media-io-kwargs
'{"video": {"num_frames": -1}}'``), otherwise vLLM first samples 32 frames uniformly. Servers that
ignore the key simply do not resample, which is why the fps actually requested is also logged with
the trial. ``fps_extra_body=None`` turns the key off for servers that reject unknown fields.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import openai
import pydantic
from openai import AsyncOpenAI

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ErrorKind, ImagePart, ModelSpec, Request, Response, Usage, VideoPart
from vidaudit.models import errors_http as eh
from vidaudit.models.base import Capabilities, ModelCallError
from vidaudit.models.pricing import PriceTable, cost_usd, is_local_endpoint, load_prices
from vidaudit.models.request_builder import (
    DEFAULT_JPEG_QUALITY,
    base64_size,
    build_content,
    check_jpeg_quality,
    check_request,
    check_size,
    data_url,
    read_video_bytes,
    resolve_api_key,
    video_path,
)

PROVIDER = "openai"
#: api.openai.com documents up to 500 image inputs and 50 MB per request. Some deployments enforce
#: less (the Low-Frequency Trap paper, C.14, hit "Too many images in request: 51, maximum allowed:
#: 50"); pass max_images=50 for those.
HOSTED_MAX_IMAGES = 500
HOSTED_MAX_REQUEST_BYTES = 50 * 1024 * 1024
OPEN_DEFAULT_FPS = 2.0


class _ChatEncoder:
    def __init__(self, detail: str | None, allow_local_paths: bool) -> None:
        self.detail = detail
        self.allow_local_paths = allow_local_paths
        self.video_bytes = 0

    def text(self, text: str) -> dict[str, Any]:
        return {"type": "text", "text": text}

    def image(self, jpeg: bytes, part: ImagePart) -> dict[str, Any]:
        url: dict[str, Any] = {"url": data_url("image/jpeg", jpeg)}
        if self.detail:
            url["detail"] = self.detail
        return {"type": "image_url", "image_url": url}

    def video(self, part: VideoPart) -> dict[str, Any]:
        if self.allow_local_paths:
            return {"type": "video_url", "video_url": {"url": video_path(part).resolve().as_uri()}}
        data = read_video_bytes(part)
        self.video_bytes += len(data)
        return {"type": "video_url", "video_url": {"url": data_url("video/mp4", data)}}


class OpenAIAdapter:
    """``openai:MODEL`` (hosted) or ``openai:MODEL@http://host:port/v1`` (vLLM, SGLang, ...)."""

    def __init__(self, spec: ModelSpec, *, timeout_s: float = 120.0, api_key_env: str | None = None,
                 jpeg_quality: int = DEFAULT_JPEG_QUALITY, image_detail: str | None = None,
                 allow_local_paths: bool = False, fps_extra_body: str | None = "mm_processor_kwargs",
                 max_images: int | None = None, max_request_bytes: int | None = None,
                 concurrency: int | None = None, prices: str | Path | PriceTable | None = None) -> None:
        if spec.provider != PROVIDER:
            raise ConfigError(f"OpenAIAdapter got a {spec.provider!r} spec; use openai:MODEL[@base_url]")
        if not spec.name:
            raise ConfigError("openai needs a model name: openai:gpt-4o or openai:Qwen/Qwen2.5-VL-7B@http://host:8000/v1")
        if timeout_s <= 0:
            raise ConfigError(f"timeout_s must be positive, got {timeout_s}")
        if image_detail not in (None, "low", "high", "auto"):
            raise ConfigError(f"image_detail must be low, high or auto, got {image_detail!r}")
        self.spec = spec
        self.hosted = spec.base_url is None
        self.timeout_s = float(timeout_s)
        self.jpeg_quality = check_jpeg_quality(jpeg_quality)
        self.image_detail = image_detail
        self.allow_local_paths = allow_local_paths
        self.fps_extra_body = fps_extra_body
        self._prices = prices if isinstance(prices, PriceTable) else load_prices(prices)
        env = (api_key_env,) if api_key_env else ("OPENAI_API_KEY",)
        key = resolve_api_key(env, provider=PROVIDER, required=self.hosted)
        self._secrets = (key,)
        self.capabilities = Capabilities(
            native_video=not self.hosted,
            images=True,
            max_images=max_images if max_images is not None else (HOSTED_MAX_IMAGES if self.hosted else None),
            max_request_bytes=max_request_bytes if max_request_bytes is not None
            else (HOSTED_MAX_REQUEST_BYTES if self.hosted else None),
            default_native_fps=None if self.hosted else OPEN_DEFAULT_FPS,
            concurrency=concurrency or (8 if self.hosted else 16),
            local=is_local_endpoint(spec.base_url),
        )
        self._client = AsyncOpenAI(api_key=key, base_url=spec.base_url, timeout=self.timeout_s, max_retries=0)

    def request_options(self) -> dict[str, object]:
        """Options that change the request bytes or what the server does with them (in the trial id)."""
        return {"jpeg_quality": self.jpeg_quality, "image_detail": self.image_detail,
                "video_route": "file" if self.allow_local_paths else "data_url", "fps_extra_body": self.fps_extra_body}

    def __repr__(self) -> str:
        return f"OpenAIAdapter({self.spec.label!r})"

    # ------------------------------------------------------------------ request

    def build_kwargs(self, request: Request) -> dict[str, Any]:
        """The exact keyword arguments of ``chat.completions.create`` for this request."""
        check_request(request, self.capabilities, self.spec.label)
        fps = {p.fps for p in request.videos}
        if len(fps) > 1:
            raise ModelCallError(ErrorKind.BAD_REQUEST, f"{self.spec.label}: videos at different fps {sorted(fps)} "
                                 "in one request; the server takes one sampling rate per request")
        encoder = _ChatEncoder(self.image_detail, self.allow_local_paths)
        built = build_content(request, encoder, jpeg_quality=self.jpeg_quality)
        check_size(base64_size(built.image_bytes) + base64_size(encoder.video_bytes) + built.text_chars,
                   self.capabilities, self.spec.label)
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": built.parts})
        s = request.settings
        kwargs: dict[str, Any] = {"model": self.spec.name, "messages": messages}
        if s.max_tokens is not None:
            kwargs["max_completion_tokens" if self.hosted else "max_tokens"] = s.max_tokens
        if s.temperature is not None:
            kwargs["temperature"] = s.temperature
        if s.top_p is not None:
            kwargs["top_p"] = s.top_p
        if s.seed is not None:
            kwargs["seed"] = s.seed
        if fps and self.fps_extra_body:
            kwargs["extra_body"] = {self.fps_extra_body: {"fps": fps.pop(), "do_sample_frames": True}}
        return kwargs

    # ------------------------------------------------------------------ call

    async def generate(self, request: Request) -> Response:
        kwargs = await asyncio.to_thread(self.build_kwargs, request)
        completion, seconds = await eh.classified_call(
            lambda: self._client.chat.completions.create(**kwargs), self._classify)
        return self._response(completion, seconds, max_tokens=request.settings.max_tokens)

    def _classify(self, e: Exception) -> ModelCallError | None:
        name = self.spec.label
        if isinstance(e, openai.APITimeoutError | asyncio.TimeoutError | TimeoutError):
            return eh.timeout_error(name, self.timeout_s)
        if isinstance(e, openai.APIStatusError):
            return eh.error_from_status(name, e.status_code, _body(e), e.response.headers, self._secrets)
        if isinstance(e, openai.APIConnectionError):
            return eh.connection_error(name, e.__cause__ or e, self._secrets)
        if isinstance(e, openai.APIResponseValidationError):
            return eh.malformed_error(name, f"{type(e).__name__}: {e}", self._secrets)
        return eh.payload_error(name, e, self._secrets)

    def _response(self, completion: Any, latency_s: float, *, max_tokens: int | None = None) -> Response:
        """The Response of a completion the SDK built without validating it: every field is checked here."""
        name = self.spec.label
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise eh.malformed_error(name, f"no choices in the completion ({_preview(completion)})", self._secrets)
        choice = choices[0]
        message = getattr(choice, "message", None)
        finish = eh.text_field(getattr(choice, "finish_reason", None))
        if finish == "content_filter":
            raise eh.refused_error(name, "finish_reason content_filter", self._secrets)
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise eh.refused_error(name, _preview(refusal), self._secrets)
        text = getattr(message, "content", None)
        if not isinstance(text, str):
            raise eh.malformed_error(name, f"choice 0 has no text content ({_preview(completion)})", self._secrets)
        reader = eh.UsageReader()
        usage = _usage(getattr(completion, "usage", None), reader, max_tokens)
        try:
            return Response(text=text, usage=usage, latency_s=latency_s,
                            finish_reason=eh.flag_finish(finish, reader.clamped),
                            model_version=eh.text_field(getattr(completion, "model", None)) or None,
                            cost_usd=cost_usd(self.spec, usage, self._prices))
        except pydantic.ValidationError as e:  # pragma: no cover - every field is checked above
            raise eh.malformed_error(name, f"{type(e).__name__}: {e}", self._secrets) from None

    async def aclose(self) -> None:
        await self._client.close()


def _usage(u: Any, reader: eh.UsageReader, max_tokens: int | None) -> Usage:
    """Chat Completions usage, read as untrusted (see ``errors_http.UsageReader``)."""
    if u is None:
        return Usage()
    details = getattr(u, "completion_tokens_details", None)
    prompt_details = getattr(u, "prompt_tokens_details", None)
    return reader.usage(input_tokens=reader.count("input_tokens", getattr(u, "prompt_tokens", None)),
                        output_tokens=reader.count("output_tokens", getattr(u, "completion_tokens", None)),
                        reasoning_tokens=reader.count("reasoning_tokens", getattr(details, "reasoning_tokens", None)),
                        cached_tokens=reader.count("cached_tokens", getattr(prompt_details, "cached_tokens", None)),
                        max_tokens=max_tokens)


def _body(e: Any) -> Any:
    body = getattr(e, "body", None)
    if body is None:
        try:
            return e.response.text
        except Exception:
            return None
    return body


def _preview(obj: Any) -> str:
    try:
        text = repr(obj)
    except Exception:  # noqa: BLE001 - a hostile object that cannot print itself is still reported
        return f"<{type(obj).__name__}>"
    return text if len(text) < 200 else text[:200] + "..."
