"""``profile.json``: one row per model, a column group per audit part, the papers' published rows apart.

Every measured figure is read from the part's run ``report.json`` (through ``Suite.profile_figures``); the
published rows come from the suites' reference tables and are never mixed with measured rows.
``vidaudit schema profile`` prints this model's JSON Schema.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from vidaudit.core.contract.profile import ProfileFigure
from vidaudit.core.errors import DataError
from vidaudit.core.untrusted import distinct_keys

PROFILE_SCHEMA_VERSION = 1
PROFILE_JSON = "profile.json"


class PartInfo(BaseModel):
    """One column group: a suite's dataset at the audit's budget and the run that measured it."""

    model_config = ConfigDict(extra="forbid")

    suite: str
    name: str
    preset: str
    seeds: int | None = None
    dataset_key: str
    data_dir: str
    run_dir: str
    report_html: str
    conditions: list[str]
    trials_per_model: int
    #: the widest 95% interval (at p = 0.5) and the smallest difference resolved, for ``resolution_n`` trials: the
    #: smallest n of an accuracy figure the part shows (None in a profile made before this field: all trials)
    ci_half_width: float | None = None
    min_detectable_difference: float | None = None
    resolution_n: int | None = None
    observer: str | None = None
    chance: dict[str, float] = Field(default_factory=dict)
    observer_figures: list[ProfileFigure] = Field(default_factory=list)
    human_ceiling: ProfileFigure | None = None
    published_source: str = ""
    notes: list[str] = Field(default_factory=list)
    #: the checksum (``sha256`` of its header) of the run's scored file the figures were read after; ``compare``
    #: leaves the figures out when the run was scored again since (None: a profile made before this field)
    scored_sha256: str | None = None
    #: model -> answers only a judge can score, in a run without one: in no figure, counted beside them
    unjudged: dict[str, int] = Field(default_factory=dict)


class ModelRow(BaseModel):
    """One model's figures per part (``figures[part name]``); ``kind`` measured or published."""

    model_config = ConfigDict(extra="forbid")

    model: str
    kind: str = "measured"
    source: str = ""
    figures: dict[str, list[ProfileFigure]] = Field(default_factory=dict)


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = PROFILE_SCHEMA_VERSION
    vidaudit_version: str
    created_at: str
    budget: str
    models: list[str]
    parts: list[PartInfo]
    rows: list[ModelRow]
    published: list[ModelRow] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def part(self, name: str) -> PartInfo | None:
        return next((p for p in self.parts if p.name == name), None)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def load_profile(path: str | Path) -> tuple[Profile, Path]:
    """A profile from ``profile.json`` or an audit dir holding one; a DataError naming the file otherwise."""
    p = Path(path)
    if p.is_dir():
        p = p / PROFILE_JSON
    try:
        return Profile.model_validate(
            json.loads(p.read_text(encoding="utf-8"), object_pairs_hook=distinct_keys)
        ), p.parent
    except FileNotFoundError:
        raise DataError(
            f"{path}: no {PROFILE_JSON}; pass an audit dir written by `vidaudit audit` or its profile.json"
        ) from None
    except (OSError, ValueError, DataError) as e:
        raise DataError(f"{p}: not a vidaudit profile ({str(e).splitlines()[0]}); re-run `vidaudit audit`") from None


def merge_published(
    rows: dict[str, ModelRow], part: str, published: dict[str, list[ProfileFigure]], source: str
) -> None:
    """Add one part's published figures to the published rows (one row per paper model name)."""
    for model, figs in published.items():
        row = rows.setdefault(model, ModelRow(model=model, kind="published", source=source))
        if source and source not in row.source.split("; "):
            row.source = f"{row.source}; {source}" if row.source else source
        row.figures[part] = list(figs)


def as_json(profile: Profile) -> dict[str, Any]:
    return profile.model_dump(mode="json")
