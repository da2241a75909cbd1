"""``vidaudit ARGS`` through the CLI's own entry point (``vidaudit.cli.app``) in the test process, answered as a
``subprocess.CompletedProcess``: the exit code, stdout and stderr a ``python -m vidaudit.cli`` subprocess gives.

A fresh interpreter costs ~1.5 s of CPU per command (it imports what the command needs again); a test that chains
generate, run, score and report pays that four times for nothing the test reads. Tests whose subject is the process
itself (exit codes of the real entry point, a SIGKILL, start-up imports, plugins found by a fresh process) keep
their subprocesses. An exception the CLI lets escape is written to stderr with its traceback, as Python does, so a
check that no "Traceback" reached the user still sees one.
"""

from __future__ import annotations

import contextlib
import subprocess
import traceback
from collections.abc import Mapping
from pathlib import Path


def invoke(
    *args: object, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``vidaudit ARGS`` in this process (in ``cwd``, with ``env`` added to the environment for the call)."""
    from typer.testing import CliRunner

    from vidaudit.cli import app

    argv = [str(a) for a in args]
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        r = CliRunner().invoke(app, argv, env=dict(env or {}))
    err = r.stderr
    if r.exception is not None and not isinstance(r.exception, SystemExit) and r.exc_info is not None:
        err += "".join(traceback.format_exception(*r.exc_info))
    return subprocess.CompletedProcess(["vidaudit", *argv], r.exit_code, r.stdout, err)


def counting_run_args(data: Path, url: str, limit: int) -> list[str]:
    """``vidaudit run counting`` on ``data`` with one OpenAI-compatible model served at ``url`` (``openai:m@URL/v1``)
    at ``frames@1`` over the first ``limit`` samples: the run the CLI tests drive against a local server, to which
    each adds its ``--out`` and its own flags."""
    model = f"openai:m@{url}/v1"
    return ["run", "counting", "--data", str(data), "--model", model, "--condition", "frames@1", "--limit", str(limit)]
