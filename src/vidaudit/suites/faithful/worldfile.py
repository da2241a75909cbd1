"""``DATA/worlds/VIDEO.json``: one video's world record, its targets and sub-questions, and its render log.

Samples name the file (``params["world"]``, relative to the dataset dir) and its sha256
(``params["world_sha256"]``): a changed file is refused, never silently read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vidaudit.sdk import DataError, canonical_json, sha256_file, sha256_text, write_text_atomic
from vidaudit.suites.faithful.questions import SubQuestion, Target
from vidaudit.suites.faithful.simulate import RenderLog
from vidaudit.suites.faithful.world import WorldRecord

WORLD_FILE_VERSION: Final = 1


class WorldFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = WORLD_FILE_VERSION
    world: WorldRecord
    targets: list[Target]
    subs: list[SubQuestion]
    render: RenderLog | None = None
    knobs: dict[str, Any] = Field(default_factory=dict)


def write_world_file(path: str | Path, wf: WorldFile) -> str:
    """Write canonical JSON atomically; return its sha256."""
    text = canonical_json(wf.model_dump(mode="json")) + "\n"
    write_text_atomic(path, text)
    return sha256_text(text)


def read_world_file(path: str | Path, sha256: str | None = None) -> WorldFile:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"world file missing: {p}; regenerate the dataset (vidaudit generate faithful ...)")
    if sha256 is not None and sha256_file(p) != sha256:
        raise DataError(f"{p} does not match the sha256 its samples record: the world file changed; regenerate")
    try:
        return WorldFile.model_validate(json.loads(p.read_text(encoding="utf-8")))
    except (ValidationError, json.JSONDecodeError) as e:
        raise DataError(f"{p} is not a valid world file: {e}") from e
