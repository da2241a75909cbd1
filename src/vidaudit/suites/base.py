"""What every suite provides to the CLI and the run/score stages."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SuiteInfo:
    name: str
    description: str
    paper: str
