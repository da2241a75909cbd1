"""The base every HTTP adapter (openai, gemini, anthropic) shares: how long one call may take, how much it may send.

An SDK's ``timeout`` bounds each wait on the socket (connecting, each read), not the call: a server that
trickles a byte every few seconds would hold a call for as long as it likes, and a server may answer
with a body of any size. So every call of these adapters runs under two limits, both adapter options:

- ``deadline_s``: the whole call, from sending the request to the last byte of the answer (default:
  ``DEADLINE_FACTOR`` x the adapter's ``timeout_s``). Past it the call is cancelled and the attempt is a
  ``timeout`` (retried, as any timeout).
- ``max_response_bytes``: the bytes of one response body the SDK will hold, counted *decoded*
  (default ``DEFAULT_MAX_RESPONSE_BYTES``). A body announced larger (``Content-Length``) is not read at
  all, one that grows larger is not read further; either way nothing of it is stored and the attempt is
  ``too_large`` (not retried). Every request asks for ``Accept-Encoding: identity``; a gzip or deflate body
  sent anyway is decoded by the transport itself, piece by piece, so a 300 KB gzip bomb stops at the cap
  like any other body, and a body in a coding the transport cannot count (``br``, ``zstd``, unknown) is not
  read (``unsupported``, not retried; ``http_transport``).

The cap lives in the HTTP transport the adapter hands its SDK (``capped_transport``), below the SDK's
own reading, so it holds for every request the SDK makes (uploads and polls included); the deadline
wraps the model call (``call`` / ``deadline``).

A dry run (``vidaudit run --dry-run``) builds the adapters to plan with their capabilities and request
options, and calls nothing: inside ``for_dry_run()`` an adapter needs neither its SDK (the module imports
it optionally) nor an API key, and builds no client (``_needs_client`` says so).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pydantic

from vidaudit.core.errors import ConfigError
from vidaudit.core.registry import EXTRAS, missing_extra
from vidaudit.core.types import ErrorKind, ModelSpec, Response, Usage
from vidaudit.models import errors_http as eh
from vidaudit.models.base import ModelCallError
from vidaudit.models.errors_http import classified_call
from vidaudit.models.params import FamilyParams, ParamTable, load_params
from vidaudit.models.pricing import PriceTable, cost_usd, load_prices
from vidaudit.models.provider_content import DEFAULT_JPEG_QUALITY, check_jpeg_quality, resolve_api_key

T = TypeVar("T")

#: the default deadline of a whole call is this many times the adapter's per-wait ``timeout_s``
DEADLINE_FACTOR = 2.0
#: far above any answer a model writes within a token limit (a 2,048-token answer is a few kB of JSON)
DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024


_DRY_RUN: contextvars.ContextVar[bool] = contextvars.ContextVar("vidaudit_dry_run", default=False)


@contextlib.contextmanager
def for_dry_run() -> Iterator[None]:
    """Adapters built inside call nothing: no SDK, no API key and no client needed (``run --dry-run``)."""
    token = _DRY_RUN.set(True)
    try:
        yield
    finally:
        _DRY_RUN.reset(token)


@dataclass(frozen=True, kw_only=True)
class HTTPOptions:
    """The adapter options every HTTP adapter takes (``--adapter-option PROVIDER.KEY=VALUE``, an adapter's
    keywords), declared once: each adapter's options class adds its own (``AnthropicOptions``, ...) and builds
    itself from the adapter's keywords, so an unknown option is refused by name."""

    #: each wait on the socket (connecting, each read), in seconds
    timeout_s: float = 300.0
    #: the environment variable holding the API key (None: the provider's usual ones)
    api_key_env: str | None = None
    jpeg_quality: int = DEFAULT_JPEG_QUALITY
    #: calls in flight at once (None: the adapter's default)
    concurrency: int | None = None
    #: a price table or its YAML (None: the shipped ``prices.yaml``)
    prices: str | Path | PriceTable | None = None
    #: a family parameter table's YAML (None: the shipped ``params.yaml``)
    params: str | Path | ParamTable | None = None
    #: the whole call, in seconds (None: ``DEADLINE_FACTOR`` x ``timeout_s``)
    deadline_s: float | None = None
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES


