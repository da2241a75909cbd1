"""``apply``: run one op on a source, streaming, and write ``DST.mp4`` + ``DST.json`` atomically.

The frames are read in the order the op's map asks for (see ``source.PlannedReader``), transformed one
at a time and handed to :class:`~vidaudit.video.encode.VideoWriter` (H.264, yuv420p, ``X264_OPTIONS``).
Both files are written under temporary names; the mp4 is renamed into place first and the JSON last,
so a JSON beside an mp4 always describes it, and an error leaves neither (an older JSON of the same
name is removed before the new mp4 replaces its video). The frame count, rate and duration in the
JSON are read back from the written file, and the map must have exactly that many entries.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.fileio import owner_token, sweep_stale_temporaries, write_text_atomic
from vidaudit.core.hashing import canonical_json, rng_from, sha256_file, sha256_json
from vidaudit.core.types import PerturbationSpec
from vidaudit.video.encode import X264_OPTIONS, VideoWriter
from vidaudit.video.perturb.base import Op, Params, Plan, SourceInfo, fit_frame
from vidaudit.video.perturb.registry import params_json, resolve
from vidaudit.video.perturb.source import DEFAULT_BUDGET_BYTES, iter_source, open_source
from vidaudit.video.probe import probe

#: Bumped when the engine (reading, encoding, metadata) changes what any op writes; part of every key.
ENGINE_VERSION = 1
SCHEMA_VERSION = 1


class PerturbMeta(BaseModel):
    """``DST.json``: what was done (op, params with defaults, seed, inputs), what came out (read back from
    the file), and the op's map: one list per column, one entry per output frame."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SCHEMA_VERSION
    op: str
    op_version: int
    kind: str
    spec_id: str
    params: dict[str, Any]
    seed: int
    cache_key: str
    source_sha256: str
    source: dict[str, Any]
    second_sha256: str | None = None
    second: dict[str, Any] | None = None
    fps: float
    n_frames: int
    width: int
    height: int
    duration_s: float
    sha256: str
    size_bytes: int
    encoder: dict[str, str]
    map: dict[str, list[Any]]
    info: dict[str, Any]

    @property
    def spec(self) -> PerturbationSpec:
        return PerturbationSpec(name=self.op, params=self.params)


