"""Harness CPU per trial against its floor: vidaudit's streamed run beside a bare asyncio + SQLite loop that
stores as durably, at 17,520 and 262,800 trials, side by side in one run.

Both sides run the same design: ``--sizes`` models (1 and 15 by default; ``simulated:`` surfaces, each its
own, as ``run_scale.py --scale`` makes them) x the paper's 8 sampling conditions with structured_trace x the
2,190 samples of the paper preset's dry-run manifest: 17,520 trials per model. Each measurement runs in a
fresh process; its CPU (``process_time``: every thread, system time included) is counted from after the
imports, so start-up is not in it. The machine may be loaded: CPU time, not wall, and the best of
``--repeats``, the two sides interleaved.

- **vidaudit**: ``vidaudit.run.session.execute``, what ``vidaudit run`` does: load and check the samples,
  plan, register every trial, call the model, store every attempt in the SQLite store and the audit log.
- **floor**: what any harness must do to store the same run as durably, and nothing else. For each trial: a
  JSON record of it (sample, condition, model, options: about the size of vidaudit's) dumped with sorted
  keys and hashed (sha256) into its id; registered in chunks of 500 (one transaction and one fsync'd log
  write per chunk, a log line per trial); then per model 128 asyncio workers (vidaudit's, for a concurrency
  of 64) await an instant ``async def model(prompt)``, and each attempt's row and JSON log line are
  committed in groups of 256 (one transaction, one log write and fsync per group). The same SQLite schema
  (``vidaudit.run.store.schema``'s tables and indexes: random-key indexes on the trial id), WAL with
  ``synchronous=FULL``.

Goal (issue 34): vidaudit <= 2x the floor, and vidaudit's CPU per trial flat within 10% from 17,520 to
262,800 trials. ``--before TREE`` also measures the vidaudit in ``TREE/src`` (e.g. ``git archive`` of
main), in the same run.

    python benchmarks/harness_trial.py [--sizes 1,15] [--repeats 2] [--before /tmp/base] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLING = ("native", "frames@1", "frames@2", "frames@4", "frames@8", "frames@10", "frames@16", "keyframes")
GOAL_RATIO = 2.0
GOAL_FLAT = 1.10
#: the floor's commit group and registration chunk: vidaudit's (lanes.GROUP_ROWS, store.reader.LOOKUP_CHUNK)
GROUP_ROWS = 256
CHUNK = 500
WORKERS = 128


# -- the floor ------------------------------------------------------------------------------------


def floor_child(work: Path, n_models: int, n_conditions: int = len(SAMPLING)) -> dict:
    """The bare loop in this fresh process (see the module docstring); CPU counted after the imports.
    ``n_conditions``: the first that many of the paper's sampling conditions."""
    from vidaudit.run.store.schema import SCHEMA  # the same tables and indexes (imported before the clock)

    run = work / f"floor{n_models}"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    c0, t0 = time.process_time(), time.perf_counter()
    sample_ids = [
        json.loads(line)["sample_id"]
        for line in (work / "data" / "manifest.jsonl").read_text().splitlines()
        if line.strip()
    ]
    conn = sqlite3.connect(run / "store.sqlite", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.executescript(SCHEMA)
    log = os.open(run / "attempts.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write_log(lines: list[str]) -> None:
        os.write(log, "".join(lines).encode("utf-8"))
        os.fsync(log)

    models = [
        {
            "base_url": None,
            "name": f"{work}/surface{k:02d}.csv",
            "provider": "simulated",
            "settings": {"max_tokens": 2048, "seed": None, "temperature": 0.0, "top_p": None},
        }
        for k in range(n_models)
    ]
    conditions = [
        {
            "all_frames": c == "native",
            "fps": float(c.split("@")[1]) if "@" in c else None,
            "keyframe_offset_s": 0.1,
            "n_frames": None,
            "perturbations": [],
            "presentation": c.split("@")[0],
            "prompt": "structured_trace",
            "timestamps": True,
        }
        for c in SAMPLING[:n_conditions]
    ]
    options = {"surface_sha256": hashlib.sha256(b"surface").hexdigest()}
    prompt_sha = hashlib.sha256(b"prompt").hexdigest()

    def trials():  # (model label, condition id, trial id, sample id) in plan order, registered as they go
        for m in models:
            label = f"simulated:{m['name']}"
            for c in conditions:
                cid = f"{c['presentation']}/structured_trace"
                for sid in sample_ids:
                    yield (
                        label,
                        cid,
                        sid,
                        {
                            "adapter_options": options,
                            "condition": c,
                            "input_sha256": prompt_sha,
                            "model": m,
                            "prompt_sha256": prompt_sha,
                            "sample_id": sid,
                            "suite": "counting",
                            "video_sha256": None,
                        },
                    )

    plan: dict[str, list[tuple[str, str]]] = {}
    it = trials()
    while True:
        chunk = [next(it, None) for _ in range(CHUNK)]
        chunk = [x for x in chunk if x is not None]
        if not chunk:
            break
        rows, lines = [], []
        for label, cid, sid, data in chunk:
            text = json.dumps(data, sort_keys=True, separators=(",", ":"))
            tid = hashlib.sha256(text.encode()).hexdigest()
            now = time.time()
            rows.append((tid, sid, label, cid, text, now))
            lines.append(json.dumps({"created_at": now, "trial": data, "trial_id": tid}, sort_keys=True) + "\n")
            plan.setdefault(label, []).append((tid, sid))
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT OR IGNORE INTO trials(trial_id, sample_id, model, condition_id, trial_json, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.execute("COMMIT")
        write_log(lines)

    pending: list[tuple[tuple, str]] = []

    def commit() -> None:
        batch = pending[:]
        pending.clear()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO attempts(trial_id, attempt, status, error_kind, error_message, text, "
            "usage_json, cost_usd, latency_s, finish_reason, model_version, frame_indices, frame_times, "
            "started_at, ended_at, stages_json, response_extra) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [r for r, _ in batch],
        )
        conn.execute("COMMIT")
        write_log([line for _, line in batch])

    async def model(prompt: str) -> str:
        return "\\boxed{3}"

    async def worker(label: str, todo) -> None:
        for tid, sid in todo:
            started = time.time()
            text = await model(sid)
            ended = time.time()
            usage = {"cached_tokens": 0, "input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0}
            attempt = {
                "attempt": 1,
                "ended_at": ended,
                "error_kind": None,
                "error_message": None,
                "frame_indices": [],
                "frame_times": [],
                "started_at": started,
                "status": "ok",
                "trial_id": tid,
                "response": {
                    "cost_usd": 0.0,
                    "finish_reason": "stop",
                    "latency_s": ended - started,
                    "model_version": label,
                    "text": text,
                    "usage": usage,
                },
            }
            pending.append(
                (
                    (
                        tid,
                        1,
                        "ok",
                        None,
                        None,
                        text,
                        json.dumps(usage),
                        0.0,
                        ended - started,
                        "stop",
                        label,
                        "[]",
                        "[]",
                        started,
                        ended,
                        None,
                        None,
                    ),
                    json.dumps({"attempt": attempt}, sort_keys=True) + "\n",
                )
            )
            if len(pending) >= GROUP_ROWS:
                commit()
            await asyncio.sleep(0)

    async def run() -> None:
        tasks = []
        for label, todo in plan.items():
            shared = iter(todo)
            tasks += [asyncio.create_task(worker(label, shared)) for _ in range(WORKERS)]
        await asyncio.gather(*tasks)
        if pending:
            commit()

    asyncio.run(run())
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    n = conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    conn.close()
    os.close(log)
    shutil.rmtree(run, ignore_errors=True)
    return {"cpu_s": cpu, "wall_s": wall, "trials": n}


# -- vidaudit -------------------------------------------------------------------------------------


def vidaudit_child(work: Path, n_models: int, n_conditions: int = len(SAMPLING)) -> dict:
    """``vidaudit.run.session.execute`` in this fresh process, what ``vidaudit run`` does (``run_scale.py
    --scale``'s run stage). A run of 2 samples first, into a dir thrown away, makes the imports vidaudit defers
    to the first run (start-up, not per-trial work: the floor's are made before its clock too)."""
    sys.path.insert(0, str(HERE))
    from bench_common import parse_condition
    from run_scale import _scale_models, store_counts

    import vidaudit.run.session as session

    conds = [parse_condition(c, "structured_trace") for c in SAMPLING[:n_conditions]]
    models = _scale_models(work, n_models)
    warm, run = work / f"warm{n_models}", work / f"run{n_models}"
    for d in (warm, run):
        shutil.rmtree(d, ignore_errors=True)
    session.execute(work / "data", warm, models[:1], conds[:1], limit=2)
    shutil.rmtree(warm, ignore_errors=True)
    t0, c0 = time.perf_counter(), time.process_time()
    session.execute(work / "data", run, models, conds)
    out = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0} | store_counts(run)
    shutil.rmtree(run, ignore_errors=True)
    if out["ok"] != out["trials"] or out["attempts"] != out["trials"]:
        raise SystemExit("vidaudit: trials were left without exactly one ok attempt")
    return out


def spawn(kind: str, work: Path, n_models: int, src: Path | None) -> dict:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(work), str(n_models)], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind} {n_models} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,15", help="models per run (8 x 2,190 trials each)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each side per size; the least CPU is kept")
    ap.add_argument("--before", type=Path, default=None, help="a source tree to measure beside this one")
    ap.add_argument("--keep", type=Path, default=None, help="work in this directory (the manifest is kept)")
    ap.add_argument("--child", nargs="+", metavar="KIND WORK N [CONDITIONS]", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, work, n, *c = args.child
        conditions = int(c[0]) if c else len(SAMPLING)
        child = floor_child if kind == "floor" else vidaudit_child
        print(json.dumps(child(Path(work), int(n), conditions)))
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="vidaudit-harness-trial-"))
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}; load average at start "
        f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())}; work dir {work}",
        flush=True,
    )
    if not (work / "data" / "manifest.jsonl").is_file():
        from vidaudit.suites.counting.generate import generate
        from vidaudit.suites.counting.grid import preset

        generate(preset("paper"), work / "data", dry_run=True)
    sizes = [int(x) for x in args.sizes.split(",")]
    sides: list[tuple[str, str, Path | None]] = [("vidaudit", "vidaudit", None), ("floor", "floor", None)]
    if args.before:
        sides.insert(1, ("before", "vidaudit", args.before / "src"))
    best: dict[tuple[str, int], dict] = {}
    for n in sizes:
        for r in range(args.repeats):
            for name, kind, src in sides:
                got = spawn(kind, work, n, src)
                key = (name, n)
                if key not in best or got["cpu_s"] < best[key]["cpu_s"]:
                    best[key] = got
                print(
                    f"  {name:<8} {got['trials']:>7} trials (run {r + 1}): CPU {got['cpu_s']:7.2f} s = "
                    f"{1e3 * got['cpu_s'] / got['trials']:.4f} ms/trial, wall {got['wall_s']:6.1f} s",
                    flush=True,
                )
    print(
        f"\nbest of {args.repeats}, CPU ms per trial (load average now "
        f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())}):"
    )
    names = [name for name, _, _ in sides]
    print(f"  {'trials':>8} " + " ".join(f"{x:>10}" for x in names) + "   vidaudit / floor")
    per = {k: 1e3 * v["cpu_s"] / v["trials"] for k, v in best.items()}
    for n in sizes:
        t = best[("vidaudit", n)]["trials"]
        print(
            f"  {t:>8} "
            + " ".join(f"{per[(x, n)]:>10.4f}" for x in names)
            + f"   {per[('vidaudit', n)] / per[('floor', n)]:.2f}x"
        )
    worst = max(per[("vidaudit", n)] / per[("floor", n)] for n in sizes)
    print(
        f"goal vidaudit <= {GOAL_RATIO:g}x the floor: {'met' if worst <= GOAL_RATIO else 'NOT met'} "
        f"(worst {worst:.2f}x)"
    )
    if len(sizes) > 1:
        for name in names:
            flat = per[(name, sizes[-1])] / per[(name, sizes[0])]
            note = (
                f"  (goal <= {GOAL_FLAT:.2f}: {'met' if flat <= GOAL_FLAT else 'NOT met'})"
                if name == "vidaudit"
                else ""
            )
            print(f"  {name:<8} CPU per trial, largest / smallest size: {flat:.3f}{note}")


if __name__ == "__main__":
    main()
