"""Every stored byte of the three suites in one digest, to compare two versions of vidaudit.

A refactor that moves no behaviour must leave every file a user keeps the same. This script renders small
presets of the three suites (counting; each stress probe, lane_change and sycophancy_pairs from sources it
makes itself; faithful), runs the built-in models (oracle, chance, constant, question-only, the ideal observer
and camera-flow where the suite has a pixel observer, a constant judge for the judged probe) through
``vidaudit run``, ``score`` and ``report`` (the command line, called in this process), imports a two-annotator
human study into seven of the runs (``human-study export`` / ``import``, then score and report again: the human
rows and the stress human-ceiling columns), and writes one digest file: for every stored file (manifests,
dataset.json, samples, attempts, scores.jsonl, scored_run.jsonl, human records, report.json and report.md) its
normalised text, for videos and HTML pages their sha256, and every row of every run store's table.

Run it once per version and diff the two digests:

    PYTHONPATH=src python benchmarks/stored_bytes.py --out /tmp/mine.digest
    git archive main src | tar -x -C /tmp/base && \\
        PYTHONPATH=/tmp/base/src python benchmarks/stored_bytes.py --out /tmp/main.digest
    diff /tmp/main.digest /tmp/mine.digest && echo identical

What the digest leaves out, because it differs between two runs of the same code (listed in ``VOLATILE``):

- wall-clock times: ``created_at`` (run.json, report.json, the store's trials), ``started_at``/``ended_at``
  (attempts, stage calls), and every measured duration (``latency_s``, the stage-usage latencies
  ``used_s``/``sent_s``/``median_s``, faithful's budget latencies ``median_s_per_call``/``per_query_s``/
  ``preprocessing_s_per_video``), with the scored-run header's ``sha256`` (a checksum over those latencies);
- the order of ``attempts.jsonl``'s lines (written as worker threads finish trials): compared sorted;
- the source revision: ``git_revision``/``git_dirty`` (two checkouts of two branches);
- the work folder's absolute path, replaced by ``<WORK>`` wherever it appears (run.json's ``data_dir``,
  manifests, messages), and the file hashes in the scored-run stamp (of run.json, samples.jsonl,
  human_study.json and the data manifest, which hold the times and paths above; their normalised text is in
  the digest itself);
- report.html's embedded creation time and revision (the same values as report.json's, removed the same way).

Anything else that differs is a changed stored byte. The ``--keep DIR`` option leaves the work folder for a look.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: JSON keys whose values are wall-clock times, measured durations or the checkout's revision (see the docstring)
VOLATILE = frozenset(
    {
        "created_at",
        "started_at",
        "ended_at",
        "latency_s",
        "used_s",
        "sent_s",
        "median_s",
        "median_s_per_call",
        "per_query_s",
        "preprocessing_s_per_video",
        "git_revision",
        "git_dirty",
    }
)
#: files whose lines are written in the order trials finish (worker threads), compared as sorted lines
UNORDERED = ("attempts.jsonl",)
#: store columns left out for the same reasons
VOLATILE_COLUMNS = frozenset({"created_at", "started_at", "ended_at", "latency_s"})
#: stored files kept as a sha256 only (binary, or large text whose JSON twin is dumped in full)
HASHED = (".mp4", ".avi", ".mkv", ".webm", ".png", ".jpg", ".npz", ".npy", ".html")

COUNTING = [
    "--counts",
    "1,2",
    "--frequencies",
    "1",
    "--seeds",
    "1",
    "--duration",
    "4",
    "--width",
    "320",
    "--height",
    "240",
    "--workers",
    "1",
]
FAITHFUL = ["--seeds", "1", "--events", "4", "--duration", "10", "--width", "320", "--height", "240", "--workers", "1"]
BASELINES = ["oracle", "chance", "question-only:oracle"]
#: a judge that answers every expectation judge prompt with the same JSON verdict (each prompt reads its key)
JUDGE = 'constant:```json\n{"score": 1.0, "hallucinated_summary": false, "describes_shown_order": true}\n```'


def _models(*names: str) -> list[str]:
    return [a for n in names for a in ("--model", n)]


def _conditions(*conds: str) -> list[str]:
    return [a for c in conds for a in ("--condition", c)]


#: one step of a case: a ``vidaudit`` command line, or a Python function (writing the annotators' answer sheets)
Step = list[str] | Callable[[], object]


def answer_sheets(manifest: Path) -> list[Path]:
    """Two annotators' answers to a study page's items: one gives the keyed answer, the other the first option
    (a free-text item: a short sentence), so that the human-ceiling cells hold a real accuracy."""
    study = json.loads(manifest.read_text(encoding="utf-8"))
    sheets = []
    for who in ("keyed", "first"):
        answers = {}
        for item in study["items"]:
            options = item.get("options") or []
            if who == "keyed" and item.get("correct"):
                answers[item["item_id"]] = str(item["correct"])
            else:
                answers[item["item_id"]] = str(options[0][0]) if options else "Nothing unusual happens."
        sheet = manifest.with_name(f"answers-{who}.json")
        sheet.write_text(json.dumps({"annotator": who, "study": study["study"], "answers": answers}), encoding="utf-8")
        sheets.append(sheet)
    return sheets


def human_study(folder: Path, run: str, sample: int = 6) -> list[Step]:
    """Export a study page of ``run``'s trials, import two answer sheets into it, and report it again."""
    page, manifest = folder / "study.html", folder / "study.json"
    sheets = [manifest.with_name("answers-keyed.json"), manifest.with_name("answers-first.json")]
    return [
        ["human-study", "export", run, "--out", str(page), "--sample", str(sample), "--allow-shortfall", "--seed", "1"],
        functools.partial(answer_sheets, manifest),
        ["human-study", "import", *map(str, sheets), "--into", run, "--study", str(manifest)],
        ["score", run],
        ["report", run],
    ]


