"""One ``vidaudit audit``: every suite's parts at a budget, generated (or reused by content), estimated, run,
reported, and read back into one profile. Each step is the existing stage; re-running resumes every run.

Layout of ``OUT``::

    data/SUITE-PART-PRESET-KEY/   a generated dataset, KEY = sha256 of the part's identity (reused by content)
    runs/PART/                    a run dir per part (all models together): store, scores, report/
    profile.json, profile.md, profile.html
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidaudit.core.contract.profile import AuditPart
from vidaudit.core.contract.roles import Audit
from vidaudit.core.contract.suite import Suite
from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import sha256_json
from vidaudit.core.manifest import load_samples
from vidaudit.core.registry import get_suite, names, target
from vidaudit.core.types import ModelSpec
from vidaudit.report.stage import report_run
from vidaudit.run.conditions import parse_condition
from vidaudit.run.request import RunRequest
from vidaudit.run.session import execute
from vidaudit.tools.audit.budgets import check_budget
from vidaudit.tools.audit.build import write_profile
from vidaudit.tools.audit.datasets import MARKER, ensure

__all__ = [
    "MARKER",
    "AuditOutcome",
    "CostRow",
    "PlannedPart",
    "dataset_key",
    "ensure_dataset",
    "plan_parts",
    "run_audit",
]

Log = Callable[[str], None]


@dataclass
class PlannedPart:
    suite: Suite
    part: AuditPart
    key: str
    data_dir: Path
    run_dir: Path
    conditions: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return self.part.name if self.part.name == self.suite.name else f"{self.suite.name}/{self.part.name}"


@dataclass
class CostRow:
    model: str
    part: str
    trials: int
    est_tokens: int
    est_cost_usd: float | None


@dataclass
class AuditOutcome:
    out: Path
    parts: list[PlannedPart]
    costs: list[CostRow]
    paths: dict[str, Path] = field(default_factory=dict)
    summaries: dict[str, Any] = field(default_factory=dict)
    stopped: str | None = None


def audit_suites(only: Sequence[str] | None = None) -> list[Suite]:
    """The registered suites that declare audit parts (``only``: these names, checked)."""
    known = names("suites")
    for n in only or ():
        if n not in known:
            raise ConfigError(f"unknown suite {n!r} for --suite; choose from {', '.join(known)}")
    return [get_suite(n) for n in known if not only or n in only]


def plan_parts(
    budget: str, out: Path, *, data_root: Path | None = None, suites: Sequence[str] | None = None
) -> list[PlannedPart]:
    """Every part of every auditing suite at ``budget``, with its dataset dir (by content key) and run dir."""
    check_budget(budget)
    root = Path(data_root) if data_root is not None else Path(out) / "data"
    planned: list[PlannedPart] = []
    for s in audit_suites(suites):
        for part in s.audit.audit_parts(budget) if s.audit is not None else ():
            key = dataset_key(s, part)
            name = "-".join(x for x in (s.name, part.name if part.name != s.name else "", part.preset) if x)
            planned.append(PlannedPart(s, part, key, root / f"{name}-{key[:12]}", Path(out) / "runs" / part.name))
    if not planned:
        raise ConfigError("no registered suite declares audit parts (its audit role); nothing to audit")
    return planned


def dataset_key(suite: Suite, part: AuditPart) -> str:
    """A part's content key: the sha256 of its identity (suite, probe, preset and seeds), so that two budgets that
    differ only in their seeds never share a folder."""
    return sha256_json(part.identity(suite.name))


def ensure_dataset(
    p: PlannedPart,
    *,
    workers: int | None,
    log: Log,
    on_progress: Callable[[int, int], None] | None = None,
    hold: ExitStack | None = None,
) -> Path:
    """Reuse the part's dataset when its marker certifies it (audit/datasets.py), else (re)generate it, under the
    data root's locks; ``hold`` keeps the folder from being deleted by another audit until it closes."""

    def generate() -> None:
        log(f"data  {p.label}: generating the {p.part.preset} preset into {p.data_dir}")
        Audit.of(p.suite).generate_part(p.part, p.data_dir, workers=workers, on_progress=on_progress)
        log(f"data  {p.label}: {p.suite.describe_samples(load_samples(p.data_dir))}")

    return ensure(p.data_dir, p.key, p.part.identity(p.suite.name), generate, log=log, label=p.label, hold=hold)


