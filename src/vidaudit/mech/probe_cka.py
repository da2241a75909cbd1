"""``cka``: linear CKA between the first and last temporal group's representations, per layer (B.7.5).

For each clip, two conditions send the same frame grid: ``control`` (the first sampled frame in every
slot, so the groups show the same picture) and ``adversarial`` (the frames as sampled, so the groups
differ). At every vision block and every LLM layer, ``X`` = the first group's tokens and ``Y`` = the last
group's (rows: spatial positions, raster order; columns: hidden dims), and ``linear_cka(X, Y)`` is
averaged over clips. The paper's wireframe stimuli are not in vidaudit yet; any clip works, and
the stress camera clips are the default data. Needs a Qwen-family vision tower (its groups come from
``grid_thw``); another family is a ConfigError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vidaudit.core.errors import DataError
from vidaudit.mech import data as pdata
from vidaudit.mech.metrics import linear_cka
from vidaudit.mech.output import curve
from vidaudit.mech.prompts import DESCRIBE
from vidaudit.mech.whitebox import Want, WhiteBox

CONDITIONS = ("control", "adversarial")


def run(wb: WhiteBox, clips: list[pdata.Clip], *, frames: int,
        on_progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, Any], Any]:
    wb.require_vision("the cka probe")
    vit_layers, llm_layers = tuple(range(wb.vit_depth)), tuple(range(wb.n_layers))
    vals: dict[str, dict[str, list[list[float]]]] = {c: {"vit": [], "llm": []} for c in CONDITIONS}
    for i, clip in enumerate(clips):
        for cond in CONDITIONS:
            view = wb.view(pdata.request(clip, DESCRIBE, frames, repeat_first=cond == "control"),
                           Want(vit_layers=vit_layers, llm_layers=llm_layers))
            if len(view.spans.groups) < 2:
                raise DataError(f"{clip.clip_id}: {frames} frames make {len(view.spans.groups)} temporal group(s); "
                                "CKA between groups needs at least 2: use a larger --frames")
            g0, g1 = view.spans.groups[0], view.spans.groups[-1]
            vals[cond]["vit"].append([linear_cka(view.vit[l][0], view.vit[l][-1]) for l in vit_layers])
            vals[cond]["llm"].append([linear_cka(view.hidden[l][g0], view.hidden[l][g1]) for l in llm_layers])
        if on_progress:
            on_progress(i + 1, len(clips))
    mean = {c: {k: np.nanmean(np.array(v), axis=0).tolist() for k, v in d.items()} for c, d in vals.items()}
    payload = {"frames": frames, "n_clips": len(clips), "groups_compared": "first vs last temporal group",
               "vit_layers": list(vit_layers), "llm_layers": list(llm_layers), "cka": mean}
    fig = curve("mech-cka", "Linear CKA between first and last temporal group (vision blocks)", list(vit_layers),
                {f"{c} (vision)": mean[c]["vit"] for c in CONDITIONS}, y_label="linear CKA", y_min=0.0, y_max=1.0)
    return payload, fig
