"""``kl``: does the video change the first answer token? KL(P_real || P_blank) and KL(P_real || P_noise) (D.7).

For each clip the real video, ``blank`` (black, same size, rate and length) and ``noise_video`` (uniform
0-255 per pixel) send the same frame indices, so the token grid is identical; each prompt of the ladder
(neutral, weak, strong, assertive; ``prompts.ladder``) is asked of all three. ``P`` is the next-token
distribution at the answer position over the whole vocabulary; KL is in nats (``metrics.LOG_BASE``).
Reported: the mean over clips per prompt (and every clip's value).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from vidaudit.tools.mech import data as pdata
from vidaudit.tools.mech.metrics import LOG_BASE, kl_divergence
from vidaudit.tools.mech.output import curve
from vidaudit.tools.mech.prompts import false_claim, ladder
from vidaudit.tools.mech.whitebox import Want, WhiteBox


def run(
    wb: WhiteBox,
    clips: list[pdata.Clip],
    out_dir: Path,
    *,
    frames: int,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], Any]:
    cache = out_dir / "cache" / "perturb"
    names = list(ladder("x"))
    per: dict[str, dict[str, list[float]]] = {n: {"blank": [], "noise": []} for n in names}
    for i, clip in enumerate(clips):
        alt = {"blank": pdata.derived(clip, "blank", cache), "noise": pdata.derived(clip, "noise_video", cache)}
        for name, prompt in ladder(false_claim(clip.params)).items():
            real = wb.view(pdata.request(clip, prompt, frames), Want()).logprobs
            for kind, other in alt.items():
                lq = wb.view(pdata.request(other, prompt, frames), Want()).logprobs
                per[name][kind].append(kl_divergence(real, lq))
        if on_progress:
            on_progress(i + 1, len(clips))
    mean = {n: {k: float(np.mean(v)) for k, v in d.items()} for n, d in per.items()}
    payload = {
        "log_base": LOG_BASE,
        "prompts": ladder("<claim>"),
        "frames": frames,
        "n_clips": len(clips),
        "kl_real_blank": {n: mean[n]["blank"] for n in names},
        "kl_real_noise": {n: mean[n]["noise"] for n in names},
        "per_clip": per,
    }
    fig = curve(
        "mech-kl",
        "KL of the first-token distribution, real vs blank / noise video",
        list(range(len(names))),
        {"KL(real||blank)": [mean[n]["blank"] for n in names], "KL(real||noise)": [mean[n]["noise"] for n in names]},
        x_label="prompt (" + ", ".join(f"{i}={n}" for i, n in enumerate(names)) + ")",
        y_label="KL (nats)",
    )
    return payload, fig