def cases(work: Path) -> Iterator[tuple[str, list[Step]]]:
    """(name, the steps that make it), each dataset in ``work/NAME/data`` and its runs in ``work/NAME/run*``."""

    def at(name: str, *rest: str) -> str:
        return str(work / name / Path(*rest)) if rest else str(work / name)

    def run(
        name: str,
        suite: str,
        models: Sequence[str],
        conds: Sequence[str],
        out: str = "run",
        data: str = "data",
        extra: Sequence[str] = (),
    ) -> list[Step]:
        r = at(name, out)
        return [
            ["run", suite, "--data", at(name, data), *_models(*models), *_conditions(*conds), *extra, "--out", r],
            ["score", r],
            ["report", r],
        ]

    yield (
        "counting",
        [
            ["generate", "counting", *COUNTING, "--out", at("counting", "data")],
            *run("counting", "counting", [*BASELINES, "constant:2", "ideal-observer"], ["frames@4", "frames#8"]),
            *human_study(work / "counting", at("counting", "run")),
        ],
    )
    yield (
        "faithful",
        [
            ["generate", "faithful", *FAITHFUL, "--out", at("faithful", "data")],
            *run("faithful", "faithful", [*BASELINES, "constant:Yes", "majority"], ["frames#6"]),
            *human_study(work / "faithful", at("faithful", "run")),
        ],
    )
    probes: dict[str, tuple[list[str], list[str], list[str]]] = {
        # probe: (generate args, models beyond the baselines, conditions)
        "camera_motion": (["--seeds", "1"], ["constant:zoom_in", "ideal-observer", "camera-flow"], ["frames@4"]),
        "cross_frame": (
            ["--seeds", "1"],
            ["constant:A", "ideal-observer"],
            ["frames@6", "frames@24+strip_mask(S=128,k=4,orientation=vertical,v=24)"],
        ),
        "wireframe": (["--seeds", "1"], ["constant:A", "ideal-observer"], ["frames#4"]),
        "mosaic": (["--seeds", "1"], ["constant:A", "ideal-observer"], ["frames#4"]),
        "shortcuts": (["--seeds", "1"], ["constant:A"], ["frames@4"]),
        "sycophancy": (["--source", at("faithful", "data")], ["constant:AGREE"], ["frames#8"]),
        "expectation": (["--seeds", "1"], ["constant:A"], ["frames#8"]),
        "lane_change": (["--source", at("lanes")], ["constant:A"], ["frames@4"]),
    }
    for probe, (gen, models, conds) in probes.items():
        name = f"stress-{probe}"
        calls = [
            ["generate", "stress", "--probe", probe, *gen, "--out", at(name, "data")],
            *run(name, "stress", [*BASELINES, *models], conds),
        ]
        if probe in ("camera_motion", "cross_frame", "sycophancy", "expectation", "wireframe"):
            calls += human_study(work / name, at(name, "run"))
        if probe == "expectation":
            calls += run(name, "stress", ["oracle", "chance"], conds, out="judged", extra=["--judge", JUDGE])
        yield name, calls
    # sycophancy_pairs: a generation step with no ground truth (no oracle); a constant "generator" is scored
    pair = '{"category": "TR", "original": "a red ball then a blue ball", "modified": "a blue ball then a red ball"}'
    yield (
        "stress-sycophancy_pairs",
        [
            [
                "generate",
                "stress",
                "--probe",
                "sycophancy_pairs",
                "--source",
                at("lanes"),
                "--out",
                at("stress-sycophancy_pairs", "data"),
            ],
            *run("stress-sycophancy_pairs", "stress", [f"constant:{pair}", "constant:nothing"], ["frames#4"]),
        ],
    )