def _conditions(p: PlannedPart) -> list[Any]:
    return [parse_condition(c, p.suite.default_prompt) for c in p.conditions]


def _judge_for(p: PlannedPart, judge: ModelSpec | None) -> ModelSpec | None:
    """The judge, only for parts whose samples may need one (the run refuses a judge elsewhere)."""
    if judge is None:
        return None
    return judge if p.suite.judges_any(load_samples(p.data_dir)) else None


def _part_models(p: PlannedPart, models: Sequence[ModelSpec]) -> list[ModelSpec]:
    """What a part runs: the audited models, and beside them the part's pixel observer (once), so the estimate
    counts every trial the run will make."""
    out = list(models)
    if p.part.observer and p.part.observer not in {m.label for m in models}:
        out.append(ModelSpec.parse(p.part.observer))
    return out


def _part_request(p: PlannedPart, models: Sequence[ModelSpec], judge: ModelSpec | None, **settings: Any) -> RunRequest:
    """The run of one part, for its estimate and for the run itself: its data, run folder, conditions and suite,
    the judge where the part's samples need one, and ``settings`` (attempts, cost cap, model options)."""
    return RunRequest(
        data=p.data_dir,
        out=p.run_dir,
        models=tuple(models),
        conditions=tuple(_conditions(p)),
        suite=p.suite.name,
        judge=_judge_for(p, judge),
        **settings,
    )


def estimate(
    parts: Sequence[PlannedPart],
    models: Sequence[ModelSpec],
    judge: ModelSpec | None = None,
    model_options: dict[str, dict[str, Any]] | None = None,
) -> list[CostRow]:
    """The run stage's dry run of every part (nothing is called): trials, tokens and cost per model and part."""
    rows: list[CostRow] = []
    for p in parts:
        request = _part_request(p, _part_models(p, models), judge, model_options=model_options or {})
        res = execute(request, dry_run=True)
        per: dict[str, CostRow] = {}
        for r in res.dry_run:
            row = per.setdefault(r.model, CostRow(r.model, p.label, 0, 0, 0.0))
            row.trials += r.trials
            row.est_tokens += r.est_tokens
            row.est_cost_usd = (
                None if row.est_cost_usd is None or r.est_cost_usd is None else (row.est_cost_usd + r.est_cost_usd)
            )
        rows.extend(per.values())
    return rows


def total_cost(rows: Sequence[CostRow]) -> float | None:
    return None if any(r.est_cost_usd is None for r in rows) else sum(r.est_cost_usd or 0.0 for r in rows)


def check_cost(rows: Sequence[CostRow], max_cost_usd: float | None) -> None:
    """Refuse an audit whose estimate is over ``--max-cost-usd`` (or cannot be priced) before any call."""
    if max_cost_usd is None:
        return
    if not (max_cost_usd >= 0 and max_cost_usd != float("inf")):
        raise ConfigError(f"--max-cost-usd must be a finite number >= 0, got {max_cost_usd}")
    total = total_cost(rows)
    if total is None:
        unknown = sorted({r.model for r in rows if r.est_cost_usd is None})
        raise ConfigError(
            f"--max-cost-usd cannot be checked: no price is known for {', '.join(unknown)}; add it to "
            "a prices YAML or drop --max-cost-usd"
        )
    if total > max_cost_usd:
        raise ConfigError(
            f"the audit's estimated cost ${total:.2f} is over --max-cost-usd {max_cost_usd:.2f}; "
            "raise the limit, choose a smaller --budget, or audit fewer suites (--suite)"
        )


