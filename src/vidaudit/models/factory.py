"""Build an adapter from a spec through the one registry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vidaudit.core.errors import ConfigError
from vidaudit.core.registry import resolve
from vidaudit.core.types import ModelSpec, Sample
from vidaudit.models.base import ModelAdapter


def make_adapter(
    spec: ModelSpec,
    *,
    samples: Mapping[str, Sample] | None = None,
    suite: Any = None,
    options: Mapping[str, Any] | None = None,
) -> ModelAdapter:
    """``samples`` and ``suite`` reach only adapters that declare ``needs_samples`` / ``needs_suite``."""
    cls = resolve("providers", spec.provider)
    kwargs = dict(options or {})
    if getattr(cls, "needs_samples", False):
        kwargs["samples"] = samples
    if getattr(cls, "needs_suite", False):
        kwargs["suite"] = suite
    try:
        adapter: ModelAdapter = cls(spec, **kwargs)
        return adapter
    except TypeError as e:
        raise ConfigError(
            f"cannot build {spec.label}: {e}; check the adapter options given for {spec.provider!r}"
        ) from e
