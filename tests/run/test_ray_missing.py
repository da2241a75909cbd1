"""``--executor ray`` without the ray extra: one line naming ``pip install "vidaudit[ray]"``, exit 2, nothing written.

Runs whether or not ray is installed (an install without it is simulated: a module set to None in
``sys.modules`` cannot be imported), so CI checks the message even where the Ray tests run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_BLOCK = "import sys; sys.modules['ray'] = None; from vidaudit.cli import app; app()"


def test_executor_ray_without_ray_names_its_extra(smoke_dir: Path, tmp_path: Path) -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            _BLOCK,
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            "oracle",
            "--condition",
            "frames@1",
            "--out",
            str(tmp_path / "run"),
            "--executor",
            "ray",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert 'pip install "vidaudit[ray]"' in " ".join(out.split()) and "--executor ray" in out, out
    assert "Traceback" not in out
    assert not (tmp_path / "run").exists()


def test_an_unknown_executor_is_refused(smoke_dir: Path, tmp_path: Path) -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "vidaudit.cli",
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            "oracle",
            "--condition",
            "frames@1",
            "--out",
            str(tmp_path / "run"),
            "--executor",
            "dask",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "--executor must be one of local, ray" in " ".join(out.split()), out
    assert not (tmp_path / "run").exists()
