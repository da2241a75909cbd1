"""Claude through the official ``anthropic`` SDK (``AsyncAnthropic``, Messages API).

No native video: frames go as base64 JPEG image blocks, each after its ``t=...s`` text block. The
Messages API takes at most 100 images and 32 MB per request; both are declared in
``capabilities`` so a run can refuse a frames@K condition up front instead of paying for a 400.
Sampling: the Messages API has no seed; the current SDK (anthropic 2.x) has no ``temperature`` or
``top_p`` arguments, so they travel in ``extra_body``. Newer models refuse the two together
("temperature and top_p cannot both be specified"): the family table (``params.yaml``, ``sampling:
one``) sends the temperature and drops top_p. ``send_sampling_params=False`` sends neither (Claude then
samples at its default, temperature 1). What is actually sent is in ``request_options()["sent"]``, so
the trial id and the report record it, not the settings' defaults.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

try:  # optional until a call is made: a dry run plans without the SDK (see http_base)
    import anthropic
    from anthropic import AsyncAnthropic
except ImportError:  # pragma: no cover - depends on the environment
    anthropic = None  # type: ignore[assignment]

from vidaudit.core.types import GenerationSettings, ImagePart, ModelSpec, Request, Response, Usage, VideoPart
from vidaudit.models import errors_http as eh
from vidaudit.models.base import Capabilities, ModelCallError
from vidaudit.models.http_base import HTTPOptions, HTTPProvider
from vidaudit.models.provider_content import b64, base64_size, build_content, check_request, check_size

PROVIDER = "anthropic"
#: The Messages API requires max_tokens; under --provider-defaults (no limit asked) this is sent, the
#: largest value every current Claude model accepts.
REQUIRED_MAX_TOKENS = 4096
MAX_IMAGES = 100
MAX_REQUEST_BYTES = 32 * 1024 * 1024
LENGTH_FINISH = ("max_tokens",)


class _MessagesEncoder:
    def text(self, text: str) -> dict[str, Any]:
        return {"type": "text", "text": text}

    def image(self, jpeg: bytes, part: ImagePart) -> dict[str, Any]:
        return {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": b64(jpeg)}}

    def video(self, part: VideoPart) -> dict[str, Any]:  # pragma: no cover - check_request refuses first
        raise AssertionError("anthropic has no native video; check_request must refuse VideoParts")


@dataclass(frozen=True, kw_only=True)
class AnthropicOptions(HTTPOptions):
    """``AnthropicAdapter``'s options: the common ones and its own."""

    base_url: str | None = None
    max_images: int = MAX_IMAGES
    max_request_bytes: int = MAX_REQUEST_BYTES
    send_sampling_params: bool = True


