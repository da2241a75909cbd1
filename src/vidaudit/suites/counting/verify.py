"""Check a counting sample: its answer against its trace, its trace's times against its frames, and its
rendered video against its trace using only decoded pixels.

- ``answer_problems`` / ``check_answers``: every sample's trace ledger must replay (``running_count``),
  and a synthetic sample's ``answer`` (and ``params["n_events"]``) must be what its trace executes to;
  otherwise the oracle and the scorer would "confirm" a wrong answer. Cheap (no video is read): meant to run
  whenever a manifest is loaded for a run or a report.
- ``timing_problems``: each event's ``frame`` must be the first frame shown at or after its ``t``
  (``schedule.first_frame_at``, the frame whose presentation interval [i/fps, (i+1)/fps) is the first to
  start at or after t), within ``FRAME_TOLERANCE`` frames, and inside the video.
- ``check_video``: the pixel detector must find every event at its frame, within ``FRAME_TOLERANCE``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from vidaudit.core.errors import DataError
from vidaudit.core.timeline import Timeline
from vidaudit.core.types import Sample, Trace
from vidaudit.suites.counting.detector import Detection, detect_events
from vidaudit.suites.counting.grid import DOMAINS
from vidaudit.suites.counting.running_count import ledger_problems, replay
from vidaudit.suites.counting.schedule import first_frame_at
from vidaudit.video.facts import facts_problems
from vidaudit.video.io import iter_frames_reused, probe

FRAME_TOLERANCE = 1


def is_synthetic(sample: Sample) -> bool:
    """A rendered counting sample (its trace lists every event), as opposed to a real video with a count."""
    return sample.params.get("source") is None and sample.params.get("domain") in DOMAINS


def answer_problems(sample: Sample) -> list[str]:
    """Why a counting sample's answer cannot be trusted (empty when it can).

    Every sample: the answer is a non-negative integer and the trace's ledger replays. Synthetic samples
    (``is_synthetic``): the answer and ``params["n_events"]`` equal what the trace executes to (``replay``).
    """
    n = sample.answer
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        return [f"answer {n!r} is not a non-negative integer count"]
    problems = ledger_problems(sample.trace)
    if problems or not is_synthetic(sample):
        return problems
    executed = replay(sample.trace)
    if executed != n:
        problems.append(f"answer is {n} but the trace executes to {executed}")
    if "n_events" in sample.params and sample.params["n_events"] != executed:
        problems.append(f"params.n_events is {sample.params['n_events']!r} but the trace executes to {executed}")
    return problems


def check_answers(samples: Iterable[Sample], source: str = "the manifest") -> None:
    """Raise a DataError naming every sample whose answer disagrees with its trace (see ``answer_problems``).

    Call it where a counting manifest is loaded for ``run``, ``score`` or ``report``.
    """
    bad = [(s.sample_id, ps) for s in samples if (ps := answer_problems(s))]
    if bad:
        lines = [f"{sid}: {'; '.join(ps)}" for sid, ps in bad[:10]]
        more = f"\n(and {len(bad) - 10} more)" if len(bad) > 10 else ""
        raise DataError(f"{len(bad)} sample(s) in {source} have an answer that disagrees with their trace (or a "
                        "trace whose ledger does not replay), so the oracle would confirm a wrong answer; regenerate "
                        "the dataset or fix the manifest:\n"
                        + "\n".join(lines) + more)


def timing_problems(trace: Trace, fps: float, n_frames: int | None = None,
                    clock: Timeline | None = None) -> list[str]:
    """Events whose ``frame`` is not the first frame at or after their ``t`` (within ``FRAME_TOLERANCE``), on the
    video's own clock when it is not constant-rate from 0 (``clock``), else at ``j / fps``."""
    if not (isinstance(fps, int | float) and math.isfinite(fps) and fps > 0):
        return [f"video fps {fps!r} is not a positive number"]
    problems = []
    for i, e in enumerate(trace.events, 1):
        if not math.isfinite(e.t) or e.t < 0:
            problems.append(f"event {i} has time t={e.t!r}, not a finite time >= 0")
            continue
        expected = first_frame_at(e.t, fps) if clock is None else first_frame_on(clock, e.t)
        if abs(e.frame - expected) > FRAME_TOLERANCE:
            problems.append(f"event {i} (t={e.t:g} s) says frame {e.frame}, but the first frame at or after "
                            f"t is {expected} at {fps:g} fps (off by {e.frame - expected:+d}, more than "
                            f"{FRAME_TOLERANCE})")
        elif n_frames is not None and not 0 <= e.frame < n_frames:
            problems.append(f"event {i} is at frame {e.frame}, outside the video's {n_frames} frames")
    return problems


