"""Time counting-suite scoring before and after the speed-up, side by side in one run.

1. The paper's workload (~38,000 trials over the N x F grid): synthetic structured-ledger responses
   (faithful, jittered, missing and extra events, wrong tallies, direct answers without timestamps,
   unparseable text) are generated first, then parsed, matched and scored into the record aggregates read,
   as the suite's ``score`` makes it (``score_record`` since issue 24's fourth round; ``score_trial(...)
   .to_dict()`` at a revision without it, see ``record_function``) and aggregated with ``aggregate``, by two
   implementations: ``current`` (this tree) and ``before``, the scoring modules as they were at
   ``--before`` (default commit 187a46b, the code as issue 24 found it; read with ``git show`` and
   imported under another package name, so both run in this process on the same load; a revision from
   before issue 21's move reads the moved modules from ``vidaudit.score``). Both run as the stages run them
   (since issue 24's third round): the scoring pass under ``vidaudit.core.gcpause.paused_gc``, as the score
   stage runs its pass (``score/stage.py``), and ``aggregate`` under it, as the report stage runs the suite's
   aggregate (``report/stage.py``); the cyclic collector is on around them, and each repetition ends with
   ``gc.collect()`` inside the timed region, so the collection the paused passes leave for later is charged to
   them (the ``gc`` column). Issue 24's first two rounds timed the passes with the collector running during
   them (what a caller other than the stages pays: about 0.5 s more here). Every timed pass starts from the
   same heap (no other pass's records alive; the outputs compared below are kept from the last pass and one
   untimed pass of the other implementation). Repetitions
   alternate; the repetition with the least total CPU time (``time.process_time``:
   the machine is shared) of ``--repeats`` is kept. Both must give equal record dicts, an equal report
   and byte-identical ``scores.jsonl`` (every trial turned into its ScoreRecord by
   ``vidaudit.score.stage.record`` and written by ``write_scores``, as a run's score stage does); the
   script exits non-zero otherwise.
2. One adversarial response, ``--adversarial-kb`` KB of nested ``\\boxed{`` (the hardening issue's
   case), scored by the parsers before their linear rewrite (``baseline_answers.py``) and now: wall
   time and ``tracemalloc`` peak.

    python benchmarks/scoring.py [--trials 38000] [--repeats 2] [--before 187a46b|dbb7a78|none] [--adversarial-kb 32]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import platform
import sys
import tempfile
import time
import tracemalloc
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import baseline_answers
import numpy as np
from bench_common import modules_at

from vidaudit.core.gcpause import paused_gc
from vidaudit.core.hashing import rng_from
from vidaudit.core.types import Event, Sample, Trace, VideoRef
from vidaudit.score.answers import box_bounds
from vidaudit.suites.counting.aggregate import aggregate
from vidaudit.suites.counting.grid import QUESTIONS, grid
from vidaudit.suites.counting.scoring import score_trial

DURATION, FPS = 24.0, 30.0
GOAL_S = 2.5  # issue 24: the 38,000 responses scored and aggregated, garbage collection included
STATES = "ABCD"


def make_sample(domain: str, n: int, f: float, seed: int) -> Sample:
    rng = rng_from("bench", domain, n, f, seed)
    span = (n - 1) / f if n else 0.0
    t0 = float(rng.uniform(1.0, DURATION - 1.0 - span))
    events, state = [], int(rng.integers(4))
    walls = ("left", "right") if rng.integers(2) else ("top", "bottom")
    for i in range(n):
        t = round(t0 + i / f, 4)
        if domain == "state_machine":
            nxt = (state + 1 + int(rng.integers(3))) % 4
            before, after, state = STATES[state], STATES[nxt], nxt
            etype = "transition"
        elif domain == "bounce_ball":
            before, after, etype = None, walls[i % 2], "contact"
        else:
            before, after, etype = "off", "on", "blink"
        events.append(
            Event(t=t, frame=int(np.ceil(t * FPS)), type=etype, state_before=before, state_after=after, count=i + 1)
        )
    video = VideoRef(
        path=f"videos/{domain}/{n}-{f}-{seed}.mp4",
        sha256=f"{domain}{n}{f}{seed}",
        fps=FPS,
        width=640,
        height=480,
        n_frames=int(DURATION * FPS),
        duration_s=DURATION,
    )
    return Sample(
        sample_id=f"counting-{domain}-N{n:02d}-F{f:.1f}-s{seed:02d}",
        suite="counting",
        params={"domain": domain, "n_events": n, "frequency_hz": f, "seed": seed},
        question=QUESTIONS[domain],
        answer=n,
        trace=Trace(events=tuple(events)),
        video=video,
    )


def _fmt_time(t: float, style: int) -> str:
    if style == 0:
        return f"{int(t // 60)}:{t % 60:05.2f}"
    if style == 1:
        return f"t={t:.2f}s"
    return f"at {t:.1f} seconds"


def make_response(sample: Sample, k: int) -> str:
    rng = rng_from("bench-response", sample.sample_id, k)
    kind = rng.choice(
        ["faithful", "jitter", "miss", "extra", "tally", "direct", "unparseable"],
        p=[0.3, 0.2, 0.15, 0.1, 0.1, 0.1, 0.05],
    )
    if kind == "unparseable":
        return "I cannot determine the number of events from this video."
    n = int(sample.answer)
    if kind == "direct":
        return f"\\boxed{{{max(0, n + int(rng.integers(-2, 3)))}}}"
    events = list(sample.trace.events)
    times = [e.t for e in events]
    labels = [e.state_after for e in events]
    f = float(sample.params["frequency_hz"])
    if kind == "jitter":
        times = [t + float(rng.normal(0, 0.4 / f)) for t in times]
    if kind == "miss" and times:
        keep = rng.random(len(times)) > 0.4
        times = [t for t, kp in zip(times, keep, strict=True) if kp]
        labels = [lab for lab, kp in zip(labels, keep, strict=True) if kp]
    if kind == "extra":
        extra = rng.uniform(0, DURATION, size=int(rng.integers(1, 4))).tolist()
        times = sorted(times + extra)
        labels = labels + [None] * len(extra)
    style = int(rng.integers(3))
    lines = ["1. Step-by-Step Event Ledger"]
    for i, (t, lab) in enumerate(zip(times, labels, strict=False), 1):
        what = {
            "state_machine": f"transition -> {lab}",
            "bounce_ball": f"ball hits the {lab} wall",
            "blinking": "object turns on",
        }[str(sample.params["domain"])]
        lines.append(f"- Event {i}: {_fmt_time(max(t, 0.0), style)}, {what}, running count {i}")
    final = len(times) + (int(rng.integers(1, 3)) if kind == "tally" else 0)
    lines.append(f"2. Final Answer: \\boxed{{{final}}}")
    return "\n".join(lines)


#: the code as issue 24 found it (this branch's first commit: issue 21's move of the counting-only scoring
#: modules, no behaviour change), and the modules scoring runs (in import order)
BEFORE_COMMIT = "187a46b"
CHANGED = (
    "vidaudit.score.answers",
    "vidaudit.suites.counting.metrics",
    "vidaudit.suites.counting.timestamp_lexicon",
    "vidaudit.suites.counting.timestamp_scan",
    "vidaudit.suites.counting.timestamps",
    "vidaudit.suites.counting.matching",
    "vidaudit.suites.counting.boundaries",
    "vidaudit.suites.counting.taxonomy",
    "vidaudit.suites.counting.scoring",
    "vidaudit.suites.counting.aggregate_scan",
    "vidaudit.suites.counting.aggregate_blocks",
    "vidaudit.suites.counting.aggregate_diagnostics",
    "vidaudit.suites.counting.aggregate",
)
#: modules split out of the ones above later (issue 33): absent at older revisions, where their code sat inside
SPLIT = frozenset(
    {
        "vidaudit.suites.counting.timestamp_lexicon",
        "vidaudit.suites.counting.timestamp_scan",
        "vidaudit.suites.counting.aggregate_scan",
        "vidaudit.suites.counting.aggregate_blocks",
        "vidaudit.suites.counting.aggregate_diagnostics",
    }
)
#: where the modules issue 21 moved lived before (so that older revisions, e.g. dbb7a78, still load)
MOVED = {
    f"vidaudit.suites.counting.{m}": f"vidaudit.score.{m}"
    for m in ("timestamps", "matching", "metrics", "taxonomy", "boundaries")
}
BEFORE_PKG = "_vidaudit_before"


def load_before(rev: str) -> dict[str, types.ModuleType]:
    """The ``CHANGED`` modules as of ``rev``, imported as ``_vidaudit_before.*`` (they import each other there)."""
    return modules_at(rev, CHANGED, BEFORE_PKG, moved=MOVED, optional=SPLIT)


@contextmanager
def scoring_module(mod: types.ModuleType) -> Iterator[None]:
    """``vidaudit.suites.counting.scoring`` is ``mod`` for the suite's ``score`` (this process only); a revision
    from before ``score_record`` gets one made of its ``score_trial`` (:func:`record_function`), which is what the
    suite's ``score`` of that revision kept."""
    key = "vidaudit.suites.counting.scoring"
    saved = sys.modules[key]
    if not hasattr(mod, "score_record"):
        shim = types.ModuleType(mod.__name__)
        shim.__dict__.update(mod.__dict__)
        shim.score_record = record_function(mod)  # type: ignore[attr-defined]
        mod = shim
    sys.modules[key] = mod
    try:
        yield
    finally:
        sys.modules[key] = saved


