"""What the two local providers (``hf``, ``vllm``) share: their settings' checks, config, family and version.

Both run a transformers-format model on this machine, one batch at a time; they differ only in the engine
that generates. A local engine refuses its settings before anything loads, reads the model's config (never
its name) to pick a family, and stamps every answer with the model, weights' commit, engine and precision.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ModelSpec
from vidaudit.models.base import Capabilities
from vidaudit.models.hf_families import Family, family_for


def load_config(provider: str, name: str, **hub: Any) -> Any:
    """The model's transformers config, or a ConfigError that says what to pass instead."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(name, **hub)
    except (OSError, ValueError) as e:
        raise ConfigError(
            f"cannot load the config of {provider} model {name!r}: {e}; pass a local model "
            "directory or a hub id that is in the local cache"
        ) from e


class LocalEngine:
    """The shared half of a local adapter; a subclass names its provider, precisions and options."""

    provider: ClassVar[str]
    #: a model a user might name, for the message when none is named
    example: ClassVar[str]
    dtypes: ClassVar[tuple[str, ...]]
    options_known: ClassVar[tuple[str, ...]]

    spec: ModelSpec
    family: Family
    capabilities: Capabilities
    model_version: str

    def _check(self, spec: ModelSpec, dtype: str, batch_size: object, options: Mapping[str, Any]) -> None:
        """Refuse the settings before anything loads."""
        p = self.provider
        if not spec.name:
            raise ConfigError(f"{p} needs a model path or hub id, e.g. {p}:{self.example}")
        if dtype not in self.dtypes:
            raise ConfigError(f"{p} dtype {dtype!r} is not one of {', '.join(self.dtypes)}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"{p} batch_size must be a positive integer, got {batch_size!r}")
        unknown = sorted(set(options) - set(self.options_known))
        if unknown:
            raise ConfigError(f"unknown {p} options {unknown}; known: {', '.join(self.options_known)}")

    def _open(
        self,
        spec: ModelSpec,
        config: Any,
        *,
        dtype: str,
        batch_size: int,
        options: Mapping[str, Any],
        engine: str,
        max_images: int | None = None,
    ) -> None:
        """Take the checked settings and the loaded config; the weights load later, on first use."""
        self.spec = spec
        self._dtype = dtype
        self._options = dict(options)
        self.family = family_for(config.model_type, spec.name)
        self.capabilities = Capabilities(
            native_video=self.family.video,
            images=True,
            max_images=max_images,
            default_native_fps=2.0,
            concurrency=1,
            batch_size=batch_size,
            local=True,
        )
        revision = getattr(config, "_commit_hash", None) or options.get("revision") or "local"
        self.model_version = f"{config.model_type}:{Path(spec.name).name}@{revision}; {engine}; {dtype}; frames=exact"
        self._processor: Any = None
        self._lock = threading.Lock()

    def request_options(self) -> dict[str, object]:
        """The precision the model runs at changes its answers: part of the trial id."""
        return {"dtype": self._dtype}
