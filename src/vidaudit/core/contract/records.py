"""One typed score record per trial, for runs and for ``score-responses`` alike (``scores.jsonl``).

Every line carries the identifiers (trial, sample, model, condition), the trial's status and
``correct`` whatever the suite; the suite's own per-trial numbers travel in ``metrics`` and the
sample parameters it aggregates over in ``params``. ``correct`` is None exactly when the trial was
not scored (its status is not ``ok``): aggregates that use every planned trial count it as wrong.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SCORE_SCHEMA_VERSION", "ParseResult", "ScoreRecord", "TrialScore",
]

SCORE_SCHEMA_VERSION = 1


class ParseResult(BaseModel):
    """What a parser read: the value, the method that read it and the span of text (None: no span)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: Any = None
    method: str
    span: tuple[int, int] | None = None

    @property
    def ok(self) -> bool:
        return self.method != "unparseable"


class TrialScore(BaseModel):
    """What a suite's ``score`` returns for one response: correctness, the parse and its metrics."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    correct: bool | None
    parse: ParseResult | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)


class ScoreRecord(BaseModel):
    """One line of ``scores.jsonl``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SCORE_SCHEMA_VERSION
    trial_id: str
    sample_id: str
    suite: str
    model: str
    model_role: str = "model"          # model | oracle | chance | constant | observer | reference (blind) | human
    condition: str
    group_id: str                      # bootstrap cluster: samples that share a source video
    status: str                        # ok | api_error | refused | timeout | pending
    correct: bool | None
    parse: ParseResult | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None

    @property
    def scored(self) -> bool:
        return self.status == "ok"

    def flat(self) -> dict[str, Any]:
        """One flat dict (params, then metrics, then the record's own fields) for suites that aggregate dicts."""
        out: dict[str, Any] = {**self.params, **self.metrics}
        out.update({"trial_id": self.trial_id, "sample_id": self.sample_id, "suite": self.suite,
                    "model": self.model, "model_role": self.model_role, "condition": self.condition,
                    "group_id": self.group_id, "status": self.status, "correct": self.correct,
                    "usage": dict(self.usage), "cost_usd": self.cost_usd})
        if self.parse is not None:
            out.update({"predicted": self.parse.value, "parse_method": self.parse.method,
                        "parse_span": list(self.parse.span) if self.parse.span else None})
        else:
            out.setdefault("parse_method", None)
        return out
