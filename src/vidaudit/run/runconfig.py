"""``run.json``: what a run directory was asked to do, and with which code.

Written atomically. It records the suite, data dir, models (ModelSpec JSON), conditions (Condition
JSON), suite options, max attempts and budget, plus the library versions and the git revision of
vidaudit at creation; every later session that opens the run appends its own versions to
``sessions``. It never holds an API key (checked before writing).

Re-opening a run dir with a different config is an error unless the new config only adds trials:
the suite, data dir and options must be equal, and every model and condition of the stored config
must still be present; new models and conditions may be added. ``max_attempts`` and the budget
may change between sessions (they govern calls, not what a trial is).
"""

from __future__ import annotations

import importlib.metadata
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.fileio import write_json_atomic
from vidaudit.core.types import Condition, ModelSpec
from vidaudit.core.versions import library_versions, source_revision
from vidaudit.run.secrets import check_no_secrets

RUN_JSON = "run.json"
#: 2: trial ids cover the rendered prompt, the frames selected and the adapter options (vidaudit 0.2)
RUN_SCHEMA_VERSION = 2


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def vidaudit_version() -> str | None:
    try:
        return importlib.metadata.version("vidaudit")
    except importlib.metadata.PackageNotFoundError:
        return None


def collect_versions() -> dict[str, str]:
    out = library_versions()
    v = vidaudit_version()
    if v:
        out["vidaudit"] = v
    return out


class BudgetConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    max_cost_usd: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)


class SessionInfo(BaseModel):
    """The code that ran one session of a run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    started_at: str
    versions: dict[str, str]
    git_revision: str | None = None
    git_dirty: bool | None = None

    @classmethod
    def current(cls) -> SessionInfo:
        head, dirty = source_revision()
        return cls(started_at=_now(), versions=collect_versions(), git_revision=head, git_dirty=dirty)


class RunConfig(BaseModel):
    """The contents of ``run.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = RUN_SCHEMA_VERSION
    suite: str
    data_dir: str
    models: tuple[ModelSpec, ...]
    conditions: tuple[Condition, ...]
    options: dict[str, Any] = Field(default_factory=dict)
    #: adapter options per provider (``--adapter-option gemini.thinking_budget=0``): they change requests
    model_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    max_attempts: int = Field(default=3, ge=1)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    versions: dict[str, str] = Field(default_factory=dict)
    git_revision: str | None = None
    git_dirty: bool | None = None
    created_at: str = Field(default_factory=_now)
    sessions: tuple[SessionInfo, ...] = ()
    #: a sequential design's figures (``--design``; its name and rule are in ``options``), rewritten by each session
    design: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def new(
        cls,
        *,
        suite: str,
        data_dir: str | Path,
        models: list[ModelSpec],
        conditions: list[Condition],
        options: dict[str, Any] | None = None,
        max_attempts: int = 3,
        budget: BudgetConfig | None = None,
        model_options: dict[str, dict[str, Any]] | None = None,
    ) -> RunConfig:
        """A config stamped with the current versions and git revision."""
        info = SessionInfo.current()
        return cls(
            suite=suite,
            data_dir=str(data_dir),
            models=tuple(models),
            conditions=tuple(conditions),
            options=options or {},
            model_options=model_options or {},
            max_attempts=max_attempts,
            budget=budget or BudgetConfig(),
            versions=info.versions,
            git_revision=info.git_revision,
            git_dirty=info.git_dirty,
            created_at=info.started_at,
            sessions=(info,),
        )

    @classmethod
    def load(cls, run_dir: str | Path) -> RunConfig:
        path = Path(run_dir) / RUN_JSON
        if not path.is_file():
            raise DataError(f"no {RUN_JSON} in {run_dir}; is this a run directory?")
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as e:
            raise DataError(f"{path} is not a valid run config: {e}") from e

    def save(self, run_dir: str | Path) -> Path:
        data = self.model_dump(mode="json")
        check_no_secrets(data, f"{RUN_JSON} in {run_dir}")
        path = Path(run_dir) / RUN_JSON
        write_json_atomic(path, data)
        return path

    def check_extends(self, old: RunConfig) -> None:
        """Raise ConfigError unless ``self`` only adds trials to ``old``."""
        problems = []
        if self.suite != old.suite:
            problems.append(f"suite {old.suite!r} -> {self.suite!r}")
        if Path(self.data_dir).resolve() != Path(old.data_dir).resolve():
            problems.append(f"data dir {old.data_dir!r} -> {self.data_dir!r}")
        if self.options != old.options:
            problems.append(f"options {old.options!r} -> {self.options!r}")
        if self.model_options != old.model_options:
            problems.append(f"adapter options {old.model_options!r} -> {self.model_options!r}")
        gone_models = [f"{m.label} {m.settings.model_dump_json()}" for m in old.models if m not in self.models]
        if gone_models:
            problems.append(f"models removed or changed: {', '.join(gone_models)}")
        gone_conditions = [c.id for c in old.conditions if c not in self.conditions]
        if gone_conditions:
            problems.append(f"conditions removed or changed: {', '.join(gone_conditions)}")
        if problems:
            raise ConfigError(
                "this run dir was made with a different config (" + "; ".join(problems) + "). A "
                "resumed run may only add models or conditions; use a new run dir for a "
                "different experiment, or repeat the original settings"
            )

    def merged_into(self, old: RunConfig) -> RunConfig:
        """``old`` extended with this config's new models and conditions, limits, and this session."""
        self.check_extends(old)
        models = old.models + tuple(m for m in self.models if m not in old.models)
        conditions = old.conditions + tuple(c for c in self.conditions if c not in old.conditions)
        return old.model_copy(
            update={
                "models": models,
                "conditions": conditions,
                "max_attempts": self.max_attempts,
                "budget": self.budget,
                "sessions": old.sessions + self.sessions[-1:],
            }
        )


def open_run_config(run_dir: str | Path, config: RunConfig) -> RunConfig:
    """Write ``config`` to a new run dir, or check it against and merge it into the existing one."""
    path = Path(run_dir) / RUN_JSON
    if path.exists():
        old = RunConfig.load(run_dir)
        if old.schema_version < RUN_SCHEMA_VERSION:
            raise ConfigError(
                f"{run_dir} was made by an older vidaudit (run schema {old.schema_version}, this one "
                f"writes {RUN_SCHEMA_VERSION}): its trials are keyed differently, so resuming would "
                "call every trial again. It can still be reported (`vidaudit report RUN`); to add "
                "trials, start a new run dir"
            )
        effective = config.merged_into(old)
    else:
        effective = config
    effective.save(run_dir)
    return effective
