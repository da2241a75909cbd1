"""Gemini through the official ``google-genai`` SDK (``client.aio``).

Native video goes through the Files API: uploaded once per video sha256 (see ``gemini_files``),
polled until ACTIVE, then sent as a ``file_data`` part whose ``video_metadata.fps`` is the rate the
condition asks for, so "native@1" and "native@4" are different, explicit inputs rather than
whatever the service defaults to. Frames go as inline JPEG bytes after their ``t=...s`` lines.
SDK retries are off (``HttpRetryOptions(attempts=1)``, which also disables the SDK's implicit
connection retry); the executor owns retries. The SDK's upload loop retries a chunk by itself (three
times, 1-4 s apart) whenever an answer lacks ``X-Goog-Upload-Status``; the body hook below turns such
an answer into a classified error at once, so an upload failure reaches the one retry layer too.

A file the service no longer has (deleted, expired, or uploaded under another key) answers 403
"You do not have permission to access the File ... or it may not exist" (or 404): the cache entry is
dropped, the video uploaded again and the call made once more, inside the same attempt; only a
second miss is an error, and a BAD_REQUEST, never an AUTH that would stop the run.

Each video part asks for static extraction (``media_processing=STATIC``: "fixed-rate frame
extraction, all frames placed in context") so that the requested fps is the one used, not the
model-specific default; ``part_media_resolution`` sets the per-part ``media_resolution`` level
(``media_resolution`` is the request-wide one). The frames recorded for a video are vidaudit's j/K grid,
Gemini's own sampling being unpublished: such responses are marked ``frames_estimated``.

Thinking models (Gemini 2.5, 3) spend the output budget on thoughts first; the family table
(``params.yaml``) sends an explicit ``thinking_config.thinking_budget`` (1024 by default; the
``thinking_budget`` option overrides it: 0 off, -1 automatic), and a ``MAX_TOKENS`` finish with no
answer text is a TRUNCATED outcome, never an empty answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:  # optional until a call is made: a dry run plans without the SDK (see http_base)
    import httpx2
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types
except ImportError:  # pragma: no cover - depends on the environment
    genai = types = None  # type: ignore[assignment]

from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import sha256_text
from vidaudit.core.types import ErrorKind, ImagePart, ModelSpec, Request, Response, Usage, VideoPart
from vidaudit.models import errors_http as eh
from vidaudit.models.base import Capabilities, ModelCallError
from vidaudit.models.gemini_files import DEFAULT_TTL_S, CachedFile, FileCache, default_cache_path
from vidaudit.models.http_base import HTTPOptions, HTTPProvider
from vidaudit.models.provider_content import (
    Stopwatch,
    build_content,
    check_native_fps,
    check_request,
    check_size,
    video_path,
    video_sha256,
)

PROVIDER = "gemini"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
#: Inline data in one generateContent request is limited to 20 MB (larger media must use the Files API).
MAX_INLINE_BYTES = 20 * 1024 * 1024
MAX_IMAGES = 3600
DEFAULT_NATIVE_FPS = 1.0
#: The Gemini API documents the Files API and ``videoMetadata`` (per-part fps) on v1beta; pinned so an
#: SDK upgrade that changes its default version cannot silently drop the fps.
DEFAULT_API_VERSION = "v1beta"
#: The HTTP statuses of the bodies read during one SDK call (a fresh list per call, see ``_reading``).
_BODIES: contextvars.ContextVar[list[int]] = contextvars.ContextVar("vidaudit_gemini_bodies")
#: ``VideoMetadata.fps`` must lie in (0, 24] (google-genai ``types.VideoMetadata``); a higher rate is
#: refused before the run (``Capabilities.max_native_fps``), never sent.
MAX_NATIVE_FPS = 24.0
#: What the service says for an uploaded file it does not have (any more, or for this key).
_MISSING_FILE = re.compile(
    r"permission to access the File|may not exist|\bfiles?/\S+ (?:was |is )?not found|"
    r"File \S+ (?:was |is )?not found",
    re.IGNORECASE,
)
try:  # the SDK switches to aiohttp for some transports when it is installed
    import aiohttp as _aiohttp

    _AIOHTTP_TIMEOUT: tuple[type[BaseException], ...] = (_aiohttp.ServerTimeoutError,)
    _AIOHTTP_TRANSIENT: tuple[type[BaseException], ...] = (_aiohttp.ClientConnectionError, _aiohttp.ClientPayloadError)
except ImportError:  # pragma: no cover - depends on the environment
    _AIOHTTP_TIMEOUT = ()
    _AIOHTTP_TRANSIENT = ()
_REFUSAL_FINISH = frozenset(
    {
        "SAFETY",
        "PROHIBITED_CONTENT",
        "BLOCKLIST",
        "SPII",
        "RECITATION",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "MODEL_ARMOR",
    }
)


class _GeminiEncoder:
    def __init__(
        self, videos: dict[str, CachedFile], media_processing: str | None = None, part_resolution: str | None = None
    ) -> None:
        self.videos = videos  # VideoPart.path -> uploaded file
        self.media_processing = types.MediaProcessing(media_processing) if media_processing else None
        self.resolution = (
            types.PartMediaResolution(level=types.PartMediaResolutionLevel(part_resolution))
            if part_resolution
            else None
        )

    def text(self, text: str) -> types.Part:
        return types.Part(text=text)

    def image(self, jpeg: bytes, part: ImagePart) -> types.Part:
        return types.Part(inline_data=types.Blob(mime_type="image/jpeg", data=jpeg), media_resolution=self.resolution)

    def video(self, part: VideoPart) -> types.Part:
        f = self.videos[part.path]
        return types.Part(
            file_data=types.FileData(file_uri=f.uri, mime_type=f.mime_type),
            video_metadata=types.VideoMetadata(fps=part.fps),
            media_processing=self.media_processing,
            media_resolution=self.resolution,
        )


@dataclass(frozen=True, kw_only=True)
class GeminiOptions(HTTPOptions):
    """``GeminiAdapter``'s options: the common ones and its own."""

    base_url: str | None = None
    file_cache: str | Path | None = None
    use_disk_cache: bool = True
    poll_interval_s: float = 2.0
    upload_timeout_s: float = 600.0
    media_resolution: str | None = None
    api_version: str = DEFAULT_API_VERSION
    #: "family": the family table's (``params.yaml``)
    thinking_budget: int | None | str = "family"
    media_processing: str | None = "STATIC"
    part_media_resolution: str | None = None

    def __post_init__(self) -> None:
        if self.poll_interval_s <= 0 or self.upload_timeout_s <= 0:
            raise ConfigError("poll_interval_s and upload_timeout_s must be positive")
        for name, value, enum in (
            ("media_resolution", self.media_resolution, "MediaResolution"),
            ("media_processing", self.media_processing, "MediaProcessing"),
            ("part_media_resolution", self.part_media_resolution, "PartMediaResolutionLevel"),
        ):
            allowed = [m.value for m in getattr(types, enum)] if types is not None else None  # None: no SDK (dry run)
            if value is not None and allowed is not None and value not in allowed:
                raise ConfigError(f"{name} must be one of {allowed}, got {value!r}")