@contextmanager
def previous_parsers() -> Iterator[None]:
    """Score with the parsers of ``baseline_answers`` (this process only; restored on exit)."""
    import vidaudit.suites.counting.scoring as sc
    import vidaudit.suites.counting.timestamps as ts

    saved = sc.parse_count, ts.boxed_spans
    sc.parse_count, ts.boxed_spans = baseline_answers.parse_count, baseline_answers.boxed_spans
    try:
        yield
    finally:
        sc.parse_count, ts.boxed_spans = saved


def record_function(mod: types.ModuleType) -> Callable[[Sample, str], dict]:
    """How a scoring module makes a trial's record, as the suite's ``score`` does: ``score_record`` (since issue 24's
    fourth round), else ``score_trial(...).to_dict()`` (older revisions)."""
    if hasattr(mod, "score_record"):
        return mod.score_record
    score_trial = mod.score_trial

    def score_record(sample: Sample, text: str, *args: object, **kwargs: object) -> dict:
        return score_trial(sample, text, *args, **kwargs).to_dict()

    return score_record


def score_all(
    jobs: list[tuple[Sample, int]], texts: list[str], score_record: Callable[[Sample, str], dict] | None = None
) -> list[dict]:
    """Every trial's record (``score_record``, default this tree's), with the keys the stage adds."""
    if score_record is None:
        from vidaudit.suites.counting.scoring import score_record
    records = []
    for (s, k), text in zip(jobs, texts, strict=True):
        rec = score_record(s, text)
        rec.update(
            model="bench", condition=f"c{k % 17}", usage={"input_tokens": 1000, "output_tokens": 200}, cost_usd=0.001
        )
        records.append(rec)
    return records


