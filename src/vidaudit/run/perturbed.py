"""A condition's ``perturbations``: planned from the sample's facts, rendered once into a content cache.

At plan time nothing is rendered: each op's plan (``video.perturb.plan_for``) is computed from the
video's facts alone, which gives the perturbed video's frame count, rate and size (so frames are selected
from it as for any condition) and, for ``strip_mask``, its coverage sets (so the frames a model will be
sent are checked with ``check_strip_coverage`` before any call). The request builder renders the chain
with ``cached_chain`` into ``RUN/perturbed/`` (``PERTURB_CACHE``), keyed by content; the report stage
reads the same entries back. The seed of every op of the chain is derived from the sample's source
video (``Sample.group_id``), so samples that share a video see the same perturbed video.

``prerender`` renders every chain a plan needs as tasks of an ``Executor`` (``--executor ray``: Ray
tasks, before any trial is dispatched) into the same cache; the driver then checks each entry with
``render`` and the request builder only reads them.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.hashing import seed_from, sha256_json
from vidaudit.core.types import PerturbationSpec, Sample, VideoRef
from vidaudit.video.perturb.base import SourceInfo
from vidaudit.video.perturb.cache import cached_chain, lookup
from vidaudit.video.perturb.engine import ENGINE_VERSION, cache_key, plan_for
from vidaudit.video.perturb.registry import canonical_spec, get_op

#: the cache of perturbed videos, relative to the run dir
PERTURB_CACHE = "perturbed"


@dataclass(frozen=True)
class PerturbedInput:
    """What a condition's chain makes of one sample's video, known before any pixel is made."""

    specs: tuple[PerturbationSpec, ...]  # canonical (defaults filled in)
    seed: int
    source_sha256: str
    video: VideoRef  # the perturbed video's facts (path and sha256 known after rendering)
    sha256: str  # the chain's identity: source, canonical specs, seed, op versions
    last_op: str
    strip_info: dict[str, Any] | None = None  # the strip_mask plan's info + set_index when it is the last op
    source_stream: int | None = None  # the source's video stream, in a file with several

    def coverage_meta(self) -> dict[str, Any]:
        assert self.strip_info is not None
        info = {k: v for k, v in self.strip_info.items() if k != "set_index"}
        return {
            "op": "strip_mask",
            "n_frames": self.video.n_frames,
            "info": info,
            "map": {"set_index": self.strip_info["set_index"]},
        }


def perturbation_seed(sample: Sample) -> int:
    return seed_from("condition-perturbation", sample.group_id)


def plan_chain(sample: Sample, specs: tuple[PerturbationSpec, ...]) -> PerturbedInput:
    """The chain's facts on ``sample`` (a ``ConfigError`` naming the sample when an op cannot apply)."""
    if sample.video.sha256 is None:
        raise DataError(f"{sample.sample_id} has no video sha256; generate the videos before perturbing them")
    return _plan_chain(sample.video, sample.video.sha256, specs, perturbation_seed(sample), sample.sample_id)


def _plan_chain(video: VideoRef, sha: str, specs: tuple[PerturbationSpec, ...], seed: int, who: str) -> PerturbedInput:
    key = (video, sha, specs, seed)  # hashable: PerturbationSpec hashes its canonical JSON
    hit = _PLANS.get(key)
    if hit is None:
        hit = _PLANS[key] = _plan_chain_uncached(video, sha, specs, seed, who)
        if len(_PLANS) > 4096:
            _PLANS.pop(next(iter(_PLANS)))
    return hit


_PLANS: dict[tuple[Any, ...], PerturbedInput] = {}


