"""The object-centric framework's cost per video: calls, frames, tokens and offline CPU seconds, per stage.

Renders one synthetic world (default 36 s at 320x240, 10 fps; rendering a 183 s world is slow on a
shared 2-core machine), runs ``object-centric:offline`` on all its questions through the real
executor and store, reads every stage call back from the store, and prints:

1. measured, for this video: calls per stage (made vs store hits), frames per stage, nominal input
   tokens at the paper's uniform 256 per frame plus text/4, offline CPU seconds per stage;
2. the paper's scale (183 s, Q = 39.7, H.12), extrapolated from the measured per-chunk and
   per-question costs: M = ceil(183 / chunk_s) chunks; calls M + 2Q for a model backbone (M + Q with
   lexical retrieval, as offline); frames M x 60 + Q x 64; tokens likewise; against an end-to-end
   baseline's Q calls and Q x 64 frames.

    PYTHONPATH=src python benchmarks/faithful_framework.py [--duration 36] [--events 14]
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path

TOKENS_PER_FRAME = 256


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=36.0)
    ap.add_argument("--events", type=int, default=14)
    ap.add_argument("--paper-duration", type=float, default=183.0)
    ap.add_argument("--paper-q", type=float, default=39.7)
    args = ap.parse_args()

    from bench_common import parse_condition

    from vidaudit.core.manifest import load_samples
    from vidaudit.core.types import ModelSpec
    from vidaudit.run.session import execute
    from vidaudit.run.store.reader import StoreReader
    from vidaudit.suites.faithful.generate import generate, specs_for

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        t0 = time.perf_counter()
        specs = specs_for("standard", seeds=1, duration_s=args.duration, events=args.events, max_targets=10)
        generate(specs, data, workers=1)
        render_s = time.perf_counter() - t0
        samples = load_samples(data)
        q = len(samples)
        spec = ModelSpec.parse("object-centric:offline")
        c0, w0 = time.process_time(), time.perf_counter()
        execute(data, Path(tmp) / "run", [spec], [parse_condition("native@1", prompt="yes_no")], suite="faithful")
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        with StoreReader(Path(tmp) / "run") as store:
            calls = store.stage_calls()
        per: dict[str, dict[str, float]] = {}
        for c in calls:
            d = per.setdefault(c.stage, {"calls": 0, "frames": 0, "text_chars": 0, "seconds": 0.0})
            d["calls"] += 1
            parts = c.request["parts"]
            d["frames"] += sum(1 for p in parts if "image" in p)
            d["text_chars"] += sum(len(p.get("text", "")) for p in parts)
            d["seconds"] += c.ended_at - c.started_at
    print(f"machine: {os.cpu_count()} CPUs (shared); load average at start {os.getloadavg()[0]:.1f}")
    print(
        f"1. one world of {args.duration:g} s, {q} questions (targets and sub-questions); rendered in {render_s:.1f} s"
    )
    print(f"   run: {wall:.1f} s wall, {cpu:.1f} s CPU of this process (the executor runs stages in threads)")
    print(f"   {'stage':8} {'calls made':>10} {'frames':>7} {'nominal tokens':>15} {'stage wall s':>14}")
    for stage, d in per.items():
        tok = d["frames"] * TOKENS_PER_FRAME + d["text_chars"] / 4
        print(f"   {stage:8} {d['calls']:10.0f} {d['frames']:7.0f} {tok:15,.0f} {d['seconds']:14.2f}")
    print(
        f"   store hits: every trial after the first of the video reuses the {per['extract']['calls']:.0f} "
        f"extraction calls; answer calls made {per['answer']['calls']:.0f} for {q} questions "
        "(identical sub-questions share one)"
    )
    ex, an = per["extract"], per["answer"]
    m = math.ceil(args.paper_duration / 15.0)
    pq = args.paper_q
    sec_chunk = ex["seconds"] / ex["calls"]
    sec_answer = an["seconds"] / an["calls"]
    fr_chunk = ex["frames"] / ex["calls"]
    tok_chunk = fr_chunk * TOKENS_PER_FRAME + ex["text_chars"] / ex["calls"] / 4
    tok_answer = 64 * TOKENS_PER_FRAME + an["text_chars"] / an["calls"] / 4
    print(f"2. extrapolated to the paper's scale: {args.paper_duration:g} s, Q = {pq:g} (M = {m} chunks of 15 s)")
    print(
        f"   calls: model backbone M + 2Q = {m + 2 * pq:.1f}; offline (lexical R) M + Q = {m + pq:.1f}; "
        f"end-to-end Q = {pq:g}; ratio {(m + 2 * pq) / pq:.2f}x"
    )
    print(f"   frames: M x {fr_chunk:.0f} + Q x 64 = {m * fr_chunk + pq * 64:,.0f} vs end-to-end {pq * 64:,.0f}")
    print(
        f"   nominal input tokens: {m * tok_chunk + pq * tok_answer:,.0f} vs end-to-end {pq * 64 * TOKENS_PER_FRAME:,.0f}"
        " (R's prompt not counted offline)"
    )
    print(
        f"   offline stage seconds (wall time of the stage calls, under this load): extraction {m * sec_chunk:.1f} s once per video ({sec_chunk:.2f} s per chunk, "
        f"this video's chunks have {fr_chunk:.0f} frames at 320x240), answering {pq * sec_answer:.2f} s"
    )


if __name__ == "__main__":
    main()
