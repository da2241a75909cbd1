"""A researcher's first hour with `vidaudit run`: a failed run says why, exits non-zero, says how to retry.

Everything here goes through the CLI a user types, against a real local HTTP server (or a closed port).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clirun import counting_run_args
from httpfake import FakeServer, Reply
from vidaudit.cli import app
from vidaudit.run.store.reader import StoreReader
from vidaudit.run.store.writer import RunStore

runner = CliRunner()
KEY = "sk-test-firsthour-0123456789abcdef"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _closed_port_url() -> str:
    with FakeServer() as srv:
        url = srv.url
    return url  # the server is gone: every connection is refused


def _ok_reply() -> Reply:
    return Reply(
        json={
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "\\boxed{3}"}}
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        }
    )


def test_a_run_against_a_server_that_is_down_says_why_and_exits_1(
    smoke_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    url = _closed_port_url()
    run_dir = tmp_path / "run"
    args = [
        *counting_run_args(smoke_dir, url, 3),
        "--max-attempts",
        "1",
        "--out",
        str(run_dir),
    ]
    r = runner.invoke(app, args)
    out = _flat(r.output)
    assert r.exit_code == 1, r.output
    # one line per cause, with its count, the stored status and kind, and the fix the message names
    assert re.search(
        r"3 api_error \(transient\): openai:m@\S+: connection failed \(.*\); check the network or "
        r"base_url",
        out,
    ), r.output
    assert "no trial succeeded; 3 failed" in out
    assert f"vidaudit run --resume {run_dir} --retry-errors" in out
    assert "next: vidaudit" not in out  # nothing to score or report
    assert KEY not in r.output

    # re-running: every trial is out of attempts, nothing is called, and the hint names the flag
    r = runner.invoke(app, ["run", "--resume", str(run_dir), "--max-attempts", "1"])
    out = _flat(r.output)
    assert r.exit_code == 1, r.output
    assert "3 out of attempts" in out and "0 called" in out
    assert "3 trial(s) are out of attempts, so nothing was called." in out
    assert "--retry-errors" in out


def test_retry_errors_calls_errored_trials_again_once_the_cause_is_fixed(
    smoke_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    run_dir = tmp_path / "run"
    with FakeServer() as srv:
        # 404 (a wrong model name, say) is not retried: one attempt per trial, each stored as bad_request
        srv.script(
            "POST", "/v1/chat/completions", default=Reply(status=404, json={"error": {"message": "no such model"}})
        )
        args = [
            *counting_run_args(smoke_dir, srv.url, 4),
            "--max-attempts",
            "1",
            "--out",
            str(run_dir),
        ]
        r = runner.invoke(app, args)
        assert r.exit_code == 1, r.output
        assert "4 api_error (bad_request): openai:m@" in _flat(r.output)
        assert "HTTP 404" in r.output
        assert len(srv.requests) == 4

        r = runner.invoke(app, ["run", "--resume", str(run_dir), "--max-attempts", "1"])  # out of attempts
        assert r.exit_code == 1, r.output
        assert len(srv.requests) == 4
        assert "4 trial(s) are out of attempts" in _flat(r.output) and "--retry-errors" in r.output

        srv.clear()
        srv.script("POST", "/v1/chat/completions", default=_ok_reply())
        r = runner.invoke(app, ["run", "--resume", str(run_dir), "--retry-errors"])
        assert r.exit_code == 0, r.output
        assert len(srv.requests) == 4
    out = _flat(r.output)
    assert "4 called (4 ok, 0 errored)" in out
    assert "failed, by cause" not in out
    # `score` first: a scored file from before this session would be stale and `report` alone would refuse it
    assert f"next: vidaudit score {run_dir} then: vidaudit report {run_dir}" in out
    with StoreReader(run_dir) as store:
        assert len(store.ok_trial_ids()) == 4
        assert sum(store.attempt_counts().values()) == 8  # the four failures stay in the store


def test_some_trials_ok_exits_0_and_still_lists_the_failures(
    smoke_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    bad = Reply(status=400, json={"error": {"message": "image too small"}})
    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", bad, default=_ok_reply())
        r = runner.invoke(
            app,
            [
                *counting_run_args(smoke_dir, srv.url, 3),
                "--out",
                str(tmp_path / "run"),
            ],
        )
    out = _flat(r.output)
    assert r.exit_code == 0, r.output
    assert "2 trial(s) ok; 1 failed, by cause of their last attempt:" in out
    assert "1 api_error (bad_request): " in out and "image too small" in out
    assert "next: vidaudit score" in out


def test_a_setup_mistake_is_refused_before_any_trial(tmp_path: Path) -> None:
    from vidaudit.suites.faithful.generate import generate, specs_for

    data = tmp_path / "data"
    generate(specs_for("smoke", seeds=1), data, workers=1, verify=False)
    r = runner.invoke(
        app,
        [
            "run",
            "faithful",
            "--data",
            str(data),
            "--model",
            "object-centric:offline",
            "--condition",
            "frames@1",
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        "error: the plan has trials a model cannot serve: object-centric:offline takes the video itself"
    ), r.output
    assert "native@1" in r.output
    assert not (tmp_path / "run").exists()


def test_run_without_a_condition_refuses_before_any_progress_bar(smoke_dir: Path, tmp_path: Path) -> None:
    r = runner.invoke(
        app, ["run", "counting", "--data", str(smoke_dir), "--model", "oracle", "--out", str(tmp_path / "run")]
    )
    assert r.exit_code == 2, r.output
    assert r.output.strip() == "error: no condition given; add --condition native (or frames@K, keyframes)"


def test_a_full_disk_does_not_claim_unstored_calls_were_stored(smoke_dir: Path, tmp_path: Path) -> None:
    """SQLite's page limit makes the store really full: the message counts the answers it could not take."""
    import asyncio

    from vidaudit.core.types import ModelSpec
    from vidaudit.run.conditions import parse_condition
    from vidaudit.run.executor import RunAborted, run_trials
    from vidaudit.run.request import PlanRequest
    from vidaudit.run.request_builder import RequestBuilder
    from vidaudit.run.session import prepare_run

    planned, adapters, _ = prepare_run(
        PlanRequest(
            data=smoke_dir,
            models=[ModelSpec.parse("oracle")],
            conditions=[parse_condition("frames@1", "structured_trace")],
            suite="counting",
        )
    )
    with RunStore(tmp_path) as store:
        store.register_trials(p.trial for p in planned)
        pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
        store._conn.execute(f"PRAGMA max_page_count = {pages}")  # no room for the attempts' rows
        with pytest.raises(RunAborted) as info:
            asyncio.run(run_trials(planned, adapters, store, RequestBuilder(smoke_dir)))
    message = str(info.value)
    assert "full" in message
    assert "were stored" not in message, message
    m = re.search(r"(\d+) answered call\(s\) could not be stored", message)
    assert m is not None and int(m.group(1)) >= 1, message
    with sqlite3.connect(tmp_path / "store.sqlite") as con:
        stored = con.execute("select count(*) from attempts").fetchone()[0]
    summary = info.value.summary
    assert summary is not None and stored == summary.calls  # the session counts only what the store holds


def test_the_progress_line_and_the_summary_count_failed_attempts_the_same_way(
    smoke_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retried failure is a failed attempt in both places, never an errored trial ("errors 2" beside "0 errored")."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    busy = Reply(status=500, json={"error": {"message": "busy"}})
    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", busy, busy, default=_ok_reply())
        r = runner.invoke(
            app,
            [
                *counting_run_args(smoke_dir, srv.url, 3),
                "--out",
                str(tmp_path / "run"),
            ],
        )
        assert len(srv.requests) == 5
    out = _flat(r.output)
    assert r.exit_code == 0, r.output
    assert "3 called (3 ok, 0 errored after 2 failed attempts)" in out
    assert re.search(r"ok 3 · failed attempts 2 ·", out), r.output
    assert "errors" not in out