def _plan_chain_uncached(
    video: VideoRef, sha: str, specs: tuple[PerturbationSpec, ...], seed: int, who: str
) -> PerturbedInput:
    w, h = video.width - video.width % 2, video.height - video.height % 2
    src = SourceInfo.of_video(Path(video.path), sha, w, h, video.timeline)
    canon = tuple(canonical_spec(s) for s in specs)
    plan = None
    for i, spec in enumerate(canon):
        op = get_op(spec.name)
        if op.needs_second:
            raise ConfigError(f"{spec.name} needs a second video and cannot be a condition's perturbation")
        if spec.name == "strip_mask" and i != len(canon) - 1:
            raise ConfigError(
                "strip_mask must be the last perturbation of a condition, so that its coverage can "
                "be checked on the frames sent"
            )
        try:
            plan = plan_for(spec, src, seed=seed)
        except ConfigError as e:
            raise ConfigError(f"{who}: {e}") from None
        src = SourceInfo(
            path=src.path, sha256=f"step{i}", width=plan.width, height=plan.height, n_frames=plan.n_frames, fps=plan.fps
        )
    assert plan is not None
    named = {} if video.stream is None else {"source_stream": video.stream}
    ident = sha256_json(
        {
            "source_sha256": sha,
            "seed": seed,
            **named,
            "chain": [{"spec": s.model_dump(mode="json"), "op_version": get_op(s.name).version} for s in canon],
            "engine": ENGINE_VERSION,
        }
    )
    strip = None
    if canon[-1].name == "strip_mask":
        strip = {**plan.info, "set_index": list(plan.map["set_index"])}
    out = VideoRef(
        path="",
        sha256=None,
        fps=plan.fps,
        width=plan.width,
        height=plan.height,
        n_frames=plan.n_frames,
        duration_s=round(plan.n_frames / plan.fps, 6),
    )
    return PerturbedInput(
        specs=canon,
        seed=seed,
        source_sha256=sha,
        video=out,
        sha256=ident,
        last_op=canon[-1].name,
        strip_info=strip,
        source_stream=video.stream,
    )


def render(source: Path, pinput: PerturbedInput, cache_dir: Path) -> tuple[Path, str, Any]:
    """The perturbed video (path, sha256, its PerturbMeta), built once into ``cache_dir``."""
    res = cached_chain(source, pinput.source_sha256, list(pinput.specs), pinput.seed, cache_dir, pinput.source_stream)[
        -1
    ]
    if res.meta.n_frames != pinput.video.n_frames:
        raise DataError(
            f"the perturbed video {res.video} has {res.meta.n_frames} frames but the plan expected "
            f"{pinput.video.n_frames}; delete {cache_dir} and run again"
        )
    return res.video, res.sha256, res.meta


def is_cached(pinput: PerturbedInput, cache_dir: Path) -> bool:
    """Whether every step of the chain is already a complete entry of ``cache_dir`` (nothing to render)."""
    sha, stream = pinput.source_sha256, pinput.source_stream
    for spec in pinput.specs:
        hit = lookup(cache_dir, cache_key(sha, spec, pinput.seed, source_stream=stream))
        if hit is None:
            return False
        sha, stream = hit.sha256, None
    return True


def render_task(source: str, pinput: PerturbedInput, cache_dir: str) -> dict[str, Any]:
    """``render`` in a worker (a Ray task under ``--executor ray``); errors come back as data."""
    try:
        was_cached = is_cached(pinput, Path(cache_dir))
        _, sha, _ = render(Path(source), pinput, Path(cache_dir))
        return {"ok": True, "chain": pinput.sha256, "sha256": sha, "rendered": not was_cached, "pid": os.getpid()}
    except Exception as e:  # the driver raises it, naming the video, before any trial is dispatched
        return {"ok": False, "chain": pinput.sha256, "error": f"{type(e).__name__}: {e}", "pid": os.getpid()}


def prerender(
    planned: Sequence[Any], data_dir: Path, cache_dir: Path, pool: Executor, pixel_free: Collection[str] = ()
) -> list[dict[str, Any]]:
    """Render every perturbed video ``planned`` needs as ``pool`` tasks into ``cache_dir``, then check each
    here with ``render`` (a cache hit that compares the frame count with the plan), so that the trials
    dispatched afterwards only read. Models in ``pixel_free`` need no video. Returns the tasks' reports."""
    chains: dict[str, tuple[Path, PerturbedInput]] = {}
    for p in planned:
        if p.perturbed is not None and p.trial.model.label not in pixel_free:
            chains.setdefault(p.perturbed.sha256, (Path(data_dir) / p.sample.video.path, p.perturbed))
    where = str(Path(cache_dir).resolve())  # absolute: a worker's cwd is not the driver's
    futures = [pool.submit(render_task, str(src.resolve()), pin, where) for src, pin in chains.values()]
    reports = [f.result() for f in as_completed(futures)]
    failed = [r for r in reports if not r["ok"]]
    if failed:
        raise DataError(
            f"{len(failed)} perturbed video(s) could not be rendered (no trial was dispatched); "
            f"the first: {failed[0]['error']}"
        )
    for src, pin in chains.values():
        render(src, pin, cache_dir)
    return reports
