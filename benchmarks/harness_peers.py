"""Harness CPU per trial beside inspect_ai and lmms-eval: the same trials and prompts, an instant local model,
side by side in one run.

Every harness runs the same trials: the 2,190 samples of the paper preset's dry-run manifest under the first
C of the paper's 8 sampling conditions (``--sizes``, C per size: 1 and 8 by default, 2,190 and 17,520
trials), each trial's prompt the one vidaudit renders for it (structured_trace: system and user text).
No pixels are read by anyone; each harness's model answers at once:

- **vidaudit**: ``vidaudit.run.session.execute`` with a ``simulated:`` model (plan, register, call, store every
  attempt in SQLite + the fsync'd audit log; ``harness_trial.py``'s child);
- **floor**: ``harness_trial.py``'s bare asyncio + SQLite loop that stores the same run as durably;
- **inspect_ai**: ``inspect_ai.eval`` of a ``Task`` (a ``MemoryDataset`` of the trials, ``generate()``, no
  scorer) on ``mockllm/model`` answering at once with its usage set (its default output counts tokens with
  tiktoken, which would download an encoding), its ``.eval`` log written to a temporary directory;
- **lmms-eval**: ``simple_evaluate`` of a ``generate_until`` task (the trials as a local JSONL through its
  ``json`` dataset builder, no visual) on its ``dummy`` model with ``log_samples``, then its
  ``EvaluationTracker`` writing the results and samples files, as ``python -m lmms_eval --log_samples`` does.
  lmms-eval scores every document (its ``exact_match`` on the dummy's answer) inside ``evaluate``: that is in
  its figure; vidaudit and inspect score nothing here.

Each measurement runs in a fresh process; its CPU (``process_time``: every thread) is counted around the run
only, after the imports and after a warm-up run of 2 trials (each harness defers imports to its first run:
start-up, the separate figure ``vidaudit --help`` measures). Reported per harness: CPU per trial at each size,
and the marginal CPU per trial between the two sizes ((CPU at the larger - CPU at the smaller) / (trials
more)), which leaves out what a harness spends once per run (loading, set-up, summaries). The best of
``--repeats`` each, the harnesses interleaved. A harness that is not installed is skipped with the reason.
inspect_ai costs milliseconds per trial: ``--inspect-sizes`` runs it on fewer conditions (1 and 2 by default).

    python benchmarks/harness_peers.py [--sizes 1,8] [--inspect-sizes 1,2] [--repeats 2] [--only vidaudit,lmms-eval]
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

HERE = Path(__file__).resolve().parent
HARNESSES = ("vidaudit", "floor", "inspect_ai", "lmms-eval")
WARM_DOCS = 2


# -- the trials, as the peers take them -----------------------------------------------------------


def write_docs(work: Path, n_conditions: int) -> Path:
    """``peer_docs_C.jsonl``: one line per trial (id, system, prompt, target), vidaudit's prompts, plan order."""
    from bench_common import parse_condition
    from harness_trial import SAMPLING

    from vidaudit.core.manifest import load_samples
    from vidaudit.core.registry import get_suite

    path = work / f"peer_docs_{n_conditions}.jsonl"
    if path.is_file():
        return path
    suite = get_suite("counting")
    samples = load_samples(work / "data")
    lines = []
    for c in SAMPLING[:n_conditions]:
        cond = parse_condition(c, "structured_trace")
        for s in samples:
            p = suite.render_prompt(s, cond)
            lines.append(
                json.dumps(
                    {"id": f"{s.sample_id}/{cond.id}", "system": p.system, "prompt": p.text, "target": str(s.answer)}
                )
                + "\n"
            )
    tmp = path.with_suffix(".part")
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(path)
    return path


def read_docs(path: Path, limit: int | None = None) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    return docs[:limit] if limit else docs


# -- inspect_ai -----------------------------------------------------------------------------------


