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
    PerturbationSpec,
    PoolFactory,
    Sample,
    VideoRef,
    VideoWriter,
    check_choice,
    dataset_dir,
    guard_replace,
    parse_condition,
    plan_chain,
    run_jobs,
    select_frames,
    write_dataset_info,
    write_manifest,
    write_text_atomic,
)
from vidaudit.suites.stress.cross_frame import synthetic
from vidaudit.suites.stress.cross_frame.nextqa import Item, load_items, write_csv
from vidaudit.suites.stress.cross_frame.options import (
    ABSTAIN,
    CHANCE_ABSTAIN,
    CHANCE_FORCED,
    DEFAULT_MASK,
    TABLE10,
    letters,
)
from vidaudit.suites.stress.sources import SourceLog, import_job, try_import_job

PROBE = "cross_frame"
SETTINGS = ("csv", "sample_fps", "sampling")
RUN_CONFIG = "cross_frame.yaml"
#: ``--set sampling=paper``: Reveal's frame selections for Fig. 8 / Table 13 (§4.2: the open models were sent 64
#: frames, GPT-5-nano 75, Gemini the video at 24 fps), raw and masked, which may leave strips unseen
PAPER_SELECTIONS = ("frames#64", "frames#75", "frames@24")
SAMPLINGS = ("every", "paper")
COVERAGE_WARNING = ("sampling=paper (Reveal Fig. 8 / Table 13: frames#64, frames#75, frames@24) sends masked trials frames "
                    "that may leave some strips unseen: a model cannot integrate a strip it is not sent, so Occ and "
                    "TBSR measure the sampling as well as the integration (the default conditions send every masked "
                    "frame)")


@dataclass(frozen=True)
class Preset:
    name: str
    items: int                       # synthetic items (the first N rows of a --source set when --seeds is given)
    masks: tuple[dict[str, Any], ...]
    width: int = 320
    height: int = 192
    fps: float = 6.0
    hold: int = 6                    # source frames per segment (longer than every coverage window below)


PRESETS: dict[str, Preset] = {
    "smoke": Preset("smoke", 4, (dict(DEFAULT_MASK),)),
    "paper": Preset("paper", 20, (dict(DEFAULT_MASK),)),
    # Reveal Table 10 (B.2): n = 25, the seven configurations
    "table10": Preset("table10", 25, tuple({"S": s, "v": v, "k": k, "orientation": o}
                                           for _, s, v, o, k, _, _ in TABLE10)),
}


def mask_spec(mask: dict[str, Any]) -> PerturbationSpec:
    return PerturbationSpec(name="strip_mask", params=dict(mask))


def synthetic_clip_job(index: int, hold: int, fps: float, width: int, height: int, path: str) -> None:
    """Encode synthetic clip ``index`` to ``path`` (a pure function of its arguments)."""
    clip = synthetic.make_clip(index, hold)
    with VideoWriter(path, fps, width, height) as w:
        for f in clip.frames(width, height):
            w.write(f)


TEMPLATE_ORDER = ("after", "colour_of", "before", "count")


def synthetic_rows(preset: Preset, n_items: int) -> list[dict[str, Any]]:
    """The synthetic set's NExT-QA rows (no video written): one clip per item, templates cycling after /
    colour_of / before / count so both splits are filled, the correct option at ``item mod 5``."""
    return [{"video": f"synth{i:03d}", "qid": "0",
             **synthetic.make_question(i, TEMPLATE_ORDER[i % len(TEMPLATE_ORDER)], synthetic.make_clip(i, preset.hold))}
            for i in range(n_items)]


def write_synthetic(root: Path, preset: Preset, n_items: int, *, workers: int | None = 1,
                    pool: PoolFactory | None = None) -> Path:
    """The synthetic set in NExT-QA format under ``root`` (``questions.csv`` + ``videos/``, ``synthetic_rows``);
    a clip already there is kept."""
    (root / "videos").mkdir(parents=True, exist_ok=True)
    jobs = [(i, preset.hold, preset.fps, preset.width, preset.height, str(root / "videos" / f"synth{i:03d}.mp4"))
            for i in range(n_items) if not (root / "videos" / f"synth{i:03d}.mp4").is_file()]
    run_jobs(synthetic_clip_job, jobs, workers=workers, pool=pool)
    return write_csv(root / "questions.csv", synthetic_rows(preset, n_items))


def item_samples(it: Item, rel: str, video: VideoRef, preset: str, source_kind: str) -> list[Sample]:
    out = []
    for abstention in (False, True):
        opts = list(it.options) + ([ABSTAIN] if abstention else [])
        lets = letters(abstention)
        params = {"probe": PROBE, "item": it.item_id, "video_name": it.video, "qid": it.qid, "split": it.split,
                  "type": it.type, "abstention": abstention, "options": opts, "letters": list(lets),
                  "chance": CHANCE_ABSTAIN if abstention else CHANCE_FORCED, "answer_text": it.options[it.answer],
                  "source": source_kind, "template": it.template, "template_args": dict(it.template_args),
                  "preset": preset, "line": it.line}
        sid = f"stress-{PROBE}-{it.item_id}-{'abs' if abstention else 'forced'}"
        out.append(Sample(sample_id=sid, suite="stress", params=params, question=it.question,
                          answer=lets[it.answer], video=video))
    return out


