"""``encoder-partition``: the vision encoder's packed-sequence partition, read from the model (B.7).

Per vision block: the ``cu_seqlens`` it was called with (captured by a forward pre-hook), the number of
segments, the share of the visual input one token can see (mean over tokens of its segment's length over
the total), and the cross-frame attention mass: for each query token, the attention it gives to tokens of
other temporal groups, from the softmax rows the ``vidaudit_capture`` function sees in each chunk the
model actually runs (mean over heads, tokens and clips). Plus the Conv3D patch embedding's temporal
slices: the cosine between consecutive slices and the temporal energy (the share of the kernel's squared
norm outside its mean over time), and the merger's token reduction. Qwen-family towers only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vidaudit.mech import data as pdata
from vidaudit.mech.output import curve
from vidaudit.mech.prompts import DESCRIBE
from vidaudit.mech.whitebox import Want, WhiteBox


def conv3d_stats(weight: Any) -> dict[str, Any]:
    """Temporal-slice similarity of a (out, C, T, p, p) Conv3D kernel."""
    w = weight.detach().float().cpu().numpy()
    if w.ndim != 5 or w.shape[2] < 2:
        return {"shape": list(w.shape), "temporal_slices": int(w.shape[2]) if w.ndim == 5 else None}
    slices = [w[:, :, t].reshape(-1) for t in range(w.shape[2])]
    cos = [float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) for a, b in zip(slices, slices[1:], strict=False)]
    energy = float(((w - w.mean(axis=2, keepdims=True)) ** 2).sum() / (w**2).sum())
    return {"shape": list(w.shape), "slice_cosine": cos, "temporal_energy": energy}


def run(wb: WhiteBox, clips: list[pdata.Clip], *, frames: int,
        on_progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, Any], Any]:
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
    layers = sorted(first.cu_seqlens)
    blocks = []
    for layer in layers:
        cu = first.cu_seqlens[layer]
        lens = np.diff(cu)
        total = int(cu[-1])
        blocks.append({"layer": layer, "cu_seqlens": cu, "segments": len(lens),
                       "visible_fraction": float((lens * lens).sum() / total**2),
                       "full_attention": layer in tuple(getattr(wb.visual, "fullatt_block_indexes", ()) or ()),
                       "cross_frame_mass": float(np.mean(cross.get(layer, [np.nan])))})
    grid = first.grid_thw
    n_patches = int(sum(t * h * w for t, h, w in grid))
    unit = int(wb.visual.spatial_merge_size) ** 2
    payload = {"family": wb.family.model_type, "frames": frames, "n_clips": len(clips), "grid_thw": grid,
               "temporal_groups": int(sum(t for t, _, _ in grid)), "blocks": blocks,
               "conv3d": conv3d_stats(wb.visual.patch_embed.proj.weight),
               "merger": {"patches_in": n_patches, "tokens_out": n_patches // unit}}
    fig = curve("mech-partition", "Vision encoder: visible share and cross-frame attention per block", layers,
                {"visible fraction": [b["visible_fraction"] for b in blocks],
                 "cross-frame mass": [b["cross_frame_mass"] for b in blocks]},
                x_label="vision block", y_label="share", y_min=0.0, y_max=1.0)
    return payload, fig
