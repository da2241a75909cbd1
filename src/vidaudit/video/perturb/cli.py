"""``vidaudit perturb SRC --op OP [--set KEY=VALUE ...] [--seed S] --out DST.mp4 [--second VIDEO]``, and its
batches: ``--batch JOBS.jsonl --out DIR`` or ``SRC_DIR --op OP ... --out DIR`` (``batch_jobs``, then
``batch.perturb_batch``).

``perturb_command`` is what the CLI calls; ``KEY=VALUE`` pairs are typed from the op's parameter model:
text parameters take the value verbatim, others parse it as JSON (``2``, ``0.5``, ``true``, ``null``,
``[0.1,0.1,0.5,0.5]``, ``[[0,2],[2,5]]``), falling back to the bare string (so pydantic's own coercion and
error messages apply).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import PerturbationSpec
from vidaudit.video.encode import X264_OPTIONS
from vidaudit.video.perturb.batch import BatchJob, folder_jobs, load_jobs
from vidaudit.video.perturb.engine import PerturbResult, apply
from vidaudit.video.perturb.registry import describe_params, get_op, is_text_field, op_names


def parse_sets(op_name: str, sets: list[str] | None) -> dict[str, Any]:
    op = get_op(op_name)
    fields = op.Params.model_fields
    params: dict[str, Any] = {}
    for item in sets or []:
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ConfigError(f"--set {item!r}: write KEY=VALUE, e.g. --set duration_s=2")
        if key not in fields:
            raise ConfigError(f"{op.name} has no parameter {key!r}; its parameters: {', '.join(fields) or '(none)'}")
        if key in params:
            raise ConfigError(f"--set {key} is given twice")
        if is_text_field(op.Params, key):
            params[key] = raw
        else:
            try:
                params[key] = json.loads(raw)
            except json.JSONDecodeError:
                params[key] = raw
    return params


def perturb_command(
    source: str | Path,
    op: str,
    sets: list[str] | None,
    seed: int,
    out: str | Path,
    second: str | Path | None = None,
    stream: int | None = None,
) -> PerturbResult:
    """Parse the ``--set`` pairs for ``op`` and apply it: writes ``out`` and ``out`` with ``.json``. ``stream``: the
    source's video stream (``--stream``; default: the one a player picks)."""
    params = parse_sets(op, sets)
    return apply(
        Path(source),
        PerturbationSpec(name=get_op(op).name, params=params),
        Path(out),
        seed=seed,
        second_source=Path(second) if second is not None else None,
        source_stream=stream,
    )


def batch_jobs(
    out: str | Path,
    *,
    batch: str | Path | None = None,
    folder: str | Path | None = None,
    op: str | None = None,
    sets: list[str] | None = None,
    seed: int = 0,
    second: str | Path | None = None,
) -> list[BatchJob]:
    """The jobs of a batch, every one validated before any renders: a jobs file's (``batch``), or the same op on
    every video of ``folder``. What to render is decided here; ``perturb_batch(jobs, out, ...)`` renders them, on
    the workers or pool the caller chose (``vidaudit.run.ray_pool.pool_factory``, made before any work)."""
    if batch is not None:
        if folder is not None or op is not None or sets or second is not None:
            raise ConfigError(
                "--batch takes its ops, parameters and seeds from the jobs file; drop SOURCE, --op, --set and --second"
            )
        return load_jobs(batch)
    if op is None or folder is None:
        raise ConfigError("a folder batch needs SRC_DIR and --op (or pass --batch JOBS.jsonl)")
    if Path(out).resolve() == Path(folder).resolve():
        raise ConfigError(f"--out {out} is the source folder; write the outputs to another folder")
    return folder_jobs(folder, op, parse_sets(op, sets), seed, second)


def summary_lines(res: PerturbResult, source: Path | None = None) -> list[str]:
    """What the CLI prints after a run; with ``source``, the output's size against it and why it is larger."""
    m = res.meta
    lines = [
        f"{m.op}: {m.n_frames} frames at {m.fps:g} fps ({m.duration_s:g} s, {m.width}x{m.height}) -> {res.video}",
        f"metadata: {res.meta_path} (params {json.dumps(m.params, sort_keys=True)}, seed {m.seed})",
    ]
    if source is not None and Path(source).is_file() and Path(source).stat().st_size:
        ratio = m.size_bytes / Path(source).stat().st_size
        lines.append(
            f"size: {m.size_bytes / 1e6:.2f} MB, {ratio:.1f}x the source: encoded near-lossless (H.264 at a "
            f"constant quantiser, qp {X264_OPTIONS['qp']}) so the perturbation adds no compression artefacts "
            "of its own (docs/perturbations.md, 'Quality and size')"
        )
    return lines


def ops_help() -> str:
    """Every op with its parameters, defaults and allowed values (for ``vidaudit perturb --list``)."""
    lines = []
    for name in op_names():
        op = get_op(name)
        lines.append(f"{name} ({op.kind}): {op.summary}")
        for k, d in describe_params(op.Params).items():
            lines.append(f"    {k} = {json.dumps(d['default'])}: {d['allowed']}")
    return "\n".join(lines)
