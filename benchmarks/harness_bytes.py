"""What a fixed simulated run stores, dumped so that two vidaudit trees can be compared byte for byte.

A harness change that is meant to be faster only must leave every stored byte as it was. This script
makes one fixed run with the vidaudit on ``PYTHONPATH`` and writes a dump of what it stored:

- every table of ``store.sqlite`` (schema from ``sqlite_master``, then each row in ``rowid`` order, each
  value as ``repr`` of what SQLite returns: TEXT and BLOB told apart), plus the trials in the order the
  store lists them (``created_at, trial_id``, what ``trial_rows`` and the report read);
- every line of the audit log ``attempts.jsonl``, as bytes;
- ``scores.jsonl`` and ``report/report.json`` as ``vidaudit report`` writes them.

The only values masked are the clocks, which differ from run to run: ``trials.created_at``,
``attempts.started_at / ended_at / latency_s`` (their columns, and the same keys in the log, the scores and
the report, where the report's latency medians and sums ``median_s``, ``sent_s``, ``used_s`` and its own
``created_at`` are clocks too), each replaced by ``<clock>``; the order of the trials they produce is kept
and compared. Attempts are compared sorted by (trial id, attempt), in the store and in the log: with
several models their lanes run at once and the order in which calls end differs from run to run. The
report's ``git_revision`` and ``git_dirty`` (the tree it ran from) are masked too. The run:
``--models`` simulated models (distinct surfaces: distinct labels and answers) x the paper's 12 conditions
(8 presentations with structured_trace, 4 other prompts at native) x a dry-run grid of ``--points``
(seeds 0..``--seeds``-1), then a resume (which must store nothing), then the report. Same ``--work`` for both
trees: the surfaces' paths are part of every trial id.

    PYTHONPATH=/tmp/base/src python benchmarks/harness_bytes.py --work /tmp/sb --dump /tmp/before.txt
    PYTHONPATH=src python benchmarks/harness_bytes.py --work /tmp/sb --dump /tmp/after.txt
    python benchmarks/harness_bytes.py --compare /tmp/before.txt /tmp/after.txt
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import re
import shutil
import sqlite3
import sys
from pathlib import Path

#: clock values in JSON: when a record was made, and the latencies (each call's, and the report's sums and
#: medians of them per stage); ``created_at`` is a number in the store and log, a UTC time in the report
CLOCK_KEYS = ("created_at", "started_at", "ended_at", "latency_s", "median_s", "sent_s", "used_s")
CLOCK_COLUMNS = {
    "trials": {"created_at"},
    "attempts": {"started_at", "ended_at", "latency_s"},
    "stage_calls": {"started_at", "ended_at", "latency_s"},
}
#: a clock in JSON: ``"key": number`` (log lines, scores, the report), whatever the spacing
_CLOCK_RE = re.compile(
    rb'("(?:' + b"|".join(k.encode() for k in CLOCK_KEYS) + rb')":\s*)'
    rb'(?:-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d)")'
)
#: tables whose row order is the executor's schedule (the lanes of several models run at once, and which
#: attempt ends first differs from run to run): their rows are compared sorted by key instead
UNORDERED = {"attempts": "trial_id, attempt", "stage_calls": "trial_id, stage, attempt"}
#: what the report says of the tree it ran from, not of the run
TREE_KEYS = ("git_dirty", "git_revision")
_TREE_RE = re.compile(rb'("(?:' + b"|".join(k.encode() for k in TREE_KEYS) + rb')":\s*)[^,\n]*')
DEFAULT_POINTS = (
    "bounce_ball:0:1,bounce_ball:3:0.5,bounce_ball:12:4,blinking:2:1,blinking:10:2.5,"
    "state_machine:1:3,state_machine:6:1.5,state_machine:12:0.5"
)


def masked(data: bytes) -> bytes:
    return _TREE_RE.sub(rb"\1<tree>", _CLOCK_RE.sub(rb"\1<clock>", data))


def dump_store(db: Path) -> list[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out = ["== schema"]
        out += [repr(r) for r in con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")]
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        for table in tables:
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
            clock = CLOCK_COLUMNS.get(table, set())
            out.append(f"== table {table} ({', '.join(cols)})")
            order = UNORDERED.get(table, "rowid")
            for row in con.execute(f"SELECT * FROM {table} ORDER BY {order}"):
                out.append(
                    repr(
                        tuple("<clock>" if c in clock and v is not None else v for c, v in zip(cols, row, strict=True))
                    )
                )
        out.append("== trials as listed (created_at, trial_id)")
        out += [r[0] for r in con.execute("SELECT trial_id FROM trials ORDER BY created_at, trial_id")]
        return out
    finally:
        con.close()


def dump_file(path: Path, *, log: bool = False) -> list[str]:
    """A file's lines, clocks masked; ``log``: the audit log, whose attempt and stage-call lines are in the
    order the calls ended (sorted here: see ``UNORDERED``) after its trial lines, kept in plan order."""
    lines = path.read_bytes().splitlines()
    out = [f"== file {path.name}: {len(lines)} lines"]
    if not log:
        return out + [repr(masked(line)) for line in lines]
    trials = [line for line in lines if line.startswith(b'{"created_at": ')]
    return (
        out
        + [repr(masked(line)) for line in trials]
        + ["-- attempt and stage-call lines, sorted"]
        + sorted(repr(masked(line)) for line in lines if not line.startswith(b'{"created_at": '))
    )


def make_run(work: Path, n_models: int, points: str, seeds: int) -> Path:
    """The fixed run in ``work`` (data made once and kept; the run dir made afresh); returns the run dir."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from adaptive_design import strong, weak, write_csv
    from bench_common import parse_condition, parse_points

    from vidaudit.core.types import ModelSpec
    from vidaudit.report.stage import report_run
    from vidaudit.run.session import execute
    from vidaudit.suites.counting.generate import generate
    from vidaudit.suites.counting.grid import GridPoint

    data, run = work / "data", work / "run"
    if not (data / "manifest.jsonl").is_file():
        pts = [GridPoint(p.domain, p.n_events, p.frequency_hz, s) for p in parse_points(points) for s in range(seeds)]
        generate(pts, data, dry_run=True)
    shutil.rmtree(run, ignore_errors=True)

    def blend(w: float):
        return lambda d, n_, f: round((1 - w) * strong(d, n_, f) + w * weak(d, n_, f), 4)

    models = [
        ModelSpec.parse(f"simulated:{write_csv(work / f'surface{k}.csv', blend(k / max(1, n_models - 1)))}")
        for k in range(n_models)
    ]
    sampling = ("native", "frames@1", "frames@2", "frames@4", "frames@8", "frames@10", "frames@16", "keyframes")
    conds = [parse_condition(c, "structured_trace") for c in sampling] + [
        parse_condition("native", p) for p in ("direct", "multi_turn_verification", "thinking", "role_prompting")
    ]
    first = execute(data, run, models, conds)
    again = execute(data, run, models, conds)
    if again.summary is None or again.summary.calls != 0 or first.summary is None or first.summary.ok == 0:
        raise SystemExit("the resume made calls, or the run made none: not a fixed run")
    report_run(run)
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, help="work dir (the same for both trees)")
    ap.add_argument("--dump", type=Path, help="write the dump here")
    ap.add_argument("--models", type=int, default=3)
    ap.add_argument("--points", default=DEFAULT_POINTS, help="domain:N:F items of the dry-run grid")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per point")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="compare two dumps")
    args = ap.parse_args()
    if args.compare:
        a, b = (p.read_text().splitlines() for p in args.compare)
        if a == b:
            print(
                f"identical: {len(a)} lines ({sum(1 for x in a if not x.startswith('=='))} rows and lines), "
                f"sha256 {hashlib.sha256(args.compare[0].read_bytes()).hexdigest()[:16]}"
            )
            return
        diff = list(difflib.unified_diff(a, b, str(args.compare[0]), str(args.compare[1]), lineterm="", n=1))
        print("\n".join(diff[:60]))
        raise SystemExit(f"DIFFERENT: {sum(1 for x in diff if x.startswith(('+', '-')))} changed lines")
    if args.work is None or args.dump is None:
        ap.error("--work and --dump are needed (or --compare BEFORE AFTER)")
    import vidaudit

    run = make_run(args.work, args.models, args.points, args.seeds)
    lines = [
        f"# vidaudit from {Path(vidaudit.__file__).parent}",
        *dump_store(run / "store.sqlite"),
        *dump_file(run / "attempts.jsonl", log=True),
        *dump_file(run / "scores.jsonl"),
        *dump_file(run / "report" / "report.json"),
    ]
    lines[0] = "# stored bytes of the fixed run"  # the tree's path is not part of what is compared
    args.dump.write_text("\n".join(lines) + "\n")
    print(
        f"{args.dump}: {len(lines)} lines, sha256 {hashlib.sha256(args.dump.read_bytes()).hexdigest()[:16]} "
        f"(vidaudit from {Path(vidaudit.__file__).parent})"
    )


if __name__ == "__main__":
    main()
