"""``cka``: linear CKA per layer on the wireframe stimuli's Control and Adversarial arrangements (B.7.5).

The data are ``vidaudit generate stress --probe wireframe`` samples: each scene is rendered once and sent
as ``control`` (four identical copies) and ``adversarial`` (the left half in temporal group 0, the right
half in group 1). ``data.arrangement_pairs`` pairs the two of each scene. Every frame of the stimulus is
sent (its 4 frames make the model's 2 temporal groups; ``--frames`` is not read). Per pair and layer:

- ``within`` (the paper's Table 17): under one condition, ``linear_cka(X, Y)`` with ``X`` the first
  temporal group's tokens and ``Y`` the last group's (rows: spatial positions in raster order). Control is
  1.0 in the vision tower by construction (up to the codec); the paper's Adversarial curve is
  0.980 / 0.976 / 0.924 / 1.0 at blocks 0 / 8 / 15 / 17+.
- ``between``: ``linear_cka`` of Control's and Adversarial's visual tokens at the same layer (rows: every
  visual token, matched by position), the similarity of the two conditions' representations.

Vision blocks use the restored block outputs, LLM layers the video span's hidden states (the paper reports
the tower only). Values are means over pairs; the paper's numbers sit beside the model's blocks when the
tower has the paper's 32 blocks. Needs a Qwen-family vision tower; another family is a ConfigError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vidaudit.core.errors import DataError
from vidaudit.tools.mech import data as pdata
from vidaudit.tools.mech.metrics import linear_cka
from vidaudit.tools.mech.output import curve
from vidaudit.tools.mech.prompts import DESCRIBE
from vidaudit.tools.mech.whitebox import ClipView, Want, WhiteBox

CONDITIONS = ("control", "adversarial")
#: Reveal B.7.5, Table 17: CKA between temporal groups, Qwen2.5-VL-7B (32 vision blocks)
REFERENCE: dict[str, Any] = {
    "source": "Reveal B.7.5, Table 17 (Qwen2.5-VL-7B, 32 vision blocks)",
    "vit_depth": 32,
    "control": {0: 1.0, 8: 1.0, 15: 1.0, 17: 1.0, 24: 1.0, 31: 1.0},
    "adversarial": {0: 0.980, 8: 0.976, 15: 0.924, 17: 1.0, 24: 1.0, 31: 1.0},
}


def _view(wb: WhiteBox, clip: pdata.Clip, vit_layers: tuple[int, ...], llm_layers: tuple[int, ...]) -> ClipView:
    if clip.n_frames < 2 or clip.n_frames % 2:
        raise DataError(
            f"{clip.clip_id} has {clip.n_frames} frames; cka sends every frame of a stimulus, which "
            "needs an even count (temporal patches pair frames)"
        )
    view = wb.view(pdata.request(clip, DESCRIBE, clip.n_frames), Want(vit_layers=vit_layers, llm_layers=llm_layers))
    declared = clip.params.get("temporal_groups")
    if declared is not None and len(declared) != len(view.spans.groups):
        raise DataError(
            f"{clip.clip_id} declares {len(declared)} temporal groups ({declared}) but the model makes "
            f"{len(view.spans.groups)} of its {clip.n_frames} frames: its temporal patch does not match "
            "the stimulus' arrangement"
        )
    if len(view.spans.groups) < 2:
        raise DataError(
            f"{clip.clip_id}: {clip.n_frames} frames make {len(view.spans.groups)} temporal group; CKA "
            "between groups needs at least 2"
        )
    return view


def within(view: ClipView, vit_layers: tuple[int, ...], llm_layers: tuple[int, ...]) -> dict[str, list[float]]:
    """CKA between the first and last temporal group of one condition, per vision block and LLM layer."""
    g0, g1 = view.spans.groups[0], view.spans.groups[-1]
    return {
        "vit": [linear_cka(view.vit[k][0], view.vit[k][-1]) for k in vit_layers],
        "llm": [linear_cka(view.hidden[k][g0], view.hidden[k][g1]) for k in llm_layers],
    }


def between(
    a: ClipView, b: ClipView, vit_layers: tuple[int, ...], llm_layers: tuple[int, ...]
) -> dict[str, list[float]]:
    """CKA between two conditions' visual tokens (matched by position) at the same layer."""
    if a.grid_thw != b.grid_thw:
        raise DataError(
            f"the two conditions make different token grids ({a.grid_thw} vs {b.grid_thw}); a scene's "
            "arrangements must share size and frame count"
        )
    va, vb = a.spans.video, b.spans.video
    return {
        "vit": [
            linear_cka(a.vit[k].reshape(-1, a.vit[k].shape[-1]), b.vit[k].reshape(-1, b.vit[k].shape[-1]))
            for k in vit_layers
        ],
        "llm": [linear_cka(a.hidden[k][va], b.hidden[k][vb]) for k in llm_layers],
    }


