"""A last line of defence: refuse to persist any value that carries a secret from the environment.

The store and the run config only ever receive Attempts, Trial JSON and configs, none of which
should hold a key. This guard makes that a checked property rather than a hope: before a row is
written, every string in it is compared with the values of the ``*_API_KEY`` / ``*_TOKEN``
environment variables, read at write time (so a key exported mid-session is caught too).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from vidaudit.core.errors import DataError

SECRET_SUFFIXES = ("_API_KEY", "_TOKEN")
MIN_SECRET_LEN = 8
"""Values shorter than this are not treated as secrets: no real key is that short, and matching
them would refuse legitimate text such as the answer ``"12"``."""


class SecretLeakError(DataError):
    """A value about to be written contains the value of a secret environment variable."""


def env_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Secret-looking environment variables (name -> value), ignoring empty or very short values."""
    env = os.environ if environ is None else environ
    out = {}
    for name in env:  # names first: reading every value of ``os.environ`` decodes it (the store calls this per record)
        if name.upper().endswith(SECRET_SUFFIXES) and len((value := env[name]).strip()) >= MIN_SECRET_LEN:
            out[name] = value
    return out


def _strings(obj: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(obj, str):
        yield where, obj
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            if isinstance(k, str):
                yield f"{where}.<key>", k
            yield from _strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(obj, list | tuple | set | frozenset):
        for i, v in enumerate(obj):
            yield from _strings(v, f"{where}[{i}]")


def check_no_secrets(
    obj: Any, what: str, environ: Mapping[str, str] | None = None, *, secrets: Mapping[str, str] | None = None
) -> None:
    """Raise ``SecretLeakError`` if any string in ``obj`` equals or contains a secret's value.

    The message names the field and the variable, never the value. ``secrets``: ``env_secrets()`` read
    once by a caller that checks many records at the same moment (a batch of trials).
    """
    if secrets is None:
        secrets = env_secrets(environ)
    if not secrets:
        return
    for where, text in _strings(obj, ""):
        for name, value in secrets.items():
            if value in text:
                raise SecretLeakError(
                    f"refusing to write {what}: field {where or '<value>'!r} contains the value of the "
                    f"environment variable {name}. Secrets must never reach a store, log or report; find "
                    f"where that value entered the data (an error message, a base_url, a prompt) and remove it"
                )


def redact_text(text: str, environ: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """``text`` with every secret's value replaced by ``[REDACTED:NAME]``, and the names redacted."""
    names = []
    for name, value in sorted(env_secrets(environ).items(), key=lambda kv: -len(kv[1])):
        if value in text:
            text = text.replace(value, f"[REDACTED:{name}]")
            names.append(name)
    return text, names


def _redact_any(obj: Any) -> Any:
    if isinstance(obj, str):
        return redact_text(obj)[0]
    if isinstance(obj, Mapping):
        return {k: _redact_any(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_redact_any(v) for v in obj)
    return obj


def redact_model_output(record: Any) -> Any:
    """A stored call (an ``Attempt`` or a stage call) with secrets cut out of what a model or server wrote.

    A model that echoes the API key in its answer must not stop the run (the trial could never
    finish): the value is replaced by ``[REDACTED:NAME]`` in the response text, the error message
    and a stage call's request fingerprint, and that marker is what a reader sees. Anything else that
    still holds a secret (a trial, a config) is refused by ``check_no_secrets``.
    """
    if not env_secrets():
        return record
    update: dict[str, Any] = {}
    response = getattr(record, "response", None)
    if response is not None:
        text, names = redact_text(response.text)
        if names:
            update["response"] = response.model_copy(update={"text": text})
    message = getattr(record, "error_message", None)
    if message:
        text, names = redact_text(message)
        if names:
            update["error_message"] = text
    request = getattr(record, "request", None)
    if isinstance(request, Mapping):
        update["request"] = _redact_any(dict(request))
    return record.model_copy(update=update) if update else record