def road_clips(folder: Path) -> None:
    """Two lane changes and two straight drives (dashed lines scrolling, sliding a lane sideways in a change)
    and their annotations: lane_change's ``--source``, and videos for sycophancy_pairs."""
    from vidaudit.video.encode import VideoWriter

    w, h, fps, n = 96, 64, 10.0, 20
    folder.mkdir(parents=True)
    for i in range(2):
        for change in (True, False):
            with VideoWriter(folder / f"{'change' if change else 'straight'}{i}.mp4", fps, w, h) as out:
                for t in range(n):
                    img = np.full((h, w, 3), 70 + 10 * i, np.uint8)
                    a = min(max((t / n - 0.25) / 0.5, 0.0), 1.0) if change else 0.0
                    offset = 40.0 * (0.5 - 0.5 * math.cos(math.pi * a))
                    for lane_x in (-52.0, -12.0, 28.0, 68.0, 108.0):
                        x = int(round(lane_x + offset))
                        for y0 in range(-16, h, 16):
                            y = y0 + (t * 3) % 16
                            img[max(y, 0) : max(min(y + 8, h), 0), max(x - 1, 0) : max(min(x + 2, w), 0)] = 235
                    out.write(img)
    (folder / "annotations.csv").write_text(
        "clip,label,start_s,end_s\n"
        + "".join(f"change{i}.mp4,lane_change,,\nstraight{i}.mp4,no_change,,\n" for i in range(2)),
        encoding="utf-8",
    )


def call(step: Step) -> None:
    """One ``vidaudit`` command line, in this process (or a Python step); a failure stops the script with its
    output."""
    from typer.testing import CliRunner

    from vidaudit.cli import app

    if callable(step):
        step()
        return
    args = step
    r = CliRunner().invoke(app, args)
    if r.exit_code != 0:
        sys.exit(f"vidaudit {' '.join(args)} exited {r.exit_code}:\n{r.output}\n{r.exception!r}")


# ---------------------------------------------------------------------- the digest


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<volatile>" if k in VOLATILE else _scrub(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def _json_text(text: str) -> str:
    """One JSON document (or JSON line) with its volatile values replaced, keys in their stored order."""
    doc = _scrub(json.loads(text))
    stamp = doc.get("stamp") if isinstance(doc, dict) else None
    if isinstance(stamp, dict) and isinstance(stamp.get("files"), dict):
        # hashes of files whose normalised text is in the digest (run.json, human_study.json hold times and paths)
        stamp["files"] = {k: v and "<file>" for k, v in stamp["files"].items()}
        stamp["data_manifest"] = stamp.get("data_manifest") and "<file>"
    if isinstance(doc, dict) and doc.get("format") == "vidaudit.scored_run" and "sha256" in doc:
        doc["sha256"] = "<volatile>"  # the header's checksum covers its latencies and the run.json hash
    return json.dumps(doc, ensure_ascii=False)


