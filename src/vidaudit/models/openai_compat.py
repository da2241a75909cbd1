"""OpenAI Chat Completions, hosted (api.openai.com) or any OpenAI-compatible server (vLLM, SGLang) at ``@base_url``.

Frames go as base64 JPEG ``image_url`` data URLs, each after its ``t=...s`` text line.

Generation settings are sent as the model's family accepts them (``params.yaml``: reasoning models
such as gpt-5 and the o-series take no ``temperature``/``top_p``); the token limit is always
``max_completion_tokens`` (OpenAI, Azure, OpenRouter, vLLM and SGLang all take it). What is sent and
what is not is in ``request_options()`` and so in the trial id and the report.

Native video is only for ``@base_url`` servers, as a ``video_url`` part. By default (``video_route=
"clip"``) it is a clip of exactly the frames vidaudit selected, re-encoded at K fps (``clips``), with
the family's ``mm_processor_kwargs`` (Qwen3-VL: ``do_sample_frames: false``), so the server samples
nothing and the frames recorded are the frames seen. The server must keep every frame of the clip
(``--media-io-kwargs '{"video": {"num_frames": -1}}'``; vLLM's default loader keeps 32), declared with
``server_num_frames`` (default 32: longer clips are refused). ``video_route="file"`` (implied by
``allow_local_paths=True``: a ``file://`` path for servers started with ``--allowed-local-media-path``)
sends the whole file with ``{"fps": K, "do_sample_frames": True}`` and the server samples by its own
rule: the frames recorded are then marked estimated. ``fps_extra_body=None`` sends no processor
kwargs at all, for servers that reject unknown fields.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

try:  # optional until a call is made: a dry run plans without the SDK (see http_base)
    import openai
    from openai import AsyncOpenAI
except ImportError:  # pragma: no cover - depends on the environment
    openai = None  # type: ignore[assignment]

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ErrorKind, ImagePart, ModelSpec, Request, Response, Usage, VideoPart
from vidaudit.models import errors_http as eh
from vidaudit.models.base import Capabilities, ModelCallError
from vidaudit.models.clips import selected_clip
from vidaudit.models.http_base import HTTPOptions, HTTPProvider
from vidaudit.models.pricing import is_local_endpoint
from vidaudit.models.provider_content import (
    base64_size,
    build_content,
    check_request,
    check_size,
    data_url,
    read_video_bytes,
    video_path,
)

PROVIDER = "openai"
#: api.openai.com documents up to 500 image inputs and 50 MB per request. Some deployments enforce
#: less (the Low-Frequency Trap paper, C.14, hit "Too many images in request: 51, maximum allowed:
#: 50"); pass max_images=50 for those.
HOSTED_MAX_IMAGES = 500
HOSTED_MAX_REQUEST_BYTES = 50 * 1024 * 1024
OPEN_DEFAULT_FPS = 2.0
#: vLLM's default video loader keeps this many frames of a video (``--media-io-kwargs`` num_frames).
VLLM_DEFAULT_NUM_FRAMES = 32
LENGTH_FINISH = ("length",)


def is_whole_file(part: VideoPart) -> bool:
    """The selection is every frame of the file (native@all): the file itself is the exact clip."""
    return len(part.frame_indices) == part.n_frames and tuple(part.frame_indices) == tuple(range(part.n_frames))


class _ChatEncoder:
    def __init__(self, detail: str | None, allow_local_paths: bool, route: str = "file") -> None:
        self.detail = detail
        self.allow_local_paths = allow_local_paths
        self.route = route
        self.video_bytes = 0

    def text(self, text: str) -> dict[str, Any]:
        return {"type": "text", "text": text}

    def image(self, jpeg: bytes, part: ImagePart) -> dict[str, Any]:
        url: dict[str, Any] = {"url": data_url("image/jpeg", jpeg)}
        if self.detail:
            url["detail"] = self.detail
        return {"type": "image_url", "image_url": url}

    def video(self, part: VideoPart) -> dict[str, Any]:
        if self.route == "clip" and not is_whole_file(part):
            data = selected_clip(part)
            self.video_bytes += len(data)
            return {"type": "video_url", "video_url": {"url": data_url("video/mp4", data)}}
        if self.allow_local_paths:
            return {"type": "video_url", "video_url": {"url": video_path(part).resolve().as_uri()}}
        data = read_video_bytes(part)
        self.video_bytes += len(data)
        return {"type": "video_url", "video_url": {"url": data_url("video/mp4", data)}}


@dataclass(frozen=True, kw_only=True)
class OpenAIOptions(HTTPOptions):
    """``OpenAIAdapter``'s options: the common ones (with a shorter ``timeout_s``) and its own."""

    timeout_s: float = 120.0
    image_detail: str | None = None
    allow_local_paths: bool = False
    fps_extra_body: str | None = "mm_processor_kwargs"
    #: None: the hosted API's limit, none for a server at ``@base_url``
    max_images: int | None = None
    max_request_bytes: int | None = None
    #: None: "file" with ``allow_local_paths``, else "clip"
    video_route: str | None = None
    server_num_frames: int | None = VLLM_DEFAULT_NUM_FRAMES

    def __post_init__(self) -> None:
        if self.image_detail not in (None, "low", "high", "auto"):
            raise ConfigError(f"image_detail must be low, high or auto, got {self.image_detail!r}")
        if self.video_route and self.video_route not in ("clip", "file"):
            raise ConfigError(f"video_route must be clip or file, got {self.video_route!r}")