def inspect_child(work: Path, n_conditions: int) -> dict:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate

    def answer(*_: object) -> ModelOutput:
        """An instant answer with its usage (mockllm's default output counts its input's tokens with tiktoken,
        which downloads its encoding: no network here, and a cost no other harness pays)."""
        out = ModelOutput.from_content(model="mockllm", content="\\boxed{3}")
        out.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
        return out

    docs_path = work / f"peer_docs_{n_conditions}.jsonl"
    logs = work / "inspect-logs"

    def run(docs: list[dict]) -> int:
        samples = [
            Sample(
                id=d["id"],
                target=d["target"],
                input=[ChatMessageSystem(content=d["system"]), ChatMessageUser(content=d["prompt"])]
                if d["system"]
                else d["prompt"],
            )
            for d in docs
        ]
        shutil.rmtree(logs, ignore_errors=True)
        out = inspect_eval(
            Task(dataset=MemoryDataset(samples), solver=generate(), name="vidaudit_peer"),
            model=get_model("mockllm/model", custom_outputs=answer),
            log_dir=str(logs),
            display="none",
        )
        if out[0].status != "success":
            raise SystemExit(f"inspect_ai: the eval ended {out[0].status}: {out[0].error}")
        return len(out[0].samples or [])

    run(read_docs(docs_path, WARM_DOCS))
    t0, c0 = time.perf_counter(), time.process_time()
    n = run(read_docs(docs_path))
    out = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0, "trials": n}
    shutil.rmtree(logs, ignore_errors=True)
    return out


# -- lmms-eval ------------------------------------------------------------------------------------

LMMS_YAML = """task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {docs}
test_split: test
output_type: generate_until
doc_to_visual: !function utils.doc_to_visual
doc_to_text: !function utils.doc_to_text
doc_to_target: !function utils.doc_to_target
generation_kwargs:
  max_new_tokens: 2048
  until: []
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1
"""
LMMS_UTILS = """def doc_to_visual(doc):
    return []


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return doc["prompt"] if not doc["system"] else doc["system"] + "\\n\\n" + doc["prompt"]


def doc_to_target(doc):
    return doc["target"]
"""


def lmms_child(work: Path, n_conditions: int) -> dict:
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.loggers import EvaluationTracker
    from lmms_eval.tasks import TaskManager

    taskdir = work / f"lmms-tasks-{n_conditions}"
    shutil.rmtree(taskdir, ignore_errors=True)
    taskdir.mkdir(parents=True)
    docs = work / f"peer_docs_{n_conditions}.jsonl"
    warm = taskdir / "warm.jsonl"
    warm.write_text("".join(json.dumps(d) + "\n" for d in read_docs(docs, WARM_DOCS)), encoding="utf-8")
    (taskdir / "utils.py").write_text(LMMS_UTILS, encoding="utf-8")
    for task, path in (("vidaudit_peer_warm", warm), ("vidaudit_peer", docs)):
        (taskdir / f"{task}.yaml").write_text(LMMS_YAML.format(task=task, docs=json.dumps(str(path))), encoding="utf-8")
    manager = TaskManager(include_path=str(taskdir))  # indexes every installed task: start-up, before the clock
    out_dir = work / "lmms-out"

    def run(task: str) -> int:
        shutil.rmtree(out_dir, ignore_errors=True)
        tracker = EvaluationTracker(output_path=str(out_dir))
        res = simple_evaluate(
            model="dummy",
            tasks=[task],
            task_manager=manager,
            log_samples=True,
            verbosity="ERROR",
            evaluation_tracker=tracker,
        )
        tracker.save_results_aggregated(results=res, samples=res["samples"], datetime_str="peer")
        tracker.save_results_samples(task_name=task, samples=res["samples"][task])
        written = sorted(p.name for p in out_dir.rglob("*") if p.is_file())
        if not any(n.endswith("_results.json") for n in written) or not any("_samples_" in n for n in written):
            raise SystemExit(f"lmms-eval wrote no results and samples files (found {written})")
        return len(res["samples"][task])

    run("vidaudit_peer_warm")
    t0, c0 = time.perf_counter(), time.process_time()
    n = run("vidaudit_peer")
    out = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0, "trials": n}
    shutil.rmtree(out_dir, ignore_errors=True)
    return out


# -- driver ---------------------------------------------------------------------------------------


def missing(harness: str) -> str | None:
    """Why ``harness`` cannot run here (None: it can), from a fresh process's import of what it needs."""
    need = {
        "inspect_ai": "import inspect_ai, inspect_ai.model, inspect_ai.solver",
        "lmms-eval": "import lmms_eval.evaluator, lmms_eval.loggers, lmms_eval.tasks, lmms_eval.models.simple.dummy",
    }.get(harness)
    if need is None:
        return None
    proc = subprocess.run([sys.executable, "-c", need], capture_output=True, text=True)
    if proc.returncode == 0:
        return None
    last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
    return f"`{need}` failed: {last}"


