"""Coverage of the stress report's 95% intervals when a cell's items share sources (a simulation, not a timing).

A cell of the stress report pools items of which several are made from one source: camera_motion moves one
scene six ways, expectation perturbs one procedure video seven ways, shortcuts asks 24 questions about one
procedure, sycophancy makes several claims about one video. Items of one source answer alike. This script
draws cells with the cluster sizes the presets' manifests have (``SHAPES``; counted by reading the generated
``manifest.jsonl`` of each probe), each source's accuracy from a Beta distribution with mean ``mu`` and
intra-cluster correlation ``rho`` (``rho = 1 / (a + b + 1)``), its items Bernoulli of it, and counts how often
each interval holds ``mu``:

- ``wilson``: Wilson over the items, counted as independent (the stress report before this script);
- ``boot``: a percentile bootstrap resampling whole sources (``score.stats.paired_bootstrap`` against a zero arm:
  the faithful suite's ``video_interval``), 1,000 resamples;
- ``clustered``: ``score.stats.cluster_wilson_interval`` (what the report prints now).

    PYTHONPATH=src python benchmarks/cluster_coverage.py [--reps 1000] [--seed 0]

Seeded: the same arguments print the same table.
"""

from __future__ import annotations

import argparse

import numpy as np

from vidaudit.score.stats import cluster_wilson_interval, paired_bootstrap, wilson_interval

#: cells' cluster sizes (items per source), from the generated manifests (docs/stress.md, "Intervals")
SHAPES: dict[str, list[int]] = {
    "camera_motion paper, one synthesis (36 scenes x 6)": [6] * 36,
    "camera_motion paper, both syntheses (36 x 12)": [12] * 36,
    "camera_motion smoke (2 scenes x 6)": [6] * 2,
    "expectation paper, anomaly all (16 sources x 7)": [7] * 16,
    "expectation paper, anomaly spatial (16 x 3)": [3] * 16,
    "expectation paper, direction all (16 x 2)": [2] * 16,
    "shortcuts paper, overall (16 sources x 24)": [24] * 16,
    "shortcuts paper, blank (16 x 18)": [18] * 16,
    "sycophancy paper, overall (20 videos: 12x2, 6x4, 2x18)": [2] * 12 + [4] * 6 + [18] * 2,
    "cross_frame NExT-QA-like (20 videos x 5 questions)": [5] * 20,
}


def coverage(sizes: list[int], mu: float, rho: float, reps: int, seed: int) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(seed)
    m = np.asarray(sizes)
    groups = np.repeat(np.arange(len(m)), m)
    a, b = (mu * (1 - rho) / rho, (1 - mu) * (1 - rho) / rho) if rho > 0 else (0.0, 0.0)
    hits, widths = np.zeros(3), np.zeros(3)
    for rep in range(reps):
        pc = rng.beta(a, b, size=len(m)) if rho > 0 else np.full(len(m), mu)
        y = (rng.random(len(groups)) < pc[groups]).tolist()
        k = int(sum(y))
        boot = paired_bootstrap([0.0] * len(y), [float(v) for v in y], groups.tolist(), n_boot=1000, seed=rep)
        cl = cluster_wilson_interval(y, groups.tolist())
        for i, (lo, hi) in enumerate(
            (wilson_interval(k, len(y)), (boot.ci_low, boot.ci_high), (cl.ci_low, cl.ci_high))
        ):
            hits[i] += lo <= mu <= hi
            widths[i] += hi - lo
    return (hits / reps).tolist(), (widths / reps).tolist()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(
        f"{'cell shape':55s} {'mu':>4s} {'rho':>4s} | coverage wilson   boot clustered | width wilson   boot clustered"
    )
    for name, sizes in SHAPES.items():
        for mu in (0.3, 0.7):
            for rho in (0.0, 0.2, 0.5):
                c, w = coverage(sizes, mu, rho, args.reps, args.seed)
                print(
                    f"{name:55s} {mu:4.1f} {rho:4.1f} |          "
                    + " ".join(f"{x:6.3f}" for x in c)
                    + "    |       "
                    + " ".join(f"{x:6.3f}" for x in w),
                    flush=True,
                )


if __name__ == "__main__":
    main()
