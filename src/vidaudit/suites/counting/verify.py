"""Check a rendered video against its trace using only decoded pixels."""

from __future__ import annotations

from pathlib import Path

from vidaudit.core.types import Sample, Trace
from vidaudit.suites.counting.detector import detect_events
from vidaudit.video.io import iter_frames

FRAME_TOLERANCE = 1


def check_video(domain: str, path: str | Path, trace: Trace, fps: float) -> list[str]:
    """Problems found (empty when the detector finds every event at its frame +-1 and nothing else)."""
    found = detect_events(domain, ((i, i / fps, f) for i, f in enumerate(iter_frames(path, half=True, threaded=False))))
    true = [e.frame for e in trace.events]
    got = [d.frame for d in found]
    problems = []
    if len(got) != len(true):
        problems.append(f"detector found {len(got)} events, trace has {len(true)} (trace frames {true}, "
                        f"detected {got})")
    else:
        bad = [(a, b) for a, b in zip(true, got, strict=True) if abs(a - b) > FRAME_TOLERANCE]
        if bad:
            problems.append(f"events off by more than {FRAME_TOLERANCE} frame: (trace, detected) {bad}")
    return problems


def check_sample(sample: Sample, root: str | Path) -> list[str]:
    problems = []
    if sample.trace.execute() != sample.answer:
        problems.append(f"trace executes to {sample.trace.execute()} but answer is {sample.answer}")
    return problems + check_video(sample.params["domain"], Path(root) / sample.video.path, sample.trace,
                                  sample.video.fps)


def _verify_job(row: dict, root: str) -> tuple[str, list[str]]:
    from vidaudit.core.hashing import sha256_file

    sample = Sample.model_validate(row)
    path = Path(root) / sample.video.path
    if not path.is_file():
        return sample.sample_id, [f"video missing: {path}"]
    if sample.video.sha256 and sha256_file(path) != sample.video.sha256:
        return sample.sample_id, [f"sha256 of {path} does not match the manifest (file changed or corrupt)"]
    return sample.sample_id, check_sample(sample, root)


def verify_dataset(root: str | Path, samples: list[Sample], *, workers: int | None = None,
                   on_progress=None) -> dict[str, list[str]]:
    """Problems per sample id over a generated set (empty dict: every video shows its trace)."""
    import os
    from concurrent.futures import ProcessPoolExecutor

    from vidaudit.core.parallel import pool_context

    problems: dict[str, list[str]] = {}
    n = max(1, min(workers or os.cpu_count() or 1, len(samples)))
    rows = [s.model_dump(mode="json") for s in samples]
    if n == 1:
        results = (_verify_job(r, str(root)) for r in rows)
        for i, (sid, ps) in enumerate(results, 1):
            if ps:
                problems[sid] = ps
            if on_progress:
                on_progress(i, len(rows))
        return problems
    with ProcessPoolExecutor(n, mp_context=pool_context()) as pool:
        for i, (sid, ps) in enumerate(pool.map(_verify_job, rows, [str(root)] * len(rows), chunksize=1), 1):
            if ps:
                problems[sid] = ps
            if on_progress:
                on_progress(i, len(rows))
    return problems
