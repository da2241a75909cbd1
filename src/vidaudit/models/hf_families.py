"""Which transformers model families the ``hf`` adapter serves, and where they differ.

A family is chosen from the loaded config's ``model_type`` (never from the model's name). How the
processor's inputs are built (``hf_inputs``) is shared; a family only says how its processor wants images
batched, whether it takes videos, and whether its temporal positions need the true frame spacing. The two local
providers (``hf``, ``vllm``) also check their settings and load a config here, one way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ModelSpec


@dataclass(frozen=True)
class Family:
    model_type: str
    label: str
    #: the processor accepts ``videos=`` (native presentation)
    video: bool = True
    #: the processor wants images as one list per prompt (Idefics3/SmolVLM) rather than a flat list
    nested_images: bool = False
    #: Qwen2.5-VL derives temporal positions from ``second_per_grid_ts``; set it from the true frame times
    seconds_per_grid: bool = False


FAMILIES: dict[str, Family] = {
    f.model_type: f
    for f in (
        Family("qwen2_vl", "Qwen2-VL"),
        Family("qwen2_5_vl", "Qwen2.5-VL", seconds_per_grid=True),
        Family("qwen3_vl", "Qwen3-VL"),
        Family("smolvlm", "SmolVLM2", nested_images=True),
        Family("idefics3", "Idefics3", video=False, nested_images=True),
        Family("llava_onevision", "LLaVA-OneVision"),
    )
}


def family_for(model_type: str, name: str) -> Family:
    """The family of a loaded config, or a ConfigError naming the supported ``model_type`` values."""
    fam = FAMILIES.get(model_type)
    if fam is None:
        supported = ", ".join(f"{k} ({v.label})" for k, v in FAMILIES.items())
        raise ConfigError(
            f"hf model {name!r} has model_type {model_type!r}, which the hf adapter does not "
            f"support; supported model types: {supported}"
        )
    if fam.model_type == "qwen3_vl":
        try:
            from transformers import Qwen3VLForConditionalGeneration  # noqa: F401
        except ImportError as e:
            raise ConfigError(
                f"hf model {name!r} is Qwen3-VL, which the installed transformers lacks; "
                "upgrade it: pip install -U transformers"
            ) from e
    return fam


def check_engine_settings(
    provider: str,
    spec: ModelSpec,
    *,
    example: str,
    dtype: str,
    dtypes: Sequence[str],
    batch_size: object,
    options: Mapping[str, Any],
    known: Sequence[str],
) -> None:
    """Refuse a local engine's settings before anything loads: both local providers (hf, vllm) take the same four."""
    if not spec.name:
        raise ConfigError(f"{provider} needs a model path or hub id, e.g. {provider}:{example}")
    if dtype not in dtypes:
        raise ConfigError(f"{provider} dtype {dtype!r} is not one of {', '.join(dtypes)}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"{provider} batch_size must be a positive integer, got {batch_size!r}")
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ConfigError(f"unknown {provider} options {unknown}; known: {', '.join(known)}")


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
