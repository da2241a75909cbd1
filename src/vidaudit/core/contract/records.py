"""One typed score record per trial, for runs and for ``score-responses`` alike (``scores.jsonl``).

Every line carries the identifiers (trial, sample, model, condition), the trial's status and
``correct`` whatever the suite; the suite's own per-trial numbers travel in ``metrics`` and the
sample parameters it aggregates over in ``params``. ``correct`` is None when the trial was not scored:

- its status is not ``ok`` (the call failed): aggregates over every planned trial count it as wrong;
- it *needs a judge* (``needs_judge``): the answer came back, but only a judge can score it and the run had
  none (``vidaudit run --judge SPEC``); the suite says so with :meth:`TrialScore.unjudged`. Such a trial is in
  no figure's denominator, as a pass or a fail, and is counted beside every figure instead, the same way in
  the terminal, the report, the profile and ``compare`` (:func:`counted` is that one rule).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SCORE_SCHEMA_VERSION = 1
#: the parse method of an answer only a judge can score, in a run that had no judge (``correct`` None)
NEEDS_JUDGE = "not_judged"


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

    @classmethod
    def unjudged(cls, metrics: dict[str, Any] | None = None) -> TrialScore:
        """An answer only a judge can score, in a run without one: not scored, counted apart (``NEEDS_JUDGE``)."""
        return cls(correct=None, parse=ParseResult(method=NEEDS_JUDGE), metrics=dict(metrics or {}))


class ScoreRecord(BaseModel):
    """One line of ``scores.jsonl``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SCORE_SCHEMA_VERSION
    trial_id: str
    sample_id: str
    suite: str
    model: str
    model_role: str = "model"  # model | oracle | chance | constant | observer | reference (blind) | human
    condition: str
    group_id: str  # bootstrap cluster: samples that share a source video
    status: str  # ok | api_error | refused | timeout | pending
    correct: bool | None
    parse: ParseResult | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None

    @property
    def scored(self) -> bool:
        return self.status == "ok"

    @property
    def needs_judge(self) -> bool:
        """Answered, but only a judge can score it and the run had none: in no denominator, counted apart."""
        return (
            self.status == "ok" and self.correct is None and self.parse is not None and self.parse.method == NEEDS_JUDGE
        )

    def flat(self) -> dict[str, Any]:
        """One flat dict (params, then metrics, then the record's own fields) for suites that aggregate dicts."""
        out: dict[str, Any] = {**self.params, **self.metrics}
        out.update(
            {
                "trial_id": self.trial_id,
                "sample_id": self.sample_id,
                "suite": self.suite,
                "model": self.model,
                "model_role": self.model_role,
                "condition": self.condition,
                "group_id": self.group_id,
                "status": self.status,
                "correct": self.correct,
                "usage": dict(self.usage),
                "cost_usd": self.cost_usd,
            }
        )
        if self.parse is not None:
            out.update(
                {
                    "predicted": self.parse.value,
                    "parse_method": self.parse.method,
                    "parse_span": list(self.parse.span) if self.parse.span else None,
                }
            )
        else:
            out.setdefault("parse_method", None)
        return out


@dataclass(frozen=True)
class Counted:
    """What a figure counts, by the one rule: ``k`` correct of ``n`` (every planned trial a scorer could score;
    a failed call is wrong), and ``unjudged`` trials left out because they need a judge the run did not have."""

    k: int = 0
    n: int = 0
    unjudged: int = 0

    @property
    def rate(self) -> float | None:
        return self.k / self.n if self.n else None

    def __add__(self, other: Counted) -> Counted:
        return Counted(k=self.k + other.k, n=self.n + other.n, unjudged=self.unjudged + other.unjudged)


def counted(records: Iterable[ScoreRecord]) -> Counted:
    """The one rule for what a figure counts (terminal, report, profile, ``compare``): planned trials, a failed
    call counted wrong, a trial that needs a judge the run did not have left out and counted apart."""
    k = n = unjudged = 0
    for r in records:
        if r.needs_judge:
            unjudged += 1
            continue
        n += 1
        k += r.correct is True
    return Counted(k=k, n=n, unjudged=unjudged)


def unjudged_text(unjudged: int) -> str:
    """What stands beside a figure that left trials out: ``28 unjudged, need --judge`` ('' for none)."""
    return f"{unjudged} unjudged, need --judge" if unjudged else ""
