"""Check a counting sample: its answer against its trace, its trace's times against its frames, and its
rendered video against its trace using only decoded pixels.

- ``answer_problems`` / ``check_answers``: every sample's trace ledger must replay (``running_count``),
  and a synthetic sample's ``answer`` (and ``params["n_events"]``) must be what its trace executes to;
  otherwise the oracle and the scorer would "confirm" a wrong answer. Cheap (no video is read): meant to run
  whenever a manifest is loaded for a run or a report.
- ``timing_problems``: each event's ``frame`` must be exactly the first frame shown at or after its time.
  A rendered sample's exact times are its schedule's (``exact_schedule``: rebuilt from the sample's grid point
  and the dataset's render settings), and its written ``t`` must be that time to 9 decimals; without a
  schedule the written ``t`` is the time to within half its last decimal, and the frame must be the first at
  or after some instant of that interval.
- ``check_video``: the pixels must show every event at its frame: a blink's onset and a state change at
  exactly the trace's frame; a contact at the trace's time to ``CONTACT_TOLERANCE`` frames (read from the
  V the ball traces, ``detector.contact_times``; no frame need show the contact itself).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from vidaudit.sdk import (
    ConfigError,
    DataError,
    Sample,
    Timeline,
    Trace,
    facts_problems,
    iter_frames_reused,
    probe,
    read_dataset_info,
    run_jobs,
    sha256_file,
)
from vidaudit.suites.counting.detector import Detection, contact_times, detect_events
from vidaudit.suites.counting.grid import DOMAINS, GridPoint
from vidaudit.suites.counting.running_count import ledger_problems, replay
from vidaudit.suites.counting.scene import RenderSettings
from vidaudit.suites.counting.scenes import make_scene
from vidaudit.suites.counting.schedule import TIME_DECIMALS, exact, first_frame_at

#: how far (in frames) a contact read from the pixels may lie from the trace's time; the reading is good to a
#: few hundredths of a frame on decoded H.264 (docs/counting.md, "Verification")
CONTACT_TOLERANCE = 0.1
#: half a unit of the written time's last decimal: the exact time lies within this of a written ``t``
HALF_LAST_DECIMAL = Fraction(1, 2 * 10**TIME_DECIMALS)


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
        raise DataError(
            f"{len(bad)} sample(s) in {source} have an answer that disagrees with their trace (or a "
            "trace whose ledger does not replay), so the oracle would confirm a wrong answer; regenerate "
            "the dataset or fix the manifest:\n" + "\n".join(lines) + more
        )


def exact_schedule(sample: Sample, render: Mapping[str, Any] | None) -> list[Fraction] | None:
    """A rendered sample's exact event times, rebuilt from its grid point and the dataset's render settings
    (``dataset.json["render"]``), or None (not a rendered sample, or no settings to rebuild it from)."""
    if not is_synthetic(sample) or not render:
        return None
    p = sample.params
    point = GridPoint(str(p["domain"]), int(p["n_events"]), float(p["frequency_hz"]), int(p["seed"]))
    settings = RenderSettings(**{k: render[k] for k in ("duration_s", "fps", "width", "height") if k in render})
    return list(make_scene(point, settings).schedule.exact)


def timing_problems(
    trace: Trace,
    fps: float,
    n_frames: int | None = None,
    clock: Timeline | None = None,
    times: Sequence[Fraction] | None = None,
) -> list[str]:
    """Events whose ``frame`` is not exactly the first frame at or after their time, on the video's own clock
    when it is not constant-rate from 0 (``clock``), else at ``j / fps``. ``times``: the exact times (a
    rendered sample's schedule); each written ``t`` must then be its time to ``TIME_DECIMALS`` decimals."""
    if not (isinstance(fps, int | float) and math.isfinite(fps) and fps > 0):
        return [f"video fps {fps!r} is not a positive number"]
    if times is not None and len(times) != len(trace.events):
        return [f"the trace has {len(trace.events)} events but the sample's schedule has {len(times)}"]
    rate = exact(fps)
    problems = []
    for i, e in enumerate(trace.events, 1):
        if not math.isfinite(e.t) or e.t < 0:
            problems.append(f"event {i} has time t={e.t!r}, not a finite time >= 0")
            continue
        if times is not None:
            t = times[i - 1]
            if e.t != round(float(t), TIME_DECIMALS):
                problems.append(
                    f"event {i} says t={e.t!r} s, but the sample's schedule puts it at {t} s "
                    f"({round(float(t), TIME_DECIMALS)!r})"
                )
                continue
            allowed = {first_frame_at(t, rate) if clock is None else first_frame_on(clock, float(t))}
            when = f"its exact time {t} s"
        else:
            lo, hi = exact(e.t) - HALF_LAST_DECIMAL, exact(e.t) + HALF_LAST_DECIMAL
            allowed = (
                {first_frame_at(lo, rate), first_frame_at(hi, rate)}
                if clock is None
                else {first_frame_on(clock, float(lo)), first_frame_on(clock, float(hi))}
            )
            when = f"t={e.t:g} s (to within half its last decimal)"
        if e.frame not in allowed:
            expected = min(allowed, key=lambda j: abs(j - e.frame))
            problems.append(
                f"event {i} (t={e.t:g} s) says frame {e.frame}, but the first frame at or after "
                f"{when} is {' or '.join(map(str, sorted(allowed)))} at {fps:g} fps (off by "
                f"{e.frame - expected:+d})"
            )
        elif n_frames is not None and not 0 <= e.frame < n_frames:
            problems.append(f"event {i} is at frame {e.frame}, outside the video's {n_frames} frames")
    return problems


def first_frame_on(clock: Timeline, t: float) -> int:
    """The first frame whose presentation time on ``clock`` is at or after ``t``."""
    i = clock.on_screen(t)
    return i if clock.time_of(i) >= t - 1e-9 else i + 1


def check_video(
    domain: str, path: str | Path, trace: Trace, fps: float, clock: Timeline | None = None, stream: int | None = None
) -> list[str]:
    """Problems found (empty when the pixels show every event of the trace at its frame, and nothing else).

    Every frame is decoded and looked at; a frame byte-identical to the one before it is converted and
    analysed once (``iter_frames_reused``), which gives exactly the detections of converting every frame.
    """
    frames = iter_frames_reused(path, half=True, threaded=False, stream=stream)
    when = (lambda i: i / fps) if clock is None else clock.time_of
    return pixel_problems(domain, ((i, when(i), f) for i, f in enumerate(frames)), trace, fps, clock)


def pixel_problems(
    domain: str, frames: Iterable[tuple[Any, ...]], trace: Trace, fps: float, clock: Timeline | None = None
) -> list[str]:
    """Problems of what every frame of a clip (supplied in order, as ``detector.detect_events`` takes them, patches
    included) shows against the trace: blinks and state
    changes at exactly their frames; contacts at the trace's times to ``CONTACT_TOLERANCE`` frames (a contact
    whose neighbour frame is at rest, ``Contact.at`` None, to its extremum frame +-1), and a contact's frame
    must be the first at or after the instant the pixels show (to the same tolerance)."""
    if domain != "bounce_ball":
        return detection_problems(detect_events(domain, frames), trace)
    found = contact_times(frames)
    true = list(trace.events)
    if len(found) != len(true):
        return [
            f"detector found {len(found)} contacts, trace has {len(true)} (trace frames "
            f"{[e.frame for e in true]}, extremum frames {[c.frame for c in found]})"
        ]
    bad = []
    for e, c in zip(true, found, strict=True):
        if c.at is None:
            if abs(c.frame - e.frame) > 1:
                bad.append(f"frame {e.frame}: nearest frame {c.frame}")
            continue
        at_s = c.at / fps if clock is None else _time_at(clock, c.at)
        off = (at_s - e.t) * fps
        if abs(off) > CONTACT_TOLERANCE:
            bad.append(f"t={e.t:g} s (frame {e.frame}): the pixels put it {off:+.2f} frames off")
        elif not e.frame - 1 - CONTACT_TOLERANCE < c.at <= e.frame + CONTACT_TOLERANCE:
            bad.append(
                f"frame {e.frame}: the pixels put the contact at frame position {c.at:.2f}, so its first "
                f"frame is {math.ceil(c.at - CONTACT_TOLERANCE)}"
            )
    return [f"contacts not where the trace says: {'; '.join(bad)}"] if bad else []


def _time_at(clock: Timeline, at: float) -> float:
    """The time of a fractional frame position on ``clock`` (linear between the two frames' times)."""
    i = min(max(int(math.floor(at)), 0), clock.n_frames - 2)
    a, b = clock.time_of(i), clock.time_of(i + 1)
    return a + (at - i) * (b - a)


def detection_problems(found: Sequence[Detection], trace: Trace) -> list[str]:
    """Problems of the detector's events against the trace's (empty: every event at exactly its frame, nothing
    else)."""
    true = [e.frame for e in trace.events]
    got = [d.frame for d in found]
    if len(got) != len(true):
        return [f"detector found {len(got)} events, trace has {len(true)} (trace frames {true}, detected {got})"]
    bad = [(a, b) for a, b in zip(true, got, strict=True) if a != b]
    return [f"events not at their frames: (trace, detected) {bad}"] if bad else []


def dataset_render(root: str | Path) -> dict[str, Any] | None:
    """The render settings a dataset was generated with (``dataset.json["render"]``), or None."""
    try:
        render = read_dataset_info(Path(root)).get("render")
    except (OSError, ValueError, DataError):
        return None
    return render if isinstance(render, dict) else None


def check_sample(sample: Sample, root: str | Path, render: Mapping[str, Any] | None = None) -> list[str]:
    """Every problem of one rendered sample: its answer, its trace's timing, then its pixels. ``render``: the
    dataset's render settings (read from ``root``'s dataset.json when not given), which rebuild a rendered
    sample's exact schedule."""
    problems = answer_problems(sample)
    # a non-synthetic sample asked to be verified: its answer is checked against its trace too
    if not problems and (executed := replay(sample.trace)) != sample.answer:
        problems.append(f"trace executes to {executed} but answer is {sample.answer}")
    v = sample.video
    clock = v.timeline if v.n_frames else None  # a dry-run manifest's video has no frames (and no clock)
    if clock is not None and clock.plain:
        clock = None  # constant-rate from 0: the arithmetic checks, as before
    render = dataset_render(root) if render is None else render
    if render and is_synthetic(sample) and render.get("fps") is not None and float(render["fps"]) != v.fps:
        return problems + [f"the dataset was rendered at {render['fps']} fps but the video is {v.fps:g} fps"]
    try:
        times = exact_schedule(sample, render)
    except (ConfigError, ValueError, KeyError, TypeError) as e:  # a grid point or settings the schedule refuses
        return problems + [f"its schedule cannot be rebuilt from its params and dataset.json: {e}"]
    problems += timing_problems(sample.trace, v.fps, v.n_frames, clock, times)
    if problems:
        return problems  # the pixels' verdict against a trace that is wrong on its face adds nothing
    return check_video(sample.params["domain"], Path(root) / v.path, sample.trace, v.fps, clock, v.stream)


def _verify_job(row: dict, root: str, render: dict | None = None) -> tuple[str, list[str]]:
    sample = Sample.model_validate(row)
    path = Path(root) / sample.video.path
    if not path.is_file():
        return sample.sample_id, [f"video missing: {path}"]
    if sample.video.sha256 and sha256_file(path) != sample.video.sha256:
        return sample.sample_id, [f"sha256 of {path} does not match the manifest (file changed or corrupt)"]
    try:  # the clock the trace's frames were placed on must be the file's (rate, times, start)
        facts = facts_problems(probe(path, sample.video.stream), sample.video)
    except DataError as e:
        return sample.sample_id, [str(e)]
    if facts:
        return sample.sample_id, [f"the file is not the video its manifest describes: {'; '.join(facts)}"]
    return sample.sample_id, check_sample(sample, root, render)


def verify_dataset(
    root: str | Path, samples: Sequence[Sample], *, workers: int | None = None, on_progress=None
) -> dict[str, list[str]]:
    """Problems per sample id over a generated set (empty dict: every video shows its trace).

    One job per video on the generators' runner (``core.jobs``); a job returns its problems (errors as
    results), so one bad video never stops the others being checked."""
    render = dataset_render(root)
    jobs = [(s.model_dump(mode="json"), str(root), render) for s in samples]
    results = run_jobs(_verify_job, jobs, workers=workers, on_progress=on_progress)
    return {sid: ps for sid, ps in results if ps}
