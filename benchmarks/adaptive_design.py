"""The adaptive design against the full grid: trials spent for the same boundaries, per surface.

For each ``simulated:`` surface it runs, for real (session, executor, SQLite store), the full grid and
``--design adaptive`` on one dry-run manifest, scores both from their stores, checks that the
boundaries are identical, and prints full-grid trials, adaptive trials and their ratio. Part 1 is the
paper grid (3 domains x 9 positive counts x 8 frequencies x 10 seeds + the N = 0 controls = 2,190
trials) under the point rule; part 2 a 20-seed grid under the Wilson rule (10 seeds cannot meet it).

Surfaces (accuracy per cell; N = 0 controls at 0.9):

- ``strong``: the paper's Gemini 3.6 Flash as section 4 describes it: State Machine reliable
  through N = 12 at 0.5 and 1.0 Hz, to N = 2 at 1.5 Hz, N = 1 up to 3.0 Hz; Bounce Ball through
  N = 10 at 0.5 Hz only, with an isolated N = 8 exception at 1.0 Hz; Blinking nowhere.
- ``weak``: the paper's Qwen3-VL-235B: State Machine N = 1 only in isolated 2.5 and 3.5 Hz cells.
- ``island``: reliable at N = 1 up to 1 Hz and on a non-monotone island (N in 6, 8; F in 2.5, 3.0).
- ``ceiling``: 0.97 everywhere, the worst case: nothing can be pruned, every cell needs 8 trials.

    PYTHONPATH=src python benchmarks/adaptive_design.py [--surfaces strong,weak,island,ceiling] [--no-wilson]
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_common import parse_condition

from vidaudit.core.types import ModelSpec
from vidaudit.run.session import execute
from vidaudit.score.stage import score_store
from vidaudit.suites.counting.aggregate import aggregate
from vidaudit.suites.counting.generate import generate
from vidaudit.suites.counting.grid import COUNTS, DOMAINS, FREQUENCIES, NOMINAL_F_FOR_ZERO, grid

Surface = Callable[[str, int, float], float]


def strong(d: str, n: int, f: float) -> float:
    if d == "state_machine":
        if f <= 1.0:
            return 0.95
        if f == 1.5:
            return 0.9 if n <= 2 else 0.4
        return 0.9 if n == 1 and f <= 3.0 else 0.3
    if d == "bounce_ball":
        if f == 0.5:
            return 0.9 if n <= 10 else 0.5
        return 0.9 if (n, f) == (8, 1.0) else 0.25
    return 0.7 if (n, f) == (1, 0.5) else 0.3


def weak(d: str, n: int, f: float) -> float:
    if d == "state_machine" and n == 1:
        return 0.9 if f in (2.5, 3.5) else 0.6
    return 0.15


def island(d: str, n: int, f: float) -> float:
    return 0.95 if (n == 1 and f <= 1.0) or (n in (6, 8) and f in (2.5, 3.0)) else 0.2


def ceiling(d: str, n: int, f: float) -> float:
    return 0.97


SURFACES: dict[str, Surface] = {"strong": strong, "weak": weak, "island": island, "ceiling": ceiling}
BOUNDARIES = {
    "point": ("count_boundary", "frequency_boundary", "max_count_boundary"),
    "wilson_lower": ("count_boundary_wilson", "frequency_boundary_wilson", "max_count_boundary_wilson"),
}


def write_csv(path: Path, acc: Surface) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["domain", "N", "F", "accuracy"])
        for d in DOMAINS:
            w.writerow([d, 0, NOMINAL_F_FOR_ZERO, 0.9])
            for n in COUNTS[1:]:
                for f in FREQUENCIES:
                    w.writerow([d, n, f, acc(d, n, f)])
    return path


def results(run_dir: Path) -> dict:
    return aggregate([r.flat() for r in score_store(run_dir).records])


def compare(data: Path, work: Path, name: str, acc: Surface, rule: str) -> tuple[int, int]:
    spec = ModelSpec.parse(f"simulated:{write_csv(work / f'{name}-{rule}.csv', acc)}")
    cond = [parse_condition("native")]
    t0 = time.perf_counter()
    execute(data, work / f"{name}-{rule}-full", [spec], cond)
    t_full = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = execute(
        data,
        work / f"{name}-{rule}-adaptive",
        [spec],
        cond,
        design="adaptive",
        rule="point" if rule == "point" else "wilson",
    )
    t_adaptive = time.perf_counter() - t0
    full, adaptive = results(work / f"{name}-{rule}-full"), results(work / f"{name}-{rule}-adaptive")
    same = all(full[k] == adaptive[k] for k in BOUNDARIES[rule])
    nf, na = full["n_records"], adaptive["n_records"]
    print(
        f"  {name:8s} full grid {nf:5d} trials ({t_full:5.1f} s)   adaptive {na:5d} trials in "
        f"{out.design['waves']:3d} waves ({t_adaptive:5.1f} s)   ratio {na / nf:6.1%}   same boundaries: {same}",
        flush=True,
    )
    if not same:
        raise SystemExit(f"boundaries differ for {name} under {rule}: a bug")
    return nf, na


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--surfaces", default=",".join(SURFACES))
    ap.add_argument("--no-wilson", action="store_true", help="skip part 2 (the Wilson rule on 20 seeds)")
    args = ap.parse_args()
    names = [s for s in args.surfaces.split(",") if s]
    for s in names:
        if s not in SURFACES:
            raise SystemExit(f"unknown surface {s!r}; choose from {', '.join(SURFACES)}")
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs; load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")
    with tempfile.TemporaryDirectory(prefix="vidaudit-adaptive-") as tmp:
        work = Path(tmp)
        generate(grid(), work / "paper", dry_run=True)
        print("1. paper grid (2,190 trials per model), point rule (8 of 10), simulated: surfaces")
        totals = [compare(work / "paper", work, s, SURFACES[s], "point") for s in names]
        nf, na = sum(t[0] for t in totals), sum(t[1] for t in totals)
        print(f"  all      full grid {nf:5d} trials              adaptive {na:5d} trials{'':28s}ratio {na / nf:6.1%}")
        if not args.no_wilson:
            generate(
                grid(counts=(0, 1, 2, 3, 4, 6), frequencies=(0.5, 1.0, 2.0, 3.0), seeds=range(20)),
                work / "wilson",
                dry_run=True,
            )
            print("2. 3 domains x N 1-6 x F 0.5-3 x 20 seeds (1,260 trials), Wilson rule (lower bound >= 0.8)")
            for s in names:
                compare(work / "wilson", work, s, SURFACES[s], "wilson_lower")


if __name__ == "__main__":
    main()