class OpenAIAdapter(
    HTTPProvider,
    provider=PROVIDER,
    spec_form="openai:MODEL[@base_url]",
    name_hint=": openai:gpt-4o or openai:Qwen/Qwen2.5-VL-7B@http://host:8000/v1",
):
    """``openai:MODEL`` (hosted) or ``openai:MODEL@http://host:port/v1`` (vLLM, SGLang, ...). Its keywords are the
    fields of :class:`OpenAIOptions`."""

    LENGTH_FINISH = LENGTH_FINISH

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        o = OpenAIOptions(**options)
        self._setup(spec, o)
        self.video_route = o.video_route or ("file" if o.allow_local_paths else "clip")
        # -1 (or any count below 1): the server keeps every frame
        self.server_num_frames = o.server_num_frames if (o.server_num_frames or 0) >= 1 else None
        self.hosted = spec.base_url is None
        self.image_detail = o.image_detail
        self.allow_local_paths = o.allow_local_paths
        self.fps_extra_body = o.fps_extra_body
        key = self._key(o, ("OPENAI_API_KEY",), required=self.hosted)
        self.capabilities = Capabilities(
            native_video=not self.hosted,
            images=True,
            max_images=o.max_images if o.max_images is not None else (HOSTED_MAX_IMAGES if self.hosted else None),
            max_request_bytes=o.max_request_bytes
            if o.max_request_bytes is not None
            else (HOSTED_MAX_REQUEST_BYTES if self.hosted else None),
            default_native_fps=None if self.hosted else OPEN_DEFAULT_FPS,
            concurrency=o.concurrency or (8 if self.hosted else 16),
            local=is_local_endpoint(spec.base_url),
        )
        if self._needs_client(openai, "openai"):
            self._client = self._stainless_client(openai, AsyncOpenAI, key, spec.base_url)

    def request_options(self) -> dict[str, object]:
        """Options that change the request bytes or what the server does with them (in the trial id)."""
        sent, not_sent = self.family.wire_settings(self.spec.settings)
        opts: dict[str, object] = {
            "jpeg_quality": self.jpeg_quality,
            "image_detail": self.image_detail,
            "video_route": self.video_route if not self.allow_local_paths else "file_path",
            "fps_extra_body": self.fps_extra_body,
            "family": self.family.pattern,
            "sent": sent,
            "not_sent": not_sent,
        }
        if not self.hosted:
            opts["video_kwargs"] = self._video_kwargs(None)
        return opts

    def _video_kwargs(self, fps: float | None) -> dict[str, Any]:
        """The processor kwargs sent with a video (the clip route's come from the family table)."""
        if self.video_route == "clip":
            return self.family.mm_processor_kwargs()
        return {"fps": fps if fps is not None else "K", "do_sample_frames": True}

    def __repr__(self) -> str:
        return f"OpenAIAdapter({self.spec.label!r})"

    # ------------------------------------------------------------------ request

    def build_kwargs(self, request: Request) -> dict[str, Any]:
        """The exact keyword arguments of ``chat.completions.create`` for this request."""
        check_request(request, self.capabilities, self.spec.label)
        fps = {p.fps for p in request.videos}
        if len(fps) > 1:
            raise ModelCallError(
                ErrorKind.BAD_REQUEST,
                f"{self.spec.label}: videos at different fps {sorted(fps)} "
                "in one request; the server takes one sampling rate per request",
            )
        if self.video_route == "clip" and self.server_num_frames is not None:
            for v in request.videos:
                if len(v.frame_indices) > self.server_num_frames:
                    raise ModelCallError(
                        ErrorKind.UNSUPPORTED,
                        (
                            f"{self.spec.label}: the clip has {len(v.frame_indices)} frames but the server keeps "
                            f"{self.server_num_frames} (vLLM's default); start it with --media-io-kwargs "
                            '\'{"video": {"num_frames": -1}}\' and pass server_num_frames=-1, or lower the fps'
                        ),
                    )
        encoder = _ChatEncoder(self.image_detail, self.allow_local_paths, self.video_route)
        built = build_content(request, encoder, jpeg_quality=self.jpeg_quality)
        check_size(
            base64_size(built.image_bytes) + base64_size(encoder.video_bytes) + built.text_chars,
            self.capabilities,
            self.spec.label,
        )
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": built.parts})
        sent, _ = self.family.wire_settings(request.settings)
        kwargs: dict[str, Any] = {"model": self.spec.name, "messages": messages, **sent}
        if fps and self.fps_extra_body:
            video_kwargs = self._video_kwargs(fps.pop())
            if video_kwargs:
                kwargs["extra_body"] = {self.fps_extra_body: video_kwargs}
        return kwargs

    # ------------------------------------------------------------------ call

    async def generate(self, request: Request) -> Response:
        kwargs = await asyncio.to_thread(self.build_kwargs, request)
        completion, seconds = await self.call(lambda: self._client.chat.completions.create(**kwargs), self._classify)
        resp = self._response(completion, seconds, max_tokens=request.settings.max_tokens)
        if request.videos and self.video_route == "file" and not all(is_whole_file(v) for v in request.videos):
            resp = resp.model_copy(update={"frames_estimated": True})  # the server sampled by its own rule
        return resp

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
        if text is None and finish in LENGTH_FINISH:
            text = ""  # a reasoning model that spent the whole budget thinking: TRUNCATED below
        if not isinstance(text, str):
            raise eh.malformed_error(name, f"choice 0 has no text content ({_preview(completion)})", self._secrets)
        version = eh.text_field(getattr(completion, "model", None)) or None
        return self._answer(text, getattr(completion, "usage", None), max_tokens, latency_s, finish, version)

    def _read_usage(self, raw: Any, reader: eh.UsageReader, max_tokens: int | None) -> Usage:
        return _usage(raw, reader, max_tokens)


def _usage(u: Any, reader: eh.UsageReader, max_tokens: int | None) -> Usage:
    """Chat Completions usage, read as untrusted (see ``errors_http.UsageReader``)."""
    if u is None:
        return Usage()
    details = getattr(u, "completion_tokens_details", None)
    prompt_details = getattr(u, "prompt_tokens_details", None)
    return reader.usage(
        input_tokens=reader.count("input_tokens", getattr(u, "prompt_tokens", None)),
        output_tokens=reader.count("output_tokens", getattr(u, "completion_tokens", None)),
        reasoning_tokens=reader.count("reasoning_tokens", getattr(details, "reasoning_tokens", None)),
        cached_tokens=reader.count("cached_tokens", getattr(prompt_details, "cached_tokens", None)),
        max_tokens=max_tokens,
    )


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
