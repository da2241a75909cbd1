"""What one run session asks for, in one typed object: :class:`RunRequest`.

It is built once, where a request comes from: the command line's flags and a run config YAML
(``run.cli_support.resolve_run_request``), an existing run dir (``--resume``: its ``run.json``), ``vidaudit audit``
(one per part) and ``vidaudit demo``; ``run.session.execute`` takes it whole. How the session runs (a dry run,
the progress display, a Ray dispatch) is not part of it: those are ``execute``'s keywords. Its planning part is a
:class:`PlanRequest` (what ``session.prepare_stream`` takes), so a plan can be made without a run dir.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import Condition, ModelSpec

__all__ = ["PlanRequest", "RunRequest"]


class PlanRequest(BaseModel):
    """What planning a run takes (``session.prepare_stream``): the data, the models and conditions, and the settings
    that decide the plan and its adapters. A :class:`RunRequest` is one, with where and how the session runs it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: the dataset dir (``vidaudit generate``'s output)
    data: Path
    models: tuple[ModelSpec, ...]
    conditions: tuple[Condition, ...]
    #: None: the suite the dataset names
    suite: str | None = None
    #: provider -> adapter options (``--adapter-option PROVIDER.KEY=VALUE``)
    model_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: the model that judges answers the suite cannot parse (``--judge``)
    judge: ModelSpec | None = None
    #: only the first N samples
    limit: int | None = None
    #: open sample videos that lie outside ``data`` (``run.servable.check_videos``)
    allow_external_videos: bool = False

    @classmethod
    def build(cls, **fields: Any) -> Self:
        """A request from loose fields (a config file's, a caller's keywords); a field of the wrong type is a
        one-line ConfigError naming it, not a pydantic traceback."""
        try:
            return cls(**fields)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "run request"
            raise ConfigError(f"run request: {where}: {first['msg']} (got {first.get('input')!r})") from None


class RunRequest(PlanRequest):
    """The data, the run dir, the models and conditions, and every setting of one run session."""

    #: the run dir: store, run.json, and what score and report write later
    out: Path
    #: attempts per trial, counting earlier sessions
    max_attempts: int = 3
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    #: ``full`` (every trial) or the name of a suite's sequential design, with its decision rule
    design: str = "full"
    rule: str | None = None
    #: give every trial not yet ok a new round of ``max_attempts`` attempts
    retry_errors: bool = False

    @field_validator("max_attempts", mode="before")
    @classmethod
    def _attempts(cls, v: object) -> object:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"--max-attempts must be an integer >= 1, got {v!r}")
        return v

    @field_validator("max_cost_usd", "max_tokens", mode="before")
    @classmethod
    def _budget(cls, v: object, info: ValidationInfo) -> object:
        flag = "--max-cost-usd" if info.field_name == "max_cost_usd" else "--max-tokens"
        if v is not None and not (
            isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 and math.isfinite(v)
        ):
            raise ConfigError(f"{flag} must be a finite number >= 0, got {v}")
        return v

    @model_validator(mode="after")
    def _design(self) -> Self:
        if self.out.exists() and not self.out.is_dir():
            raise ConfigError(f"--out {self.out} is a file; pass a directory for the run")
        if self.design == "full" and self.rule is not None:
            raise ConfigError(
                f"--rule {self.rule} belongs to a sequential design; add --design adaptive or drop --rule"
            )
        if self.design != "full" and self.retry_errors:
            raise ConfigError(
                f"--retry-errors works with the full design; the {self.design} design counts a trial "
                "out of attempts as wrong. Raise --max-attempts and resume instead"
            )
        return self
