"""``vidaudit generate faithful``: synthetic worlds with exact facts, rendered, pixel-checked and composed.

One video per seed. Each is drawn (``build.py``), rendered, checked against its render log from
decoded pixels (``verify.py``; a mismatch fails the generation and no manifest is written), and
written as ``videos/VIDEO.mp4`` + ``worlds/VIDEO.json``. The manifest lists every target and
sub-question as a sample; ``dataset.json`` records the knobs, the Yes/No balance at both levels
and per probe type, and what analyses the data supports (``capabilities``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2

from vidaudit.sdk import (
    X264_OPTIONS,
    ConfigError,
    PoolFactory,
    Sample,
    VerificationError,
    __version__,
    check_choice,
    library_versions,
    run_jobs,
    video_ref,
    write_dataset_info,
    write_manifest,
)
from vidaudit.suites.faithful.build import build_scene
from vidaudit.suites.faithful.compose import balance
from vidaudit.suites.faithful.questions import SubQuestion, Target
from vidaudit.suites.faithful.render import render_video
from vidaudit.suites.faithful.samples import SUITE, samples_for
from vidaudit.suites.faithful.scene import SceneSpec
from vidaudit.suites.faithful.simulate import GENERATOR
from vidaudit.suites.faithful.verify import check_video
from vidaudit.suites.faithful.worldfile import WorldFile, write_world_file

#: preset -> (number of seeds, knobs). ``smoke`` renders in a few seconds on two cores. Both have look-alike
#: pairs, occlusions and repeated events (an agent lights up or leaves twice) so that identity linking matters
#: by design (issue 23): a count is right only when two sightings of one agent are one agent.
PRESETS: dict[str, tuple[int, dict[str, Any]]] = {
    "smoke": (
        2,
        {
            "agents": 6,
            "events": 12,
            "occlusions": 2,
            "lookalikes": 2,
            "repeats": 1,
            "duration_s": 20.0,
            "fps": 10.0,
            "width": 192,
            "height": 144,
            "max_targets": 6,
        },
    ),
    "standard": (
        20,
        {
            "agents": 6,
            "events": 14,
            "occlusions": 3,
            "lookalikes": 2,
            "repeats": 2,
            "duration_s": 24.0,
            "fps": 10.0,
            "width": 320,
            "height": 240,
            "max_targets": 10,
        },
    ),
}
#: what a synthetic dataset supports: facts and probe types are exact, the domain is "synthetic"
CAPABILITIES = {"facts": True, "probe_types": True, "domains": True, "world_records": True}


@dataclass(frozen=True)
class GenerateResult:
    out: Path
    manifest: Path
    samples: list[Sample]
    n_videos: int
    balance: dict[str, Any]
    seconds: float


def specs_for(preset: str, seeds: int | None = None, **overrides: Any) -> list[SceneSpec]:
    """The scene specs of a preset (``seeds`` and any knob overridden; None leaves the preset's value)."""
    check_choice("preset", preset, PRESETS)
    n, knobs = PRESETS[preset]
    knobs = {**knobs, **{k: v for k, v in overrides.items() if v is not None}}
    n = n if seeds is None else seeds
    if n < 1:
        raise ConfigError(f"--seeds must be at least 1, got {n}")
    return [SceneSpec(video_id=f"world-{s:04d}", seed=s, **knobs) for s in range(n)]


def _job(spec: SceneSpec, out: str, verify: bool) -> tuple[list[dict], list[str], dict]:
    cv2.setNumThreads(1)
    root = Path(out)
    built = build_scene(spec)
    rel_video, rel_world = f"videos/{spec.video_id}.mp4", f"worlds/{spec.video_id}.json"
    (root / "videos").mkdir(parents=True, exist_ok=True)
    (root / "worlds").mkdir(parents=True, exist_ok=True)
    render_video(spec, built.sim.cast, built.sim.tracks, root / rel_video)
    problems = check_video(built.sim.world, built.sim.log, root / rel_video) if verify else []
    wf = WorldFile(
        world=built.sim.world, targets=built.targets, subs=built.subs, render=built.sim.log, knobs=spec.knobs()
    )
    world_sha = write_world_file(root / rel_world, wf)
    video = video_ref(root, rel_video)
    if video.n_frames != spec.n_frames:
        problems.append(f"the file has {video.n_frames} frames, the scene {spec.n_frames}")
    common = {
        "source": "synthetic",
        "seed": spec.seed,
        "world": rel_world,
        "world_sha256": world_sha,
        "capabilities": dict(CAPABILITIES),
    }
    rows = [s.model_dump(mode="json") for s in samples_for(built.sim.world, built.targets, built.subs, video, common)]
    return (
        rows,
        [f"{spec.video_id}: {p}" for p in problems],
        {
            "targets": [(t.answer, t.question_form, t.phrasing) for t in built.targets],
            "subs": [(s.answer, s.probe_type) for s in built.subs],
        },
    )


def _pooled_balance(parts: list[dict]) -> dict[str, Any]:
    targets = [
        Target(target_id="", video_id="", text="", answer=a, question_form=f, phrasing=ph)
        for p in parts
        for a, f, ph in p["targets"]
    ]
    subs = [
        SubQuestion(sub_id="", target_id="", text="", answer=a, probe_type=pt) for p in parts for a, pt in p["subs"]
    ]
    return balance(targets, subs)


def generate(
    specs: Sequence[SceneSpec],
    out: str | Path,
    *,
    workers: int | None = None,
    verify: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
    pool: PoolFactory | None = None,
) -> GenerateResult:
    """Render, check and compose every scene into ``out``; raise (no manifest) on any failed pixel check.

    One job per video (``_job``: its output depends on its spec alone). ``pool(initializer=...)`` makes the
    executor the jobs run on (``run.ray_pool`` for ``--executor ray``); default: a local process pool of
    ``workers`` (None: the cores; 1: serially). This process alone writes the manifest and ``dataset.json``.
    """
    t0 = time.perf_counter()
    out = Path(out)
    if not specs:
        raise ConfigError("no scenes to generate")
    ids = [s.video_id for s in specs]
    if len(set(ids)) != len(ids):
        raise ConfigError("two scenes share a video id")
    out.mkdir(parents=True, exist_ok=True)
    done = run_jobs(
        _job, [(spec, str(out), verify) for spec in specs], workers=workers, pool=pool, on_progress=on_progress
    )
    results: dict[str, tuple[list[dict], list[str], dict]] = dict(zip(ids, done, strict=True))
    problems = [p for vid in ids for p in results[vid][1]]
    if problems:
        raise VerificationError(
            f"{len(problems)} pixel check(s) failed (no manifest written):\n" + "\n".join(problems[:20])
        )
    samples = [Sample.model_validate(r) for vid in ids for r in results[vid][0]]
    manifest = write_manifest(out, samples)
    bal = _pooled_balance([results[vid][2] for vid in ids])
    write_dataset_info(
        out,
        {
            "suite": SUITE,
            "generator_version": GENERATOR,
            "vidaudit_version": __version__,
            "libraries": library_versions(),
            "encoder": {"codec": "libx264", "pix_fmt": "yuv420p", "options": X264_OPTIONS},
            "n_videos": len(specs),
            "n_samples": len(samples),
            "n_targets": bal["target"]["n"],
            "n_subs": bal["sub"]["n"],
            "balance": bal,
            "capabilities": dict(CAPABILITIES),
            "verified": verify,
            "scenes": [{"video_id": s.video_id, "seed": s.seed, **s.knobs()} for s in specs],
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )
    return GenerateResult(out, manifest, samples, len(specs), bal, time.perf_counter() - t0)
