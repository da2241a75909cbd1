"""Classify a failed provider call into an ``ErrorKind``, shared by the OpenAI, Gemini and Anthropic adapters.

The executor decides what to do from the kind alone (see ``vidaudit.run.retry``), so the mapping lives
in one place: 429 -> RATE_LIMIT (with the server's Retry-After) or QUOTA (the body says the quota or
credit is exhausted); 408/409/5xx/529 and connection errors -> TRANSIENT; timeouts -> TIMEOUT;
400/404/413/422 -> BAD_REQUEST; 401/403 -> AUTH. Every message passes through ``redact`` so that an
API key echoed by a server ("Incorrect API key provided: sk-...") never reaches a store or a log.

A server's answer is untrusted, success or not:

- a body that is not JSON, not UTF-8 (``UnicodeDecodeError``), nested deeper than the decoder allows
  (``RecursionError``) or fails the SDK's schema is MALFORMED (``payload_error``), never an
  unclassified exception that would stop a run. A lone surrogate escape (``"\\ud800"``) is valid JSON
  and comes back as text, losslessly: storing it is the store's job.
- the token usage it reports is read by ``UsageReader``: each count is clamped to ``0..MAX_CALL_TOKENS``
  (negative, non-integer, non-numeric or absurd values), reasoning to output, cached to input, and
  output to ``output_bound(max_tokens)``; the response is then flagged by a note in its
  ``finish_reason``: ``"stop;usage_clamped=output_tokens"`` (see ``flag_finish`` and
  ``split_finish``), so that a report can count flagged responses and still read the finish reason.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

import pydantic

from vidaudit.core.types import ErrorKind, Response, Usage
from vidaudit.models.base import ModelCallError
from vidaudit.models.provider_content import Stopwatch

T = TypeVar("T")

MAX_MESSAGE_CHARS = 600
REDACTED = "[REDACTED]"

#: Evidence that retrying cannot help until someone pays or waits a day.
_HARD_QUOTA = re.compile(
    r"insufficient_quota|billing_hard_limit|credit balance is too low|PerDay|per day", re.IGNORECASE
)
#: Evidence of a short window (per minute / per second) that a wait will clear.
_SOFT_LIMIT = re.compile(r"PerMinute|PerSecond|per minute|per second|rate limit", re.IGNORECASE)
_QUOTA_WORD = re.compile(r"quota", re.IGNORECASE)
_PARAM_REJECTED = re.compile(
    r"unsupported (?:parameter|value)|unknown parameter|cannot both be specified|"
    r"not supported with this model",
    re.IGNORECASE,
)
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
    except (TypeError, ValueError, RecursionError):
        return _preview(body)


def kind_for_status(status: int, body_text: str = "", retry_after: float | None = None) -> ErrorKind:
    """The ErrorKind of an HTTP failure status, reading the body only to tell quota from rate limit."""
    if _HARD_QUOTA.search(body_text) and status in (400, 402, 403, 429):
        return ErrorKind.QUOTA
    if status == 429:
        if retry_after is not None or _SOFT_LIMIT.search(body_text):
            return ErrorKind.RATE_LIMIT
        if ("RESOURCE_EXHAUSTED" in body_text or "exceeded your current" in body_text) and _QUOTA_WORD.search(
            body_text
        ):
            return ErrorKind.QUOTA
        return ErrorKind.RATE_LIMIT
    if status in (401, 403):
        return ErrorKind.AUTH
    if status in (408, 409) or status >= 500:
        return ErrorKind.TRANSIENT
    if 400 <= status < 500:
        return ErrorKind.BAD_REQUEST
    return ErrorKind.MALFORMED  # a non-error status reported as a failure: the payload was not usable


def error_from_status(
    provider: str, status: int, body: Any, headers: Mapping[str, str] | None, secrets: Iterable[str | None] = ()
) -> ModelCallError:
    """Build the classified error for an HTTP failure; the message names the provider, status and body."""
    text = body_to_text(body)
    retry_after = retry_after_from(headers, text) if status == 429 or status >= 500 else None
    kind = kind_for_status(status, text, retry_after)
    hint = _HINTS.get(kind, "")
    if kind is ErrorKind.BAD_REQUEST and _PARAM_REJECTED.search(text):
        hint = (
            " (the model rejects a parameter vidaudit sent: give its family in a params file, see "
            "vidaudit/models/params.yaml)"
        )
    message = redact(f"{provider} answered HTTP {status}: {text or '(empty body)'}{hint}", secrets)
    return ModelCallError(
        kind,
        message,
        status_code=status,
        retry_after=retry_after if kind in (ErrorKind.RATE_LIMIT, ErrorKind.TRANSIENT) else None,
    )


def timeout_error(provider: str, timeout_s: float | None) -> ModelCallError:
    limit = f" after {timeout_s:g} s" if timeout_s else ""
    return ModelCallError(
        ErrorKind.TIMEOUT,
        f"{provider} did not answer{limit}; raise the adapter's timeout_s option if long videos need more time",
    )


def connection_error(provider: str, exc: BaseException, secrets: Iterable[str | None] = ()) -> ModelCallError:
    return ModelCallError(
        ErrorKind.TRANSIENT,
        redact(f"{provider}: connection failed ({type(exc).__name__}: {exc}); check the network or base_url", secrets),
    )


def malformed_error(provider: str, detail: str, secrets: Iterable[str | None] = ()) -> ModelCallError:
    return ModelCallError(ErrorKind.MALFORMED, redact(f"{provider} returned an unusable payload: {detail}", secrets))


def payload_error(provider: str, e: BaseException, secrets: Iterable[str | None] = ()) -> ModelCallError | None:
    """MALFORMED for an exception that says the body could not be read, else None.

    Not JSON (``json.JSONDecodeError``), not UTF-8 (``UnicodeError``), nested too deep for the decoder
    (``RecursionError``) or not the SDK's schema (``pydantic.ValidationError``).
    """
    if isinstance(e, RecursionError):
        return malformed_error(provider, "the body is nested too deeply to decode", secrets)
    if isinstance(e, UnicodeError):
        return malformed_error(provider, f"the body is not UTF-8 text ({type(e).__name__}: {_preview(e)})", secrets)
    if isinstance(e, json.JSONDecodeError | pydantic.ValidationError):
        return malformed_error(provider, f"{type(e).__name__}: {_preview(e)}", secrets)
    return None


def _preview(obj: object, limit: int = 300) -> str:
    """``str(obj)`` cut to ``limit`` characters (a hostile body can be megabytes, or fail to print)."""
    try:
        text = str(obj)
    except Exception:  # noqa: BLE001 - an object that cannot describe itself is still reported
        return f"<{type(obj).__name__}>"
    return text if len(text) <= limit else text[:limit] + "..."


def text_field(value: object) -> str | None:
    """A string field of a response (finish reason, model version) as str, or None when it is not a string."""
    return value if isinstance(value, str) else None


def refused_error(provider: str, detail: str, secrets: Iterable[str | None] = ()) -> ModelCallError:
    return ModelCallError(ErrorKind.REFUSED, redact(f"{provider} refused the request: {detail}", secrets))


def check_truncated(
    provider: str, response: Response, raw_finish: str | None, length_reasons: Iterable[str]
) -> Response:
    """``response`` unless the output budget ran out before any answer text: then a TRUNCATED error that
    carries the (paid) response, so it is counted as its own outcome, never scored as a wrong answer.

    Gemini 2.5/3 and OpenAI reasoning models spend ``max_tokens`` on thinking first; raise the token
    limit or lower the thinking budget.
    """
    if raw_finish in set(length_reasons) and not response.text.strip():
        detail = (
            f"finish_reason {raw_finish} with no answer text after {response.usage.output_tokens} output "
            f"tokens ({response.usage.reasoning_tokens} of them reasoning); raise --max-output-tokens or "
            "lower the thinking budget"
        )
        raise ModelCallError(ErrorKind.TRUNCATED, f"{provider}: {detail}", response=response)
    return response


_HINTS = {
    ErrorKind.AUTH: " (check the API key in the environment variable the adapter names)",
    ErrorKind.QUOTA: " (quota or credit exhausted: the run stops; raise the limit or wait for it to reset)",
}


async def classified_call(
    call: Callable[[], Awaitable[T]], classify: Callable[[Exception], ModelCallError | None]
) -> tuple[T, float]:
    """Await ``call()``, timing it; provider failures leave classified, anything else (a bug) as raised."""
    clock = Stopwatch()
    try:
        with clock.running():
            result = await call()
    except ModelCallError:
        raise
    except Exception as e:
        err = raised_inside(e) or classify(e)
        if err is None:
            raise  # a bug, not a provider failure: let it surface
        raise err from None
    return result, clock.seconds


def raised_inside(e: BaseException, depth: int = 8) -> ModelCallError | None:
    """A ``ModelCallError`` an SDK wrapped (our transport's size cap inside the anthropic SDK's connection
    error, say): the classification the adapter already made, found in the cause chain."""
    seen: BaseException | None = e
    for _ in range(depth):
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if seen is None:
            return None
        if isinstance(seen, ModelCallError):
            return seen
    return None


# --------------------------------------------------------------------------- untrusted usage

#: No single call reports more tokens than this (the largest context windows are 1-2M tokens); a larger
#: count is a server bug or a lie, and would also overflow the store's 64-bit integers.
MAX_CALL_TOKENS = 10_000_000
#: The note ``flag_finish`` appends to a finish reason when a usage count was clamped.
USAGE_CLAMPED = "usage_clamped"
_NOTE_SEP = ";"


def output_bound(max_tokens: int | None) -> int:
    """The most output tokens believed for a call that asked for at most ``max_tokens``.

    Every provider counts reasoning tokens inside the limit (OpenAI's max_completion_tokens, Anthropic's
    max_tokens, Gemini's maxOutputTokens); twice the limit plus 64 leaves room for tokenizer and
    special-token disagreements, so only a count far above the request is clamped.
    """
    if max_tokens is None or max_tokens <= 0:
        return MAX_CALL_TOKENS
    return min(MAX_CALL_TOKENS, 2 * int(max_tokens) + 64)


#: what ``input_bound`` adds to twice a request's estimated input: chat templates, per-message and per-image
#: framing tokens, and tokenizers that split timestamps and JSON finer than four characters a token
INPUT_SLACK_TOKENS = 256


def input_bound(estimate_tokens: int) -> int:
    """The most input tokens believed for a request whose input ``models.pricing`` estimates at ``estimate_tokens``.

    The estimates follow each provider's documented image and video rules and about four characters a token
    for text; twice that plus ``INPUT_SLACK_TOKENS`` is far above what a real provider counts, so a larger
    count is a server's error or lie. ``run.budget`` reserves this (with ``output_bound``) as a call's worst
    case before sending it, and believes no more of what the call reports.
    """
    return min(MAX_CALL_TOKENS, 2 * max(0, int(estimate_tokens)) + INPUT_SLACK_TOKENS)


class UsageReader:
    """Read a server's token counts as untrusted; ``clamped`` names each field that had to be changed."""

    def __init__(self) -> None:
        self.clamped: list[str] = []

    def _flag(self, name: str) -> None:
        if name not in self.clamped:
            self.clamped.append(name)

    def count(self, name: str, value: object) -> int:
        """One raw count: absent (None) is 0; an int in ``0..MAX_CALL_TOKENS`` is kept; an integral float is
        read as its int; anything else (negative, fractional, NaN, infinite, bool, text, a container) is
        clamped into range and flagged under ``name``."""
        if value is None:
            return 0
        if isinstance(value, bool):
            self._flag(name)
            return 0
        if isinstance(value, float):
            if math.isnan(value):
                self._flag(name)
                return 0
            if math.isinf(value) or value > MAX_CALL_TOKENS:
                self._flag(name)
                return MAX_CALL_TOKENS if value > 0 else 0
            if not value.is_integer():
                self._flag(name)
                value = math.ceil(value)  # up, never down: a budget must not under-count
            value = int(value)
        if not isinstance(value, int):
            self._flag(name)
            if isinstance(value, str) and value.strip().isdecimal() and len(value.strip()) <= 12:
                value = int(value.strip())
            else:
                return 0
        if value < 0:
            self._flag(name)
            return 0
        if value > MAX_CALL_TOKENS:
            self._flag(name)
            return MAX_CALL_TOKENS
        return value

    def usage(
        self,
        *,
        input_tokens: int,
        output_tokens: int,
        reasoning_tokens: int = 0,
        cached_tokens: int = 0,
        max_tokens: int | None = None,
    ) -> Usage:
        """The ``Usage`` of counts read with ``count`` (and summed by the adapter), with the cross-field limits:
        totals at most ``MAX_CALL_TOKENS``, output at most ``output_bound(max_tokens)``, reasoning at most
        output, cached at most input."""
        if input_tokens > MAX_CALL_TOKENS:
            self._flag("input_tokens")
            input_tokens = MAX_CALL_TOKENS
        bound = output_bound(max_tokens)
        if output_tokens > bound:
            self._flag("output_tokens")
            output_tokens = bound
        if reasoning_tokens > output_tokens:
            self._flag("reasoning_tokens")
            reasoning_tokens = output_tokens
        if cached_tokens > input_tokens:
            self._flag("cached_tokens")
            cached_tokens = input_tokens
        return Usage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            reasoning_tokens=reasoning_tokens,
            cached_tokens=cached_tokens,
        )


def flag_finish(finish: str | None, clamped: Iterable[str]) -> str | None:
    """``finish`` with a ``;usage_clamped=a,b`` note when ``clamped`` names fields (else ``finish`` as is)."""
    names = list(clamped)
    if not names:
        return finish
    return f"{finish or ''}{_NOTE_SEP}{USAGE_CLAMPED}={','.join(names)}"


def split_finish(finish_reason: str | None) -> tuple[str | None, list[str]]:
    """The provider's finish reason and the usage fields ``flag_finish`` noted as clamped (empty if none)."""
    if not finish_reason or f"{_NOTE_SEP}{USAGE_CLAMPED}=" not in finish_reason:
        return finish_reason, []
    head, _, note = finish_reason.rpartition(f"{_NOTE_SEP}{USAGE_CLAMPED}=")
    return (head or None), [n for n in note.split(",") if n]


def usage_was_clamped(finish_reason: str | None) -> bool:
    """Whether a stored response's usage was clamped (what a report counts)."""
    return bool(split_finish(finish_reason)[1])
