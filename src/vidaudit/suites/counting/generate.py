"""Generate the counting suite: manifest, dataset.json and verified videos, rendered in parallel.

Each video is written under a temporary name and renamed; finished samples are appended to
``manifest.partial.jsonl`` (fsync'd) so that an interrupted run can be resumed with
``--skip-existing``; the final ``manifest.jsonl`` is written atomically in grid order at the end.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vidaudit import __version__
from vidaudit.core.errors import ConfigError, VerificationError
from vidaudit.core.fileio import read_jsonl
from vidaudit.core.hashing import sha256_file
from vidaudit.core.manifest import MANIFEST, write_dataset_info, write_manifest
from vidaudit.core.parallel import pool_context
from vidaudit.core.types import Sample
from vidaudit.core.versions import library_versions
from vidaudit.suites.counting.grid import QUESTIONS, SUITE, GridPoint
from vidaudit.suites.counting.render import make_scene, planned_video, render
from vidaudit.suites.counting.scene import RenderSettings
from vidaudit.suites.counting.verify import check_video
from vidaudit.video.io import X264_OPTIONS

GENERATOR_VERSION = "counting/1"
PARTIAL = "manifest.partial.jsonl"


@dataclass(frozen=True)
class GenerateResult:
    out: Path
    manifest: Path
    samples: list[Sample]
    rendered: int
    reused: int
    verified: int
    seconds: float


def rel_video_path(point: GridPoint) -> str:
    return f"videos/{point.domain}/{point.sample_id}.mp4"


def plan_sample(point: GridPoint, settings: RenderSettings) -> Sample:
    """The sample as known before rendering: trace and planned video fields (no sha256)."""
    scene = make_scene(point, settings)
    return _sample(point, scene.trace(), planned_video(point, settings, rel_video_path(point)))


def _sample(point: GridPoint, trace, video) -> Sample:
    return Sample(sample_id=point.sample_id, suite=SUITE,
                  params={"domain": point.domain, "n_events": point.n_events,
                          "frequency_hz": point.frequency_hz, "seed": point.seed},
                  question=QUESTIONS[point.domain], answer=point.n_events, trace=trace, video=video)


def _worker_init() -> None:
    import cv2

    cv2.setNumThreads(1)


def _render_job(point: GridPoint, settings: RenderSettings, out: str, verify: bool) -> tuple[dict, list[str]]:
    rel = rel_video_path(point)
    trace, video = render(point, settings, Path(out) / rel, rel)
    sample = _sample(point, trace, video)
    problems = check_video(point.domain, Path(out) / rel, trace, video.fps) if verify else []
    return sample.model_dump(mode="json"), problems


def _reusable(out: Path) -> dict[str, Sample]:
    """Samples from an earlier manifest or partial log whose video file still has the recorded sha256."""
    found: dict[str, Sample] = {}
    for name in (MANIFEST, PARTIAL):
        p = out / name
        if p.is_file():
            for row in read_jsonl(p):
                s = Sample.model_validate(row)
                if s.video.sha256:
                    found[s.sample_id] = s
    return {k: s for k, s in found.items()
            if (out / s.video.path).is_file() and sha256_file(out / s.video.path) == s.video.sha256}


def dataset_info(points: Sequence[GridPoint], settings: RenderSettings) -> dict[str, Any]:
    return {"suite": SUITE, "generator_version": GENERATOR_VERSION, "vidaudit_version": __version__,
            "libraries": library_versions(), "render": asdict(settings), "encoder": {"codec": "libx264",
            "pix_fmt": "yuv420p", "options": X264_OPTIONS}, "n_samples": len(points),
            "domains": sorted({p.domain for p in points}), "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                      time.gmtime())}


def generate(points: Sequence[GridPoint], out: str | Path, settings: RenderSettings = RenderSettings(), *,
             workers: int | None = None, dry_run: bool = False, skip_existing: bool = False,
             verify: bool = True, on_progress: Callable[[int, int], None] | None = None) -> GenerateResult:
    """Render (or, with ``dry_run``, only plan) every point into ``out``; raise on any mismatch."""
    t0 = time.perf_counter()
    out = Path(out)
    if not points:
        raise ConfigError("the grid is empty; check --domains/--counts/--frequencies/--seeds")
    planned = {p.sample_id: plan_sample(p, settings) for p in points}  # validates every point first
    out.mkdir(parents=True, exist_ok=True)
    if dry_run:
        samples = [planned[p.sample_id] for p in points]
        manifest = write_manifest(out, samples)
        write_dataset_info(out, dataset_info(points, settings) | {"dry_run": True})
        return GenerateResult(out, manifest, samples, 0, 0, 0, time.perf_counter() - t0)

    done: dict[str, Sample] = {}
    if skip_existing:
        for sid, s in _reusable(out).items():
            if sid in planned and s.trace == planned[sid].trace:
                done[sid] = s
    reused = len(done)
    todo = [p for p in points if p.sample_id not in done]
    problems: dict[str, list[str]] = {}
    if on_progress:
        on_progress(len(done), len(points))
    with open(out / PARTIAL, "a", encoding="utf-8") as log:
        def record(row: dict, probs: list[str]) -> None:
            s = Sample.model_validate(row)
            if probs:
                problems[s.sample_id] = probs
            else:
                log.write(json.dumps(row, sort_keys=True) + "\n")
                log.flush()
                os.fsync(log.fileno())
            done[s.sample_id] = s
            if on_progress:
                on_progress(len(done), len(points))

        n_workers = max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))
        if n_workers == 1:
            for p in todo:
                record(*_render_job(p, settings, str(out), verify))
        else:
            with ProcessPoolExecutor(n_workers, mp_context=pool_context(), initializer=_worker_init) as pool:
                futures = [pool.submit(_render_job, p, settings, str(out), verify) for p in todo]
                for fut in as_completed(futures):
                    record(*fut.result())
    if problems:
        lines = [f"{sid}: {'; '.join(ps)}" for sid, ps in sorted(problems.items())]
        raise VerificationError(f"{len(problems)} video(s) do not show their trace (no manifest written):\n"
                                + "\n".join(lines[:20]))
    samples = [done[p.sample_id] for p in points]
    manifest = write_manifest(out, samples)
    write_dataset_info(out, dataset_info(points, settings))
    (out / PARTIAL).unlink(missing_ok=True)
    return GenerateResult(out, manifest, samples, len(todo), reused, len(todo) if verify else 0,
                          time.perf_counter() - t0)
