"""A real run at the paper's scale, end to end, and its peak memory: issue 13's "a run of 52,560 trials
and its report stay under 2 GB of resident memory".

``--models`` simulated models (``simulated:SURFACE.csv``, the strong and weak surfaces of
``adaptive_design.py``) x the paper's 12 conditions (8 presentations with ``structured_trace`` and 4
other prompts at ``native``) x the 2,190 samples of the paper grid: 26,280 trials per model. A
simulated model reads no pixels, so the dataset is the paper preset's dry-run manifest (traces, no
video files). Three stages, each in a fresh process so that its peak resident memory (VmHWM) is its
own:

1. ``run``: ``vidaudit.run.session.execute`` plans every trial, calls the model, and stores every
   attempt in the run's SQLite store and audit log, exactly as ``vidaudit run`` does;
2. ``resume``: the same run again, which must find every trial stored and call nothing;
3. ``report``: ``vidaudit.report.stage.report_run`` scores the store into ``scores.jsonl`` and writes
   ``report.{json,md,html}`` with the trace viewer.

A simulated model answers ``\\boxed{K}`` with no ledger, so the scoring work per trial is lighter than
a real model's (``report_scale.py`` measures the report on ledger responses); the store, the plan,
the executor and the report's tables are the real ones at full size.

    python benchmarks/run_scale.py [--models 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import vm_hwm_mib

SAMPLING = ("native", "frames@1", "frames@2", "frames@4", "frames@8", "frames@10", "frames@16", "keyframes")
OTHER_PROMPTS = ("direct", "multi_turn_verification", "thinking", "role_prompting")
GOAL_MIB = 2048


def _conditions() -> list:
    from vidaudit.run.plan import parse_condition

    return ([parse_condition(c, "structured_trace") for c in SAMPLING]
            + [parse_condition("native", p) for p in OTHER_PROMPTS])


def _models(work: Path, n: int) -> list:
    from adaptive_design import strong, weak, write_csv

    from vidaudit.core.types import ModelSpec

    surfaces = [("strong", strong), ("weak", weak)]
    if not 1 <= n <= len(surfaces):
        raise SystemExit(f"--models must be 1 or {len(surfaces)}")
    return [ModelSpec.parse(f"simulated:{write_csv(work / f'{name}.csv', fn)}") for name, fn in surfaces[:n]]


def child(stage: str, work: Path, n_models: int) -> dict:
    """One stage in this (fresh) process: its wall and CPU time, peak RSS and what it produced."""
    t0, c0 = time.perf_counter(), time.process_time()
    out: dict = {}
    if stage in ("run", "resume"):
        import sqlite3

        from vidaudit.run.session import execute

        execute(work / "data", work / "run", _models(work, n_models), _conditions())
        hwm = vm_hwm_mib()  # the run's own peak, before this script reads the store back
        con = sqlite3.connect(f"file:{work / 'run' / 'store.sqlite'}?mode=ro", uri=True)
        try:
            out["trials"] = con.execute("select count(*) from trials").fetchone()[0]
            out["attempts"] = con.execute("select count(*) from attempts").fetchone()[0]
            out["ok"] = con.execute("select count(distinct trial_id) from attempts where status = 'ok'").fetchone()[0]
        finally:
            con.close()
        out["store_mb"] = (work / "run" / "store.sqlite").stat().st_size / 1e6
        out.update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0, hwm_mib=hwm)
        return out
    else:
        from vidaudit.report.stage import report_run

        paths = report_run(work / "run")
        out = {name: Path(p).stat().st_size / 1e6 for name, p in paths.items() if Path(p).is_file()}
    out.update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0, hwm_mib=vm_hwm_mib())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=2, help="simulated models (26,280 trials each)")
    ap.add_argument("--keep", type=Path, default=None, help="work in this directory and keep it")
    ap.add_argument("--child", nargs=2, metavar=("STAGE", "WORK"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), args.models)))
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="vidaudit-run-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}; load average at start "
          f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1/5/15 min); work dir {work}", flush=True)
    from vidaudit.suites.counting.generate import generate
    from vidaudit.suites.counting.grid import preset

    t0 = time.perf_counter()
    if not (work / "data" / "manifest.jsonl").is_file():
        generate(preset("paper"), work / "data", dry_run=True)
    print(f"dry-run manifest of the paper preset: {time.perf_counter() - t0:.1f} s (not part of the goal)", flush=True)
    rows = []
    for stage in ("run", "resume", "report"):
        proc = subprocess.run([sys.executable, __file__, "--models", str(args.models), "--child", stage, str(work)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"stage {stage} failed:\n{proc.stderr[-4000:]}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append((stage, res))
        extra = (f"{res['trials']} trials, {res['attempts']} attempts, {res['ok']} ok, store {res['store_mb']:.1f} MB"
                 if "trials" in res
                 else ", ".join(f"{k} {v:.1f} MB" for k, v in res.items() if isinstance(v, float) and k not in ("wall_s", "cpu_s", "hwm_mib")))
        print(f"  {stage:<7} wall {res['wall_s']:7.1f} s  CPU {res['cpu_s']:7.1f} s  peak RSS {res['hwm_mib']:7.0f} MiB"
              f"  ({extra})", flush=True)
    by = dict(rows)
    if by["resume"]["attempts"] != by["run"]["attempts"] or by["run"]["ok"] != by["run"]["trials"]:
        raise SystemExit("the resume stored new attempts, or the run left trials without an ok attempt: a bug")
    peak = max(r["hwm_mib"] for _, r in rows)
    trials = rows[0][1]["trials"]
    print(f"goal at {trials} trials (the run and its report each under 2 GB resident): "
          f"{'met' if peak < GOAL_MIB else 'NOT met'} (highest peak {peak:.0f} MiB)")
    print(f"load average at end: {os.getloadavg()[0]:.2f} (1 min); run dir {work / 'run'}")


if __name__ == "__main__":
    main()
