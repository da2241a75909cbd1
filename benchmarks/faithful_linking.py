"""The identity-linking control of the offline framework: A_faith with linking on vs off, with the gap's
95% interval from a paired bootstrap over videos (issue 10's and issue 23's Done-when).

Generates worlds (a preset's, or smoke-sized worlds with the knobs given), runs
``object-centric:chunk_s=C,offline`` and ``object-centric:chunk_s=C,linking=off,offline`` in process
(``framework.offline_eval``: the real composite, extraction shared between the two), and prints A_faith
side by side, the gap (on - off) with its interval, and the gap per question form.

    PYTHONPATH=src python benchmarks/faithful_linking.py --preset smoke --seeds 16 [--chunk 3]
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
    ap.add_argument("--chunk", type=float, default=3.0)
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

    on = f"object-centric:chunk_s={args.chunk:g},offline"
    off = f"object-centric:chunk_s={args.chunk:g},linking=off,offline"
    print(f"machine: {os.cpu_count()} CPUs (shared); load average at start {os.getloadavg()[0]:.1f}")
    specs = specs_for(args.preset or "smoke", seeds=args.seeds, lookalikes=args.lookalikes, occlusions=args.occlusions,
                      repeats=args.repeats, agents=args.agents, events=args.events, duration_s=args.duration)
    k = specs[0]
    print(f"worlds: {len(specs)} x ({k.agents} agents, {k.events} events, {k.occlusions} occlusions, {k.lookalikes} "
          f"look-alike pairs, {k.repeats} repeats, {k.duration_s:g} s, {k.width}x{k.height}); chunk_s {args.chunk:g}")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        data = Path(tmp) / "worlds"
        generate(specs, data, workers=args.workers)
        res = evaluate(data, [on, off])
        a, b = res[on], res[off]
        seconds = time.perf_counter() - t0
    pairs = {o.target: o for o in b.per_target}
    shared = [o for o in a.per_target if o.target in pairs]
    boot = paired_bootstrap([float(pairs[o.target].faithful) for o in shared], [float(o.faithful) for o in shared],
                            [o.cluster for o in shared], n_boot=10_000, seed=0)
    print(f"{'':16} {'targets':>7} {'A_faith on':>11} {'A_faith off':>12} {'on - off':>9}  95% interval (videos)")
    print(f"{'all':16} {a.targets:7d} {a.a_faith:10.1%} {b.a_faith:11.1%} {100 * boot.estimate:+8.1f}p  "
          f"[{100 * boot.ci_low:+.1f}, {100 * boot.ci_high:+.1f}] ({boot.n_groups} videos)")
    for form in sorted({o.form or "-" for o in shared}):
        mine = [o for o in shared if (o.form or "-") == form]
        fa = sum(o.faithful for o in mine) / len(mine)
        fb = sum(pairs[o.target].faithful for o in mine) / len(mine)
        print(f"{form:16} {len(mine):7d} {fa:10.1%} {fb:11.1%} {100 * (fa - fb):+8.1f}p")
    print(f"A_target on {a.a_target:.1%}, off {b.a_target:.1%}; {seconds:.1f} s")


if __name__ == "__main__":
    main()
