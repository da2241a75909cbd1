"""What a suite gives ``vidaudit audit``: the datasets it runs at a budget, and its headline figures.

Typed on the ground floor so that a suite can return them (its ``Audit`` role: ``audit_parts``, ``profile_figures``)
and the audit tool can render them without knowing any suite: an accuracy with its Wilson interval and its
k / n, or an operating boundary (a tested value, or ``"<1"`` when even the first fails).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True)
class AuditPart:
    """One dataset ``vidaudit audit`` generates and runs for a suite at a budget: a preset (of one probe), the
    suite's documented default conditions, and the pixel observer run beside the models (None: none).

    ``identity()`` is the dataset's content key: the same part at any budget or in any audit reuses one
    generated dataset."""

    name: str
    preset: str
    conditions: tuple[str, ...]
    probe: str | None = None
    seeds: int | None = None
    observer: str | None = None

    def identity(self, suite: str) -> dict[str, Any]:
        return {"suite": suite, "probe": self.probe, "preset": self.preset, "seeds": self.seeds}


class ProfileFigure(BaseModel):
    """One headline number: ``value`` is a share in [0, 1] (``kind`` accuracy) or a boundary (a number or text)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Literal["accuracy", "boundary", "text"] = "accuracy"
    value: int | float | str | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    k: int | None = None
    n: int | None = None
    note: str = ""


class PartFigures(BaseModel):
    """What one audit part contributes to the profile: figures per model, the part's reference points, and
    the papers' published figures per paper model name (never measured here)."""

    model_config = ConfigDict(extra="forbid")

    by_model: dict[str, list[ProfileFigure]] = Field(default_factory=dict)
    #: figure name -> the share a uniform guesser scores (absent: no chance level for that figure)
    chance: dict[str, float] = Field(default_factory=dict)
    human_ceiling: ProfileFigure | None = None
    published: dict[str, list[ProfileFigure]] = Field(default_factory=dict)
    published_source: str = ""
    notes: list[str] = Field(default_factory=list)
