"""Classify a failed provider call into an ``ErrorKind``, shared by the OpenAI, Gemini and Anthropic adapters.

The executor decides what to do from the kind alone (see ``vidaudit.run.retry``), so the mapping lives
in one place: 429 -> RATE_LIMIT (with the server's Retry-After) or QUOTA (the body says the quota or
credit is exhausted); 408/409/5xx/529 and connection errors -> TRANSIENT; timeouts -> TIMEOUT;
400/404/413/422 -> BAD_REQUEST; 401/403 -> AUTH. Every message passes through ``redact`` so that an
API key echoed by a server ("Incorrect API key provided: sk-...") never reaches a store or a log.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from vidaudit.core.types import ErrorKind
from vidaudit.models.base import ModelCallError

T = TypeVar("T")

MAX_MESSAGE_CHARS = 600
REDACTED = "[REDACTED]"

#: Evidence that retrying cannot help until someone pays or waits a day.
_HARD_QUOTA = re.compile(
    r"insufficient_quota|billing_hard_limit|credit balance is too low|PerDay|per day", re.IGNORECASE)
#: Evidence of a short window (per minute / per second) that a wait will clear.
_SOFT_LIMIT = re.compile(r"PerMinute|PerSecond|per minute|per second|rate limit", re.IGNORECASE)
_QUOTA_WORD = re.compile(r"quota", re.IGNORECASE)
_RETRY_DELAY = re.compile(r'"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"')


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Remove every secret (values of 8+ characters) from ``text`` and cap its length."""
    for s in secrets:
        if s and len(s) >= 8:
            text = text.replace(s, REDACTED)
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[:MAX_MESSAGE_CHARS] + "..."
    return text


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date; None if absent or bad."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        return None
    return max(0.0, seconds)


def retry_after_from(headers: Mapping[str, str] | None, body_text: str = "") -> float | None:
    """Retry-After (or retry-after-ms) from headers, else a Google ``RetryInfo.retryDelay`` in the body."""
    if headers is not None:
        lower = {k.lower(): v for k, v in headers.items()}
        ms = lower.get("retry-after-ms")
        if ms is not None:
            try:
                return max(0.0, float(ms) / 1000.0)
            except ValueError:
                pass
        found = parse_retry_after(lower.get("retry-after"))
        if found is not None:
            return found
    m = _RETRY_DELAY.search(body_text)
    return float(m.group(1)) if m else None


def body_to_text(body: Any) -> str:
    """A provider error body (dict, list, bytes or str) as text for matching and messages."""
    if body is None:
        return ""
    if isinstance(body, bytes):
        return body.decode("utf-8", "replace")
    if isinstance(body, str):
        return body
    try:
        return json.dumps(body, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(body)


def kind_for_status(status: int, body_text: str = "", retry_after: float | None = None) -> ErrorKind:
    """The ErrorKind of an HTTP failure status, reading the body only to tell quota from rate limit."""
    if _HARD_QUOTA.search(body_text) and status in (400, 402, 403, 429):
        return ErrorKind.QUOTA
    if status == 429:
        if retry_after is not None or _SOFT_LIMIT.search(body_text):
            return ErrorKind.RATE_LIMIT
        if ("RESOURCE_EXHAUSTED" in body_text or "exceeded your current" in body_text) \
                and _QUOTA_WORD.search(body_text):
            return ErrorKind.QUOTA
        return ErrorKind.RATE_LIMIT
    if status in (401, 403):
        return ErrorKind.AUTH
    if status in (408, 409) or status >= 500:
        return ErrorKind.TRANSIENT
    if 400 <= status < 500:
        return ErrorKind.BAD_REQUEST
    return ErrorKind.MALFORMED  # a non-error status reported as a failure: the payload was not usable


def error_from_status(provider: str, status: int, body: Any, headers: Mapping[str, str] | None,
                      secrets: Iterable[str | None] = ()) -> ModelCallError:
    """Build the classified error for an HTTP failure; the message names the provider, status and body."""
    text = body_to_text(body)
    retry_after = retry_after_from(headers, text) if status == 429 or status >= 500 else None
    kind = kind_for_status(status, text, retry_after)
    hint = _HINTS.get(kind, "")
    message = redact(f"{provider} answered HTTP {status}: {text or '(empty body)'}{hint}", secrets)
    return ModelCallError(kind, message, status_code=status,
                          retry_after=retry_after if kind in (ErrorKind.RATE_LIMIT, ErrorKind.TRANSIENT) else None)


def timeout_error(provider: str, timeout_s: float | None) -> ModelCallError:
    limit = f" after {timeout_s:g} s" if timeout_s else ""
    return ModelCallError(ErrorKind.TIMEOUT, f"{provider} did not answer{limit}; raise the adapter's "
                          "timeout_s option if long videos need more time")


def connection_error(provider: str, exc: BaseException, secrets: Iterable[str | None] = ()) -> ModelCallError:
    return ModelCallError(ErrorKind.TRANSIENT, redact(
        f"{provider}: connection failed ({type(exc).__name__}: {exc}); check the network or base_url", secrets))


def malformed_error(provider: str, detail: str, secrets: Iterable[str | None] = ()) -> ModelCallError:
    return ModelCallError(ErrorKind.MALFORMED, redact(f"{provider} returned an unusable payload: {detail}", secrets))


def refused_error(provider: str, detail: str, secrets: Iterable[str | None] = ()) -> ModelCallError:
    return ModelCallError(ErrorKind.REFUSED, redact(f"{provider} refused the request: {detail}", secrets))


_HINTS = {
    ErrorKind.AUTH: " (check the API key in the environment variable the adapter names)",
    ErrorKind.QUOTA: " (quota or credit exhausted: the run stops; raise the limit or wait for it to reset)",
}


async def classified_call(call: Callable[[], Awaitable[T]],
                          classify: Callable[[Exception], ModelCallError | None]) -> tuple[T, float]:
    """Await ``call()``, timing it; provider failures leave classified, anything else (a bug) as raised."""
    from vidaudit.models.request_builder import Stopwatch

    clock = Stopwatch()
    try:
        with clock.running():
            result = await call()
    except ModelCallError:
        raise
    except Exception as e:
        err = classify(e)
        if err is None:
            raise  # a bug, not a provider failure: let it surface
        raise err from None
    return result, clock.seconds