def scores_jsonl(jobs: list[tuple[Sample, int]], texts: list[str]) -> bytes:
    """The ``scores.jsonl`` a run's score stage writes for these trials (``stage.record`` + ``write_scores``)."""
    from vidaudit.core.registry import get_suite
    from vidaudit.score.stage import record, write_scores

    suite = get_suite("counting")
    recs = [
        record(
            suite,
            s,
            trial_id=f"t{i}",
            model="bench",
            role="model",
            condition=f"c{k % 17}",
            status="ok",
            text=text,
            usage={"input_tokens": 1000, "output_tokens": 200},
            cost_usd=0.001,
        )
        for i, ((s, k), text) in enumerate(zip(jobs, texts, strict=True))
    ]
    with tempfile.TemporaryDirectory() as tmp:
        return write_scores(Path(tmp) / "scores.jsonl", recs).read_bytes()


def timed(fn: Callable[[], object]) -> tuple[float, float, object]:
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def peak_of(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def breakdown(jobs: list[tuple[Sample, int]], texts: list[str], scale_to: int, repeats: int = 3) -> None:
    """CPU seconds of each stage of the current score_trial over these responses, scaled to ``scale_to``
    (best of ``repeats`` per stage: one pass is at the mercy of a shared machine and the garbage collector)."""
    import vidaudit.suites.counting.scoring as sc
    from vidaudit.score.answers import parse_count
    from vidaudit.suites.counting.matching import match_times
    from vidaudit.suites.counting.timestamps import extract_timestamps

    def cpu(fn: Callable[[], object]) -> float:
        best = float("inf")
        for _ in range(repeats):
            c0 = time.process_time()
            fn()
            best = min(best, time.process_time() - c0)
        return best * scale_to / len(jobs)

    def extract_all() -> list:
        return [
            extract_timestamps(t, s.video.duration_s, label_patterns=sc.LABEL_PATTERNS.get(str(s.params["domain"]), ()))
            for (s, _), t in zip(jobs, texts, strict=True)
        ]

    full = cpu(lambda: [sc.score_record(s, t) for (s, _), t in zip(jobs, texts, strict=True)])
    parse = cpu(lambda: [parse_count(t) for t in texts])
    extract = cpu(extract_all)
    pairs = [
        ([e.t for e in s.trace.events], r.times, sc.rate_relative_delta(float(s.params["frequency_hz"])))
        for (s, _), r in zip(jobs, extract_all(), strict=True)
    ]
    ks = [match_times(a, b, d).k for a, b, d in pairs]
    at_delta = cpu(lambda: [match_times(a, b, d) for a, b, d in pairs])
    fixed = cpu(lambda: [sc._window_counts(sorted(a), b, d, k) for (a, b, d), k in zip(pairs, ks, strict=True)])
    rest = full - parse - extract - at_delta - fixed
    print(
        f"   where the CPU time goes now (timed over {len(jobs)} responses, best of {repeats}, scaled to {scale_to}): "
        f"score_trial + to_dict {full:.2f} s = timestamps {extract:.2f} + parse_count {parse:.2f} + matching at "
        f"delta(F) {at_delta:.2f} + fixed windows {fixed:.2f} + the rest (taxonomy, metrics, labels, record) "
        f"{rest:.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=38_000)
    ap.add_argument("--repeats", type=int, default=2, help="alternating repetitions per implementation; best kept")
    ap.add_argument("--before", default=BEFORE_COMMIT, help="git revision of the 'before' code ('none': skip it)")
    ap.add_argument("--breakdown", type=int, default=8000, help="time each stage over this many responses (0: skip)")
    ap.add_argument("--adversarial-kb", type=int, default=32, help="size of the nested-box response (0: skip)")
    args = ap.parse_args()
    if args.trials < 1 or args.repeats < 1 or args.adversarial_kb < 0:
        raise SystemExit("--trials and --repeats must be >= 1, --adversarial-kb >= 0")
    print(
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}; load average at start "
        f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1/5/15 min)"
    )
    samples = [make_sample(p.domain, p.n_events, p.frequency_hz, p.seed) for p in grid()]
    jobs = [(samples[i % len(samples)], i // len(samples)) for i in range(args.trials)]
    texts = [make_response(s, k) for s, k in jobs]

    import vidaudit.suites.counting.scoring as current_scoring

    impls: dict[str, tuple[types.ModuleType, Callable]] = {}
    if args.before != "none":
        before = load_before(args.before)
        impls["before"] = (
            before["vidaudit.suites.counting.scoring"],
            before["vidaudit.suites.counting.aggregate"].aggregate,
        )
    impls["current"] = (current_scoring, aggregate)
    # (score_trial, aggregate, gc) CPU seconds of the repetition with the least total, per implementation
    best: dict[str, tuple[float, float, float]] = {}
    results: dict[str, tuple[list[dict], dict]] = {}
    was_enabled = gc.isenabled()
    gc.enable()  # the collector on around the passes (the stages pause it over theirs), and its final work timed
    recs: list[dict] | None = None
    report: dict | None = None
    try:
        for _ in range(args.repeats):
            for name, (mod, agg) in impls.items():
                # every pass starts from the same heap: no other pass's records alive (they would make the
                # collector's passes over the old generation longer for whichever implementation ran second)
                results.clear()
                recs = report = None
                gc.collect()  # start clean: the previous repetition's garbage is not this one's
                c0 = time.process_time()
                with paused_gc():  # as the score stage runs its pass (score/stage.py)
                    recs = score_all(jobs, texts, record_function(mod))
                c1 = time.process_time()
                with paused_gc():  # as the report stage runs the suite's aggregate (report/stage.py)
                    report = agg(recs)
                c2 = time.process_time()
                gc.collect()  # the collection the paused passes left for later is theirs: timed here
                c3 = time.process_time()
                old = best.get(name)
                if old is None or c3 - c0 < sum(old):
                    best[name] = (c1 - c0, c2 - c1, c3 - c2)
                results[name] = (recs, report)
        recs = report = None
        for name, (mod, agg) in impls.items():  # the other implementation's output, for the comparison (untimed)
            if name not in results:
                out = score_all(jobs, texts, record_function(mod))
                results[name] = (out, agg(out))
    finally:
        if not was_enabled:
            gc.disable()
    records, report = results["current"]
    em = sum(bool(r["correct"]) for r in records) / len(records)
    print(
        f"1. trials: {len(records)} over {len(samples)} samples (EM {em:.3f}, {len(report['cells'])} cells); "
        f"CPU seconds, passes under the stages' collector pause, final collection timed, best total of {args.repeats}"
    )
    print(f"   {'':<18}{'score_trial':>12}{'aggregate':>11}{'gc':>7}{'total':>8}")
    for name in impls:
        sc_cpu, agg_cpu, gc_cpu = best[name]
        total = sc_cpu + agg_cpu + gc_cpu
        label = f"before ({args.before})" if name == "before" else name
        print(
            f"   {label:<18}{sc_cpu:>12.2f}{agg_cpu:>11.2f}{gc_cpu:>7.2f}{total:>8.2f}  "
            f"({len(records) / total:,.0f} trials/s of CPU; goal < {GOAL_S:g} s: "
            f"{'met' if total < GOAL_S else 'NOT met'})"
        )
    if "before" in impls:
        b, c = sum(best["before"]), sum(best["current"])
        print(
            f"   ratio before / current: score_trial {best['before'][0] / best['current'][0]:.2f}x, "
            f"aggregate {best['before'][1] / best['current'][1]:.2f}x, total {b / c:.2f}x"
        )
        same_records = results["before"][0] == records
        same_report = results["before"][1] == report
        with scoring_module(impls["before"][0]):
            jsonl_before = scores_jsonl(jobs, texts)
        jsonl_now = scores_jsonl(jobs, texts)
        same_jsonl = jsonl_before == jsonl_now
        print(
            f"   identical: record dicts {same_records}, report {same_report}, scores.jsonl bytes {same_jsonl} "
            f"({len(jsonl_now) / 2**20:.1f} MiB, sha256 {hashlib.sha256(jsonl_now).hexdigest()[:16]})"
        )
        if not (same_records and same_report and same_jsonl):
            raise SystemExit("before and current scored the workload differently; the timing does not compare")

    if args.breakdown:
        breakdown(jobs[: args.breakdown], texts[: args.breakdown], len(jobs))

    if args.adversarial_kb:
        depth = args.adversarial_kb * 1000 // 8
        text = "\\boxed{" * depth + "x" + "}" * depth  # no readable answer: every box is tried
        sample = samples[0]
        figures = {}
        for name in ("previous", "current"):
            if name == "previous":
                with previous_parsers():
                    wall, _, ts = timed(lambda: score_trial(sample, text))
                    peak = peak_of(lambda: score_trial(sample, text))
            else:  # each call reads the boxes afresh (box_bounds keeps the last few texts' boxes)
                box_bounds.cache_clear()
                wall, _, ts = timed(lambda: score_trial(sample, text))
                box_bounds.cache_clear()
                peak = peak_of(lambda: score_trial(sample, text))
            figures[name] = (wall, peak, ts.predicted_count)  # type: ignore[attr-defined]
        print(
            f"\n2. one response of {len(text) / 1000:.0f} KB: \\boxed{{ nested {depth} deep around an x "
            "(no answer, so every box is tried)"
        )
        for name, (wall, peak, value) in figures.items():
            read = "unparseable" if value is None else value
            print(f"   {name:<8} parsers: {wall * 1e3:9.1f} ms, peak {peak / 2**20:8.1f} MiB ({read})")
        (w0, p0, _), (w1, p1, _) = figures["previous"], figures["current"]
        print(f"   ratio previous / current: {w0 / w1:.1f}x time, {p0 / p1:.1f}x peak memory")


if __name__ == "__main__":
    main()
