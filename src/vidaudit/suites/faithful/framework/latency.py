"""H.12's latency as the paper reports it: the median over N runs, not one run's wall-clock.

The paper (D.7, H.1): "Latencies are medians over 10 runs (IQR < 5%) ... and preprocessing runs at a
concurrency of 4". One run's store holds one wall-clock per call (``score.stage.stage_usage``), and a rerun
into the same run directory makes no call (the store answers from its cache), so N runs are N run
directories, each made afresh (``benchmarks/faithful_latency.py`` makes them). For each run and system
(model, condition) the split is ``budget.latency_split`` -- one-off preprocessing per video (the
once-per-video stages' distinct calls, summed), per query (the per-query stages' uses, summed, per question)
and the median per distinct call by stage -- and across the runs each figure's median, quartiles and IQR
(relative to the median) are given, with the N values.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vidaudit.sdk import ConfigError, RunConfig, StoreReader, load_samples, stage_usage
from vidaudit.suites.faithful.framework.budget import latency_split


def run_latency(run_dir: str | Path) -> dict[tuple[str, str], dict[str, Any]]:
    """One run's latency split per (model, condition), from its store (``budget.latency_split``)."""
    run_dir = Path(run_dir)
    video = {s.sample_id: s.video.path for s in load_samples(RunConfig.load(run_dir).data_dir)}
    with StoreReader(run_dir) as store:
        rows = list(store.results())
        usage = stage_usage(store, rows)
    videos: dict[tuple[str, str], set[str]] = {}
    for row, att in rows:
        if att is not None:
            videos.setdefault((row.model, row.condition_id), set()).add(video.get(row.sample_id, row.sample_id))
    return {
        (m, c): latency_split(
            block.get("latency") or {}, max(1, int(block.get("n_trials") or 0)), len(videos.get((m, c), ())) or None
        )
        for m, conds in usage.items()
        for c, block in conds.items()
    }


def _summary(values: Sequence[float]) -> dict[str, Any]:
    v = sorted(values)
    med = statistics.median(v)
    q1, q3 = statistics.quantiles(v, n=4, method="inclusive")[0::2] if len(v) > 1 else (v[0], v[0])
    return {"median": med, "q1": q1, "q3": q3, "iqr_over_median": (q3 - q1) / med if med else None, "values": v}


def latency_over_runs(run_dirs: Sequence[str | Path]) -> dict[str, Any]:
    """Each system's latency split as the median over the runs (a system must be in every run)."""
    if not run_dirs:
        raise ConfigError("the latency needs at least one run directory")
    per_run = [run_latency(d) for d in run_dirs]
    common = set(per_run[0]).intersection(*per_run[1:])
    systems = []
    for key in sorted(common):
        splits = [r[key] for r in per_run]

        def figure(get: Any, splits: Sequence[Mapping[str, Any]] = splits) -> dict[str, Any] | None:
            vals = [x for x in (get(s) for s in splits) if x is not None]
            return _summary(vals) if len(vals) == len(splits) else None

        stages = sorted({st for s in splits for st in s["median_s_per_call"]})
        systems.append(
            {
                "model": key[0],
                "condition": key[1],
                "runs": len(splits),
                "preprocessing_s_per_video": figure(lambda s: s["preprocessing_s_per_video"]),
                "per_query_s": figure(lambda s: s["per_query_s"]),
                "median_s_per_call": {st: figure(lambda s, st=st: s["median_s_per_call"].get(st)) for st in stages},
            }
        )
    return {
        "runs": [str(d) for d in run_dirs],
        "n_runs": len(run_dirs),
        "systems": systems,
        "rule": "per run: preprocessing = the once-per-video stages' distinct calls summed, per video; per query = "
        "the per-query stages' uses summed, per question; per call = the median of a stage's distinct "
        "calls. Across runs: the median of each figure, its quartiles and IQR / median",
    }
