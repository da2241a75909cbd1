"""Mistakes a researcher makes in the first hour are refused before any call, in one line with exit code 2, and
Ctrl-C says how to resume: through the real CLI (subprocesses), against a real local server that counts calls."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from clirun import counting_run_args
from httpfake import FakeServer, Recorded, Reply

SRC = Path(__file__).resolve().parents[2] / "src"


def _foreground() -> None:
    """In the child before exec: Ctrl-C as an interactive shell hands it to a foreground command (default
    disposition, not blocked). A pytest worker that ran other tests first may pass on an ignored or blocked SIGINT,
    which a child keeps across exec; Python then never raises KeyboardInterrupt and the run goes on to its end."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _interrupted(srv: FakeServer, *args: str, after: int, wait_s: float) -> tuple[int, str, str]:
    """``vidaudit ARGS`` started as a foreground job, sent SIGINT once the server has had ``after`` requests (and a
    second for the answered calls to be stored): its exit code, stdout and stderr, within 60 s of the signal."""
    return _interrupt_when(lambda: len(srv.requests) >= after, *args, wait_s=wait_s, what="reached the server")


def _interrupt_when(ready: Callable[[], bool], *args: str, wait_s: float, what: str) -> tuple[int, str, str]:
    """``vidaudit ARGS`` as a foreground job, sent SIGINT a second after ``ready()`` holds: exit code, stdout, stderr."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "OPENAI_API_KEY": "sk-test-mistakes"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "vidaudit.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_foreground,
    )
    try:
        deadline = time.monotonic() + wait_s
        while not ready() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert ready(), f"vidaudit {args[0]} never {what}"
        time.sleep(1.0)  # let the answered calls be stored
        proc.send_signal(signal.SIGINT)
        try:
            stdout, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"no exit within 60 s of SIGINT ({_sigint_state()}); stderr so far: {e.stderr!r}")
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stdout, err


def _sigint_state() -> str:
    """This process's SIGINT disposition and mask, for a failure's message."""
    return f"parent SIGINT handler {signal.getsignal(signal.SIGINT)!r}, blocked {signal.pthread_sigmask(signal.SIG_BLOCK, [])}"


CHAT = "/v1/chat/completions"


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200", "OPENAI_API_KEY": "sk-test-mistakes"}
    return subprocess.run(
        [sys.executable, "-m", "vidaudit.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env=env,
    )


def _one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    """The refusal: exit 2, one line on stderr starting with ``error:``, no traceback, nothing on stdout."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    return lines[0]


def _completion(text: str) -> dict:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
    }


@pytest.mark.parametrize(
    "condition, says",
    [
        ("frames@0", "fps must be a positive finite number, got 0.0"),
        ("frames#0", "frames#K needs K >= 1, got 0"),
        ("native@x", "cannot read condition 'native@x'"),
    ],
)
def test_a_malformed_condition_is_one_plain_line(smoke_dir: Path, tmp_path: Path, condition: str, says: str) -> None:
    line = _one_line_error(
        _cli(
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            "oracle",
            "--condition",
            condition,
            "--out",
            str(tmp_path / "run"),
        )
    )
    assert says in line and "pydantic" not in line and "http" not in line and "input_value" not in line, line
    assert "frames@K" in line  # and how to write one
    assert not (tmp_path / "run").exists()


def test_a_base_url_without_a_scheme_is_refused_before_any_call(smoke_dir: Path, tmp_path: Path) -> None:
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Reply(json=_completion("\\boxed{1}")))
        bare = srv.url.split("://", 1)[1]  # 127.0.0.1:PORT: a server is there, and nothing may reach it
        for flag in ("--model", "--judge"):
            extra = ["--model", "oracle"] if flag == "--judge" else []
            line = _one_line_error(
                _cli(
                    "run",
                    "counting",
                    "--data",
                    str(smoke_dir),
                    *extra,
                    flag,
                    f"openai:m@{bare}/v1",
                    "--condition",
                    "frames@1",
                    "--out",
                    str(tmp_path / "run"),
                )
            )
            assert f"has no scheme; write openai:m@http://{bare}/v1" in line, line
        line = _one_line_error(
            _cli("audit", "--model", f"openai:m@{bare}/v1", "--budget", "smoke", "--out", str(tmp_path / "A"))
        )
        assert "has no scheme" in line
        assert srv.requests == []
    assert not (tmp_path / "run").exists() and not (tmp_path / "A" / "data").exists()


