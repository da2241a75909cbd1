"""Library versions and the git revision, recorded with every dataset and run."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from pathlib import Path

_LIBS = ("numpy", "av", "opencv-python-headless", "pydantic", "scipy", "openai", "google-genai",
         "anthropic", "transformers", "torch")


def library_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _LIBS:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    try:
        import av

        out["ffmpeg"] = ".".join(map(str, av.library_versions.get("libavcodec", ())))
    except Exception:  # pragma: no cover - av is a hard dependency
        pass
    return out


def git_revision() -> str | None:
    """HEAD of the vidaudit checkout this code runs from, or None when installed from a wheel."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
