"""``encoder-partition``: the vision encoder's packed-sequence partition, read from the model (B.7).

Per vision block: the ``cu_seqlens`` it was called with (captured by a forward pre-hook), the number of
segments, the share of the visual input one token can see (mean over tokens of its segment's length over
the total), and the cross-frame attention mass: for each query token, the attention it gives to tokens of
other temporal groups, from the softmax rows the ``vidaudit_capture`` function sees in each chunk the
model actually runs (mean over heads, tokens and clips). Plus the Conv3D patch embedding's temporal
slices, read from its weights (``conv3d_stats``: slice cosine overall and per output channel, temporal
energy, per-channel sensitivity, the temporal component's rank), and the merger's token reduction.
Qwen-family towers only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vidaudit.tools.mech import data as pdata
from vidaudit.tools.mech.output import curve
from vidaudit.tools.mech.prompts import DESCRIBE
from vidaudit.tools.mech.whitebox import Want, WhiteBox

RANK_ENERGY = 0.99  # the temporal component's rank: singular values holding this share of its energy


def _summary(v: np.ndarray) -> dict[str, float]:
    return {
        "mean": float(v.mean()),
        "std": float(v.std()),
        "min": float(v.min()),
        "median": float(np.median(v)),
        "max": float(v.max()),
    }


def _finite(v: np.ndarray) -> list[float | None]:
    return [float(x) if np.isfinite(x) else None for x in v]  # a zero channel has no cosine: null, not NaN


def conv3d_stats(weight: Any) -> dict[str, Any]:
    """The temporal structure of a (out, C, T, p, p) Conv3D patch-embedding kernel (B.7.2), from its weights.

    - ``slice_cosine``: cosine between consecutive temporal slices, each flattened over every channel;
    - ``channel_slice_cosine``: per output channel, the cosine between its consecutive slices (C x p x p
      each), summarised (``per_channel`` keeps the values for T = 2);
    - ``temporal_energy``: the share of the kernel's squared norm outside its mean over time;
    - ``channel_sensitivity``: the same share per output channel, summarised;
    - ``temporal_rank``: the SVD of the temporal component (the kernel minus its mean over time, one row
      per output channel): its numerical rank, and the singular values holding 99% of its energy.
    """
    w = (
        weight.detach().float().cpu().numpy().astype(np.float64)
        if hasattr(weight, "detach")
        else np.asarray(weight, np.float64)
    )
    if w.ndim != 5 or w.shape[2] < 2:
        return {"shape": list(w.shape), "temporal_slices": int(w.shape[2]) if w.ndim == 5 else None}
    n_out, t = w.shape[0], w.shape[2]
    slices = [w[:, :, i].reshape(-1) for i in range(t)]
    cos = [float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) for a, b in zip(slices, slices[1:], strict=False)]
    per = w.transpose(0, 2, 1, 3, 4).reshape(n_out, t, -1)  # (out, T, C*p*p)
    a, b = per[:, :-1], per[:, 1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        ch_cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))  # (out, T-1)
        dev = per - per.mean(axis=1, keepdims=True)
        sens = (dev**2).sum((1, 2)) / (per**2).sum((1, 2))  # (out,)
    energy = float((dev**2).sum() / (w**2).sum())
    temporal = dev.reshape(n_out, -1)
    sv = np.linalg.svd(temporal, compute_uv=False)
    share = np.cumsum(sv**2) / (sv**2).sum() if sv.any() else np.zeros_like(sv)
    finite_cos, finite_sens = ch_cos[np.isfinite(ch_cos)], sens[np.isfinite(sens)]
    return {
        "shape": list(w.shape),
        "slice_cosine": cos,
        "temporal_energy": energy,
        "channel_slice_cosine": {
            **(_summary(finite_cos) if finite_cos.size else {}),
            "zero_channels": int(n_out - np.isfinite(ch_cos).all(-1).sum()),
            "per_channel": _finite(ch_cos[:, 0]) if t == 2 else None,
        },
        "channel_sensitivity": {**(_summary(finite_sens) if finite_sens.size else {}), "per_channel": _finite(sens)},
        "temporal_rank": {
            "matrix_rank": int(np.linalg.matrix_rank(temporal)) if sv.any() else 0,
            "rank_99": int(np.searchsorted(share, RANK_ENERGY) + 1) if sv.any() else 0,
            "max_rank": int(min(n_out, per.shape[-1] * (t - 1))),
            "singular_values": sv.tolist(),
        },
    }


def run(
    wb: WhiteBox, clips: list[pdata.Clip], *, frames: int, on_progress: Callable[[int, int], None] | None = None
) -> tuple[dict[str, Any], Any]:
    wb.require_vision("the encoder-partition probe")
    cross: dict[int, list[float]] = {}
    first = None
    for i, clip in enumerate(clips):
        view = wb.view(pdata.request(clip, DESCRIBE, frames), Want(vision_attention=True))
        first = first or view
        for layer, (mass, n) in view.vision_cross.items():
            cross.setdefault(layer, []).append(mass / n)
        if on_progress:
            on_progress(i + 1, len(clips))
    assert first is not None
    visual = wb.visual
    assert visual is not None  # wb.require_vision above
    layers = sorted(first.cu_seqlens)
    blocks: list[dict[str, Any]] = []
    for layer in layers:
        cu = first.cu_seqlens[layer]
        lens = np.diff(cu)
        total = int(cu[-1])
        blocks.append(
            {
                "layer": layer,
                "cu_seqlens": cu,
                "segments": len(lens),
                "visible_fraction": float((lens * lens).sum() / total**2),
                "full_attention": layer in tuple(getattr(wb.visual, "fullatt_block_indexes", ()) or ()),
                "cross_frame_mass": float(np.mean(cross.get(layer, [np.nan]))),
            }
        )
    grid = first.grid_thw
    n_patches = int(sum(t * h * w for t, h, w in grid))
    unit = int(visual.spatial_merge_size) ** 2
    payload = {
        "family": wb.family.model_type,
        "frames": frames,
        "n_clips": len(clips),
        "grid_thw": grid,
        "temporal_groups": int(sum(t for t, _, _ in grid)),
        "blocks": blocks,
        "conv3d": conv3d_stats(visual.patch_embed.proj.weight),
        "merger": {"patches_in": n_patches, "tokens_out": n_patches // unit},
    }
    fig = curve(
        "mech-partition",
        "Vision encoder: visible share and cross-frame attention per block",
        layers,
        {
            "visible fraction": [b["visible_fraction"] for b in blocks],
            "cross-frame mass": [b["cross_frame_mass"] for b in blocks],
        },
        x_label="vision block",
        y_label="share",
        y_min=0.0,
        y_max=1.0,
    )
    return payload, fig
