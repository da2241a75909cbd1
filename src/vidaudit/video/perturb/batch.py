"""``vidaudit perturb --batch JOBS.jsonl --out DIR``: many perturbations, locally or as Ray tasks.

Every job is validated before anything is rendered (op, parameters against the source's facts, the
files, the output names): one ``ConfigError`` lists every bad line and nothing is written. Each job
is rendered through the content cache (``cached``, ``DIR/.cache`` unless ``cache_dir`` is given), one
render per content key however many jobs share it; this process alone then places ``DIR/<name>.mp4``
and ``.json`` (a hard link to the cache entry, else a copy; the JSON the single-video form writes),
appends the job's row to ``DIR/batch.partial.jsonl`` (fsync'd) and, at the end, writes
``DIR/batch.jsonl`` atomically (one row per job, in job order) and drops the partial log.

Resume: a job whose ``DIR/<name>.json`` records its content key and whose mp4 has the recorded size is
reused as it is (the check the cache makes of its own entries); the outputs describe themselves, so
a killed batch resumes from whatever it placed, with or without its partial log. A job that fails
while rendering is reported by its line; the others still finish and ``batch.jsonl`` records the
failure (``error``, no outputs).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.fileio import owner_token, sweep_stale_temporaries, write_jsonl_atomic, write_text_atomic
from vidaudit.core.hashing import sha256_file
from vidaudit.core.jobs import PoolFactory, iter_completed
from vidaudit.core.types import PerturbationSpec
from vidaudit.core.untrusted import distinct_keys
from vidaudit.video.perturb.cache import cached, complete_entry, lookup
from vidaudit.video.perturb.engine import PerturbResult, _unlink, cache_key, preview
from vidaudit.video.perturb.registry import canonical_spec, get_op
from vidaudit.video.perturb.source import IMAGE_SUFFIXES

BATCH = "batch.jsonl"
PARTIAL = "batch.partial.jsonl"
CACHE = ".cache"
JOB_KEYS = ("source", "op", "params", "seed", "name", "second")
VIDEO_SUFFIXES = frozenset({".mp4", ".mkv", ".mov", ".avi", ".webm", ".m4v"})


@dataclass(frozen=True)
class BatchJob:
    """One validated job: paths resolved, parameters canonical, the inputs' content known (its cache key)."""

    line: int
    name: str
    source: Path
    op: str
    params: dict[str, Any]
    seed: int
    source_sha256: str
    key: str
    second: Path | None = None
    second_sha256: str | None = None

    @property
    def spec(self) -> PerturbationSpec:
        return PerturbationSpec(name=self.op, params=self.params)

    def row(self, res: PerturbResult | None = None, error: str | None = None) -> dict[str, Any]:
        """Its ``batch.jsonl`` row: the job, the inputs' sha256, and the output (or the error)."""
        m = res.meta if res is not None else None
        return {
            "line": self.line,
            "name": self.name,
            "source": str(self.source),
            "op": self.op,
            "params": self.params,
            "seed": self.seed,
            "second": str(self.second) if self.second is not None else None,
            "source_sha256": self.source_sha256,
            "second_sha256": self.second_sha256,
            "cache_key": self.key,
            "video": f"{self.name}.mp4" if m is not None else None,
            "sha256": m.sha256 if m else None,
            "n_frames": m.n_frames if m else None,
            "error": error,
        }


@dataclass
class BatchResult:
    out: Path
    manifest: Path
    rows: list[dict[str, Any]]
    #: renders actually made (one per content key not already cached)
    rendered: int = 0
    #: jobs whose content was already in the cache (placed without rendering)
    cached: int = 0
    #: jobs whose output in ``out`` was kept from an earlier (e.g. killed) batch
    reused: int = 0
    #: (line, error) of each job that failed
    failed: list[tuple[int, str]] = field(default_factory=list)
    seconds: float = 0.0


# --------------------------------------------------------------------------- jobs and their validation