#: the containers Gemini reads native video in, by file suffix, as the MIME types its documentation lists
#: (video/mp4, video/mov, video/webm, video/avi, video/x-flv, video/mpeg, video/mpg, video/wmv, video/3gpp)
VIDEO_MIME: dict[str, str] = {
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".mov": "video/mov",
    ".webm": "video/webm",
    ".avi": "video/avi",
    ".flv": "video/x-flv",
    ".mpeg": "video/mpeg",
    ".mpg": "video/mpg",
    ".wmv": "video/wmv",
    ".3gp": "video/3gpp",
}


def video_mime(path: str | Path) -> str:
    """The MIME type a video is uploaded as, from its container; an UNSUPPORTED ``ModelCallError`` for a container
    Gemini does not read (MKV, MPEG-TS/M2TS, MXF, ...). Every file was declared ``video/mp4``: a WebM (SSv2) or an
    AVI went up mislabelled, and a Matroska file the service cannot read was sent anyway."""
    suffix = Path(path).suffix.lower()
    mime = VIDEO_MIME.get(suffix)
    if mime is None:
        raise ModelCallError(
            ErrorKind.UNSUPPORTED,
            f"gemini reads native video as MP4, MOV, WebM, AVI, FLV, MPEG, WMV or 3GP; {Path(path).name} is "
            f"{'a ' + suffix if suffix else 'a suffix-less'} file: remux it (ffmpeg -i IN -c copy OUT.mp4, or "
            "re-encode if its codec does not fit) or send frames (--condition frames@K)",
        )
    return mime


