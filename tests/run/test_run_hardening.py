"""Run-level promises under hostile or careless use, with real processes and a real local server:
a key echoed by a model is redacted (the run finishes), and a second run on the same dir refuses."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from httpfake import FakeServer, Recorded, Reply
from vidaudit.run.store.reader import StoreReader

SECRET = "sk-test-ECHOED-0123456789abcdef"


def _echo(rec: Recorded, delay_s: float = 0.3) -> Reply:
    body = rec.json()
    return Reply(
        json={
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": f"your key is {SECRET}. t=1.0s \\boxed{{1}}"},
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
        delay_s=delay_s,
    )


def _cmd(data: Path, url: str, out: Path, limit: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "vidaudit.cli",
        "run",
        "counting",
        "--data",
        str(data),
        "--model",
        f"openai:fake@{url}/v1",
        "--condition",
        "frames@1",
        "--limit",
        str(limit),
        "--out",
        str(out),
    ]


def test_a_model_that_echoes_the_key_is_redacted_and_the_run_finishes(smoke_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    run = tmp_path / "run"
    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", default=_echo)
        r = subprocess.run(_cmd(smoke_dir, srv.url, run, 3), env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    with StoreReader(run) as store:
        assert len(store.ok_trial_ids()) == 3
        texts = [a.response.text for _, a in store.results() if a and a.response]
    assert texts and all("[REDACTED:OPENAI_API_KEY]" in t for t in texts)
    for f in run.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    assert SECRET not in r.stdout + r.stderr


def test_a_second_run_on_the_same_dir_refuses_before_any_call(smoke_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-echoed-000000000"}
    run = tmp_path / "run"
    with FakeServer() as srv:
        released = threading.Event()  # the first run's calls are answered only after the second run ended,

        def held(rec: Recorded) -> Reply:  # so it still holds the lock however slowly the second one starts
            released.wait(90)
            return _echo(rec, 0.0)

        srv.script("POST", "/v1/chat/completions", default=held)
        first = subprocess.Popen(
            _cmd(smoke_dir, srv.url, run, 6), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        try:
            _second_run_refused(smoke_dir, srv, run, env, first)
        finally:
            released.set()
        out = first.communicate(timeout=120)[0].decode()
        assert first.returncode == 0, out
        assert len(srv.requests) == 6  # every call is the first run's, once each
    with StoreReader(run) as store:
        assert len(store.ok_trial_ids()) == 6 and sum(store.attempt_counts().values()) == 6


def _second_run_refused(
    smoke_dir: Path, srv: FakeServer, run: Path, env: dict[str, str], first: subprocess.Popen
) -> None:
    """The second run, started while the first holds the lock, exits 2 naming it and calls nothing."""
    deadline = time.time() + 60
    while time.time() < deadline and not srv.requests:  # the first run holds the lock and is calling
        time.sleep(0.05)
    assert srv.requests, "the first run never called the server"
    n_before = len(srv.requests)
    t0 = time.time()
    second = subprocess.run(_cmd(smoke_dir, srv.url, run, 6), env=env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 2, second.stdout + second.stderr
    assert f"in use by process {first.pid}" in " ".join(second.stderr.split())
    assert time.time() - t0 < 30
    assert len(srv.requests) >= n_before


def test_a_regenerated_dataset_is_never_scored_silently(smoke_dir: Path, tmp_path: Path) -> None:
    """The issue's case: the oracle's run, then the data changes (here: an answer edited, the videos kept);
    report refuses naming the samples, --allow-changed scores and names them, a resume refuses."""
    import json
    import shutil

    from typer.testing import CliRunner

    from vidaudit.cli import app

    runner = CliRunner()
    data = tmp_path / "data"
    shutil.copytree(smoke_dir, data, ignore=shutil.ignore_patterns("*.partial.jsonl"))
    run = tmp_path / "run"
    args = ["run", "counting", "--data", str(data), "--model", "oracle", "--condition", "frames@1", "--out", str(run)]
    assert runner.invoke(app, args).exit_code == 0
    lines = (data / "manifest.jsonl").read_text().splitlines()
    row = json.loads(lines[4])
    row["question"] = row["question"] + " (edited)"
    lines[4] = json.dumps(row)
    (data / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    r = runner.invoke(app, ["report", str(run)])
    assert r.exit_code == 2 and row["sample_id"] in r.output and "--allow-changed" in " ".join(r.output.split())
    assert not (run / "report").exists()
    r = runner.invoke(app, ["report", str(run), "--allow-changed"])
    assert r.exit_code == 0, r.output
    rep = json.loads((run / "report" / "report.json").read_text())
    assert any(row["sample_id"] in n and "changed" in n for n in rep["notes"])
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and "changed since this run dir was started" in " ".join(r.output.split())


def test_a_manifest_whose_answer_disagrees_with_its_trace_is_refused_at_every_stage(
    smoke_dir: Path, tmp_path: Path
) -> None:
    """The oracle would 'confirm' a wrong answer: run, report and score-responses refuse, naming the sample."""
    import json
    import shutil

    from typer.testing import CliRunner

    from vidaudit.cli import app

    runner = CliRunner()
    data = tmp_path / "data"
    shutil.copytree(smoke_dir, data, ignore=shutil.ignore_patterns("*.partial.jsonl"))
    lines = (data / "manifest.jsonl").read_text().splitlines()
    row = json.loads(lines[4])
    row["answer"] = row["answer"] + 1
    lines[4] = json.dumps(row)
    (data / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    r = runner.invoke(
        app,
        [
            "run",
            "counting",
            "--data",
            str(data),
            "--model",
            "oracle",
            "--condition",
            "frames@1",
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert r.exit_code == 2 and row["sample_id"] in r.output and "disagrees with their trace" in r.output
    assert not (tmp_path / "run").exists()
    resp = tmp_path / "r.jsonl"
    resp.write_text(json.dumps({"sample_id": row["sample_id"], "response": "\\boxed{1}"}) + "\n")
    r = runner.invoke(
        app, ["score-responses", "--samples", str(data), "--responses", str(resp), "--out", str(tmp_path / "s.jsonl")]
    )
    assert r.exit_code == 2 and row["sample_id"] in r.output and not (tmp_path / "s.jsonl").exists()


def test_a_lone_surrogate_from_a_server_is_stored_scored_and_shown(smoke_dir: Path, tmp_path: Path) -> None:
    """Issue case 1, end to end: the body holds "\\ud800"; the run finishes, the store keeps the text exactly,
    scores and the three report files are written, and the page shows U+FFFD in its place."""
    import json

    from typer.testing import CliRunner

    from vidaudit.cli import app
    from vidaudit.core.contract.report import Report

    def reply(rec: Recorded) -> Reply:
        body = (
            '{"id": "c", "object": "chat.completion", "created": 0, "model": "fake", "choices": [{"index": 0, '
            '"finish_reason": "stop", "message": {"role": "assistant", "content": "odd \\ud800 t=1.0s '
            '\\\\boxed{1}"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}'
        )
        return Reply(body=body)

    env = {**os.environ, "OPENAI_API_KEY": "sk-test-surrogate-00000000"}
    run = tmp_path / "run"
    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", default=reply)
        r = subprocess.run(_cmd(smoke_dir, srv.url, run, 2), env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    with StoreReader(run) as store:
        texts = [a.response.text for _, a in store.results() if a and a.response]
    assert texts == ["odd \ud800 t=1.0s \\boxed{1}"] * 2
    res = CliRunner().invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    Report.model_validate_json((run / "report" / "report.json").read_text(encoding="utf-8"))
    assert "odd \ufffd t=1.0s" in (run / "report" / "report.html").read_text(encoding="utf-8")
    rows = [json.loads(x) for x in (run / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2 and all(x["parse"]["value"] == 1 for x in rows)


def test_adapter_options_from_the_command_line_are_recorded_and_resumed(smoke_dir: Path, tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from vidaudit.cli import app

    runner = CliRunner()
    run = tmp_path / "run"
    env = {"OPENAI_API_KEY": "sk-test-options-0000000000"}
    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", default=_echo)
        base = [
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            f"openai:fake@{srv.url}/v1",
            "--condition",
            "frames@1",
            "--limit",
            "1",
            "--out",
            str(run),
        ]
        r = runner.invoke(app, [*base, "--adapter-option", "openai.jpeg_quality=70"], env=env)
        assert r.exit_code == 0, r.output
        assert json.loads((run / "run.json").read_text())["model_options"] == {"openai": {"jpeg_quality": 70}}
        with StoreReader(run) as store:
            (row,) = store.trial_rows()
        assert row.trial.adapter_options["jpeg_quality"] == 70
        n = len(srv.requests)
        r = runner.invoke(app, ["run", "--resume", str(run)], env=env)
        assert r.exit_code == 0 and len(srv.requests) == n, r.output  # same options, same trial: no call
        r = runner.invoke(app, [*base, "--adapter-option", "openai.jpeg_quality=50"], env=env)
        assert r.exit_code == 2 and "adapter options" in " ".join(r.output.split())
        for bad, msg in (("openai.bogus=1", "cannot build"), ("jpeg_quality=70", "PROVIDER.KEY=VALUE")):
            r = runner.invoke(app, [*base[:-1], str(tmp_path / "other"), "--adapter-option", bad], env=env)
            assert r.exit_code == 2 and msg in " ".join(r.output.split()), r.output