def _html_text(text: str) -> str:
    """report.html without the creation time and revision it shows (what report.json holds as well)."""
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:\+00:00|Z)?", "<time>", text)
    # the revision line is there only in a git checkout (a `git archive` copy of another version has none)
    text = re.sub(r"<div><dt>git</dt><dd>.*?</dd></div>", "", text)
    return re.sub(r"^- \*\*git revision\*\*: .*\n", "", text, flags=re.M)


def _unwork(text: str, work: str) -> str:
    """``text`` with the work folder's path, as written and as report.md escapes it (a ``_`` in the random
    folder name may become ``\\_``), replaced by ``<WORK>``."""
    from vidaudit.report.tables import md_escape

    return text.replace(work, "<WORK>").replace(md_escape(work), "<WORK>")


def file_lines(path: Path, rel: str, work: str) -> list[str]:
    data = path.read_bytes()
    if path.suffix in HASHED:
        if path.suffix == ".html":
            data = _html_text(_unwork(data.decode("utf-8"), work)).encode("utf-8")
        return [f"{rel} sha256 {hashlib.sha256(data).hexdigest()}"]
    text = _unwork(data.decode("utf-8"), work)
    if path.suffix == ".json":
        return [f"{rel}: {_json_text(text)}"]
    if path.suffix == ".jsonl":
        docs = [_json_text(line) for line in text.splitlines()]
        if path.name in UNORDERED:
            docs.sort()
        return [f"{rel}:{i}: {doc}" for i, doc in enumerate(docs, 1)]
    if path.suffix == ".md":
        text = _html_text(text)
    return [f"{rel}:{i}: {line}" for i, line in enumerate(text.splitlines(), 1)]


def store_lines(path: Path, rel: str, work: str) -> list[str]:
    """Every row of every table, in primary-key order, volatile columns left out (JSON cells scrubbed too)."""
    out = []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        con.execute("PRAGMA query_only = ON")
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for t in tables:
            sql = con.execute("SELECT sql FROM sqlite_master WHERE name = ?", (t,)).fetchone()[0]
            out.append(f"{rel} schema {t}: " + " ".join(str(sql).split()))
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({t})")]
            keep = [c for c in cols if c not in VOLATILE_COLUMNS]
            rows = con.execute(f"SELECT {', '.join(keep)} FROM {t} ORDER BY {', '.join(keep)}").fetchall()
            for row in rows:
                cells = []
                for c, v in zip(keep, row, strict=True):
                    if isinstance(v, str):
                        v = v.replace(work, "<WORK>")
                        if v[:1] in "{[":
                            try:
                                v = _json_text(v)
                            except ValueError:
                                pass
                    cells.append(f"{c}={v!r}")
                out.append(f"{rel} {t}: " + " ".join(cells))
    finally:
        con.close()
    return out


def digest(work: Path) -> list[str]:
    lines = []
    root = str(work)
    for path in sorted(p for p in work.rglob("*") if p.is_file()):
        rel = path.relative_to(work).as_posix()
        if path.name.endswith(("-wal", "-shm", ".lock")) or "/.cache/" in f"/{rel}" or "/cache/" in f"/{rel}":
            continue
        lines += store_lines(path, rel, root) if path.suffix == ".sqlite" else file_lines(path, rel, root)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="the digest file to write")
    ap.add_argument("--keep", type=Path, default=None, help="work in this (new) folder and leave it there")
    ap.add_argument("--only", default="", help="comma list of case names (counting, faithful, stress-PROBE)")
    args = ap.parse_args(argv)
    import vidaudit

    work = args.keep if args.keep is not None else Path(tempfile.mkdtemp(prefix="stored_bytes_"))
    work = work.resolve()
    work.mkdir(parents=True, exist_ok=args.keep is None)
    t0 = time.perf_counter()
    try:
        road_clips(work / "lanes")
        only = {s for s in args.only.split(",") if s}
        for name, calls in cases(work):
            if only and name not in only and not (name == "faithful" and "stress-sycophancy" in only):
                continue
            t = time.perf_counter()
            for c in calls:
                call(c)
            print(f"{name}: {len(calls)} commands in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        lines = digest(work)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    args.out.write_text(text, encoding="utf-8")
    print(
        f"vidaudit from {Path(vidaudit.__file__).parent}: {len(lines)} lines, sha256 "
        f"{hashlib.sha256(text.encode()).hexdigest()} in {time.perf_counter() - t0:.1f} s -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
