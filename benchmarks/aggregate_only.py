"""Time the counting suite's ``aggregate`` alone: this tree's against the reference copy in the tests.

The records are the scoring benchmark's (``scoring.py``: the paper's grid, ~38,000 synthetic responses,
scored once, untimed); each implementation then aggregates them under ``vidaudit.core.gcpause.paused_gc``,
as the report stage runs a suite's aggregate, alternating, ``--repeats`` times; the least CPU time
(``time.process_time``: the machine is shared) of each is printed, and both reports must be equal as JSON
bytes (the script exits non-zero otherwise).

    PYTHONPATH=src:benchmarks python benchmarks/aggregate_only.py [--trials 38000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from scoring import make_response, make_sample, score_all

from vidaudit.core.gcpause import paused_gc
from vidaudit.suites.counting.aggregate import aggregate
from vidaudit.suites.counting.grid import grid

REFERENCE = Path(__file__).resolve().parent.parent / "tests" / "aggregate_reference.py"


def reference_aggregate() -> Callable[[list[dict]], dict]:
    """``aggregate`` of ``tests/aggregate_reference.py`` (the module as it was before its one-pass rewrite)."""
    spec = importlib.util.spec_from_file_location("aggregate_reference", REFERENCE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.aggregate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=38_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    samples = [make_sample(p.domain, p.n_events, p.frequency_hz, p.seed) for p in grid()]
    jobs = [(samples[i % len(samples)], i // len(samples)) for i in range(args.trials)]
    records = score_all(jobs, [make_response(s, k) for s, k in jobs])
    impls = {"reference": reference_aggregate(), "current": aggregate}
    best = dict.fromkeys(impls, float("inf"))
    reports: dict[str, bytes] = {}
    for _ in range(args.repeats):
        for name, agg in impls.items():
            c0 = time.process_time()
            with paused_gc():
                report = agg(records)
            best[name] = min(best[name], time.process_time() - c0)
            reports[name] = json.dumps(report).encode()
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{len(records)} records; aggregate CPU s, best of {args.repeats} (load {load}):")
    for name, s in best.items():
        print(f"  {name:<10} {s:.3f}")
    same = reports["reference"] == reports["current"]
    print(f"  ratio {best['reference'] / best['current']:.2f}x; report JSON identical: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
