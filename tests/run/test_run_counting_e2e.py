"""End to end on the smoke set: vidaudit run / score / report with built-in models, resume, bad input,
and a SIGKILLed run against a real local OpenAI-compatible server."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from httpfake import FakeServer, Recorded, Reply
from vidaudit.cli import app
from vidaudit.core.contract.report import Report
from vidaudit.core.manifest import load_samples
from vidaudit.run.store.reader import StoreReader
from vidaudit.score.stage import score_store

runner = CliRunner()
SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdef"


@pytest.fixture(scope="module")
def demo(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """`vidaudit demo` end to end (videos reused from the session's smoke set to save CI time): its run is the run
    of oracle, chance and ideal-observer at native and frames@1 that the other tests read (``builtin_run``), so
    that run is made once."""
    out = tmp_path_factory.mktemp("demo") / "demo"
    _copy_data(smoke_dir, out / "data")
    r = runner.invoke(app, ["demo", "--out", str(out), "--workers", "2"])
    assert r.exit_code == 0, r.output
    return out, r, json.loads((out / "run" / "report" / "report.json").read_text())  # before a test reports again


@pytest.fixture(scope="module")
def builtin_run(demo) -> Path:
    """The demo's run: oracle, chance and ideal-observer at native and frames@1 on the 18 smoke videos, called,
    scored and reported (what ``vidaudit run counting --model oracle --model chance --model ideal-observer
    --condition native --condition frames@1`` runs; the run CLI's own parsing is tested below and in test_run_*)."""
    out, _, _ = demo
    config = json.loads((out / "run" / "run.json").read_text())
    assert config["suite"] == "counting", config
    return out / "run"


def records_from_store(run_dir: Path) -> tuple[list[dict], dict[str, dict], dict]:
    scored = score_store(run_dir)
    extras = {
        tid: {"frame_indices": [i for i, _ in fr], "frame_times": [t for _, t in fr]}
        for tid, fr in scored.frames.items()
    }
    return [r.flat() for r in scored.records], extras, scored.samples


def test_oracle_and_ideal_observer(builtin_run: Path) -> None:
    records, extras, _ = records_from_store(builtin_run)
    assert len(records) == 18 * 3 * 2
    assert all(r["status"] == "ok" for r in records)
    oracle = [r for r in records if r["model"] == "oracle"]
    assert all(r["correct"] and r["parse_method"] == "boxed" for r in oracle)
    assert all(r["f1"] == 1.0 for r in oracle if r["n_events"] > 0)
    native = [r for r in records if r["model"] == "ideal-observer" and r["condition"].startswith("native")]
    assert all(r["correct"] for r in native), [r["sample_id"] for r in native if not r["correct"]]
    sparse = [r for r in records if r["model"] == "ideal-observer" and r["condition"].startswith("frames@1")]
    assert sum(r["correct"] for r in sparse) < len(sparse), "1 fps must lose events somewhere"
    # the frames actually sent are logged per trial: frames@1 -> 24 frames at t = 0..23 s
    t_id = next(r["trial_id"] for r in sparse)
    assert extras[t_id]["frame_times"] == [float(j) for j in range(24)]
    assert extras[t_id]["frame_indices"] == [30 * j for j in range(24)]


def test_rerun_resumes_without_calls_and_score_rescores(builtin_run: Path, smoke_dir: Path) -> None:
    with StoreReader(builtin_run) as store:
        before = store.summary().attempts
    r = runner.invoke(app, ["run", "--resume", str(builtin_run)])
    assert r.exit_code == 0, r.output
    assert "108 already ok" in " ".join(r.output.split())
    with StoreReader(builtin_run) as store:
        assert store.summary().attempts == before
    r = runner.invoke(app, ["score", str(builtin_run)])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (builtin_run / "scores.jsonl").read_text().splitlines()]
    assert len(rows) == 108
    for row in rows:  # one shape for every suite: the identifiers, the status and correctness
        assert {"trial_id", "sample_id", "model", "condition", "status", "correct"} <= set(row)


def test_report_files(builtin_run: Path) -> None:
    r = runner.invoke(app, ["report", str(builtin_run)])
    assert r.exit_code == 0, r.output
    text = (builtin_run / "report" / "report.json").read_text()
    Report.model_validate_json(text)  # the published schema
    top = json.loads(text)
    assert top["suite"] == "counting" and top["schema_version"] == 2
    rep = top["results"]
    for key in ("cells", "count_boundary", "frequency_boundary", "trace_metrics"):
        assert key in rep
    # a bare `native` is resolved per model: the built-ins see every frame
    assert rep["trace_metrics"]["oracle"]["native@all/structured_trace"]["macro"]["em"] == 1.0
    assert any("frames@1" in n and "cannot show" in n for n in top["notes"])
    cell = rep["cells"][0]
    assert {
        "model",
        "condition",
        "domain",
        "n_events",
        "frequency_hz",
        "n",
        "correct",
        "accuracy",
        "ci_low",
        "ci_high",
    } <= set(cell)
    assert (builtin_run / "report" / "report.html").stat().st_size > 10_000


def test_dry_run_calls_nothing(smoke_dir: Path, tmp_path: Path) -> None:
    r = runner.invoke(
        app,
        [
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            "oracle",
            "--condition",
            "frames@16",
            "--condition",
            "keyframes",
            "--prompt",
            "direct",
            "--prompt",
            "thinking",
            "--out",
            str(tmp_path / "dry"),
            "--dry-run",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "72 trials in all" in r.output
    assert not (tmp_path / "dry").exists()


def _copy_data(smoke_dir: Path, dst: Path) -> Path:
    shutil.copytree(smoke_dir, dst, ignore=shutil.ignore_patterns("*.partial.jsonl"))
    return dst


@pytest.mark.parametrize("case", ["provider", "sha", "missing", "condition", "prompt"])
def test_bad_input_fails_before_any_call(
    case: str, smoke_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _copy_data(smoke_dir, tmp_path / "data")
    model, cond, prompt, expect = "oracle", "native", "structured_trace", ""
    if case == "provider":
        model, expect = "watsonx:vision", "unknown provider"
    elif case == "sha":
        victim = data / load_samples(data)[3].video.path
        victim.write_bytes(victim.read_bytes() + b"\0")
        expect = "does not match the manifest"
    elif case == "missing":
        (data / load_samples(data)[5].video.path).unlink()
        expect = "is missing"
    elif case == "condition":
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        model, cond, expect = "anthropic:claude-test@http://127.0.0.1:9", "frames@16", "at most 100 images"
    elif case == "prompt":
        prompt, expect = "socratic", "unknown prompt"
    with FakeServer() as srv:
        if case == "condition":
            model = f"anthropic:claude-test@{srv.url}"
        r = runner.invoke(
            app,
            [
                "run",
                "counting",
                "--data",
                str(data),
                "--model",
                model,
                "--condition",
                cond,
                "--prompt",
                prompt,
                "--out",
                str(tmp_path / "run"),
            ],
        )
        assert srv.requests == []
    assert r.exit_code == 2, r.output
    assert expect in " ".join(r.output.split()), r.output
    assert SECRET not in r.output


def _chat_reply(rec: Recorded) -> Reply:
    body = rec.json()
    n_images = sum(
        1
        for m in body["messages"]
        for p in (m["content"] if isinstance(m["content"], list) else [])
        if p.get("type") == "image_url"
    )
    return Reply(
        json={
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": f"t=1.0s: event\n\\boxed{{{n_images % 5}}}"},
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107},
        },
        delay_s=0.4,
    )


def test_sigkill_mid_run_then_resume(smoke_dir: Path, tmp_path: Path) -> None:
    """Kill a run against a slow local server; resuming calls only what was not stored, once each."""
    run_dir = tmp_path / "run"
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", default=_chat_reply)
        cmd = [
            sys.executable,
            "-m",
            "vidaudit.cli",
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            f"openai:fake-vlm@{srv.url}/v1",
            "--condition",
            "frames@1",
            "--out",
            str(run_dir),
        ]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + 90
        while time.time() < deadline:
            db = run_dir / "store.sqlite"
            if db.exists():
                try:
                    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                        if con.execute("select count(*) from attempts where status='ok'").fetchone()[0] >= 4:
                            break
                except sqlite3.Error:
                    pass
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        out1 = proc.communicate()[0].decode()
        with StoreReader(run_dir) as store:
            stored_ok = len(store.ok_trial_ids())
        assert 4 <= stored_ok < 18, stored_ok
        first_bodies = [hashlib.sha256(r.body).hexdigest() for r in srv.requests]
        srv.requests.clear()
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
        assert res.returncode == 0, res.stdout + res.stderr
        second = [hashlib.sha256(r.body).hexdigest() for r in srv.requests]
    assert len(second) == 18 - stored_ok, "a stored trial was called again"
    assert len(set(second)) == len(second)
    assert len(set(first_bodies) - set(second)) >= stored_ok
    with StoreReader(run_dir) as store:
        assert len(store.ok_trial_ids()) == 18
        per_trial = {}
        for row, att in store.results():
            per_trial[row.trial_id] = sum(1 for a in store.attempts(row.trial_id) if a.status.value == "ok")
        assert set(per_trial.values()) == {1}
    # no API key anywhere: store, audit log, run.json, logs
    for f in run_dir.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    assert SECRET not in out1 + res.stdout + res.stderr


def test_demo_on_smoke(demo) -> None:
    """`vidaudit demo` end to end (the ``demo`` fixture): what it prints and the report it wrote."""
    _, r, report = demo
    assert "next: vidaudit" not in r.output  # the demo scored and wrote the report itself
    assert "demo done: open" in r.output
    # the headline figures end on stdout (progress and logs on stderr): the report's own headline table
    head = report["headline"]
    lines = r.stdout.strip().splitlines()
    assert lines[0] == "Headline" and lines[1].split() == [w for c in head["columns"] for w in c.split()]
    rows = {line.split()[0]: line for line in lines[3:]}
    assert set(rows) == {"oracle", "chance", "ideal-observer"}
    assert rows["oracle"].count("1.000 [0.824, 1.000] (18/18)") == 2
    assert "Headline" not in r.stderr and "progress" not in r.stdout
    # the observer's misses are a list, one domain a line, not one run-on note
    misses = [line for line in r.stderr.splitlines() if line.startswith("      ") and "N=" in line]
    assert misses and all(line.split(":")[0].strip() in ("blinking", "bounce_ball", "state_machine") for line in misses)
    rep = report["results"]
    oracle = [c for c in rep["cells"] if c["model"] == "oracle"]
    assert oracle and all(c["accuracy"] == 1.0 for c in oracle)
    io_native = [c for c in rep["cells"] if c["model"] == "ideal-observer" and c["condition"].startswith("native")]
    assert io_native and all(c["accuracy"] == 1.0 for c in io_native)
    io_sparse = [c for c in rep["cells"] if c["model"] == "ideal-observer" and c["condition"].startswith("frames@1")]
    assert any(c["accuracy"] < 1.0 for c in io_sparse)


def test_a_run_from_before_the_backbone_is_reported_but_not_resumed(builtin_run: Path, tmp_path: Path) -> None:
    """Run schema 1 (trial ids without prompt text and frames): report works, resume is refused with how to go on."""
    old = tmp_path / "old"
    shutil.copytree(builtin_run, old, ignore=shutil.ignore_patterns("report", "scores.jsonl", ".lock"))
    cfg = json.loads((old / "run.json").read_text())
    cfg["schema_version"] = 1
    (old / "run.json").write_text(json.dumps(cfg))
    r = runner.invoke(app, ["run", "--resume", str(old)])
    assert r.exit_code == 2, r.output
    text = " ".join(r.output.split())
    assert "older vidaudit" in text and "vidaudit report RUN" in text and "new run dir" in text
    with StoreReader(old) as store:
        before = store.summary().attempts
    assert before == 108
    r = runner.invoke(app, ["score", str(old)])
    assert r.exit_code == 0, r.output