def pair_cka(wb: WhiteBox, first: pdata.Clip, second: pdata.Clip) -> dict[str, dict[str, list[float]]]:
    """``{first: within, second: within, "between": between}`` for one scene's two clips, every layer."""
    vit_layers, llm_layers = tuple(range(wb.vit_depth)), tuple(range(wb.n_layers))
    va, vb = _view(wb, first, vit_layers, llm_layers), _view(wb, second, vit_layers, llm_layers)
    return {
        "first": within(va, vit_layers, llm_layers),
        "second": within(vb, vit_layers, llm_layers),
        "between": between(va, vb, vit_layers, llm_layers),
    }


def _mean(rows: list[list[float]]) -> list[float | None]:
    arr = np.array(rows, dtype=np.float64)
    ok = ~np.isnan(arr)
    n = ok.sum(0)
    return [None if k == 0 else float(s / k) for s, k in zip(np.where(ok, arr, 0).sum(0), n, strict=True)]


def run(
    wb: WhiteBox, clips: list[pdata.Clip], *, frames: int, on_progress: Callable[[int, int], None] | None = None
) -> tuple[dict[str, Any], Any]:
    wb.require_vision("the cka probe")
    pairs, unpaired = pdata.arrangement_pairs(clips, *CONDITIONS)
    vit_layers, llm_layers = list(range(wb.vit_depth)), list(range(wb.n_layers))
    acc: dict[str, dict[str, list[list[float]]]] = {k: {"vit": [], "llm": []} for k in (*CONDITIONS, "between")}
    per_pair = []
    for i, (ctrl, adv) in enumerate(pairs):
        res = pair_cka(wb, ctrl, adv)
        for key, src in (("control", "first"), ("adversarial", "second"), ("between", "between")):
            for stage in ("vit", "llm"):
                acc[key][stage].append(res[src][stage])
        per_pair.append(
            {
                "control": ctrl.clip_id,
                "adversarial": adv.clip_id,
                "adversarial_vit": res["second"]["vit"],
                "control_vs_adversarial_vit": res["between"]["vit"],
            }
        )
        if on_progress:
            on_progress(i + 1, len(pairs))
    mean = {k: {s: _mean(v) for s, v in d.items()} for k, d in acc.items()}
    aligned = wb.vit_depth == REFERENCE["vit_depth"]
    rows = []
    for stage, layers in (("vit", vit_layers), ("llm", llm_layers)):
        for j, layer in enumerate(layers):
            ref = stage == "vit" and aligned
            rows.append(
                {
                    "stage": stage,
                    "layer": layer,
                    "control": mean["control"][stage][j],
                    "adversarial": mean["adversarial"][stage][j],
                    "control_vs_adversarial": mean["between"][stage][j],
                    "paper_control": REFERENCE["control"].get(layer) if ref else None,
                    "paper_adversarial": REFERENCE["adversarial"].get(layer) if ref else None,
                }
            )
    payload = {
        "frames_sent": sorted({c.n_frames for p in pairs for c in p}),
        "frames_option": "not read by cka",
        "prompt": DESCRIBE,
        "n_pairs": len(pairs),
        "unpaired": unpaired,
        "measures": {
            "control / adversarial": "CKA between the first and last temporal group's tokens under "
            "that condition (B.7.5, Table 17)",
            "control_vs_adversarial": "CKA between the two conditions' visual tokens at one layer",
        },
        "vit_layers": vit_layers,
        "llm_layers": llm_layers,
        "cka": {c: mean[c] for c in CONDITIONS},
        "control_vs_adversarial": mean["between"],
        "reference": {
            **REFERENCE,
            "control": {str(k): v for k, v in REFERENCE["control"].items()},
            "adversarial": {str(k): v for k, v in REFERENCE["adversarial"].items()},
        },
        "reference_aligned": aligned,
        "curve": rows,
        "pairs": per_pair,
    }
    series: dict[str, list[float | None]] = {
        "control (group 0 vs 1)": mean["control"]["vit"],
        "adversarial (group 0 vs 1)": mean["adversarial"]["vit"],
        "control vs adversarial": mean["between"]["vit"],
    }
    if aligned:
        series["paper adversarial (Qwen2.5-VL-7B)"] = [REFERENCE["adversarial"].get(k) for k in vit_layers]
    note = (
        ""
        if aligned
        else f"The paper's values (blocks {', '.join(map(str, REFERENCE['adversarial']))} of a "
        f"32-block tower) are in the table; this tower has {wb.vit_depth} blocks, so none is drawn beside it."
    )
    fig = curve(
        "mech-cka",
        "Linear CKA per vision block: wireframe Control vs Adversarial",
        vit_layers,
        series,
        x_label="vision block",
        y_label="linear CKA",
        y_min=0.0,
        y_max=1.0,
        caption=note,
    )
    return payload, fig
