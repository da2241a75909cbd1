"""H.12's latency split as the paper measures it: the median over N runs (the paper: 10 runs, preprocessing at a
concurrency of 4; D.7 / H.1), for the object-centric framework and its backbone end to end.

Each run is a fresh run directory (OUT/run-00 ...): a run's store answers repeated calls from its cache, so a
rerun into one directory would time nothing. Every run makes every call; then
``suites.faithful.framework.latency.latency_over_runs`` reads each run's per-call wall-clock and prints, per
system, the median over the runs of the one-off preprocessing per video, the per-query time and each stage's
median call, with the quartiles and IQR / median (the paper reports IQR < 5%), and writes OUT/latency.json.
The framework runs at most 4 questions at once (its capabilities); ``--adapter-option openai.concurrency=4``
holds a served backbone to 4 calls at once as well.

    PYTHONPATH=src python benchmarks/faithful_latency.py --data DATA --out OUT --runs 10 \\
        --model "object-centric:openai:MODEL@URL" --model "openai:MODEL@URL" --condition native@1 \\
        --adapter-option openai.concurrency=4
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--condition", default="native@1")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--limit", type=int, default=None, help="only the first N samples (each run)")
    ap.add_argument("--adapter-option", action="append", default=[])
    args = ap.parse_args()

    from bench_common import parse_condition

    from vidaudit.core.types import ModelSpec
    from vidaudit.run.cli_support import parse_adapter_options
    from vidaudit.run.session import execute
    from vidaudit.suites.faithful.framework.latency import latency_over_runs

    models = [ModelSpec.parse(m) for m in args.model]
    cond = parse_condition(args.condition, "yes_no")  # the suite's default prompt
    options = parse_adapter_options(args.adapter_option)
    dirs = []
    for k in range(args.runs):
        out = args.out / f"run-{k:02d}"
        if out.exists():
            raise SystemExit(
                f"{out} exists: a run directory is timed once (its store caches every call); choose another --out"
            )
        t0 = time.perf_counter()
        execute(args.data, out, models, [cond], suite="faithful", limit=args.limit, model_options=options)
        print(f"run {k + 1}/{args.runs}: {time.perf_counter() - t0:.1f} s")
        dirs.append(out)
    res = latency_over_runs(dirs)
    (args.out / "latency.json").write_text(json.dumps(res, indent=1))
    print(f"\nmedians over {res['n_runs']} runs [q1, q3] (IQR / median)")
    for s in res["systems"]:
        print(f"{s['model']} / {s['condition']}")
        for name, fig in (
            ("preprocessing s per video", s["preprocessing_s_per_video"]),
            ("per query s", s["per_query_s"]),
            *((f"  {st} s per call", f) for st, f in s["median_s_per_call"].items()),
        ):
            if fig is not None:
                iqr = fig["iqr_over_median"]
                print(
                    f"  {name:28} {fig['median']:.3f} [{fig['q1']:.3f}, {fig['q3']:.3f}]"
                    + (f" ({iqr:.0%})" if iqr is not None else "")
                )


if __name__ == "__main__":
    main()