class HTTPProvider:
    """Mixed into an HTTP adapter: ``__init__`` starts with ``_setup`` (or ``_set_limits``), hands the SDK
    ``capped_transport()``, and each model call goes through ``call`` (or inside ``deadline()``)."""

    #: the provider's name in a spec (``anthropic`` of ``anthropic:MODEL``), how such a spec is written and what
    #: ``_setup``'s refusal of a spec without a model name adds: the class keywords of an adapter
    PROVIDER: ClassVar[str]
    SPEC_FORM: ClassVar[str]
    NAME_HINT: ClassVar[str]

    def __init_subclass__(cls, *, provider: str = "", spec_form: str = "", name_hint: str = "", **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if provider:
            cls.PROVIDER, cls.SPEC_FORM, cls.NAME_HINT = provider, spec_form or f"{provider}:MODEL", name_hint

    spec: ModelSpec
    #: what every message this adapter raises is redacted of (its API key)
    _secrets: tuple[str | None, ...] = ()
    timeout_s: float
    deadline_s: float
    max_response_bytes: int
    jpeg_quality: int
    family: FamilyParams
    #: the provider SDK's client (None where no call will be made: a dry run, or the SDK not installed)
    _client: Any = None

    def _setup(self, spec: ModelSpec, options: HTTPOptions) -> None:
        """What every HTTP adapter does first: refuse another provider's spec or one without a model name, then
        keep the spec, the limits, the JPEG quality, the model family's parameters and the price table."""
        if spec.provider != self.PROVIDER:
            raise ConfigError(f"{type(self).__name__} got a {spec.provider!r} spec; use {self.SPEC_FORM}")
        if not spec.name:
            raise ConfigError(f"{self.PROVIDER} needs a model name{self.NAME_HINT}")
        self.spec = spec
        self._set_limits(options.timeout_s, options.deadline_s, options.max_response_bytes)
        self.jpeg_quality = check_jpeg_quality(options.jpeg_quality)
        self.family = load_params(options.params).lookup(spec)
        self._prices = options.prices if isinstance(options.prices, PriceTable) else load_prices(options.prices)

    def _key(self, options: HTTPOptions, default_env: tuple[str, ...], *, required: bool = True) -> str:
        """The API key (from ``api_key_env``, else the first of ``default_env`` set), kept to redact messages of."""
        key = self._api_key((options.api_key_env,) if options.api_key_env else default_env, required=required)
        self._secrets = (key,)
        return key

    async def aclose(self) -> None:
        """Close the SDK's client where one was built (openai's and anthropic's ``close``; gemini's its own)."""
        if self._client is not None:
            await self._client.close()

    def _stainless_client(self, sdk: Any, client: Any, key: str, base_url: str | None) -> Any:
        """A client of openai's or anthropic's SDK (both generated by Stainless, alike in their arguments): the
        executor retries, not the SDK, and every body is read through ``capped_transport()``."""
        return client(
            api_key=key,
            base_url=base_url,
            timeout=self.timeout_s,
            max_retries=0,
            http_client=sdk.DefaultAsyncHttpxClient(transport=self.capped_transport()),
        )

    def _set_limits(self, timeout_s: float, deadline_s: float | None, max_response_bytes: int) -> None:
        """Check and keep the three limits (a ConfigError naming the option when one is not positive)."""
        for name, value in (("timeout_s", timeout_s), ("deadline_s", deadline_s)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
                raise ConfigError(f"{self.spec.provider}.{name} must be a positive number of seconds, got {value!r}")
        if isinstance(max_response_bytes, bool) or not isinstance(max_response_bytes, int) or max_response_bytes < 1:
            raise ConfigError(
                f"{self.spec.provider}.max_response_bytes must be a positive number of bytes, "
                f"got {max_response_bytes!r}"
            )
        self.timeout_s = float(timeout_s)
        self.deadline_s = float(deadline_s) if deadline_s is not None else DEADLINE_FACTOR * self.timeout_s
        self.max_response_bytes = max_response_bytes

    def _api_key(self, env_names: tuple[str, ...], *, required: bool) -> str:
        """The API key from the environment; a dry run needs none (a placeholder that is never sent)."""
        return resolve_api_key(env_names, provider=self.spec.provider, required=required and not _DRY_RUN.get())

    def _needs_client(self, sdk: object | None, module: str) -> bool:
        """Whether to build the SDK's client: not in a dry run; a ``MissingExtraError`` when the SDK is absent."""
        if _DRY_RUN.get():
            return False
        if sdk is None:
            extra = EXTRAS.get(self.spec.provider, (self.spec.provider, ()))[0]
            raise missing_extra(f"the {self.spec.provider} provider", extra, module)
        return True

    @property
    def prices(self) -> Any:
        """The price table this adapter reports costs with (a run's budget prices a call's worst case with it)."""
        return getattr(self, "_prices", None)

    #: the provider's finish reasons that say the output budget ran out (a TRUNCATED error when no text came)
    LENGTH_FINISH: ClassVar[tuple[str, ...]] = ()

    def _read_usage(self, raw: Any, reader: eh.UsageReader, max_tokens: int | None) -> Usage:
        """The provider's usage object ``raw`` read as untrusted into a ``Usage`` (each adapter's own fields)."""
        raise NotImplementedError

    def _answer(
        self,
        text: str,
        raw_usage: Any,
        max_tokens: int | None,
        latency_s: float,
        finish: str | None,
        model_version: str | None,
        **extra: Any,
    ) -> Response:
        """The Response of an answer whose every field the adapter read as untrusted: its usage read from
        ``raw_usage`` (``_read_usage``), priced, the usage fields that had to be clamped noted in the finish reason,
        and a TRUNCATED error where the output budget ran out before any text (``LENGTH_FINISH``)."""
        name = self.spec.label
        reader = eh.UsageReader()
        usage = self._read_usage(raw_usage, reader, max_tokens)
        try:
            resp = Response(
                text=text,
                usage=usage,
                latency_s=latency_s,
                finish_reason=eh.flag_finish(finish, reader.clamped),
                model_version=model_version,
                cost_usd=cost_usd(self.spec, usage, self.prices),
                **extra,
            )
        except pydantic.ValidationError as e:  # pragma: no cover - every field is checked before
            raise eh.malformed_error(name, f"{type(e).__name__}: {e}", self._secrets) from None
        return eh.check_truncated(name, resp, finish, self.LENGTH_FINISH)

    def capped_transport(self, inner: Any = None) -> Any:
        """An httpx2 transport that refuses bodies over ``max_response_bytes`` (around ``inner``, default one)."""
        # here, not at the top: httpx2 comes with the provider SDKs (the extras), and a base install plans and dry-runs
        # the hosted providers without it (tests/cli/test_missing_extras.py)
        from vidaudit.models.http_transport import CappedTransport

        return CappedTransport(self.max_response_bytes, self._too_large, inner, refused=self._bad_encoding)

    def _too_large(self, detail: str) -> ModelCallError:
        return ModelCallError(
            ErrorKind.TOO_LARGE,
            (
                f"{self.spec.label} sent a response body over max_response_bytes={self.max_response_bytes:,} "
                f"({detail}); it was not read further and nothing of it is stored. Raise the adapter option "
                f"{self.spec.provider}.max_response_bytes if answers are really this large"
            ),
        )

    def _bad_encoding(self, detail: str) -> ModelCallError:
        return ModelCallError(
            ErrorKind.UNSUPPORTED,
            (
                f"{self.spec.label} sent a response body in {detail}. Nothing of it is stored; point the adapter "
                "at a server (or proxy) that honours Accept-Encoding: identity, or sends gzip"
            ),
        )

    def _past_deadline(self) -> ModelCallError:
        return ModelCallError(
            ErrorKind.TIMEOUT,
            (
                f"{self.spec.label} did not finish within deadline_s={self.deadline_s:g} s for the whole call "
                f"(timeout_s={self.timeout_s:g} s bounds each wait); raise the adapter option "
                f"{self.spec.provider}.deadline_s if long answers need more time"
            ),
        )

    @contextlib.asynccontextmanager
    async def deadline(self) -> AsyncIterator[None]:
        """Cancel what runs inside after ``deadline_s``; that becomes a classified TIMEOUT."""
        cm = asyncio.timeout(self.deadline_s)
        try:
            async with cm:
                yield
        except TimeoutError:
            if cm.expired():
                raise self._past_deadline() from None
            raise

    async def call(
        self, fn: Callable[[], Awaitable[T]], classify: Callable[[Exception], ModelCallError | None]
    ) -> tuple[T, float]:
        """``errors_http.classified_call`` under the deadline: ``(result, seconds)`` or a ``ModelCallError``."""
        async with self.deadline():
            return await classified_call(fn, classify)
