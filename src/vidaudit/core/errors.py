"""Errors that the CLI turns into a clear message and a non-zero exit."""

from __future__ import annotations

from collections.abc import Iterable


class VidauditError(Exception):
    """A user-facing error: the message names the problem and how to fix it."""


class ConfigError(VidauditError):
    """Bad parameters, flags or config files."""


class DataError(VidauditError):
    """A manifest, video or store that is missing, corrupt or inconsistent."""


class VerificationError(VidauditError):
    """Rendered pixels disagree with the executable trace."""


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
