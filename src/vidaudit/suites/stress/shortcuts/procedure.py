"""The shortcuts probe's unit of source: a procedure video with its annotated steps in canonical order, whichever
source it came from (rendered, a YouCook2-format folder, a folder of clips with ``steps.csv``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Source:
    """A procedure video with its annotated segments (canonical order)."""

    name: str
    video: Path
    steps: tuple[str, ...]
    segments: tuple[tuple[float, float], ...]
    origin: str  # synthetic | youcook2 | clips
    procedure: str | None = None
