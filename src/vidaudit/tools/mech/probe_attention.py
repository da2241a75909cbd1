"""``attention``: where the answer position looks, under two prompts that differ in one factor (C.6, D.6).

For every clip and LLM layer ``l``: ``alpha_vid[l]`` = the attention mass from the answer position (the
last prompt token, which predicts the first generated token) to the video tokens, averaged over heads;
the same for the ``system``, ``prompt`` (the question / claim tokens) and ``other`` spans. Under the
neutral and the pressured prompt (``sycophancy``: C.4's template with a false claim; ``bias``: the
answer embedded in the question), ``delta[l] = alpha_vid_pressured - alpha_vid_neutral``; the video-to-
claim ratio is ``alpha_vid / alpha_prompt`` under the neutral prompt, averaged over layers (C.6 F4);
``norm_ratio[l]`` is the mean L2 norm of visual over text hidden states (neutral prompt; index 0 is
the embeddings). All are means over clips.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vidaudit.core.errors import ConfigError
from vidaudit.tools.mech import data as pdata
from vidaudit.tools.mech.output import curve
from vidaudit.tools.mech.prompts import false_claim, pair
from vidaudit.tools.mech.spans import SPANS
from vidaudit.tools.mech.whitebox import Want, WhiteBox

FACTORS = ("sycophancy", "bias")


def span_mass(view: Any) -> dict[str, np.ndarray]:
    """Per span, (n_layers,) attention mass from the answer row, mean over heads."""
    layers = sorted(view.attention)
    return {
        name: np.array([view.attention[layer][:, view.spans.span(name)].sum(-1).mean() for layer in layers])
        for name in SPANS
    }


def run(
    wb: WhiteBox,
    clips: list[pdata.Clip],
    *,
    factor: str,
    frames: int,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], Any]:
    if factor not in FACTORS:
        raise ConfigError(f"--factor {factor!r} is not one of {', '.join(FACTORS)}")
    acc: dict[str, list[dict[str, np.ndarray]]] = {"neutral": [], "pressured": []}
    norms = []
    for i, clip in enumerate(clips):
        neutral, pressured = pair(factor, false_claim(clip.params))
        for cond, prompt in (("neutral", neutral), ("pressured", pressured)):
            view = wb.view(pdata.request(clip, prompt, frames), Want(attention=True))
            acc[cond].append(span_mass(view))
            if cond == "neutral":
                norms.append(view.norm_ratio)
        if on_progress:
            on_progress(i + 1, len(clips))
    mean = {cond: {s: np.mean([m[s] for m in rows], axis=0) for s in SPANS} for cond, rows in acc.items()}
    delta = mean["pressured"]["video"] - mean["neutral"]["video"]
    with np.errstate(divide="ignore", invalid="ignore"):
        v2c = np.nanmean(mean["neutral"]["video"] / mean["neutral"]["prompt"])
    layers = list(range(wb.n_layers))
    payload = {
        "factor": factor,
        "frames": frames,
        "n_clips": len(clips),
        "layers": layers,
        "alpha": {c: {s: v.tolist() for s, v in m.items()} for c, m in mean.items()},
        "delta": delta.tolist(),
        "mean_delta": float(delta.mean()),
        "peak_alpha_vid": {c: float(m["video"].max()) for c, m in mean.items()},
        "video_to_claim_ratio": float(v2c),
        "norm_ratio": np.mean(norms, axis=0).tolist(),
        "norm_ratio_index": "0 = embeddings, l + 1 = layer l",
        "query": "answer position (last prompt token)",
        "heads": "mean over all heads",
    }
    fig = curve(
        "mech-attention",
        f"Attention from the answer position to video tokens ({factor})",
        layers,
        {
            "alpha_vid neutral": mean["neutral"]["video"].tolist(),
            f"alpha_vid {factor}": mean["pressured"]["video"].tolist(),
            "delta": delta.tolist(),
        },
        y_label="attention mass",
        y_min=None,
        y_max=None,
    )
    return payload, fig
