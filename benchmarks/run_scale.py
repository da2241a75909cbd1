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

``--scale`` measures issue 24's figures instead: a streamed run of 17,520 trials (1 simulated model x
the paper's 8 sampling conditions x the 2,190 samples) and of 262,800 (15 models), each then resumed,
and the dry-run plan of 26,280 trials (one API model x the 12 conditions). Each stage runs in a fresh
process; its CPU (``process_time``: all threads, the machine may be loaded) is counted from after
vidaudit is imported, so start-up is not in it. Reported: peak RSS, CPU per trial, the growth of peak
RSS per trial between the two sizes, the resume's CPU per trial (and that it stores nothing). With
``--before TREE`` the 17,520-trial run, its resume and the dry run are also made by the vidaudit in
``TREE/src`` (e.g. a ``git worktree`` of main before the change), side by side.

    python benchmarks/run_scale.py --scale [--before /tmp/base] [--sizes 1,15] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
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
    from bench_common import parse_condition

    return [parse_condition(c, "structured_trace") for c in SAMPLING] + [
        parse_condition("native", p) for p in OTHER_PROMPTS
    ]


def _models(work: Path, n: int) -> list:
    from adaptive_design import strong, weak, write_csv

    from vidaudit.core.types import ModelSpec

    surfaces = [("strong", strong), ("weak", weak)]
    if not 1 <= n <= len(surfaces):
        raise SystemExit(f"--models must be 1 or {len(surfaces)}")
    return [ModelSpec.parse(f"simulated:{write_csv(work / f'{name}.csv', fn)}") for name, fn in surfaces[:n]]


SCALE_GOALS = {
    "hwm_mib": 600,
    "cpu_ms_per_trial": 0.35,
    "growth_kb_per_trial": 0.5,
    "resume_ms_per_trial": 0.05,
    "dry_cpu_s": 1.0,
}


def _scale_models(work: Path, n: int) -> list:
    """``n`` simulated models, each its own surface (a blend of the strong and weak ones): distinct labels."""
    from adaptive_design import strong, weak, write_csv

    from vidaudit.core.types import ModelSpec

    def blend(w: float):
        return lambda d, n_, f: round((1 - w) * strong(d, n_, f) + w * weak(d, n_, f), 4)

    return [ModelSpec.parse(f"simulated:{write_csv(work / f'surface{k:02d}.csv', blend(k / 14))}") for k in range(n)]


def scale_child(stage: str, work: Path, n_models: int) -> dict:
    """One stage of ``--scale`` in this fresh process (CPU counted after the imports)."""
    from bench_common import parse_condition

    import vidaudit.run.session as session
    from vidaudit.core.types import ModelSpec

    conds = [parse_condition(c, "structured_trace") for c in SAMPLING]
    if stage == "dry":
        conds += [parse_condition("native", p) for p in OTHER_PROMPTS]
        spec = [ModelSpec.parse("gemini:gemini-2.5-flash")]
        session.execute(work / "data", work / "dry", spec, conds, dry_run=True, limit=2)  # warm: lazy imports
        c0 = time.process_time()
        res = session.execute(work / "data", work / "dry", spec, conds, dry_run=True)
        return {
            "cpu_s": time.process_time() - c0,
            "trials": sum(r.trials for r in res.dry_run),
            "hwm_mib": vm_hwm_mib(),
        }
    models = _scale_models(work, n_models)
    run = work / f"run{n_models}"
    import vidaudit.suites.counting.simulated  # noqa: F401  (imports, before the clock starts)
    import vidaudit.suites.counting.suite  # noqa: F401

    t0, c0 = time.perf_counter(), time.process_time()
    session.execute(work / "data", run, models, conds)
    out = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "hwm_mib": vm_hwm_mib()}
    return out | store_counts(run)


def store_counts(run: Path) -> dict:
    """Trials, attempts and trials with an ok attempt in a run's store (read after the run's own figures)."""
    import sqlite3

    con = sqlite3.connect(f"file:{run / 'store.sqlite'}?mode=ro", uri=True)
    try:
        return {
            "trials": con.execute("select count(*) from trials").fetchone()[0],
            "attempts": con.execute("select count(*) from attempts").fetchone()[0],
            "ok": con.execute("select count(distinct trial_id) from attempts where status = 'ok'").fetchone()[0],
        }
    finally:
        con.close()


