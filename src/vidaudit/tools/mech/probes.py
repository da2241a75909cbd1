"""``run_probe``: one probe on one model and dataset, writing ``OUT/NAME.json`` and ``OUT/NAME.svg``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from vidaudit.core.errors import ConfigError
from vidaudit.tools.mech import data as pdata
from vidaudit.tools.mech import probe_attention, probe_cka, probe_kl, probe_linear, probe_partition
from vidaudit.tools.mech.layers import parse_layers
from vidaudit.tools.mech.linear_probe import EPOCHS
from vidaudit.tools.mech.output import write_probe
from vidaudit.tools.mech.whitebox import WhiteBox

PROBES = {
    "linear": "linear probes at the encoder, projector and LLM layers (direction or 4-way camera)",
    "attention": "attention from the answer position to video / system / prompt tokens, neutral vs pressured",
    "kl": "KL of the first-token distribution, real vs blank and noise video, over a prompt ladder",
    "cka": "linear CKA between the first and last temporal group, per vision block and LLM layer",
    "encoder-partition": "the vision encoder's cu_seqlens partition, cross-frame attention and Conv3D slices",
}


def model_path(model: str) -> str:
    """``hf:PATH`` -> PATH (the white-box view serves local transformers models only)."""
    provider, _, name = model.partition(":")
    if provider != "hf" or not name:
        raise ConfigError(
            f"--model {model!r}: probes need an open model as hf:PATH (a local directory or a cached "
            "hub id), e.g. hf:./tiny-qwen (make one with `vidaudit tiny-model qwen2_5_vl --out DIR`)"
        )
    return name


def run_probe(
    name: str,
    model: str,
    data: str | Path,
    out: str | Path,
    *,
    layers: str | None = None,
    frames: int = 8,
    task: str | None = None,
    factor: str = "sycophancy",
    limit: int | None = None,
    device: str = "cpu",
    dtype: str = "float32",
    epochs: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, Path]:
    if name not in PROBES:
        raise ConfigError(f"unknown probe {name!r}; known: {', '.join(PROBES)}")
    if frames < 2 or frames % 2:
        raise ConfigError(f"--frames must be an even number >= 2 (temporal patches pair frames), got {frames}")
    path = model_path(model)
    out = Path(out)
    clips = pdata.load_clips(data, limit=limit)
    wb = WhiteBox(path, device=device, dtype=dtype)
    kw: dict[str, Any] = {"frames": frames, "on_progress": on_progress}
    if name == "linear":
        chosen = task or ("camera" if all("motion" in c.params for c in clips) else "direction")
        if chosen not in probe_linear.CHANCE:
            raise ConfigError(f"--task {chosen!r} is not one of {', '.join(probe_linear.CHANCE)}")
        lay = wb.check_layers(parse_layers(layers, wb.n_layers))
        payload, fig = probe_linear.run(wb, path, clips, out, task=chosen, layers=lay, epochs=epochs or EPOCHS, **kw)
    elif name == "attention":
        payload, fig = probe_attention.run(wb, clips, factor=factor, **kw)
    elif name == "kl":
        payload, fig = probe_kl.run(wb, clips, out, **kw)
    elif name == "cka":
        payload, fig = probe_cka.run(wb, clips, **kw)
    else:
        payload, fig = probe_partition.run(wb, clips, **kw)
    payload = {
        "model": model,
        "model_version": wb.model_version,
        "family": wb.family.model_type,
        "data": str(data),
        **payload,
    }
    return write_probe(out, name, payload, fig)
