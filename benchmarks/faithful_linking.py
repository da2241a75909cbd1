"""The identity-linking control of the offline framework: A_faith with linking on vs off, with the gap's
95% interval from a paired bootstrap over videos (issues 10, 23 and 32).

Generates worlds (a preset's, or smoke-sized worlds with the knobs given), then for each chunk length C in
``--chunks`` runs ``object-centric:chunk_s=C,offline`` and ``object-centric:chunk_s=C,linking=off,offline``
in process (``framework.offline_eval``: the real composite, extraction shared between the two), and prints
A_faith side by side and the gap (on - off) with its interval, overall and per question form (order, count,
identity). The paper's default chunk is 15 s; 3 s puts more chunk boundaries inside a 20 s world.

    PYTHONPATH=src python benchmarks/faithful_linking.py --preset smoke --seeds 16 --chunks 15,3
    PYTHONPATH=src python benchmarks/faithful_linking.py --seeds 3 --lookalikes 2 --occlusions 2 --repeats 0
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default=None, help="a generate preset (smoke, standard): its worlds, knobs as given")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--chunks", default="15,3", help="chunk lengths in seconds, comma-separated (the paper's: 15)")
    ap.add_argument("--lookalikes", type=int, default=None)
    ap.add_argument("--occlusions", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--agents", type=int, default=None)
    ap.add_argument("--events", type=int, default=None)
    ap.add_argument("--duration", type=float, default=None)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()

    from vidaudit.score.stats import paired_bootstrap
    from vidaudit.suites.faithful.framework.offline_eval import evaluate
    from vidaudit.suites.faithful.generate import generate, specs_for

    chunks = [float(c) for c in args.chunks.split(",") if c.strip()]
    arms = {
        c: (f"object-centric:chunk_s={c:g},offline", f"object-centric:chunk_s={c:g},linking=off,offline")
        for c in chunks
    }
    print(f"machine: {os.cpu_count()} CPUs (shared); load average at start {os.getloadavg()[0]:.1f}")
    specs = specs_for(
        args.preset or "smoke",
        seeds=args.seeds,
        lookalikes=args.lookalikes,
        occlusions=args.occlusions,
        repeats=args.repeats,
        agents=args.agents,
        events=args.events,
        duration_s=args.duration,
    )
    k = specs[0]
    print(
        f"worlds: {len(specs)} x ({k.agents} agents, {k.events} events, {k.occlusions} occlusions, {k.lookalikes} "
        f"look-alike pairs, {k.repeats} repeats, {k.duration_s:g} s, {k.width}x{k.height})"
    )
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        data = Path(tmp) / "worlds"
        generate(specs, data, workers=args.workers)
        res = evaluate(data, [spec for pair in arms.values() for spec in pair])
        seconds = time.perf_counter() - t0
    for c, (on, off) in arms.items():
        a, b = res[on], res[off]
        pairs = {o.target: o for o in b.per_target}
        shared = [o for o in a.per_target if o.target in pairs]
        print(f"\nchunk_s {c:g}")
        print(f"{'':16} {'targets':>7} {'A_faith on':>11} {'A_faith off':>12} {'on - off':>9}  95% interval (videos)")
        forms = sorted({o.form or "-" for o in shared})
        for form in ["all", *forms]:
            mine = [o for o in shared if form == "all" or (o.form or "-") == form]
            boot = paired_bootstrap(
                [float(pairs[o.target].faithful) for o in mine],
                [float(o.faithful) for o in mine],
                [o.cluster for o in mine],
                n_boot=10_000,
                seed=0,
            )
            fa = sum(o.faithful for o in mine) / len(mine)
            fb = sum(pairs[o.target].faithful for o in mine) / len(mine)
            print(
                f"{form:16} {len(mine):7d} {fa:10.1%} {fb:11.1%} {100 * boot.estimate:+8.1f}p  "
                f"[{100 * boot.ci_low:+.1f}, {100 * boot.ci_high:+.1f}] ({boot.n_groups} videos)"
            )
        print(f"A_target on {a.a_target:.1%}, off {b.a_target:.1%}")
    print(f"\n{seconds:.1f} s")


if __name__ == "__main__":
    main()
