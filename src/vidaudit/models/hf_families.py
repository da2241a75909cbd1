"""Which transformers model families the ``hf`` adapter serves, and where they differ.

A family is chosen from the loaded config's ``model_type`` (never from the model's name). How the
processor's inputs are built (``hf_inputs``) is shared; a family only says how its processor wants images
batched, whether it takes videos, and whether its temporal positions need the true frame spacing.
"""

from __future__ import annotations

from dataclasses import dataclass

from vidaudit.core.errors import ConfigError


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