class AnthropicAdapter(HTTPProvider, provider=PROVIDER, name_hint=", e.g. anthropic:claude-sonnet-4-5"):
    """``anthropic:MODEL``; ``base_url`` (option or ``@base_url``) for a proxy or a test server. Its keywords are
    the fields of :class:`AnthropicOptions`."""

    LENGTH_FINISH = LENGTH_FINISH

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        o = AnthropicOptions(**options)
        self._setup(spec, o)
        self.send_sampling_params = o.send_sampling_params
        key = self._key(o, ("ANTHROPIC_API_KEY",))
        self.capabilities = Capabilities(
            native_video=False,
            images=True,
            max_images=o.max_images,
            max_request_bytes=o.max_request_bytes,
            default_native_fps=None,
            concurrency=o.concurrency or 4,
        )
        if self._needs_client(anthropic, "anthropic"):
            self._client = self._stainless_client(anthropic, AsyncAnthropic, key, o.base_url or spec.base_url)

    def request_options(self) -> dict[str, object]:
        """Options that change the request bytes (in the trial id)."""
        sent, not_sent = self._wire(self.spec.settings)
        return {
            "jpeg_quality": self.jpeg_quality,
            "send_sampling_params": self.send_sampling_params,
            "family": self.family.pattern,
            "sent": sent,
            "not_sent": not_sent,
        }

    def _wire(self, settings: GenerationSettings) -> tuple[dict[str, Any], list[str]]:
        """What goes on the wire for these settings: the family's accepted ones (one of temperature and
        top_p for newer models), the required max_tokens, and nothing for sampling when turned off."""
        sent, not_sent = self.family.wire_settings(settings)
        if not self.send_sampling_params:
            not_sent += [f"{k} (send_sampling_params off)" for k in ("temperature", "top_p") if k in sent]
            sent = {k: v for k, v in sent.items() if k not in ("temperature", "top_p")}
        sent.setdefault("max_tokens", REQUIRED_MAX_TOKENS)
        return sent, not_sent

    def __repr__(self) -> str:
        return f"AnthropicAdapter({self.spec.label!r})"

    def build_kwargs(self, request: Request) -> dict[str, Any]:
        """The exact keyword arguments of ``messages.create`` for this request."""
        check_request(request, self.capabilities, self.spec.label)
        built = build_content(request, _MessagesEncoder(), jpeg_quality=self.jpeg_quality)
        check_size(base64_size(built.image_bytes) + built.text_chars, self.capabilities, self.spec.label)
        sent, _ = self._wire(request.settings)
        kwargs: dict[str, Any] = {
            "model": self.spec.name,
            "max_tokens": sent.pop("max_tokens"),
            "messages": [{"role": "user", "content": built.parts}],
        }
        if request.system:
            kwargs["system"] = request.system
        if sent:  # temperature or top_p: not arguments of the anthropic 2.x SDK
            kwargs["extra_body"] = sent
        return kwargs

    async def generate(self, request: Request) -> Response:
        kwargs = await asyncio.to_thread(self.build_kwargs, request)
        message, seconds = await self.call(lambda: self._client.messages.create(**kwargs), self._classify)
        return self._response(message, seconds, max_tokens=kwargs["max_tokens"])

    def _classify(self, e: Exception) -> ModelCallError | None:
        name = self.spec.label
        if isinstance(e, anthropic.APITimeoutError | asyncio.TimeoutError | TimeoutError):
            return eh.timeout_error(name, self.timeout_s)
        if isinstance(e, anthropic.APIStatusError):
            body = e.body if e.body is not None else e.response.text
            return eh.error_from_status(name, e.status_code, body, e.response.headers, self._secrets)
        if isinstance(e, anthropic.APIConnectionError):
            return eh.connection_error(name, e.__cause__ or e, self._secrets)
        if isinstance(e, anthropic.APIResponseValidationError):
            return eh.malformed_error(name, f"{type(e).__name__}: {e}", self._secrets)
        return eh.payload_error(name, e, self._secrets)

    def _response(self, message: Any, latency_s: float, *, max_tokens: int | None = None) -> Response:
        """The Response of a message the SDK built without validating it: every field is checked here."""
        name = self.spec.label
        content = getattr(message, "content", None)
        stop = eh.text_field(getattr(message, "stop_reason", None))
        if stop == "refusal":
            raise eh.refused_error(name, "stop_reason refusal", self._secrets)
        if not isinstance(content, list):
            raise eh.malformed_error(name, "no content blocks in the message", self._secrets)
        blocks = [getattr(b, "text", None) for b in content if getattr(b, "type", None) == "text"]
        texts = [t for t in blocks if isinstance(t, str)]
        if len(texts) != len(blocks):
            raise eh.malformed_error(name, "a text block without a string text", self._secrets)
        text = "".join(texts)
        if not content and stop != "max_tokens":
            raise eh.malformed_error(name, f"empty content (stop_reason {stop})", self._secrets)
        version = eh.text_field(getattr(message, "model", None))
        return self._answer(text, getattr(message, "usage", None), max_tokens, latency_s, stop, version)

    def _read_usage(self, raw: Any, reader: eh.UsageReader, max_tokens: int | None) -> Usage:
        return _usage(raw, reader, max_tokens)


def _usage(u: Any, reader: eh.UsageReader, max_tokens: int | None) -> Usage:
    """Anthropic's input_tokens exclude cache reads and writes; vidaudit's input counts every prompt token.
    Read as untrusted (see ``errors_http.UsageReader``)."""
    if u is None:
        return Usage()
    cache_read = reader.count("cached_tokens", getattr(u, "cache_read_input_tokens", None))
    cache_write = reader.count("input_tokens", getattr(u, "cache_creation_input_tokens", None))
    return reader.usage(
        input_tokens=reader.count("input_tokens", getattr(u, "input_tokens", None)) + cache_read + cache_write,
        output_tokens=reader.count("output_tokens", getattr(u, "output_tokens", None)),
        cached_tokens=cache_read,
        max_tokens=max_tokens,
    )