def spawn(harness: str, work: Path, n_conditions: int) -> dict:
    env = dict(os.environ)
    # the peers' caches (HF datasets, inspect's data dir) stay in the work dir, not in $HOME
    for var in ("HF_HOME", "HF_DATASETS_CACHE", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env[var] = str(work / "cache" / var.lower())
    env["HF_DATASETS_OFFLINE"] = "1"
    env["INSPECT_DISPLAY"] = "none"
    proc = subprocess.run(
        [sys.executable, __file__, "--child", harness, str(work), str(n_conditions)],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{harness} with {n_conditions} condition(s) failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child(harness: str, work: Path, n_conditions: int) -> dict:
    sys.path.insert(0, str(HERE))
    if harness in ("vidaudit", "floor"):
        from harness_trial import floor_child, vidaudit_child

        return (vidaudit_child if harness == "vidaudit" else floor_child)(work, 1, n_conditions)
    return (inspect_child if harness == "inspect_ai" else lmms_child)(work, n_conditions)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,8", help="sampling conditions per size (x 2,190 samples)")
    ap.add_argument("--inspect-sizes", default="1,2", help="the same for inspect_ai (milliseconds per trial)")
    ap.add_argument("--repeats", type=int, default=2, help="runs per harness and size; the least CPU is kept")
    ap.add_argument("--only", default=",".join(HARNESSES), help="harnesses to run, comma-separated")
    ap.add_argument("--keep", type=Path, default=None, help="work in this directory (the manifest is kept)")
    ap.add_argument("--child", nargs=3, metavar=("HARNESS", "WORK", "C"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), int(args.child[2]))))
        return
    only = [h for h in HARNESSES if h in args.only.split(",")]
    work = args.keep or Path(tempfile.mkdtemp(prefix="vidaudit-harness-peers-"))
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}; load average at start "
        f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())}; work dir {work}",
        flush=True,
    )
    sys.path.insert(0, str(HERE))
    if not (work / "data" / "manifest.jsonl").is_file():
        from vidaudit.suites.counting.generate import generate
        from vidaudit.suites.counting.grid import preset

        generate(preset("paper"), work / "data", dry_run=True)
    sizes = {h: [int(x) for x in (args.inspect_sizes if h == "inspect_ai" else args.sizes).split(",")] for h in only}
    skipped = {h: why for h in only if (why := missing(h))}
    for h, why in skipped.items():
        print(f"  {h}: skipped: {why}", flush=True)
    runnable = [h for h in only if h not in skipped]
    for c in sorted({c for h in runnable for c in sizes[h]}):
        write_docs(work, c)
    best: dict[tuple[str, int], dict] = {}
    for r in range(args.repeats):
        for h in runnable:
            for c in sizes[h]:
                got = spawn(h, work, c)
                if got["trials"] != 2190 * c:
                    raise SystemExit(f"{h}: {got['trials']} trials run, expected {2190 * c}")
                if (h, c) not in best or got["cpu_s"] < best[(h, c)]["cpu_s"]:
                    best[(h, c)] = got
                print(
                    f"  {h:<10} {got['trials']:>6} trials (run {r + 1}): CPU {got['cpu_s']:8.2f} s = "
                    f"{1e3 * got['cpu_s'] / got['trials']:.4f} ms/trial, wall {got['wall_s']:7.1f} s",
                    flush=True,
                )
    print(f"\nbest of {args.repeats}, CPU (load average now {' / '.join(f'{x:.1f}' for x in os.getloadavg())}):")
    print(f"  {'harness':<11}{'trials':>14}{'ms/trial':>20}{'marginal ms/trial':>19}{'vs vidaudit':>13}")
    marginal: dict[str, float] = {}
    for h in runnable:
        lo, hi = best[(h, sizes[h][0])], best[(h, sizes[h][-1])]
        marginal[h] = 1e3 * (hi["cpu_s"] - lo["cpu_s"]) / max(hi["trials"] - lo["trials"], 1)
    for h in runnable:
        lo, hi = best[(h, sizes[h][0])], best[(h, sizes[h][-1])]
        per = " / ".join(f"{1e3 * best[(h, c)]['cpu_s'] / best[(h, c)]['trials']:.4f}" for c in sizes[h])
        ref = f"{marginal[h] / marginal['vidaudit']:.2f}x" if "vidaudit" in marginal else "-"
        print(f"  {h:<11}{lo['trials']:>6} / {hi['trials']:<6}{per:>20}{marginal[h]:>19.4f}{ref:>13}")
    for h, why in skipped.items():
        print(f"  {h:<11}skipped: {why}")


if __name__ == "__main__":
    main()