@dataclass(frozen=True)
class PerturbResult:
    video: Path
    meta_path: Path
    meta: PerturbMeta

    @property
    def sha256(self) -> str:
        return self.meta.sha256

    @classmethod
    def load(cls, meta_path: str | Path) -> PerturbResult:
        p = Path(meta_path)
        try:
            meta = PerturbMeta.model_validate_json(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise DataError(f"cannot read perturbation metadata {p}: {e}") from e
        return cls(video=p.with_suffix(".mp4"), meta_path=p, meta=meta)


def meta_json(meta: PerturbMeta) -> str:
    """One top-level key per line, each value compact: readable, and a long map stays one line."""
    d = meta.model_dump(mode="json")
    body = ",\n".join(
        f"  {json.dumps(k)}: {json.dumps(d[k], sort_keys=True, separators=(',', ':'))}" for k in sorted(d)
    )
    return "{\n" + body + "\n}\n"


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    return int(seed)


def cache_key(
    source_sha256: str,
    spec: PerturbationSpec | dict[str, Any],
    seed: int,
    second_sha256: str | None = None,
    source_stream: int | None = None,
) -> str:
    """sha256 of (source sha256, canonical spec JSON, seed, op version, engine version, x264 settings,
    second video's sha256, and the source's video stream when one is named): every input that changes the
    output bytes, and nothing else."""
    op, p = resolve(spec)
    named = {} if source_stream is None else {"source_stream": int(source_stream)}
    return sha256_json(
        {
            **named,
            "source_sha256": source_sha256,
            "spec": canonical_json({"name": op.name, "params": params_json(p)}),
            "seed": _check_seed(seed),
            "op_version": op.version,
            "engine_version": ENGINE_VERSION,
            "x264": X264_OPTIONS,
            "second_sha256": second_sha256,
        }
    )


def _inputs(
    op: Op,
    source: str | Path,
    second_source: str | Path | None,
    source_sha256: str | None = None,
    second_sha256: str | None = None,
    source_stream: int | None = None,
) -> tuple[SourceInfo, SourceInfo | None]:
    if op.needs_second and second_source is None:
        raise ConfigError(f"{op.name} needs a second video (second_source= / --second PATH)")
    if not op.needs_second and second_source is not None:
        raise ConfigError(f"{op.name} takes no second video; drop --second")
    src = open_source(source, source_sha256, source_stream)
    if src.still and not op.accepts_still:
        raise ConfigError(
            f"{op.name} needs a video; {src.path.name} is a still image "
            "(camera_2d, mosaic and mosaic_spatial take stills)"
        )
    second = open_source(second_source, second_sha256) if second_source is not None else None
    if second is not None and second.still:
        raise ConfigError(f"{op.name}: the second input {second.path.name} must be a video, not a still")
    return src, second


def _plan(op: Op, p: Params, src: SourceInfo, second: SourceInfo | None, seed: int) -> Plan:
    plan = op.plan(p, src, rng_from("perturb", op.name, seed), second)
    plan.check(op.name)
    _to_source_frames(plan, {"source": src, "second": second})
    return plan


def _to_source_frames(plan: Plan, inputs: dict[str, SourceInfo | None]) -> None:
    """Turn the map's op frames into the files' frames where an input was converted to constant rate, and
    say when each one is on the input's own clock (``source_time_s``); unconverted inputs keep the map as is."""
    if all(s is None or s.frame_map is None for s in inputs.values()):
        return
    sf = plan.map["source_frame"]
    times: list[float | None] = []
    for i, k in enumerate(sf):
        src = inputs.get(plan.video_of(i))
        if k is None or src is None:
            times.append(None)
        elif src.frame_map is None:
            times.append(round(int(k) / src.fps, 6) if src.fps else None)
        else:
            sf[i] = src.frame_map[int(k)]
            assert src.clock is not None
            times.append(round(src.clock.time_of(sf[i]), 6))
    plan.map["source_time_s"] = times


def plan_for(
    spec: PerturbationSpec | dict[str, Any], src: SourceInfo, *, seed: int = 0, second: SourceInfo | None = None
) -> Plan:
    """The plan (map and info) of ``spec`` on a source known by its facts alone: no file is read."""
    op, p = resolve(spec)
    return _plan(op, p, src, second, _check_seed(seed))


def preview(
    source: str | Path,
    spec: PerturbationSpec | dict[str, Any],
    *,
    seed: int = 0,
    second_source: str | Path | None = None,
) -> dict[str, Any]:
    """The metadata ``apply`` would record (op, params, frame count, rate, map, info), without rendering:
    what a planner needs to pick and check frames (e.g. ``check_strip_coverage``) before any pixel."""
    op, p = resolve(spec)
    seed = _check_seed(seed)
    src, second = _inputs(op, source, second_source)
    plan = _plan(op, p, src, second, seed)
    return {
        "op": op.name,
        "op_version": op.version,
        "kind": op.kind,
        "params": params_json(p),
        "seed": seed,
        "source_sha256": src.sha256,
        "fps": plan.fps,
        "n_frames": plan.n_frames,
        "width": plan.width,
        "height": plan.height,
        "map": plan.map,
        "info": plan.info,
    }


def _frames(
    op: Op, p: Params, plan: Plan, src: SourceInfo, second: SourceInfo | None, seed: int, budget_bytes: int
) -> Iterator[np.ndarray]:
    state = op.prepare(p, plan, src, rng_from("perturb", op.name, seed, "pixels"))
    prim = iter_source(src, plan.order("source"), budget_bytes)
    sec = iter_source(second, plan.order("second"), budget_bytes) if second is not None else iter(())
    sf = plan.map["source_frame"]
    try:
        for i in range(plan.n_frames):
            if sf[i] is None:
                f = None
            elif plan.video_of(i) == "source":
                f = next(prim)
            else:
                f = fit_frame(next(sec), plan.width, plan.height)
            yield op.frame(i, f, state)
    finally:
        for it in (prim, sec):
            close = getattr(it, "close", None)
            if close is not None:
                close()


def _unlink(p: Path) -> None:
    p.unlink(missing_ok=True)


def apply(
    source: Path | str,
    spec: PerturbationSpec | dict[str, Any],
    out: Path | str,
    *,
    seed: int = 0,
    second_source: Path | str | None = None,
    budget_bytes: int = DEFAULT_BUDGET_BYTES,
    source_sha256: str | None = None,
    second_sha256: str | None = None,
    source_stream: int | None = None,
) -> PerturbResult:
    """Apply ``spec`` to ``source`` with ``seed``; write ``out`` (.mp4) and its ``.json`` atomically.

    ``ConfigError``: unknown op or parameter, a value out of the op's range, a parameter that cannot hold
    for this source. ``DataError``: a source that is missing or does not decode. ``budget_bytes`` bounds
    the decoded frames held at once. ``source_sha256`` (when known) skips hashing the source again.
    ``source_stream``: the source's video stream to read (default: the one a player picks).
    """
    op, p = resolve(spec)
    seed = _check_seed(seed)
    out = Path(out)
    if out.suffix.lower() != ".mp4":
        raise ConfigError(f"the output must be an .mp4 path, got {out}")
    src, second = _inputs(op, source, second_source, source_sha256, second_sha256, source_stream)
    plan = _plan(op, p, src, second, seed)
    key = cache_key(
        src.sha256,
        PerturbationSpec(name=op.name, params=params_json(p)),
        seed,
        second.sha256 if second else None,
        source_stream,
    )
    meta_path = out.with_suffix(".json")
    out.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temporaries(out)  # a killed earlier render of this output leaves no partial behind
    tmp = out.parent / f".{out.name}.{owner_token()}.{uuid.uuid4().hex[:8]}.tmp.mp4"
    placed = False
    try:
        with VideoWriter(tmp, plan.fps, plan.width, plan.height) as w:
            for frame in _frames(op, p, plan, src, second, seed, budget_bytes):
                w.write(frame)
        info = probe(tmp)
        if info.n_frames != plan.n_frames:
            raise DataError(f"{op.name}: wrote {info.n_frames} frames but the map describes {plan.n_frames}")
        canon = PerturbationSpec(name=op.name, params=params_json(p))
        meta = PerturbMeta(
            op=op.name,
            op_version=op.version,
            kind=op.kind,
            spec_id=canon.id,
            params=params_json(p),
            seed=seed,
            cache_key=key,
            source_sha256=src.sha256,
            source=src.summary(),
            second_sha256=second.sha256 if second else None,
            second=second.summary() if second else None,
            fps=info.fps,
            n_frames=info.n_frames,
            width=info.width,
            height=info.height,
            duration_s=info.duration_s,
            sha256=sha256_file(tmp),
            size_bytes=tmp.stat().st_size,
            encoder=dict(X264_OPTIONS),
            map=plan.map,
            info=json.loads(json.dumps(plan.info)),
        )
        _unlink(meta_path)  # never leave an old JSON beside the new video
        os.replace(tmp, out)
        placed = True
        write_text_atomic(meta_path, meta_json(meta))
    except BaseException:
        _unlink(tmp)
        if placed:
            _unlink(out)
        raise
    return PerturbResult(video=out, meta_path=meta_path, meta=meta)
