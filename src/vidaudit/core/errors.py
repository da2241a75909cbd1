"""Errors that the CLI turns into a clear message and a non-zero exit."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


class VidauditError(Exception):
    """A user-facing error: the message names the problem and how to fix it."""


class ConfigError(VidauditError):
    """Bad parameters, flags or config files."""


class DataError(VidauditError):
    """A manifest, video or store that is missing, corrupt or inconsistent."""


class VerificationError(VidauditError):
    """Rendered pixels disagree with the executable trace."""


#: how many names a message lists before it says "and N more"
MAX_LISTED = 10


def listed(items: Sequence[Any], limit: int = MAX_LISTED) -> str:
    """``a, b, c`` or ``a, b, c and 7 more``: names in a one-line message, never a wall of them."""
    shown = ", ".join(str(x) for x in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def check_choice(what: str, value: object, choices: Iterable[str]) -> None:
    """A ConfigError naming the choices when ``value`` is not one of them (``unknown preset 'x'; choose from ...``)."""
    names = list(choices)
    if value not in names:
        raise ConfigError(f"unknown {what} {value!r}; choose from {', '.join(names)}")


def validation_message(error: Exception) -> str:
    """The first problem of a pydantic ``ValidationError`` (or any error) as one plain sentence: no input dump,
    no documentation URL (``fps must be a positive finite number, got 0.0``)."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
        except (IndexError, TypeError):
            return str(error).splitlines()[0]
        msg = str(first.get("msg", "")).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        loc = ".".join(str(x) for x in first.get("loc", ()) if x != "__root__")
        return f"{loc}: {msg}" if loc and first.get("type") != "value_error" else msg
    return str(error).splitlines()[0] if str(error) else type(error).__name__