@pytest.mark.parametrize(
    "model, meant",
    [
        ("gpt-4o", "openai:gpt-4o"),
        ("gemini-2.5-flash", "gemini:gemini-2.5-flash"),
        ("claude-sonnet-4", "anthropic:claude-sonnet-4"),
        ("Qwen/Qwen2.5-VL-7B-Instruct", "hf:Qwen/Qwen2.5-VL-7B-Instruct"),
    ],
)
def test_a_model_without_a_provider_names_the_one_it_probably_meant(
    smoke_dir: Path, tmp_path: Path, model: str, meant: str
) -> None:
    line = _one_line_error(
        _cli(
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            model,
            "--condition",
            "frames@1",
            "--out",
            str(tmp_path / "run"),
        )
    )
    assert f"unknown provider {model!r}" in line and f"did you mean {meant}" in line, line
    # the audit refuses it before generating any data
    line = _one_line_error(_cli("audit", "--model", model, "--budget", "smoke", "--out", str(tmp_path / "A")))
    assert f"did you mean {meant}" in line and not (tmp_path / "A" / "data").exists()


def test_ctrl_c_prints_how_to_resume_and_exits_130(smoke_dir: Path, tmp_path: Path) -> None:
    """SIGINT in the middle of a real run: exit 130 with the resume command, which then asks only for the rest."""
    answered: list[bytes] = []
    slow = {"on": True}

    def reply(rec: Recorded) -> Reply:
        if slow["on"] and len(answered) >= 3:
            return Reply(json=_completion("\\boxed{1}"), delay_s=60)  # hangs until the interrupt
        answered.append(rec.body)
        return Reply(json=_completion("\\boxed{1}"))

    run_dir = tmp_path / "run dir"  # a space: the printed command must still work when pasted
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=reply)
        code, _, err = _interrupted(
            srv,
            *counting_run_args(smoke_dir, srv.url, 8),
            "--out",
            str(run_dir),
            after=4,
            wait_s=120,
        )
        assert code == 130, err
        assert "Traceback" not in err
        resume = next(line for line in err.splitlines() if "resume with" in line).split("resume with ", 1)[1]
        assert resume == f"vidaudit run --resume '{run_dir}'"
        slow["on"] = False
        first = len(answered)
        r = _cli(*shlex.split(resume)[1:])  # the printed command, as a shell would split it
        assert r.returncode == 0, r.stdout + r.stderr
    assert first >= 3 and len(answered) - first == 8 - first  # nothing stored was asked again


def test_ctrl_c_in_the_demo_prints_the_command_that_continues_it(tmp_path: Path) -> None:
    """SIGINT while the demo renders its data: exit 130, no traceback, and the same command to continue, quoted."""
    out = tmp_path / "demo out"  # a space: the printed command must still work when pasted
    code, _, err = _interrupt_when(
        lambda: (out / "data").is_dir(), "demo", "--out", str(out), "--workers", "1", wait_s=120, what="made its data"
    )
    assert code == 130, err
    assert "Traceback" not in err
    line = next(line for line in err.splitlines() if line.startswith("interrupted:"))
    assert line.endswith(f"(no stored call is repeated): vidaudit demo --out '{out}'"), line


def test_ctrl_c_in_an_audit_prints_the_command_that_resumes_it(tmp_path: Path) -> None:
    answered: list[bytes] = []
    slow = {"on": True}

    def reply(rec: Recorded) -> Reply:
        if slow["on"] and len(answered) >= 5:
            return Reply(json=_completion("Yes"), delay_s=60)
        answered.append(rec.body)
        return Reply(json=_completion("Yes"))

    out = tmp_path / "A"
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=reply)
        code, stdout, err = _interrupted(
            srv,
            "audit",
            "--model",
            f"openai:m@{srv.url}/v1",
            "--suite",
            "faithful",
            "--budget",
            "smoke",
            "--out",
            str(out),
            after=6,
            wait_s=300,
        )
        assert code == 130 and "Traceback" not in err, err
        assert stdout == ""  # no figures for an interrupted audit
        line = next(x for x in err.splitlines() if x.startswith("interrupted:"))
        command = line.split(": ", 2)[-1]
        assert shlex.split(command)[:2] == ["vidaudit", "audit"] and "--suite faithful" in command
        slow["on"] = False
        first = len(answered)
        r = _cli(*shlex.split(command)[1:])
        assert r.returncode == 0, r.stdout + r.stderr
    assert first >= 5 and len(answered) - first == 60 - first  # 60 planned trials, nothing stored asked again
    assert "Headline figures" in r.stdout