def parse_models(models: Sequence[str]) -> list[ModelSpec]:
    if not models:
        raise ConfigError("no model given; add --model SPEC (e.g. --model oracle)")
    specs: list[ModelSpec] = []
    for m in models:
        try:
            specs.append(ModelSpec.parse(m))
        except ValueError as e:
            raise ConfigError(f"--model {m!r}: {e}") from None
        target("providers", specs[-1].provider)  # an unknown provider is refused before any data is generated
    labels = [s.label for s in specs]
    dup = next((x for x in labels if labels.count(x) > 1), None)
    if dup:
        raise ConfigError(f"model {dup} is listed twice; drop one --model {dup}")
    return specs


def run_audit(
    models: Sequence[str],
    *,
    budget: str,
    out: str | Path,
    data_root: str | Path | None = None,
    suites: Sequence[str] | None = None,
    dry_run: bool = False,
    max_cost_usd: float | None = None,
    workers: int | None = None,
    judge: str | None = None,
    max_attempts: int = 3,
    log: Log = lambda _: None,
    on_costs: Callable[[list[CostRow]], None] | None = None,
    progress: Callable[[str], Any] | None = None,
    generating: Callable[[str], Any] | None = None,
    reporting: Callable[[str], Any] | None = None,
) -> AuditOutcome:
    """Generate (or reuse), estimate, run, report and profile. ``on_costs`` sees the estimate before any call;
    ``progress(label)`` returns a context manager giving an ``on_progress`` callback (a progress bar) for a part's
    trials, ``generating(label)`` one giving ``update(done, total)`` for its data, and ``reporting(label)`` one
    giving ``update(step, done, total)`` for its scoring and report (each step of an audit shows its progress)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; pass a directory for the audit")
    specs = parse_models(models)
    try:
        judge_spec = ModelSpec.parse(judge) if judge else None
    except ValueError as e:
        raise ConfigError(f"--judge {judge!r}: {e}") from None
    parts = plan_parts(budget, out, data_root=Path(data_root) if data_root else None, suites=suites)
    with ExitStack() as hold:  # every dataset stays locked for use (never deleted by another audit) until the end
        for p in parts:
            with generating(f"data {p.label}") if generating else nullcontext(None) as update:
                ensure_dataset(p, workers=workers, log=log, on_progress=update, hold=hold)
            p.conditions = tuple(Audit.of(p.suite).part_conditions(p.part, p.data_dir))
        with generating("estimating the cost") if generating else nullcontext(None):
            costs = estimate(parts, specs, judge_spec)
        if on_costs is not None:
            on_costs(costs)
        outcome = AuditOutcome(out, parts, costs)
        if dry_run:
            outcome.stopped = "dry run: nothing was called"
            return outcome
        check_cost(costs, max_cost_usd)
        spent = 0.0
        for p in parts:
            run_models = _part_models(p, specs)
            left = None if max_cost_usd is None else max(0.0, max_cost_usd - spent)
            log(
                f"run   {p.label}: {', '.join(m.label for m in run_models)} at {', '.join(p.conditions)} -> {p.run_dir}"
            )
            with progress(p.label) if progress else nullcontext(None) as bar:
                request = _part_request(p, run_models, judge_spec, max_attempts=max_attempts, max_cost_usd=left)
                res = execute(request, on_progress=bar)
            outcome.summaries[p.label] = res.summary
            if res.summary is not None:
                spent += res.summary.cost_usd
                if res.summary.stopped_early:
                    outcome.stopped = f"{p.label}: {res.summary.describe()}"
                    break
            with reporting(f"report {p.label}") if reporting else nullcontext(None) as steps:
                report_run(p.run_dir, rescore=True, progress=steps)  # the run may have grown since it was scored
        if outcome.stopped is None:
            outcome.paths = write_profile(out, budget, [m.label for m in specs], parts)
        return outcome
