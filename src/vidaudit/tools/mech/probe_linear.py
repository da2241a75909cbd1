"""``linear``: linear probes over frozen features at each stage (Reveal 6.1, E.7).

Stages: ``encoder`` and ``projector`` (restored to raster order, shaped (T, S, D), mean-pooled over space,
flattened to T*D) and each chosen LLM layer (the last visual token's hidden state). Tasks:
``direction`` (each clip forward = 1 and reversed = 0, a pair is one group; chance 50%) and ``camera``
(4-way zoom in / zoom out / pan left / pan right on stress camera clips, grouped by scene; chance 25%).
Features are extracted once per (model, request) into the content-addressed ``FeatureCache``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from vidaudit.core.errors import DataError
from vidaudit.tools.mech import data as pdata
from vidaudit.tools.mech.featcache import FeatureCache, feature_key, model_fingerprint
from vidaudit.tools.mech.linear_probe import EPOCHS, SEEDS, probe_stage
from vidaudit.tools.mech.output import curve
from vidaudit.tools.mech.prompts import DESCRIBE
from vidaudit.tools.mech.whitebox import Want, WhiteBox

CAMERA_CLASSES = ("zoom_in", "zoom_out", "pan_left", "pan_right")
CHANCE = {"direction": 0.5, "camera": 0.25}


def items_for(task: str, clips: list[pdata.Clip], cache_dir: Path) -> list[tuple[pdata.Clip, int]]:
    """(clip, label) pairs of a task, or a DataError when the data lacks what the task needs."""
    if task == "direction":
        if len(clips) < 2:
            raise DataError(
                f"the direction task needs at least 2 clips (each becomes a forward/reverse pair), got {len(clips)}"
            )
        if len({c.group for c in clips}) < 2:
            raise DataError(
                "the direction task needs clips from at least 2 groups (a clip and its reversal are one "
                "group; clips of one scene are one group), so a split can keep each group on one side"
            )
        out = []
        for c in clips:
            out += [(c, 1), (pdata.derived(c, "reverse", cache_dir), 0)]
        return out
    cam = [c for c in clips if c.params.get("motion") in CAMERA_CLASSES]
    if not cam:
        raise DataError(
            "the camera task needs clips with params.motion in zoom_in/zoom_out/pan_left/pan_right; "
            "make them with `vidaudit generate stress --probe camera_motion --out DIR`"
        )
    missing = sorted(set(CAMERA_CLASSES) - {c.params["motion"] for c in cam})
    if missing or len({c.group for c in cam}) < 2:
        raise DataError(
            f"the camera task needs every class ({', '.join(CAMERA_CLASSES)}; missing: "
            f"{', '.join(missing) or 'none'}) and at least 2 scenes; generate with --seeds 2 or more"
        )
    return [(c, CAMERA_CLASSES.index(c.params["motion"])) for c in cam]


def pooled(view: Any, layers: tuple[int, ...]) -> dict[str, np.ndarray]:
    out = {}
    if view.encoder is not None:
        out["encoder"] = view.encoder.mean(axis=1).reshape(-1)
    if view.projector is not None:
        out["projector"] = view.projector.mean(axis=1).reshape(-1)
    last_visual = int(view.spans.video[-1])
    for layer in layers:
        out[f"llm{layer}"] = view.hidden[layer][last_visual]
    return out


def run(
    wb: WhiteBox,
    model_dir: str,
    clips: list[pdata.Clip],
    out_dir: Path,
    *,
    task: str,
    layers: tuple[int, ...],
    frames: int,
    epochs: int = EPOCHS,
    seeds: tuple[int, ...] = SEEDS,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], Any]:
    vision = wb.visual is not None
    stages = (["encoder", "projector"] if vision else []) + [f"llm{layer}" for layer in layers]
    items = items_for(task, clips, out_dir / "cache" / "perturb")
    cache = FeatureCache(out_dir / "cache" / "features")
    fp = model_fingerprint(model_dir)
    keys = []
    for i, (clip, _) in enumerate(items):
        req = pdata.request(clip, DESCRIBE, frames)
        key = feature_key(fp, clip.sha256, req.videos[0].frame_indices, DESCRIBE, stages)
        if cache.has(key):
            cache.hits += 1
        else:
            cache.misses += 1
            view = wb.view(req, Want(encoder=vision, projector=vision, llm_layers=layers))
            cache.put(key, pooled(view, layers))
        keys.append(key)
        if on_progress:
            on_progress(i + 1, len(items))
    y = np.array([label for _, label in items])
    groups = [clip.group for clip, _ in items]
    n_classes = 2 if task == "direction" else len(CAMERA_CLASSES)
    results: dict[str, dict[str, Any]] = {}
    for stage in stages:
        r = probe_stage(cache.stage_matrix(keys, stage), y, groups, n_classes, seeds=seeds, epochs=epochs)
        results[stage] = {"mean": r.mean, "std": r.std, "accs": list(r.accs), "n_train": r.n_train, "n_test": r.n_test}
    payload = {
        "task": task,
        "chance": CHANCE[task],
        "stages": stages,
        "layers": list(layers),
        "frames": frames,
        "n_items": len(items),
        "results": results,
        "settings": {"epochs": epochs, "seeds": list(seeds), "lr": 1e-3, "batch": 64, "optimizer": "Adam"},
        "cache": {"hits": cache.hits, "misses": cache.misses},
    }
    x = list(range(len(stages)))
    fig = curve(
        "mech-linear",
        f"Linear probe accuracy by stage ({task})",
        x,
        {"accuracy": [results[s]["mean"] for s in stages], "chance": [CHANCE[task]] * len(stages)},
        x_label="stage (" + ", ".join(f"{i}={s}" for i, s in enumerate(stages)) + ")",
        y_label="accuracy",
        y_min=0.0,
        y_max=1.0,
    )
    return payload, fig
