"""``vidaudit generate stress --probe mosaic``: each still under the temporal mosaic (4 frames, one
quadrant each, in a drawn order) and the two spatial readings (one image)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2

from vidaudit.sdk import (
    ConfigError,
    PerturbationSpec,
    PerturbSourceInfo,
    Sample,
    VideoRef,
    apply_perturbation,
    atomic_path,
    check_choice,
    dataset_dir,
    plan_perturbation,
    run_jobs,
    video_ref,
)
from vidaudit.suites.stress.mosaic import scene as sc
from vidaudit.suites.stress.mosaic.tasks import (
    ARRANGEMENTS,
    STIMULI,
    TEXT_QUESTION,
    object_options,
    objects_prompt,
    text_recency,
)
from vidaudit.suites.stress.probe import GenerateOptions, guard_planned, write_dataset

PROBE = "mosaic"
PRESETS: dict[str, int] = {"smoke": 2, "paper": 24}


def spec_of(arrangement: str) -> PerturbationSpec:
    if arrangement == "temporal":
        return PerturbationSpec(name="mosaic", params={"order": "random"})
    layout = "tiled" if arrangement == "spatial_tiled" else "reconstructed"
    return PerturbationSpec(name="mosaic_spatial", params={"layout": layout})


def temporal_order(seed: int) -> list[int]:
    """The quadrant order the temporal mosaic of ``seed`` shows (the op's own plan, no file read)."""
    src = PerturbSourceInfo(
        path=Path("still.png"), sha256="0" * 64, width=sc.WIDTH, height=sc.HEIGHT, n_frames=1, fps=None, still=True
    )
    return [int(q) for q in plan_perturbation(spec_of("temporal"), src, seed=seed).map["quadrant"]]


def plan_rows(n: int) -> list[dict[str, Any]]:
    if n < 1:
        raise ConfigError(f"--seeds must be at least 1, got {n}")
    rows = []
    for stim in STIMULI:
        for seed in range(n):
            order = temporal_order(seed)
            base: dict[str, Any] = {
                "probe": PROBE,
                "stimulus": stim,
                "seed": seed,
                "order": order,
                "last_quadrant": order[-1],
                "width": sc.WIDTH,
                "height": sc.HEIGHT,
            }
            still: sc.TextStill | sc.ObjectsStill
            if stim == "text":
                still = sc.text_still(seed)
                base |= {
                    "word": still.word,
                    "text_scale": sc.TEXT_SCALE,
                    "text_thickness": sc.TEXT_THICKNESS,
                    "recency_answer": text_recency(still.word, still.letter_columns(), order[-1], sc.WIDTH),
                }
                answer, question = still.word, TEXT_QUESTION
            else:
                still = sc.objects_still(seed, order)
                options, kinds, letter = object_options(seed, *still.shapes)
                base |= {
                    "shapes": list(still.shapes),
                    "shape_quadrants": list(still.quadrants),
                    "options": options,
                    "option_kinds": kinds,
                    "option": letter,
                }
                answer, question = letter, objects_prompt(options)
            for arr in ARRANGEMENTS:
                rows.append(
                    {
                        "sample_id": f"stress-{PROBE}-{stim}-{arr}-s{seed}",
                        "still": still,
                        "arrangement": arr,
                        "params": base | {"arrangement": arr, "perturbation": spec_of(arr).id},
                        "answer": answer,
                        "question": question,
                        "seed": seed,
                    }
                )
    return rows


def render_job(still: str, arrangement: str, seed: int, out: str, rel: str) -> VideoRef:
    """One video: the still under ``arrangement``'s op with ``seed``, written to ``out/rel``."""
    apply_perturbation(still, spec_of(arrangement), Path(out) / rel, seed=seed)
    return video_ref(out, rel)


def generate(out: Path, options: GenerateOptions, on_progress: Callable[[int, int], None] | None = None) -> Path:
    """Write every still (here: they are small and each feeds three videos), then one job per video."""
    preset = options.preset
    check_choice("preset", preset, PRESETS)
    rows = plan_rows(PRESETS[preset] if options.seeds is None else options.seeds)
    out = dataset_dir(out)
    guard_planned(
        out, [(r["sample_id"], r["params"] | {"preset": preset}, r["answer"]) for r in rows], force=options.force
    )
    (out / "videos").mkdir(parents=True, exist_ok=True)
    (out / "stills").mkdir(exist_ok=True)
    jobs = []
    for r in rows:
        still_path = out / "stills" / f"{r['params']['stimulus']}-s{r['seed']}.png"
        if not still_path.is_file():
            with atomic_path(still_path, suffix=".part.png") as tmp:
                cv2.imwrite(str(tmp), cv2.cvtColor(r["still"].render(), cv2.COLOR_RGB2BGR))
        jobs.append((str(still_path), r["arrangement"], int(r["seed"]), str(out), f"videos/{r['sample_id']}.mp4"))
    refs = run_jobs(render_job, jobs, workers=options.workers, pool=options.pool, on_progress=on_progress)
    samples = [
        Sample(
            sample_id=r["sample_id"],
            suite="stress",
            params=r["params"] | {"preset": preset},
            question=r["question"],
            answer=r["answer"],
            video=ref,
        )
        for r, ref in zip(rows, refs, strict=True)
    ]
    return write_dataset(
        out,
        samples,
        PROBE,
        preset=preset,
        width=sc.WIDTH,
        height=sc.HEIGHT,
        stimuli=list(STIMULI),
        arrangements=list(ARRANGEMENTS),
    )
