"""The audit log's two hot lines, an attempt's and a new trial's, written out field by field.

``audit_log.encode_line`` dumps a dict with sorted keys (``json.dumps``); the run writes one line per trial
it registers and one per attempt, so building each record's dict and sorting it again made up a tenth of a
simulated run's CPU. These functions write the same bytes directly from the record: the keys in sorted
order (fixed here, and checked against the models' fields at import), each value as ``json.dumps`` writes
it (``float.__repr__``, ``int.__repr__``, the encoder's own string escaping, ``", "`` and ``": "``).
Anything they are not sure to write identically (a lone surrogate, a non-finite float, a bool where an int
belongs, a type they do not know, a model whose fields changed) returns None, and the caller writes the
line the generic way; ``RunStore`` also checks its first fast line against the generic one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from json.encoder import encode_basestring as _encode_str
from typing import Any, TypeVar

from vidaudit.core.types import Attempt, Response, Usage

_ATTEMPT_KEYS = (
    "attempt",
    "ended_at",
    "error_kind",
    "error_message",
    "frame_indices",
    "frame_times",
    "response",
    "started_at",
    "status",
    "trial_id",
)
_RESPONSE_KEYS = (
    "cost_usd",
    "finish_reason",
    "frames_estimated",
    "frames_sent",
    "latency_s",
    "model_version",
    "text",
    "usage",
)
_USAGE_KEYS = ("cached_tokens", "input_tokens", "output_tokens", "reasoning_tokens")

#: the models still have exactly the fields written out below (else every line takes the generic path)
ENABLED = (
    tuple(sorted(Attempt.model_fields)) == _ATTEMPT_KEYS
    and tuple(sorted(Response.model_fields)) == _RESPONSE_KEYS
    and tuple(sorted(Usage.model_fields)) == _USAGE_KEYS
)


class _Generic(Exception):
    """A value this module does not write: the caller takes the generic path."""


def _num(v: Any) -> str:
    t = type(v)
    if t is int:
        return int.__repr__(v)
    if t is float and math.isfinite(v):
        return float.__repr__(v)
    raise _Generic


def _opt_num(v: Any) -> str:
    return "null" if v is None else _num(v)


def _str(v: Any) -> str:
    if v is None:
        return "null"
    if type(v) is not str:
        raise _Generic
    return _encode_str(v)


def _bool(v: Any) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    raise _Generic


def num_list(vs: Any) -> str:
    """``json.dumps(list(vs))`` of ints and finite floats (raises ``_Generic`` on anything else)."""
    if not vs:
        return "[]"
    return "[" + ", ".join([_num(v) for v in vs]) + "]"


_T = TypeVar("_T")


def last_remembered(encode: Callable[[_T], str]) -> Callable[[_T], str]:
    """``encode``, remembering the last value and its text: a value written again costs one identity check. A
    model that reports no usage hands every response the same ``Usage`` (frozen, and held here while it is the
    last, so an equal identity is the same object)."""
    last: tuple[object, str] = (object(), "")  # nothing yet: no value is this new object

    def encoded(value: _T) -> str:
        nonlocal last
        if value is last[0]:
            return last[1]
        text = encode(value)
        last = (value, text)
        return text

    return encoded


@last_remembered
def _usage(u: Usage) -> str:
    return (
        f'{{"cached_tokens": {_num(u.cached_tokens)}, "input_tokens": {_num(u.input_tokens)}, '
        f'"output_tokens": {_num(u.output_tokens)}, "reasoning_tokens": {_num(u.reasoning_tokens)}}}'
    )


#: a ``Usage`` as the attempt line writes it (``store.records.ok_record`` writes the line whole)
usage_text = _usage


def _response(r: Response) -> str:
    sent = "null" if r.frames_sent is None else num_list(r.frames_sent)
    return (
        f'{{"cost_usd": {_opt_num(r.cost_usd)}, "finish_reason": {_str(r.finish_reason)}, '
        f'"frames_estimated": {_bool(r.frames_estimated)}, "frames_sent": {sent}, '
        f'"latency_s": {_num(r.latency_s)}, "model_version": {_str(r.model_version)}, '
        f'"text": {_str(r.text)}, "usage": {_usage(r.usage)}}}'
    )


def attempt_line(a: Attempt) -> bytes | None:
    """``encode_line({"attempt": a.model_dump(mode="json")})`` (a plain call's line), or None: write it generically."""
    if not ENABLED:
        return None
    try:
        kind = "null" if a.error_kind is None else _str(a.error_kind.value)
        resp = "null" if a.response is None else _response(a.response)
        text = (
            f'{{"attempt": {{"attempt": {_num(a.attempt)}, "ended_at": {_num(a.ended_at)}, '
            f'"error_kind": {kind}, "error_message": {_str(a.error_message)}, '
            f'"frame_indices": {num_list(a.frame_indices)}, "frame_times": {num_list(a.frame_times)}, '
            f'"response": {resp}, "started_at": {_num(a.started_at)}, "status": {_str(a.status.value)}, '
            f'"trial_id": {_str(a.trial_id)}}}}}\n'
        )
        return text.encode("utf-8")
    except (_Generic, UnicodeEncodeError):  # a lone surrogate: encode_line's own fallbacks decide
        return None


def trial_line(trial_log: str, trial_id: str, created_at: float) -> bytes | None:
    """``encode_line({"trial": data, "trial_id": trial_id, "created_at": created_at})`` where ``trial_log`` is
    ``data`` as ``json.dumps(sort_keys=True, ensure_ascii=False)`` writes it; None: write it generically."""
    try:
        text = f'{{"created_at": {_num(created_at)}, "trial": {trial_log}, "trial_id": {_str(trial_id)}}}\n'
        return text.encode("utf-8")
    except (_Generic, UnicodeEncodeError):
        return None


def frames_json(vs: Any) -> str | None:
    """``json.dumps(list(vs))`` for a frame index or time list, or None: dump it generically."""
    try:
        return num_list(vs)
    except _Generic:
        return None