def run_config(out: Path, masks: tuple[dict[str, Any], ...], fps: float | None, sample_fps: float,
               sampling: str = "every") -> dict[str, Any]:
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


def strip_coverage(sample: Sample, conditions: list[str]) -> dict[str, float]:
    """Per masked condition (its video part), the share of the S strips that the frames it sends show at least
    once (planned: nothing is rendered)."""
    out: dict[str, float] = {}
    for text in conditions:
        cond = parse_condition(text, "mcq")
        if not cond.perturbations:
            continue
        pin = plan_chain(sample, cond.perturbations)
        assert pin.strip_info is not None
        sets, where = pin.strip_info["sets"], pin.strip_info["set_index"]
        seen = {j for i in select_frames(sample, cond, pin.video).indices for j in sets[where[i]]}
        out[text] = round(len(seen) / int(pin.strip_info["S"]), 6)
    return out


def generate(out: Path, preset: str, n: int | None, source: Path | None, settings: dict[str, str], *,
             force: bool = False, workers: int | None = 1, pool: PoolFactory | None = None,
             on_progress: Callable[[int, int], None] | None = None, log: SourceLog | None = None) -> Path:
    """The set's samples and run config. From ``source``: the questions whose video is present (the missing
    videos counted), each video imported once; a video that does not import is left out with its questions
    and named in ``log`` with its reason (kept in ``dataset.json``'s ``source_log``)."""
    check_choice("preset", preset, PRESETS)
    pre = PRESETS[preset]
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
        raise ConfigError("--set sampling=paper sends frames#64, frames#75 and frames@24 (Reveal §4.2); drop --set "
                          "sample_fps")
    out = dataset_dir(out)
    if source is None:
        if "csv" in settings:
            raise ConfigError("--set csv names the CSV of a --source set; the synthetic source has one")
        src_dir, kind = out / "source", "synthetic"
        write_synthetic(src_dir, pre, n or pre.items, workers=workers, pool=pool)
        items = load_items(src_dir)
    else:
        kind = "nextqa"
        log = log if log is not None else SourceLog()
        items = load_items(Path(source), settings.get("csv"), log)
        items = items[:n] if n else items
    (out / "videos").mkdir(parents=True, exist_ok=True)
    first = {it.video: it for it in reversed(items)}  # each video once, from its first item
    videos = list(dict.fromkeys(it.video for it in items))
    job = import_job if source is None else try_import_job     # a user's video that does not decode is skipped
    done = run_jobs(job, [(str(first[v].video_path), str(out), f"videos/{v}.mp4", force) for v in videos],
                    workers=workers, pool=pool, on_progress=on_progress)
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
    samples: list[Sample] = []
    for it in items:
        rel, ref = refs[it.video]
        samples.extend(item_samples(it, rel, ref, pre.name, kind))
    fps_set = {r.fps for _, r in refs.values()}
    cfg = run_config(out, pre.masks, fps_set.pop() if len(fps_set) == 1 else None, sample_fps, sampling)
    extra: dict[str, Any] = {}
    if sampling == "paper":
        samples = [s.model_copy(update={"params": {**s.params, "sampling": "paper", "strip_coverage": "partial",
                                                   "coverage": strip_coverage(s, cfg["conditions"])}})
                   for s in samples]
        extra = {"sampling": "paper", "coverage_warning": COVERAGE_WARNING,
                 "coverage": coverage_summary(samples, cfg["conditions"])}
    guard_replace(out, samples, force=force, key=lambda s: (s.params, s.answer, s.video.sha256),
                  command="generate stress")
    manifest = write_manifest(out, samples)
    write_text_atomic(out / RUN_CONFIG, yaml.safe_dump(cfg, sort_keys=False))
    write_dataset_info(out, {"suite": "stress", "probe": PROBE, "preset": pre.name, "source": kind,
                             "n_items": len(items), "n_samples": len(samples), "masks": list(pre.masks),
                             "run_config": RUN_CONFIG, "conditions": cfg["conditions"], **extra,
                             **({} if log is None else {"source_log": log.as_json()})})
    return manifest


def coverage_summary(samples: list[Sample], conditions: list[str]) -> dict[str, dict[str, Any]]:
    """Per masked condition: the mean share of strips shown, and how many videos are sent too few to show all."""
    out = {}
    for c in conditions:
        vals = [s.params["coverage"][c] for s in samples if c in s.params.get("coverage", {})]
        if vals:
            out[c] = {"mean_strips_shown": round(sum(vals) / len(vals), 6), "n_samples": len(vals),
                      "n_missing_strips": sum(v < 1 for v in vals)}
    return out
