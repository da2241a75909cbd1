"""The identity-linking control of the offline framework: A_faith with linking on vs off, on worlds
with look-alikes and occlusions and on worlds with neither (issue 10's Done-when).

Generates the two kinds of smoke-sized worlds, runs ``object-centric:chunk_s=C,offline`` and
``object-centric:chunk_s=C,linking=off,offline`` in process (``framework.offline_eval``: the real
composite, extraction shared between the two), and prints A_faith side by side.

    PYTHONPATH=src python benchmarks/faithful_linking.py [--seeds 3] [--chunk 3] [--lookalikes 2] [--occlusions 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--chunk", type=float, default=3.0)
    ap.add_argument("--lookalikes", type=int, default=2)
    ap.add_argument("--occlusions", type=int, default=2)
    ap.add_argument("--agents", type=int, default=None)
    ap.add_argument("--events", type=int, default=None)
    ap.add_argument("--duration", type=float, default=None)
    args = ap.parse_args()

    from vidaudit.suites.faithful.framework.offline_eval import evaluate
    from vidaudit.suites.faithful.generate import generate, specs_for

    on = f"object-centric:chunk_s={args.chunk:g},offline"
    off = f"object-centric:chunk_s={args.chunk:g},linking=off,offline"
    print(f"machine: {os.cpu_count()} CPUs (shared); load average at start {os.getloadavg()[0]:.1f}")
    print(f"{'worlds':34} {'targets':>7} {'A_faith on':>11} {'A_faith off':>12} {'on - off':>9} {'seconds':>8}")
    worlds = [(f"lookalikes {args.lookalikes}, occlusions {args.occlusions}", args.lookalikes, args.occlusions),
              ("lookalikes 0, occlusions 0", 0, 0)]
    with tempfile.TemporaryDirectory() as tmp:
        for name, la, oc in worlds:
            t0 = time.perf_counter()
            data = Path(tmp) / f"la{la}-oc{oc}"
            specs = specs_for("smoke", seeds=args.seeds, lookalikes=la, occlusions=oc, agents=args.agents,
                              events=args.events, duration_s=args.duration)
            generate(specs, data, workers=1)
            res = evaluate(data, [on, off])
            a, b = res[on], res[off]
            print(f"{name:34} {a.targets:7d} {a.a_faith:10.1%} {b.a_faith:11.1%} {100 * (a.a_faith - b.a_faith):+8.1f}p "
                  f"{time.perf_counter() - t0:8.1f}")


if __name__ == "__main__":
    main()
