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
