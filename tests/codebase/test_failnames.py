"""A failing or timed-out test is named the moment it fails (tests/failnames.py), before the run ends, and the
slowest tests are listed (--durations): a real pytest run in a subprocess, with and without xdist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]  # tests/, where failnames.py lives


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_failing_and_a_timed_out_test_are_named_as_they_fail(tmp_path: Path, workers: str) -> None:
    (tmp_path / "test_sample.py").write_text(
        "import time\n"
        "def test_fails():\n    assert 1 == 2\n"
        "def test_hangs():\n    time.sleep(30)\n"
        "def test_passes():\n    pass\n"
    )
    (tmp_path / "tail.txt").write_text("")
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "failnames",
            "-p",
            "no:cacheprovider",
            "-q",
            "-n",
            workers,
            "--timeout",
            "3",
            "--durations",
            "3",
            "-o",
            "addopts=",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_sample.py"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=tmp_path,
    )
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    lines = out.splitlines()
    early = [i for i, line in enumerate(lines) if line.startswith("FAILED test_sample.py::") and "(call, " in line]
    summary = next(i for i, line in enumerate(lines) if "short test summary info" in line or "FAILURES" in line)
    named = " ".join(lines[i] for i in early)
    assert "test_fails (call, " in named and "test_hangs (call, " in named and "timed out)" in named, out
    assert all(i < summary for i in early)  # named before the run's closing report
    assert "slowest 3 durations" in out and "test_hangs" in out.split("slowest 3 durations", 1)[1]
