"""The one loader of lazy ``"module:attr"`` targets (the registry's tables and entry points, a ``PartedSuite``'s
parts, a ``ModuleAudit``'s functions): the module is imported when the target is first needed."""

from __future__ import annotations

import importlib
from typing import Any

from vidaudit.core.errors import ConfigError

__all__ = ["load"]


def load(spec: str, what: str) -> Any:
    """The object a lazy ``"module:attr"`` target names, imported now; ``what`` names it in the error."""
    module, _, attr = spec.partition(":")
    mod = importlib.import_module(module)
    try:
        return getattr(mod, attr)
    except AttributeError as e:
        raise ConfigError(f"{what} points to {module}:{attr}, which does not exist") from e
