"""Build an adapter from a spec through the one registry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vidaudit.core.registry import resolve
from vidaudit.core.types import ModelSpec, Sample
from vidaudit.models.base import ModelAdapter


def make_adapter(spec: ModelSpec, *, samples: Mapping[str, Sample] | None = None,
                 options: Mapping[str, Any] | None = None) -> ModelAdapter:
    """``samples`` reach only adapters that declare ``needs_samples`` (the oracle)."""
    cls = resolve("providers", spec.provider)
    kwargs = dict(options or {})
    if getattr(cls, "needs_samples", False):
        kwargs["samples"] = samples
    return cls(spec, **kwargs)
