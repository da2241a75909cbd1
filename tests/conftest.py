"""Shared fixtures: a rendered smoke set (once per session) and the CLI runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def smoke_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The counting smoke preset, rendered and verified by the generator itself."""
    from vidaudit.suites.counting.generate import generate
    from vidaudit.suites.counting.grid import preset

    out = tmp_path_factory.mktemp("smoke")
    generate(preset("smoke"), out, workers=2, verify=True)
    return out