class GeminiAdapter(HTTPProvider, provider=PROVIDER, name_hint=", e.g. gemini:gemini-2.5-flash"):
    """``gemini:MODEL``; ``base_url`` (option or ``@base_url``) points the SDK elsewhere, e.g. a test server. Its
    keywords are the fields of :class:`GeminiOptions`."""

    LENGTH_FINISH = ("MAX_TOKENS",)

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        o = GeminiOptions(**options)
        self._setup(spec, o)
        self.poll_interval_s = float(o.poll_interval_s)
        self.upload_timeout_s = float(o.upload_timeout_s)
        self.media_resolution = o.media_resolution
        self.media_processing = o.media_processing
        self.part_media_resolution = o.part_media_resolution
        thinking_budget = self.family.thinking_budget if o.thinking_budget == "family" else o.thinking_budget
        if thinking_budget is not None and (not isinstance(thinking_budget, int) or thinking_budget < -1):
            raise ConfigError(
                f"thinking_budget must be an integer >= -1 (0 off, -1 automatic), got {thinking_budget!r}"
            )
        self.thinking_budget: int | None = thinking_budget
        key = self._key(o, ("GEMINI_API_KEY", "GOOGLE_API_KEY"))
        self.base_url = o.base_url or spec.base_url
        self.capabilities = Capabilities(
            native_video=True,
            images=True,
            max_images=MAX_IMAGES,
            max_request_bytes=MAX_INLINE_BYTES,
            default_native_fps=DEFAULT_NATIVE_FPS,
            max_native_fps=MAX_NATIVE_FPS,
            concurrency=o.concurrency or 8,
        )
        namespace = f"{self.base_url or DEFAULT_BASE_URL}#{sha256_text(key)[:12]}"
        cache_path = Path(o.file_cache) if o.file_cache else (default_cache_path() if o.use_disk_cache else None)
        self.files = FileCache(cache_path, namespace)
        self._upload_locks: dict[str, asyncio.Lock] = {}
        if not self._needs_client(genai, "google.genai"):
            return
        http_options = types.HttpOptions(
            base_url=self.base_url,
            api_version=o.api_version,
            timeout=max(1, int(self.timeout_s * 1000)),
            retry_options=types.HttpRetryOptions(attempts=1),
            # an explicit httpx transport keeps the SDK on httpx even where aiohttp is installed (it would
            # switch transports silently, bypassing the body check and classifying errors differently)
            async_client_args={
                "event_hooks": {"response": [self._check_body]},
                "transport": self.capped_transport(httpx2.AsyncHTTPTransport()),
            },
        )
        self._client = genai.Client(api_key=key, http_options=http_options)

    async def _check_body(self, response: httpx2.Response) -> None:
        """Read every body before the SDK does, and note its status for ``_reading``.

        A body that is not UTF-8 would be decoded by the SDK with replacement characters (a lossy text
        returned as if the model had written it), and an error body nested past the JSON decoder's limit
        would fail the SDK's error parsing: a success is then MALFORMED, an error keeps the kind of its
        HTTP status.
        """
        await response.aread()
        seen = _BODIES.get(None)
        if seen is not None:
            seen.append(response.status_code)
        ok = 200 <= response.status_code < 300

        def unusable(detail: str) -> ModelCallError:
            """A success is MALFORMED (``detail`` says why); an error keeps the kind of its HTTP status."""
            if ok:
                return eh.malformed_error(self.spec.label, detail, self._secrets)
            body = response.content.decode("utf-8", "replace")
            return eh.error_from_status(self.spec.label, response.status_code, body, response.headers, self._secrets)

        command = response.request.headers.get("x-goog-upload-command", "").lower()
        if "upload" in command and not response.headers.get("x-goog-upload-status"):
            # the SDK would retry this chunk itself (MAX_RETRY_COUNT times); the executor decides instead
            raise unusable("an upload chunk was answered without X-Goog-Upload-Status")
        try:
            text = response.content.decode("utf-8")
        except UnicodeDecodeError as e:
            raise unusable(f"the body is not UTF-8 text ({e})") from None
        if not ok and text.strip():
            try:
                json.loads(text)
            except RecursionError:
                raise eh.error_from_status(
                    self.spec.label, response.status_code, text, response.headers, self._secrets
                ) from None
            except ValueError:
                pass  # not JSON: the SDK reports the text

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Classify what an SDK call raises; an exception the SDK raised while reading a 2xx body it was
        given (the SDK's converters fail on hostile shapes with AttributeError, TypeError, ...) is
        MALFORMED. Anything raised before a body arrived is left as it is: a bug, not the server's."""
        seen: list[int] = []
        token = _BODIES.set(seen)
        try:
            yield
        except ModelCallError:
            raise
        except Exception as e:
            err = self._classify(e)
            if err is None and seen and 200 <= seen[-1] < 300:
                err = eh.malformed_error(
                    self.spec.label,
                    f"the SDK could not read the body ({type(e).__name__}: {eh._preview(e)})",
                    self._secrets,
                )
            if err is None:
                raise
            raise err from None
        finally:
            _BODIES.reset(token)

    def request_options(self) -> dict[str, object]:
        """Options that change the request bytes or the tokens the service makes of them (in the trial id)."""
        sent, not_sent = self.family.wire_settings(self.spec.settings)
        if self.thinking_budget is not None:
            sent["thinking_budget"] = self.thinking_budget
        return {
            "jpeg_quality": self.jpeg_quality,
            "media_resolution": self.media_resolution,
            "media_processing": self.media_processing,
            "part_media_resolution": self.part_media_resolution,
            "family": self.family.pattern,
            "sent": sent,
            "not_sent": not_sent,
        }

    def __repr__(self) -> str:
        return f"GeminiAdapter({self.spec.label!r})"

    # ------------------------------------------------------------------ uploads

    async def ensure_uploaded(self, part: VideoPart) -> CachedFile:
        """The ACTIVE uploaded file for this video, uploading and polling only on a cache miss."""
        mime = video_mime(video_path(part))  # refused before anything is read or sent
        sha = await asyncio.to_thread(video_sha256, part)
        lock = self._upload_locks.setdefault(sha, asyncio.Lock())
        async with lock:
            cached = self.files.get(sha)
            if cached is not None:
                return cached
            path = video_path(part)
            with self._reading():
                f = await self._client.aio.files.upload(
                    file=str(path), config=types.UploadFileConfig(mime_type=mime, display_name=sha[:32])
                )
                f = await self._wait_active(f)
            expires = f.expiration_time.timestamp() if f.expiration_time else time.time() + DEFAULT_TTL_S
            if not f.name or not f.uri:
                raise eh.malformed_error(self.spec.label, "uploaded file has no name or uri", self._secrets)
            entry = CachedFile(name=f.name, uri=f.uri, mime_type=f.mime_type or mime, expires_at=expires)
            self.files.put(sha, entry)
            return entry

    async def _wait_active(self, f: types.File) -> types.File:
        deadline = time.monotonic() + self.upload_timeout_s
        while True:
            state = f.state.name if f.state is not None else "STATE_UNSPECIFIED"
            if state == "ACTIVE":
                return f
            if state == "FAILED":
                detail = f.error.message if f.error is not None else "no detail"
                raise ModelCallError(
                    ErrorKind.BAD_REQUEST,
                    eh.redact(
                        f"{self.spec.label}: the Files API could not process the video {f.name}: {detail}",
                        self._secrets,
                    ),
                )
            if time.monotonic() >= deadline:
                raise ModelCallError(
                    ErrorKind.TIMEOUT,
                    f"{self.spec.label}: uploaded video {f.name} still {state} "
                    f"after {self.upload_timeout_s:g} s; raise upload_timeout_s",
                )
            await asyncio.sleep(self.poll_interval_s)
            if not f.name:
                raise eh.malformed_error(self.spec.label, "uploaded file has no name to poll", self._secrets)
            f = await self._client.aio.files.get(name=f.name)

    # ------------------------------------------------------------------ request

    def build(
        self, request: Request, uploaded: dict[str, CachedFile]
    ) -> tuple[list[types.Content], types.GenerateContentConfig]:
        """The ``contents`` and ``config`` of ``generate_content`` for this request."""
        encoder = _GeminiEncoder(uploaded, self.media_processing, self.part_media_resolution)
        built = build_content(request, encoder, jpeg_quality=self.jpeg_quality)
        check_size(built.image_bytes + built.text_chars, self.capabilities, self.spec.label)
        sent, _ = self.family.wire_settings(request.settings)
        thinking = (
            types.ThinkingConfig(thinking_budget=self.thinking_budget) if self.thinking_budget is not None else None
        )
        config = types.GenerateContentConfig(
            system_instruction=request.system or None,
            temperature=sent.get("temperature"),
            top_p=sent.get("top_p"),
            seed=sent.get("seed"),
            max_output_tokens=sent.get(self.family.token_param),
            thinking_config=thinking,
            media_resolution=types.MediaResolution(self.media_resolution) if self.media_resolution else None,
        )
        return [types.Content(role="user", parts=built.parts)], config

    async def _upload_all(self, request: Request) -> dict[str, CachedFile]:
        return {p.path: await self.ensure_uploaded(p) for p in request.videos}

    async def _drop_uploads(self, request: Request) -> None:
        for p in request.videos:
            self.files.drop(await asyncio.to_thread(video_sha256, p))

    async def _generate_once(self, request: Request, uploaded: dict[str, CachedFile]) -> Response:
        contents, config = await asyncio.to_thread(self.build, request, uploaded)
        clock = Stopwatch()
        async with self.deadline():
            with self._reading(), clock.running():
                resp = await self._client.aio.models.generate_content(
                    model=self.spec.name, contents=contents, config=config
                )
        return self._response(resp, clock.seconds, request=request)

    async def generate(self, request: Request) -> Response:
        check_request(request, self.capabilities, self.spec.label)
        check_native_fps(request, self.capabilities, self.spec.label)
        uploaded = await self._upload_all(request)
        try:
            return await self._generate_once(request, uploaded)
        except ModelCallError as err:
            if not (uploaded and is_missing_file(err)):
                if uploaded and err.kind is ErrorKind.BAD_REQUEST and err.status_code == 400:
                    await self._drop_uploads(request)  # a stale or broken upload: upload again next attempt
                raise
        # the service lost the file (deleted, expired, another key's): upload again, call once more
        await self._drop_uploads(request)
        uploaded = await self._upload_all(request)
        try:
            return await self._generate_once(request, uploaded)
        except ModelCallError as err:
            if not is_missing_file(err):
                raise
            await self._drop_uploads(request)
            raise ModelCallError(
                ErrorKind.BAD_REQUEST,
                f"{err.message} (again after uploading the video anew; the file is not readable with this key)",
                status_code=err.status_code,
            ) from None

    def _classify(self, e: Exception) -> ModelCallError | None:
        name = self.spec.label
        if isinstance(e, ModelCallError):
            return e
        if isinstance(e, httpx2.TimeoutException | asyncio.TimeoutError | TimeoutError):
            return eh.timeout_error(name, self.timeout_s)
        if isinstance(e, genai_errors.APIError):
            headers = getattr(getattr(e, "response", None), "headers", None)
            return eh.error_from_status(name, int(e.code or 0), e.details, headers, self._secrets)
        if _AIOHTTP_TIMEOUT and isinstance(e, _AIOHTTP_TIMEOUT):
            return eh.timeout_error(name, self.timeout_s)
        if isinstance(e, (httpx2.TransportError, ConnectionError, *_AIOHTTP_TRANSIENT)):
            return eh.connection_error(name, e, self._secrets)
        if isinstance(e, KeyError) and "upload" in str(e).lower():  # the SDK's "no upload URL returned"
            return eh.malformed_error(name, f"upload handshake: {e}", self._secrets)
        return eh.payload_error(name, e, self._secrets)

    def _response(self, resp: Any, latency_s: float, *, request: Request) -> Response:
        name = self.spec.label
        max_tokens = request.settings.max_tokens
        feedback = getattr(resp, "prompt_feedback", None)
        block = getattr(feedback, "block_reason", None)
        if block is not None:
            raise eh.refused_error(name, f"prompt blocked ({getattr(block, 'name', block)})", self._secrets)
        candidates = getattr(resp, "candidates", None)
        if not candidates:
            raise eh.malformed_error(name, "no candidates and no block reason in the response", self._secrets)
        cand = candidates[0]
        finish = cand.finish_reason.name if cand.finish_reason is not None else None
        if finish in _REFUSAL_FINISH:
            raise eh.refused_error(name, f"finish_reason {finish}", self._secrets)
        parts = cand.content.parts if cand.content is not None and cand.content.parts else []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        if not parts and finish not in self.LENGTH_FINISH:
            raise eh.malformed_error(name, f"candidate without content (finish_reason {finish})", self._secrets)
        version = eh.text_field(getattr(resp, "model_version", None))
        usage = getattr(resp, "usage_metadata", None)
        sampled = bool(request.videos)  # Gemini samples a video itself: the frames it used are estimated
        return self._answer(text, usage, max_tokens, latency_s, finish, version, frames_estimated=sampled)

    def _read_usage(self, raw: Any, reader: eh.UsageReader, max_tokens: int | None) -> Usage:
        return _usage(raw, reader, max_tokens)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aio.aclose()


def is_missing_file(err: ModelCallError) -> bool:
    """Whether a failure says the service does not have an uploaded file (403 "... or it may not exist", 404)."""
    return err.status_code in (403, 404) and bool(_MISSING_FILE.search(err.message))


def _usage(u: Any, reader: eh.UsageReader, max_tokens: int | None) -> Usage:
    """Gemini counts thoughts apart from candidates; both are billed output, so output = candidates + thoughts.
    Read as untrusted (see ``errors_http.UsageReader``): the SDK checks the types, not the values."""
    if u is None:
        return Usage()
    thoughts = reader.count("reasoning_tokens", getattr(u, "thoughts_token_count", None))
    return reader.usage(
        input_tokens=reader.count("input_tokens", getattr(u, "prompt_token_count", None)),
        output_tokens=reader.count("output_tokens", getattr(u, "candidates_token_count", None)) + thoughts,
        reasoning_tokens=thoughts,
        cached_tokens=reader.count("cached_tokens", getattr(u, "cached_content_token_count", None)),
        max_tokens=max_tokens,
    )
