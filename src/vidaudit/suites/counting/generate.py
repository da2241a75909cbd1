"""Generate the counting suite: manifest, dataset.json and verified videos, rendered in parallel.

Each video is written under a temporary name and renamed; finished samples are appended to
``manifest.partial.jsonl`` (fsync'd) so that an interrupted run can be resumed with
``--skip-existing``; the final ``manifest.jsonl`` is written atomically in grid order at the end.

A dataset that runs may depend on is never replaced by a different one without ``force``: when
``out`` already holds a manifest, its samples must be the ones this call would write (same ids,
params, traces, answers and video settings), and a dry run never replaces a manifest of rendered
videos (it would drop their sha256).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import cv2

from vidaudit.sdk import (
    MANIFEST,
    X264_OPTIONS,
    ConfigError,
    Sample,
    VerificationError,
    __version__,
    dataset_dir,
    existing_samples,
    guard_replace,
    iter_completed,
    library_versions,
    seed_from,
    sha256_file,
    write_dataset_info,
    write_manifest,
)
from vidaudit.suites.counting.grid import QUESTIONS, SUITE, GridPoint
from vidaudit.suites.counting.render import planned_video, render, render_checked
from vidaudit.suites.counting.scene import DEFAULT_SETTINGS, RenderSettings
from vidaudit.suites.counting.scenes import make_scene
from vidaudit.suites.counting.verify import check_video

GENERATOR_VERSION = "counting/1"
PARTIAL = "manifest.partial.jsonl"
#: at generate time, one video in this many (chosen by its id's hash) is also decoded in full and checked
#: from its decoded pixels; the others are checked from the frames drawn and their stored packets
#: (``render.render_checked``). ``vidaudit verify`` decodes every video.
DECODE_EVERY = 8


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
    return Sample(
        sample_id=point.sample_id,
        suite=SUITE,
        params={
            "domain": point.domain,
            "n_events": point.n_events,
            "frequency_hz": point.frequency_hz,
            "seed": point.seed,
        },
        question=QUESTIONS[point.domain],
        answer=point.n_events,
        trace=trace,
        video=video,
    )


def _worker_init() -> None:
    cv2.setNumThreads(1)


def decoded_at_generate(sample_id: str, every: int = DECODE_EVERY) -> bool:
    """Whether generate decodes this video in full to verify it (a deterministic 1 in ``every``; all at 1)."""
    if every <= 1:
        return True
    return seed_from("counting/verify-decode", sample_id) % every == 0


def _render_job(
    point: GridPoint, settings: RenderSettings, out: str, verify: bool, decode_every: int = DECODE_EVERY
) -> tuple[dict, list[str]]:
    rel = rel_video_path(point)
    path = Path(out) / rel
    if not verify:
        trace, video = render(point, settings, path, rel)
        return _sample(point, trace, video).model_dump(mode="json"), []
    r = render_checked(point, settings, path, rel)
    problems = list(r.problems)
    if not problems and decoded_at_generate(point.sample_id, decode_every):
        problems = [f"decoded: {p}" for p in check_video(point.domain, path, r.trace, r.video.fps)]
    return _sample(point, r.trace, r.video).model_dump(mode="json"), problems


def _logged(path: Path) -> list[Sample]:
    """The readable samples of a manifest or partial log; a line cut short by a kill, or any other unreadable
    line, is skipped (it only means that video is rendered again)."""
    out = []
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError:
        return []
    for raw in lines:
        try:
            out.append(Sample.model_validate_json(raw))
        except (ValueError, RecursionError):  # pydantic's ValidationError is a ValueError
            continue
    return out


def _reusable(out: Path) -> dict[str, Sample]:
    """Samples from an earlier manifest or partial log whose video file still has the recorded sha256."""
    found: dict[str, Sample] = {}
    for name in (MANIFEST, PARTIAL):
        p = out / name
        if p.is_file():
            for s in _logged(p):
                if s.video.sha256:
                    found[s.sample_id] = s
    return {
        k: s
        for k, s in found.items()
        if (out / s.video.path).is_file() and sha256_file(out / s.video.path) == s.video.sha256
    }


def dataset_info(points: Sequence[GridPoint], settings: RenderSettings) -> dict[str, Any]:
    return {
        "suite": SUITE,
        "generator_version": GENERATOR_VERSION,
        "vidaudit_version": __version__,
        "libraries": library_versions(),
        "render": asdict(settings),
        "encoder": {"codec": "libx264", "pix_fmt": "yuv420p", "options": X264_OPTIONS},
        "n_samples": len(points),
        "domains": sorted({p.domain for p in points}),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def content_key(sample: Sample) -> dict[str, Any]:
    """What a regenerated sample must keep to be the same sample: everything but what is read back from the
    encoded file (sha256, measured duration)."""
    return sample.model_dump(mode="json", exclude={"video": {"sha256", "duration_s"}})


def check_out_dir(out: Path, planned: Sequence[Sample], *, dry_run: bool, force: bool) -> None:
    """Refuse to replace a dataset in ``out`` by a different one, or rendered videos by a dry run (see module)."""
    dataset_dir(out)
    guard_replace(out, planned, force=force, key=content_key, command="generate")
    if dry_run and not force:
        old = existing_samples(out) or []
        rendered = [s.sample_id for s in old if s.video.sha256]
        if rendered:
            raise ConfigError(
                f"{out} holds {len(rendered)} rendered videos (e.g. {rendered[0]}); a dry run would "
                "replace their manifest with one that has no sha256. Dry-run into another --out, or "
                "pass --force"
            )


def generate(
    points: Sequence[GridPoint],
    out: str | Path,
    settings: RenderSettings = DEFAULT_SETTINGS,
    *,
    workers: int | None = None,
    dry_run: bool = False,
    skip_existing: bool = False,
    verify: bool = True,
    decode_every: int = DECODE_EVERY,
    force: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
    pool: Callable[..., Executor] | None = None,
) -> GenerateResult:
    """Render (or, with ``dry_run``, only plan) every point into ``out``; raise on any mismatch.

    ``force`` replaces a dataset already in ``out`` even when its samples differ (see the module docstring).
    ``verify`` checks every video against its trace as it is rendered: from the frames drawn and the packets
    stored, and one video in ``decode_every`` (1: all) also from its decoded pixels (``render.render_checked``).
    ``pool(initializer=...)`` makes the executor the jobs run on (``run.ray_pool`` for ``--executor ray``;
    default: a local process pool of ``workers``); this process alone writes the manifest and the log.
    """
    t0 = time.perf_counter()
    out = Path(out)
    if not points:
        raise ConfigError("the grid is empty; check --domains/--counts/--frequencies/--seeds")
    planned = {p.sample_id: plan_sample(p, settings) for p in points}  # validates every point first
    check_out_dir(out, [planned[p.sample_id] for p in points], dry_run=dry_run, force=force)
    out.mkdir(parents=True, exist_ok=True)
    if dry_run:
        samples = [planned[p.sample_id] for p in points]
        manifest = write_manifest(out, samples)
        write_dataset_info(out, dataset_info(points, settings) | {"dry_run": True})
        return GenerateResult(out, manifest, samples, 0, 0, 0, time.perf_counter() - t0)

    done: dict[str, Sample] = {}
    if skip_existing:
        for sid, s in _reusable(out).items():
            if sid in planned and content_key(s) == content_key(planned[sid]):  # same trace and settings
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

        jobs = [(p, settings, str(out), verify, decode_every) for p in todo]
        for _, result in iter_completed(_render_job, jobs, workers=workers, pool=pool, initializer=_worker_init):
            record(*result)
    if problems:
        lines = [f"{sid}: {'; '.join(ps)}" for sid, ps in sorted(problems.items())]
        raise VerificationError(
            f"{len(problems)} video(s) do not show their trace (no manifest written):\n" + "\n".join(lines[:20])
        )
    samples = [done[p.sample_id] for p in points]
    manifest = write_manifest(out, samples)
    write_dataset_info(out, dataset_info(points, settings))
    (out / PARTIAL).unlink(missing_ok=True)
    return GenerateResult(
        out, manifest, samples, len(todo), reused, len(todo) if verify else 0, time.perf_counter() - t0
    )
