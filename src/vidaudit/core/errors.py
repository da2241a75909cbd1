"""Errors that the CLI turns into a clear message and a non-zero exit."""

from __future__ import annotations


class VidauditError(Exception):
    """A user-facing error: the message names the problem and how to fix it."""


class ConfigError(VidauditError):
    """Bad parameters, flags or config files."""


class DataError(VidauditError):
    """A manifest, video or store that is missing, corrupt or inconsistent."""


class VerificationError(VidauditError):
    """Rendered pixels disagree with the executable trace."""
