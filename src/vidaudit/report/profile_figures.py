"""Headline figures a suite reads out of its own ``report.json`` for a model profile (``vidaudit audit``).

Typed here, below the suites, so that a suite can return them (``Suite.profile_figures``) and the audit
tool can render them without knowing any suite: an accuracy with its Wilson interval and its k / n, or
an operating boundary (a tested value, or ``"<1"`` when even the first fails).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from vidaudit.score.stats import wilson_interval


class Figure(BaseModel):
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

    by_model: dict[str, list[Figure]] = Field(default_factory=dict)
    #: figure name -> the share a uniform guesser scores (absent: no chance level for that figure)
    chance: dict[str, float] = Field(default_factory=dict)
    human_ceiling: Figure | None = None
    published: dict[str, list[Figure]] = Field(default_factory=dict)
    published_source: str = ""
    notes: list[str] = Field(default_factory=list)


def accuracy(name: str, k: int, n: int, note: str = "") -> Figure:
    """k of n correct with its 95% Wilson interval (n = 0: no value, never a made-up 0)."""
    if n <= 0:
        return Figure(name=name, k=0, n=0, note=note or "no trial")
    lo, hi = wilson_interval(k, n)
    return Figure(name=name, value=k / n, ci_low=lo, ci_high=hi, k=k, n=n, note=note)


def published(name: str, percent: float | None) -> Figure:
    """A paper's reported percentage as a share (no interval: the papers print none)."""
    return Figure(name=name, value=None if percent is None else percent / 100.0, note="published")