def load_jobs(path: str | Path) -> list[BatchJob]:
    """The jobs of a JSONL file (relative paths against its folder), every line validated first."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(
            f"the jobs file {path} does not exist; write one JSON object per line "
            '({"source": "a.mp4", "op": "reverse", "seed": 0})'
        )
    raw: list[tuple[int, Any]] = []
    bad: list[str] = []
    for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            raw.append((i, json.loads(text, object_pairs_hook=distinct_keys)))
        except json.JSONDecodeError as e:
            bad.append(f"line {i}: not valid JSON ({e.msg})")
        except DataError as e:
            bad.append(f"line {i}: {e}")
    return validate_jobs(raw, path.parent, where=str(path), bad=bad)


def folder_jobs(
    folder: str | Path, op: str, params: dict[str, Any] | None = None, seed: int = 0, second: str | Path | None = None
) -> list[BatchJob]:
    """``vidaudit perturb SRC_DIR --op OP``: the same op on every video (and still) of a folder, sorted."""
    folder = Path(folder)
    files = sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in VIDEO_SUFFIXES | IMAGE_SUFFIXES
    )
    if not files:
        raise ConfigError(f"{folder} holds no video ({', '.join(sorted(VIDEO_SUFFIXES))}) or image to perturb")
    raw = [
        (
            i,
            {
                "source": str(p.resolve()),
                "op": op,
                "params": params or {},
                "seed": seed,
                **({"second": str(second)} if second is not None else {}),
            },
        )
        for i, p in enumerate(files, 1)
    ]
    return validate_jobs(raw, folder, where=str(folder), label=lambda line, obj: Path(obj["source"]).name)


def validate_jobs(
    raw: Sequence[tuple[int, Any]],
    base: Path,
    *,
    where: str = "the jobs",
    bad: list[str] | None = None,
    label: Callable[[int, Any], str] = lambda line, obj: f"line {line}",
) -> list[BatchJob]:
    """Check every job (op, parameters on the source's facts, files, names); one ``ConfigError`` lists all
    (each problem after ``label(line, job)``)."""
    bad = list(bad or [])
    jobs: list[BatchJob] = []
    for line, obj in raw:
        try:
            jobs.append(_job(line, obj, base))
        except (ConfigError, DataError) as e:
            bad.append(f"{label(line, obj)}: {e}")
    names: dict[str, list[int]] = {}
    for j in jobs:
        names.setdefault(j.name, []).append(j.line)
    for name, lines in names.items():
        if len(lines) > 1:
            bad.append(f'lines {", ".join(map(str, lines))}: all write {name}.mp4; give each a different "name"')
    if bad:
        raise ConfigError(f"{where}: {len(bad)} problem(s), nothing was rendered:\n  " + "\n  ".join(bad))
    if not jobs:
        raise ConfigError(f"{where} holds no job; write one JSON object per line")
    return jobs


def _job(line: int, obj: Any, base: Path) -> BatchJob:
    if not isinstance(obj, dict):
        raise ConfigError(f"a job is a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(JOB_KEYS))
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(unknown)}; a job has {', '.join(JOB_KEYS)}")
    for k in ("source", "op"):
        if not isinstance(obj.get(k), str) or not obj[k]:
            raise ConfigError(f'"{k}" is required and must be a string')
    params = obj.get("params", {})
    if not isinstance(params, dict):
        raise ConfigError(f'"params" must be an object of the op\'s parameters, got {json.dumps(params)}')
    seed = obj.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f'"seed" must be an integer, got {json.dumps(seed)}')
    op = get_op(obj["op"])
    spec = canonical_spec(PerturbationSpec(name=op.name, params=params))
    source = _existing(base, obj["source"], "source")
    second = obj.get("second")
    if second is not None and not isinstance(second, str):
        raise ConfigError(f'"second" must be a path, got {json.dumps(second)}')
    second_path = _existing(base, second, "second") if second else None
    name = obj.get("name", f"{source.stem}-{op.name}")
    if not isinstance(name, str) or not name or name.startswith(".") or "/" in name or "\\" in name:
        raise ConfigError(f'"name" must be a file stem (no folder, not starting with "."), got {json.dumps(name)}')
    facts = preview(source, spec, seed=seed, second_source=second_path)  # every parameter checked on the source
    second_sha = sha256_file(second_path) if second_path is not None else None
    return BatchJob(
        line=line,
        name=name,
        source=source,
        op=op.name,
        params=dict(spec.params),
        seed=seed,
        source_sha256=facts["source_sha256"],
        second=second_path,
        second_sha256=second_sha,
        key=cache_key(facts["source_sha256"], spec, seed, second_sha),
    )


def _existing(base: Path, raw: str, what: str) -> Path:
    p = Path(raw)
    p = (p if p.is_absolute() else base / p).resolve()
    if not p.is_file():
        raise ConfigError(f"the {what} {p} does not exist (relative paths are read from the jobs file's folder)")
    return p


# --------------------------------------------------------------------------- rendering


def render_job(
    source: str,
    source_sha256: str,
    spec: dict[str, Any],
    seed: int,
    cache_dir: str,
    second: str | None = None,
    second_sha256: str | None = None,
) -> dict[str, Any]:
    """One content key into the cache (runs in a worker process or a Ray task); errors come back as data."""
    try:
        key = cache_key(source_sha256, spec, seed, second_sha256)
        hit = lookup(cache_dir, key)
        res = hit or cached(
            source, source_sha256, spec, seed, cache_dir, second_source=second, second_sha256=second_sha256
        )
        return {"ok": True, "meta": str(res.meta_path), "rendered": hit is None, "pid": os.getpid()}
    except Exception as e:  # reported by the job's line on the driver; the other jobs go on
        return {"ok": False, "error": f"{type(e).__name__}: {e}", "pid": os.getpid()}


def reusable(job: BatchJob, out: Path) -> PerturbResult | None:
    """The job's output already in ``out`` when it records the job's content key and is complete."""
    js = out / f"{job.name}.json"
    return complete_entry(js.with_suffix(".mp4"), js, job.key)


def place(entry: PerturbResult, out: Path, name: str) -> PerturbResult:
    """``out/<name>.mp4`` + ``.json`` from a cache entry: the mp4 first, the JSON last (as ``apply`` does)."""
    dst = out / f"{name}.mp4"
    dst_js = dst.with_suffix(".json")
    sweep_stale_temporaries(dst)
    tmp = out / f".{dst.name}.{owner_token()}.{uuid.uuid4().hex[:8]}.tmp.mp4"
    try:
        try:
            os.link(entry.video, tmp)
        except OSError:  # another file system, or no hard links: a copy
            shutil.copyfile(entry.video, tmp)
        _unlink(dst_js)
        os.replace(tmp, dst)
    except BaseException:
        _unlink(tmp)
        raise
    write_text_atomic(dst_js, entry.meta_path.read_text(encoding="utf-8"))
    return PerturbResult(video=dst, meta_path=dst_js, meta=entry.meta)


def perturb_batch(
    jobs: Sequence[BatchJob],
    out: str | Path,
    *,
    workers: int = 1,
    pool: PoolFactory | None = None,
    cache_dir: str | Path | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> BatchResult:
    """Render ``jobs`` (from ``load_jobs`` / ``folder_jobs``) into ``out``; see the module docstring.

    ``pool(initializer=...)`` makes the executor the renders run on (``run.ray_pool.pool_factory`` for
    Ray); default: ``workers`` local processes (1: in this process)."""
    t0 = time.perf_counter()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; pass a directory for the batch's outputs")
    if not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"--workers must be an integer >= 1, got {workers!r}")
    cache = (Path(cache_dir) if cache_dir is not None else out / CACHE).resolve()  # a worker's cwd is not ours
    out.mkdir(parents=True, exist_ok=True)
    res = BatchResult(out=out, manifest=out / BATCH, rows=[])
    rows: dict[int, dict[str, Any]] = {}
    groups: dict[str, list[BatchJob]] = {}
    for j in jobs:
        kept = reusable(j, out)
        if kept is not None:
            rows[j.line] = j.row(kept)
            res.reused += 1
        else:
            groups.setdefault(j.key, []).append(j)
    total = len(jobs)
    with open(out / PARTIAL, "w", encoding="utf-8") as log:

        def record(group: list[BatchJob], got: dict[str, Any]) -> None:
            for j in group:
                if got.get("ok"):
                    rows[j.line] = j.row(place(PerturbResult.load(got["meta"]), out, j.name))
                else:
                    rows[j.line] = j.row(error=got["error"])
                    res.failed.append((j.line, got["error"]))
                log.write(json.dumps(rows[j.line], sort_keys=True) + "\n")
            log.flush()
            os.fsync(log.fileno())
            if got.get("ok"):
                res.rendered += int(got["rendered"])
                res.cached += len(group) - int(got["rendered"])
            if on_progress:
                on_progress(len(rows), total)

        if on_progress:
            on_progress(len(rows), total)
        todo = list(groups.values())
        args = [
            (
                str(g[0].source),
                g[0].source_sha256,
                g[0].spec.model_dump(mode="json"),
                g[0].seed,
                str(cache),
                str(g[0].second) if g[0].second else None,
                g[0].second_sha256,
            )
            for g in todo
        ]
        # closing: an interrupt stops the pool at once; what was placed is reused by the next run
        with closing(iter_completed(render_job, args, workers=workers, pool=pool, lost=_lost)) as completed:
            for i, got in completed:
                record(todo[i], got)
    res.rows = [rows[j.line] for j in jobs]
    res.failed.sort()
    write_jsonl_atomic(res.manifest, res.rows)
    (out / PARTIAL).unlink(missing_ok=True)
    res.seconds = time.perf_counter() - t0
    return res


def _lost(error: Exception) -> dict[str, Any]:
    """The row of a job whose worker itself was lost (Ray gave up, a process died): the other jobs go on."""
    return {"ok": False, "error": f"{type(error).__name__}: {error}"}


def summary_lines(res: BatchResult) -> list[str]:
    """What the CLI prints after a batch."""
    ok = len(res.rows) - len(res.failed)
    lines = [
        f"{ok} of {len(res.rows)} job(s) in {res.out}: {res.rendered} rendered, {res.cached} from the cache, "
        f"{res.reused} reused from an earlier batch ({res.seconds:.1f} s)",
        f"rows: {res.manifest}",
    ]
    lines += [f"line {line} failed: {err}" for line, err in res.failed]
    return lines
