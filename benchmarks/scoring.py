"""Time counting-suite scoring on the paper's full workload (~38,000 trials over the N x F grid).

Synthetic structured-ledger responses (faithful, jittered, missing and extra events, wrong
tallies, direct answers without timestamps, unparseable text) are generated first, then parsed,
matched and scored with ``score_trial`` and aggregated; only scoring and aggregation are timed.

    python benchmarks/scoring.py [--trials 38000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vidaudit.core.hashing import rng_from
from vidaudit.core.types import Event, Sample, Trace, VideoRef
from vidaudit.suites.counting.aggregate import aggregate
from vidaudit.suites.counting.grid import QUESTIONS, grid
from vidaudit.suites.counting.scoring import score_trial

DURATION, FPS = 24.0, 30.0
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
        events.append(Event(t=t, frame=int(np.ceil(t * FPS)), type=etype, state_before=before, state_after=after,
                            count=i + 1))
    video = VideoRef(path=f"videos/{domain}/{n}-{f}-{seed}.mp4", sha256=f"{domain}{n}{f}{seed}", fps=FPS,
                     width=640, height=480, n_frames=int(DURATION * FPS), duration_s=DURATION)
    return Sample(sample_id=f"counting-{domain}-N{n:02d}-F{f:.1f}-s{seed:02d}", suite="counting",
                  params={"domain": domain, "n_events": n, "frequency_hz": f, "seed": seed},
                  question=QUESTIONS[domain], answer=n, trace=Trace(events=tuple(events)), video=video)


def _fmt_time(t: float, style: int) -> str:
    if style == 0:
        return f"{int(t // 60)}:{t % 60:05.2f}"
    if style == 1:
        return f"t={t:.2f}s"
    return f"at {t:.1f} seconds"


def make_response(sample: Sample, k: int) -> str:
    rng = rng_from("bench-response", sample.sample_id, k)
    kind = rng.choice(["faithful", "jitter", "miss", "extra", "tally", "direct", "unparseable"],
                      p=[0.3, 0.2, 0.15, 0.1, 0.1, 0.1, 0.05])
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
        what = {"state_machine": f"transition -> {lab}", "bounce_ball": f"ball hits the {lab} wall",
                "blinking": "object turns on"}[str(sample.params["domain"])]
        lines.append(f"- Event {i}: {_fmt_time(max(t, 0.0), style)}, {what}, running count {i}")
    final = len(times) + (int(rng.integers(1, 3)) if kind == "tally" else 0)
    lines.append(f"2. Final Answer: \\boxed{{{final}}}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=38_000)
    args = ap.parse_args()
    samples = [make_sample(p.domain, p.n_events, p.frequency_hz, p.seed) for p in grid()]
    jobs = [(samples[i % len(samples)], i // len(samples)) for i in range(args.trials)]
    texts = [make_response(s, k) for s, k in jobs]
    t0, c0 = time.perf_counter(), time.process_time()
    records = []
    for (s, k), text in zip(jobs, texts, strict=True):
        rec = score_trial(s, text).to_dict()
        rec.update(model="bench", condition=f"c{k % 17}", usage={"input_tokens": 1000, "output_tokens": 200},
                   cost_usd=0.001)
        records.append(rec)
    t_score, c_score = time.perf_counter() - t0, time.process_time() - c0
    t1, c1 = time.perf_counter(), time.process_time()
    report = aggregate(records)
    t_agg, c_agg = time.perf_counter() - t1, time.process_time() - c1
    em = sum(bool(r["correct"]) for r in records) / len(records)
    print(f"trials: {len(records)} over {len(samples)} samples (EM {em:.3f}, "
          f"{len(report['cells'])} cells)")
    print(f"score_trial: {t_score:.2f} s wall, {c_score:.2f} s CPU ({len(records) / c_score:,.0f} trials/s of CPU)")
    print(f"aggregate:   {t_agg:.2f} s wall, {c_agg:.2f} s CPU")
    print(f"total:       {t_score + t_agg:.2f} s wall, {c_score + c_agg:.2f} s CPU")


if __name__ == "__main__":
    main()
