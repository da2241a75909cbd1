"""One registry, one name per thing: names map to lazy ``"module:attr"`` targets.

Third-party packages can add entries through the ``vidaudit.<kind>`` entry-point group.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from vidaudit.core.errors import ConfigError

_BUILTIN: dict[str, dict[str, str]] = {
    "providers": {
        "oracle": "vidaudit.models.baselines:OracleAdapter",
        "chance": "vidaudit.models.baselines:ChanceAdapter",
        "constant": "vidaudit.models.baselines:ConstantAdapter",
        "ideal-observer": "vidaudit.models.ideal_observer:IdealObserverAdapter",
        "openai": "vidaudit.models.openai_compat:OpenAIAdapter",
        "gemini": "vidaudit.models.gemini:GeminiAdapter",
        "anthropic": "vidaudit.models.anthropic:AnthropicAdapter",
        "hf": "vidaudit.models.hf:HFAdapter",
    },
    "suites": {
        "counting": "vidaudit.suites.counting:SUITE",
    },
}


def names(kind: str) -> list[str]:
    found = dict(_BUILTIN.get(kind, {}))
    for ep in entry_points(group=f"vidaudit.{kind}"):
        found.setdefault(ep.name, ep.value)
    return sorted(found)


def resolve(kind: str, name: str) -> Any:
    target = _BUILTIN.get(kind, {}).get(name)
    if target is None:
        for ep in entry_points(group=f"vidaudit.{kind}"):
            if ep.name == name:
                target = ep.value
                break
    if target is None:
        raise ConfigError(f"unknown {kind[:-1]} {name!r}; choose one of: {', '.join(names(kind))}")
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)