def first_frame_on(clock: Timeline, t: float) -> int:
    """The first frame whose presentation time on ``clock`` is at or after ``t``."""
    i = clock.on_screen(t)
    return i if clock.time_of(i) >= t - 1e-9 else i + 1


def check_video(domain: str, path: str | Path, trace: Trace, fps: float, clock: Timeline | None = None,
                stream: int | None = None) -> list[str]:
    """Problems found (empty when the detector finds every event at its frame +-1 and nothing else).

    Every frame is decoded and looked at; a frame byte-identical to the one before it is converted and
    analysed once (``iter_frames_reused``), which gives exactly the detections of converting every frame.
    """
    frames = iter_frames_reused(path, half=True, threaded=False, stream=stream)
    when = (lambda i: i / fps) if clock is None else clock.time_of
    return detection_problems(detect_events(domain, ((i, when(i), f) for i, f in enumerate(frames))), trace)


def detection_problems(found: Sequence[Detection], trace: Trace) -> list[str]:
    """Problems of the detector's events against the trace's (empty: every event at its frame +-1, nothing else)."""
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
    """Every problem of one rendered sample: its answer, its trace's timing, then its pixels."""
    problems = answer_problems(sample)
    # a non-synthetic sample asked to be verified: its answer is checked against its trace too
    if not problems and (executed := replay(sample.trace)) != sample.answer:
        problems.append(f"trace executes to {executed} but answer is {sample.answer}")
    v = sample.video
    clock = v.timeline if v.n_frames else None   # a dry-run manifest's video has no frames (and no clock)
    if clock is not None and clock.plain:
        clock = None                             # constant-rate from 0: the arithmetic checks, as before
    problems += timing_problems(sample.trace, v.fps, v.n_frames, clock)
    if problems:
        return problems  # the detector's verdict against a trace that is wrong on its face adds nothing
    return check_video(sample.params["domain"], Path(root) / v.path, sample.trace, v.fps, clock, v.stream)


def _verify_job(row: dict, root: str) -> tuple[str, list[str]]:
    from vidaudit.core.hashing import sha256_file

    sample = Sample.model_validate(row)
    path = Path(root) / sample.video.path
    if not path.is_file():
        return sample.sample_id, [f"video missing: {path}"]
    if sample.video.sha256 and sha256_file(path) != sample.video.sha256:
        return sample.sample_id, [f"sha256 of {path} does not match the manifest (file changed or corrupt)"]
    try:        # the clock the trace's frames were placed on must be the file's (rate, times, start)
        facts = facts_problems(probe(path, sample.video.stream), sample.video)
    except DataError as e:
        return sample.sample_id, [str(e)]
    if facts:
        return sample.sample_id, [f"the file is not the video its manifest describes: {'; '.join(facts)}"]
    return sample.sample_id, check_sample(sample, root)


def verify_dataset(root: str | Path, samples: list[Sample], *, workers: int | None = None,
                   on_progress=None) -> dict[str, list[str]]:
    """Problems per sample id over a generated set (empty dict: every video shows its trace).

    One job per video on the generators' runner (``run.jobs``); a job returns its problems (errors as
    results), so one bad video never stops the others being checked."""
    from vidaudit.run.jobs import run_jobs

    jobs = [(s.model_dump(mode="json"), str(root)) for s in samples]
    results = run_jobs(_verify_job, jobs, workers=workers, on_progress=on_progress)
    return {sid: ps for sid, ps in results if ps}
