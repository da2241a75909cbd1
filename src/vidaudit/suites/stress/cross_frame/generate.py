"""``vidaudit generate stress --probe cross_frame``: a NExT-QA-format set as raw-video samples, each asked
with and without abstention, plus the run config of the preset's strip-mask conditions.

Masking is not baked into the dataset: a masked trial is a condition ``frames@R+strip_mask(...)``, rendered
at run time into the run's content cache (``docs/stress.md``). ``DIR/cross_frame.yaml`` lists the raw
condition and one masked condition per mask of the preset, each sending every frame of its video:
``vidaudit run stress --config DIR/cross_frame.yaml --model SPEC --out RUN``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vidaudit.sdk import (
    ConfigError,
    DataError,
    VideoRef,
    check_choice,
    dataset_dir,
    guard_replace,
    run_jobs,
    write_text_atomic,
)
from vidaudit.suites.stress.cross_frame.nextqa import load_items
from vidaudit.suites.stress.cross_frame.options import DEFAULT_MASK, TABLE10, mask_spec
from vidaudit.suites.stress.cross_frame.samples import PROBE, coverage_summary, item_samples, strip_coverage
from vidaudit.suites.stress.cross_frame.synthetic import write_synthetic
from vidaudit.suites.stress.probe import GenerateOptions, write_dataset
from vidaudit.suites.stress.sources import import_job, try_import_job

SETTINGS = ("csv", "sample_fps", "sampling")
RUN_CONFIG = "cross_frame.yaml"
#: ``--set sampling=paper``: Reveal's frame selections for Fig. 8 / Table 13 (§4.2: the open models were sent 64
#: frames, GPT-5-nano 75, Gemini the video at 24 fps), raw and masked, which may leave strips unseen
PAPER_SELECTIONS = ("frames#64", "frames#75", "frames@24")
SAMPLINGS = ("every", "paper")
COVERAGE_WARNING = (
    "sampling=paper (Reveal Fig. 8 / Table 13: frames#64, frames#75, frames@24) sends masked trials frames "
    "that may leave some strips unseen: a model cannot integrate a strip it is not sent, so Occ and "
    "TBSR measure the sampling as well as the integration (the default conditions send every masked "
    "frame)"
)


@dataclass(frozen=True)
class Preset:
    name: str
    items: int  # synthetic items (the first N rows of a --source set when --seeds is given)
    masks: tuple[dict[str, Any], ...]
    width: int = 320
    height: int = 192
    fps: float = 6.0
    hold: int = 6  # source frames per segment (longer than every coverage window below)


PRESETS: dict[str, Preset] = {
    "smoke": Preset("smoke", 4, (dict(DEFAULT_MASK),)),
    "paper": Preset("paper", 20, (dict(DEFAULT_MASK),)),
    # Reveal Table 10 (B.2): n = 25, the seven configurations
    "table10": Preset(
        "table10", 25, tuple({"S": s, "v": v, "k": k, "orientation": o} for _, s, v, o, k, _, _ in TABLE10)
    ),
}


def run_config(
    out: Path, masks: tuple[dict[str, Any], ...], fps: float | None, sample_fps: float, sampling: str = "every"
) -> dict[str, Any]:
    """Raw plus one masked condition per mask; every frame when all videos share ``fps``. ``sampling="paper"``:
    the same under each of ``PAPER_SELECTIONS`` instead."""
    if sampling == "paper":
        conds = [c for sel in PAPER_SELECTIONS for c in [sel] + [f"{sel}+{mask_spec(m).id}" for m in masks]]
    else:
        if fps is not None:
            raw, rate = f"frames@{fps:g}", (lambda k: f"frames@{fps * k:g}")
        else:
            raw, rate = f"frames@{sample_fps:g}", (lambda k: f"frames@{sample_fps:g}")
        conds = [raw] + [f"{rate(int(m['k']))}+{mask_spec(m).id}" for m in masks]
    return {"suite": "stress", "data": str(out.resolve()), "prompts": ["mcq"], "conditions": conds}


def generate(out: Path, options: GenerateOptions, on_progress: Callable[[int, int], None] | None = None) -> Path:
    """The set's samples and run config. From the options' ``source``: the questions whose video is present (the
    missing videos counted), each video imported once; a video that does not import is left out with its
    questions and named in the source log with its reason (kept in ``dataset.json``'s ``source_log``); the
    options' seeds keep the first N items."""
    check_choice("preset", options.preset, PRESETS)
    pre = PRESETS[options.preset]
    n, source, settings = options.seeds, options.source, options.settings
    workers, pool = options.workers, options.pool
    log = options.source_log() if source is not None else None
    if n is not None and n < 1:
        raise ConfigError(f"--seeds must be at least 1, got {n}")
    try:
        sample_fps = float(settings.get("sample_fps", "24"))
    except ValueError:
        raise ConfigError(f"--set sample_fps={settings['sample_fps']!r} is not a number") from None
    if not sample_fps > 0:
        raise ConfigError("--set sample_fps must be positive")
    sampling = settings.get("sampling", "every").strip().lower()
    check_choice("--set sampling", sampling, SAMPLINGS)
    if sampling == "paper" and "sample_fps" in settings:
        raise ConfigError(
            "--set sampling=paper sends frames#64, frames#75 and frames@24 (Reveal §4.2); drop --set sample_fps"
        )
    out = dataset_dir(out)
    if source is None:
        if "csv" in settings:
            raise ConfigError("--set csv names the CSV of a --source set; the synthetic source has one")
        src_dir, kind = out / "source", "synthetic"
        write_synthetic(
            src_dir,
            n or pre.items,
            hold=pre.hold,
            fps=pre.fps,
            width=pre.width,
            height=pre.height,
            workers=workers,
            pool=pool,
        )
        items = load_items(src_dir)
    else:
        kind = "nextqa"
        items = load_items(Path(source), settings.get("csv"), log)
        items = items[:n] if n else items
    (out / "videos").mkdir(parents=True, exist_ok=True)
    first = {it.video: it for it in reversed(items)}  # each video once, from its first item
    videos = list(dict.fromkeys(it.video for it in items))
    job = import_job if source is None else try_import_job  # a user's video that does not decode is skipped
    done = run_jobs(
        job,
        [(str(first[v].video_path), str(out), f"videos/{v}.mp4", options.force) for v in videos],
        workers=workers,
        pool=pool,
        on_progress=on_progress,
    )
    refs: dict[str, tuple[str, VideoRef]] = {}
    for v, ref in zip(videos, done, strict=True):
        if isinstance(ref, str):
            assert log is not None
            log.skip(first[v].video_path.name, f"{ref} ({sum(it.video == v for it in items)} questions left out)")
        else:
            refs[v] = (f"videos/{v}.mp4", ref)
    items = [it for it in items if it.video in refs]
    if not items:
        raise DataError(f"--source {source}: no video of the set imports ({log.reasons() if log else ''})")
    samples = [s for it in items for s in item_samples(it, *refs[it.video], pre.name, kind)]
    fps_set = {r.fps for _, r in refs.values()}
    cfg = run_config(out, pre.masks, fps_set.pop() if len(fps_set) == 1 else None, sample_fps, sampling)
    extra: dict[str, Any] = {}
    if sampling == "paper":
        samples = [
            s.model_copy(
                update={
                    "params": {
                        **s.params,
                        "sampling": "paper",
                        "strip_coverage": "partial",
                        "coverage": strip_coverage(s, cfg["conditions"]),
                    }
                }
            )
            for s in samples
        ]
        extra = {
            "sampling": "paper",
            "coverage_warning": COVERAGE_WARNING,
            "coverage": coverage_summary(samples, cfg["conditions"]),
        }
    guard_replace(
        out, samples, force=options.force, key=lambda s: (s.params, s.answer, s.video.sha256), command="generate stress"
    )
    write_text_atomic(out / RUN_CONFIG, yaml.safe_dump(cfg, sort_keys=False))
    return write_dataset(
        out,
        samples,
        PROBE,
        preset=pre.name,
        source=kind,
        n_items=len(items),
        masks=list(pre.masks),
        run_config=RUN_CONFIG,
        conditions=cfg["conditions"],
        **extra,
        source_log=log,
    )
