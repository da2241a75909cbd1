"""A missing optional extra is a one-line message naming the pip install that fixes it: exit 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Simulate an install without the SDK: a module set to None in sys.modules cannot be imported.
_BLOCK = "import sys; sys.modules[{mod!r}] = None; from vidaudit.cli import app; app()"


@pytest.mark.parametrize(
    "provider,module,extra",
    [
        ("openai:gpt-4o", "openai", "openai"),
        ("gemini:gemini-2.5-flash", "google.genai", "gemini"),
        ("anthropic:claude-sonnet-4-5", "anthropic", "anthropic"),
        ("hf:/nonexistent/model", "torch", "hf"),
    ],
)
def test_missing_sdk_names_its_extra(provider: str, module: str, extra: str, smoke_dir: Path, tmp_path: Path) -> None:
    code = _BLOCK.format(mod=module)
    env = {**os.environ, "OPENAI_API_KEY": "x" * 20, "GEMINI_API_KEY": "x" * 20, "ANTHROPIC_API_KEY": "x" * 20}
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            provider,
            "--condition",
            "frames@1",
            "--out",
            str(tmp_path / "run"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert f'pip install "vidaudit[{extra}]"' in " ".join(out.split()), out
    assert "Traceback" not in out
    assert not (tmp_path / "run").exists()


def test_a_dry_run_needs_no_sdk_and_no_key(smoke_dir: Path, tmp_path: Path) -> None:
    """`run --dry-run` calls nothing, so it plans every hosted provider with neither its SDK nor its key (nor httpx2,
    the HTTP client those SDKs bring: a base install has none of them)."""
    code = (
        "import sys; [sys.modules.__setitem__(m, None) for m in ('openai', 'google.genai', 'anthropic', 'httpx2')]; "
        "from vidaudit.cli import app; app()"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "ANTHROPIC_API_KEY")
    }
    env["COLUMNS"] = "200"
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            "openai:gpt-4o",
            "--model",
            "gemini:gemini-2.5-flash",
            "--model",
            "anthropic:claude-sonnet-4-5",
            "--condition",
            "frames@1",
            "--limit",
            "4",
            "--out",
            str(tmp_path / "run"),
            "--dry-run",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "dry run: nothing was called" in out and "12 trials in all" in out
    for label in ("openai:gpt-4o", "gemini:gemini-2.5-flash", "anthropic:claude-sonnet-4-5"):
        assert label in out
    assert "Traceback" not in out and "pip install" not in out and "API key" not in out
    assert not (tmp_path / "run").exists()
    # the same run for real still names what is missing, before any call
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            "openai:gpt-4o",
            "--condition",
            "frames@1",
            "--out",
            str(tmp_path / "run"),
        ],
        env={**env, "OPENAI_API_KEY": "x" * 20},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 2 and 'pip install "vidaudit[openai]"' in " ".join((r.stdout + r.stderr).split())