def _spawn(args: list[str], src: Path | None = None) -> dict:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def scale_main(work: Path, sizes: list[int], before: Path | None) -> None:
    """``--scale``: the figures of issue 24, side by side with ``before`` where given."""
    trees: list[tuple[str, Path | None]] = [("after", None)] + ([("before", before / "src")] if before else [])
    figures: dict[tuple[str, int], dict] = {}
    for name, src in trees:
        for n in sizes if name == "after" else sizes[:1]:
            shutil.rmtree(work / f"run{n}", ignore_errors=True)  # a fresh run, then its resume
            run = _spawn(["--scale-child", "run", str(work), str(n)], src)
            resume = _spawn(["--scale-child", "resume", str(work), str(n)], src)
            if resume["attempts"] != run["attempts"] or run["ok"] != run["trials"]:
                raise SystemExit(f"{name}: the resume stored new attempts, or trials are left without an ok one")
            figures[(name, n)] = {"run": run, "resume": resume}
            shutil.rmtree(work / f"run{n}", ignore_errors=True)
            t = run["trials"]
            print(
                f"  {name:<6} {t:>7} trials: run CPU {run['cpu_s']:7.1f} s ({1e3 * run['cpu_s'] / t:.3f} ms/trial), "
                f"wall {run['wall_s']:7.1f} s, peak RSS {run['hwm_mib']:6.0f} MiB; resume CPU {resume['cpu_s']:6.2f} s "
                f"({1e3 * resume['cpu_s'] / t:.4f} ms/trial), peak {resume['hwm_mib']:6.0f} MiB, stored nothing new",
                flush=True,
            )
        dry = _spawn(["--scale-child", "dry", str(work), "1"], src)
        figures[(name, 0)] = {"dry": dry}
        print(
            f"  {name:<6} dry-run plan of {dry['trials']} trials: {dry['cpu_s']:.2f} s CPU beyond start-up", flush=True
        )
    after = {n: figures[("after", n)] for n in sizes}
    small, large = after[sizes[0]]["run"], after[sizes[-1]]["run"]
    peak = max(max(f["run"]["hwm_mib"], f["resume"]["hwm_mib"]) for f in after.values())
    # the goals are stated at the largest size (per-sample work, e.g. loading 2,190 samples, is spread thinner)
    cpu = large["cpu_s"] / large["trials"] * 1e3
    growth = (
        (large["hwm_mib"] - small["hwm_mib"]) * 1024 / (large["trials"] - small["trials"])
        if large["trials"] > small["trials"]
        else float("nan")
    )
    resume = after[sizes[-1]]["resume"]["cpu_s"] / large["trials"] * 1e3
    dry_cpu = figures[("after", 0)]["dry"]["cpu_s"]
    got = {
        "hwm_mib": peak,
        "cpu_ms_per_trial": cpu,
        "growth_kb_per_trial": growth,
        "resume_ms_per_trial": resume,
        "dry_cpu_s": dry_cpu,
    }
    print("goals (after):")
    for key, goal in SCALE_GOALS.items():
        print(
            f"  {key:<22} {got[key]:9.3f}  goal < {goal:g}: {'met' if got[key] < goal or (key == 'cpu_ms_per_trial' and got[key] <= goal) else 'NOT met'}"
        )


def child(stage: str, work: Path, n_models: int) -> dict:
    """One stage in this (fresh) process: its wall and CPU time, peak RSS and what it produced."""
    t0, c0 = time.perf_counter(), time.process_time()
    out: dict = {}
    if stage in ("run", "resume"):
        from vidaudit.run.session import execute

        execute(work / "data", work / "run", _models(work, n_models), _conditions())
        hwm = vm_hwm_mib()  # the run's own peak, before this script reads the store back
        out.update(store_counts(work / "run"))
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
    ap.add_argument("--scale", action="store_true", help="issue 24's figures (see the module docstring)")
    ap.add_argument("--sizes", default="1,15", help="--scale: simulated models per run (8 x 2,190 trials each)")
    ap.add_argument("--before", type=Path, default=None, help="--scale: a source tree to measure side by side")
    ap.add_argument("--child", nargs=2, metavar=("STAGE", "WORK"), help=argparse.SUPPRESS)
    ap.add_argument("--scale-child", nargs=3, metavar=("STAGE", "WORK", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), args.models)))
        return
    if args.scale_child:
        print(json.dumps(scale_child(args.scale_child[0], Path(args.scale_child[1]), int(args.scale_child[2]))))
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="vidaudit-run-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}; load average at start "
        f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1/5/15 min); work dir {work}",
        flush=True,
    )
    from vidaudit.suites.counting.generate import generate
    from vidaudit.suites.counting.grid import preset

    t0 = time.perf_counter()
    if not (work / "data" / "manifest.jsonl").is_file():
        generate(preset("paper"), work / "data", dry_run=True)
    print(f"dry-run manifest of the paper preset: {time.perf_counter() - t0:.1f} s (not part of the goal)", flush=True)
    if args.scale:
        scale_main(work, [int(x) for x in args.sizes.split(",")], args.before)
        print(f"load average at end: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}; work dir {work}")
        return
    rows = []
    for stage in ("run", "resume", "report"):
        proc = subprocess.run(
            [sys.executable, __file__, "--models", str(args.models), "--child", stage, str(work)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise SystemExit(f"stage {stage} failed:\n{proc.stderr[-4000:]}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append((stage, res))
        extra = (
            f"{res['trials']} trials, {res['attempts']} attempts, {res['ok']} ok, store {res['store_mb']:.1f} MB"
            if "trials" in res
            else ", ".join(
                f"{k} {v:.1f} MB"
                for k, v in res.items()
                if isinstance(v, float) and k not in ("wall_s", "cpu_s", "hwm_mib")
            )
        )
        print(
            f"  {stage:<7} wall {res['wall_s']:7.1f} s  CPU {res['cpu_s']:7.1f} s  peak RSS {res['hwm_mib']:7.0f} MiB"
            f"  ({extra})",
            flush=True,
        )
    by = dict(rows)
    if by["resume"]["attempts"] != by["run"]["attempts"] or by["run"]["ok"] != by["run"]["trials"]:
        raise SystemExit("the resume stored new attempts, or the run left trials without an ok attempt: a bug")
    peak = max(r["hwm_mib"] for _, r in rows)
    trials = rows[0][1]["trials"]
    print(
        f"goal at {trials} trials (the run and its report each under 2 GB resident): "
        f"{'met' if peak < GOAL_MIB else 'NOT met'} (highest peak {peak:.0f} MiB)"
    )
    print(f"load average at end: {os.getloadavg()[0]:.2f} (1 min); run dir {work / 'run'}")


if __name__ == "__main__":
    main()
