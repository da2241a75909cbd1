"""Library versions and the source revision, recorded with every dataset, run and report."""

from __future__ import annotations

import contextlib
import importlib.metadata
import platform
import subprocess
from pathlib import Path

import av

_LIBS = (
    "numpy",
    "av",
    "opencv-python-headless",
    "pydantic",
    "scipy",
    "openai",
    "google-genai",
    "anthropic",
    "transformers",
    "torch",
)


def library_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _LIBS:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    with contextlib.suppress(Exception):  # pragma: no cover - av is a hard dependency
        out["ffmpeg"] = ".".join(map(str, av.library_versions.get("libavcodec", ())))
    return out


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", *args], check=False, cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def source_revision() -> tuple[str | None, bool | None]:
    """(HEAD, dirty) of the git checkout vidaudit's own sources are tracked in, else (None, None): what a run's
    sessions and a report record as the code that made them.

    Checking that the package's files are tracked avoids reporting the revision of an unrelated
    repository that merely contains an installed copy (e.g. a virtualenv inside a user's project).
    """
    pkg = Path(__file__).resolve().parent.parent
    if _git(["ls-files", "--error-unmatch", "--", "__init__.py"], pkg) is None:
        return None, None
    head = _git(["rev-parse", "HEAD"], pkg)
    if not head:
        return None, None
    status = _git(["status", "--porcelain", "--untracked-files=no", "--", "."], pkg)
    return head, (bool(status) if status is not None else None)
