"""One ``vidaudit run``: validate everything up front, then execute the plan into a run dir."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidaudit.core.contract.suite import Suite
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.manifest import dataset_suite, load_samples
from vidaudit.core.registry import get_suite
from vidaudit.core.types import Condition, ModelSpec, Presentation, Usage
from vidaudit.models.base import Capabilities, ModelAdapter, request_options
from vidaudit.models.factory import make_adapter
from vidaudit.run.budget import Budget
from vidaudit.run.lock import RunLock
from vidaudit.run.perturbed import PERTURB_CACHE
from vidaudit.run.plan import PlannedTrial, RequestBuilder, check_servable, check_videos, effective_fps, plan
from vidaudit.run.runconfig import BudgetConfig, RunConfig, open_run_config
from vidaudit.run.snapshot import update_snapshot
from vidaudit.run.store import RunStore
from vidaudit.run.summary import RunSummary

#: ``dispatch(adapters, suite=NAME, samples=BY_ID, model_options=...)``: an async context manager giving
#: the adapters the executor calls (same labels, specs, capabilities and request options); one with a
#: ``prerender(planned, builder)`` method (Ray) renders the plan's perturbed videos before any trial
AdapterDispatch = Callable[..., AbstractAsyncContextManager[dict[str, Any]]]

#: output tokens assumed per call for budgets when the settings send no token limit (provider defaults)
UNLIMITED_OUTPUT_ESTIMATE = 4096


@dataclass
class DryRunRow:
    model: str
    condition: str
    trials: int = 0
    frames: int = 0
    est_tokens: int = 0
    est_cost_usd: float | None = 0.0


@dataclass
class RunOutcome:
    run_dir: Path
    summary: RunSummary | None
    dry_run: list[DryRunRow] = field(default_factory=list)
    #: a sequential design's figures (``run_waves``), None for the full design
    design: dict[str, Any] | None = None


def _estimate(p: PlannedTrial, caps: Capabilities) -> tuple[int, float | None]:
    from vidaudit.models.pricing import cost_usd, estimate_request_tokens

    cond, v, spec = p.trial.condition, p.sample.video, p.trial.model
    if caps.synthetic:
        return 0, 0.0  # baselines: no tokens, no cost
    n = len(p.selection)
    native = cond.presentation is Presentation.NATIVE
    provider = spec.provider if spec.provider in ("openai", "gemini", "anthropic") else "open"
    if spec.provider == "openai" and spec.base_url:
        provider = "open"
    tokens_in = estimate_request_tokens(0 if native else n, v.width, v.height, len(p.prompt.text) + 100,
                                        video_seconds=v.duration_s if native else 0,
                                        video_fps=effective_fps(p.selection, v.duration_s) if native else 0,
                                        provider=provider)
    out = spec.settings.max_tokens or UNLIMITED_OUTPUT_ESTIMATE
    usage = Usage(input_tokens=tokens_in, output_tokens=out)
    cost = 0.0 if caps.local else cost_usd(spec, usage)
    return tokens_in + out, cost


def load_suite_samples(suite: Suite, data: Path, limit: int | None) -> list:
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be a positive number of samples, got {limit}")
    samples = load_samples(data)
    if not samples:
        raise DataError(f"{data} holds no samples; generate a dataset first (vidaudit generate {suite.name} ...)")
    other = next((x for x in samples if x.suite != suite.name), None)
    if other is not None:
        raise DataError(f"{data} holds samples of the {other.suite!r} suite (e.g. {other.sample_id}), not "
                        f"{suite.name!r}; run it with `vidaudit run {other.suite}` or point --data at a "
                        f"{suite.name} dataset")
    suite.check_samples(samples, str(data))
    return samples[:limit] if limit else samples


def reads_video(spec: ModelSpec) -> bool:
    """False for providers that declare ``needs_video = False`` (``simulated``): no video file is checked or read."""
    from vidaudit.core.registry import resolve

    return bool(getattr(resolve("providers", spec.provider), "needs_video", True))


def prepare_run(data: Path, models: Sequence[ModelSpec], conditions: Sequence[Condition], *, suite: str | None = None,
                limit: int | None = None, model_options: dict[str, dict[str, Any]] | None = None,
                check_files: bool = True, judge: ModelSpec | None = None, allow_external_videos: bool = False
                ) -> tuple[list[PlannedTrial], dict[str, ModelAdapter], Any]:
    """Load, validate and plan; builds adapters (no call is made). Raises on anything wrong.

    ``suite``: None runs the dataset's own suite (``core.manifest.dataset_suite``)."""
    s = get_suite(suite or dataset_suite(data))
    if not models:
        raise ConfigError("no model given; add --model SPEC (e.g. --model oracle)")
    if not conditions:
        raise ConfigError("no condition given; add --condition native (or frames@K, keyframes)")
    samples = load_suite_samples(s, Path(data), limit)
    if check_files and any(reads_video(m) for m in models):
        check_videos(samples, Path(data), allow_external=True if allow_external_videos else None)
    by_id = {x.sample_id: x for x in samples}
    adapters: dict[str, ModelAdapter] = {}
    for m in models:
        if m.label in adapters:
            raise ConfigError(f"model {m.label} is listed twice")
        adapters[m.label] = make_adapter(m, samples=by_id, suite=s, options=(model_options or {}).get(m.provider))
    if judge is not None:
        adapters = with_judge(adapters, judge, suite=s, samples=by_id, model_options=model_options)
    caps = {k: a.capabilities for k, a in adapters.items()}
    opts = {k: request_options(a) for k, a in adapters.items()}
    planned = plan(samples, conditions, models, suite=s, caps_by_model=caps, options_by_model=opts)
    check_servable(planned, caps)
    return planned, adapters, caps


def with_judge(adapters: dict[str, Any], judge: ModelSpec, *, suite: Suite, samples: dict[str, Any],
               model_options: dict[str, dict[str, Any]] | None) -> dict[str, Any]:
    """Every model wrapped so that the suite's judge prompt goes to ``judge`` after each answer."""
    from vidaudit.models.judged import JudgedAdapter

    if not suite.judges_any(list(samples.values())):
        raise ConfigError(f"the {suite.name} suite asks no judge for these samples (their answers are parsed); "
                          "drop --judge")
    judge_adapter = make_adapter(judge, samples=samples, suite=suite, options=(model_options or {}).get(judge.provider))
    return {k: JudgedAdapter(a, judge_adapter, suite=suite, samples=samples) for k, a in adapters.items()}


async def close_adapters(adapters: dict[str, Any]) -> None:
    """Close every model, then each judge once (judges are shared by the models they judge)."""
    judges = {id(j): j for a in adapters.values() if (j := getattr(a, "judge", None)) is not None}
    for a in adapters.values():
        await a.aclose()
    for j in judges.values():
        await j.aclose()


def dry_run_rows(planned: Sequence[PlannedTrial], caps: dict[str, Any]) -> list[DryRunRow]:
    rows: dict[tuple[str, str], DryRunRow] = {}
    for p in planned:
        key = (p.trial.model.label, p.trial.condition.id)
        row = rows.setdefault(key, DryRunRow(*key))
        row.trials += 1
        row.frames += len(p.selection)
        tokens, cost = _estimate(p, caps[key[0]])
        row.est_tokens += tokens
        row.est_cost_usd = None if cost is None or row.est_cost_usd is None else row.est_cost_usd + cost
    return list(rows.values())


def execute(data: Path, out: Path, models: Sequence[ModelSpec], conditions: Sequence[Condition], *,
            suite: str | None = None, max_attempts: int = 3, max_cost_usd: float | None = None,
            max_tokens: int | None = None, dry_run: bool = False, limit: int | None = None, on_progress=None,
            model_options: dict[str, dict[str, Any]] | None = None, judge: ModelSpec | None = None,
            design: str = "full", rule: str | None = None,
            dispatch: AdapterDispatch | None = None, allow_external_videos: bool = False) -> RunOutcome:
    """Plan and run (or, with ``dry_run``, only count) every trial into ``out``.

    ``design`` other than ``"full"`` asks the suite for a sequential design (``Suite.sequential_design``) that
    chooses the trials wave by wave (``vidaudit.run.waves``); ``rule`` is that design's decision rule.
    ``dispatch`` (e.g. ``run.ray_executor.RayDispatch``) swaps the adapters for adapter-shaped proxies
    that call elsewhere while the run lasts; the executor, the store and the audit log stay here.
    ``allow_external_videos`` lets sample videos lie outside ``data`` (see ``run.plan.check_videos``).
    """
    data, out = Path(data), Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; pass a directory for the run")
    if not isinstance(max_attempts, int) or max_attempts < 1:
        raise ConfigError(f"--max-attempts must be an integer >= 1, got {max_attempts!r}")
    for name, value in (("--max-cost-usd", max_cost_usd), ("--max-tokens", max_tokens)):
        if value is not None and not (value >= 0 and value != float("inf")):
            raise ConfigError(f"{name} must be a finite number >= 0, got {value}")
    if design == "full" and rule is not None:
        raise ConfigError(f"--rule {rule} belongs to a sequential design; add --design adaptive or drop --rule")
    suite = suite or dataset_suite(data)  # None: the dataset's own suite
    planned, adapters, caps = prepare_run(data, models, conditions, suite=suite, limit=limit,
                                          model_options=model_options, check_files=not dry_run, judge=judge,
                                          allow_external_videos=allow_external_videos)
    seq = None if design == "full" else get_suite(suite).sequential_design(design, rule, planned)
    if dry_run:
        return RunOutcome(out, None, dry_run_rows(planned, caps))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create the run dir {out}: {e.strerror}; pass a writable --out") from None
    with RunLock(out):
        return _execute_locked(data, out, planned, adapters, caps, models, conditions, suite=suite,
                               max_attempts=max_attempts, max_cost_usd=max_cost_usd, max_tokens=max_tokens,
                               limit=limit, on_progress=on_progress, model_options=model_options, judge=judge,
                               design=seq, dispatch=dispatch)


def _execute_locked(data: Path, out: Path, planned: list[PlannedTrial], adapters: dict[str, ModelAdapter],
                    caps: dict[str, Capabilities], models: Sequence[ModelSpec], conditions: Sequence[Condition], *,
                    suite: str, max_attempts: int, max_cost_usd: float | None, max_tokens: int | None,
                    limit: int | None, on_progress,
                    model_options: dict[str, dict[str, Any]] | None = None,
                    judge: ModelSpec | None = None, design: Any = None,
                    dispatch: AdapterDispatch | None = None) -> RunOutcome:
    update_snapshot(out, {p.sample.sample_id: p.sample for p in planned}.values())
    config = RunConfig.new(suite=suite, data_dir=str(data.resolve()), models=list(models),
                           conditions=list(conditions), max_attempts=max_attempts,
                           budget=BudgetConfig(max_cost_usd=max_cost_usd, max_tokens=max_tokens),
                           options=run_options(limit, judge, design), model_options=model_options)
    effective = open_run_config(out, config)
    budget = None
    if max_cost_usd is not None or max_tokens is not None:
        if max_cost_usd is not None:
            unknown = sorted({p.trial.model.label for p in planned if _estimate(p, caps[p.trial.model.label])[1] is None})
            if unknown:
                raise ConfigError(f"--max-cost-usd cannot be enforced: no price is known for {', '.join(unknown)}; "
                                  "add it to a prices YAML or use --max-tokens")

        def estimate(p: PlannedTrial) -> tuple[int, float]:
            tokens, cost = _estimate(p, caps[p.trial.model.label])
            return tokens, cost or 0.0

        budget = Budget(max_cost_usd=max_cost_usd, max_tokens=max_tokens, estimate=estimate)
    builder = RequestBuilder(data, perturb_cache=out / PERTURB_CACHE,
                             pixel_free=[m.label for m in models if not reads_video(m)])

    async def go() -> tuple[RunSummary, dict[str, Any] | None]:
        from vidaudit.run.executor import run_trials
        from vidaudit.run.waves import run_waves

        try:
            with RunStore(out) as store:
                async def trials(use: dict[str, Any]) -> tuple[RunSummary, dict[str, Any] | None]:
                    if design is not None:
                        return await run_waves(planned, design, use, store, builder, suite=get_suite(suite),
                                               max_attempts=max_attempts, budget=budget, on_progress=on_progress)
                    return await run_trials(planned, use, store, builder, max_attempts=max_attempts, budget=budget,
                                            on_progress=on_progress), None

                if dispatch is None:
                    return await trials(adapters)
                samples = {p.sample.sample_id: p.sample for p in planned}
                async with dispatch(adapters, suite=suite, samples=samples, model_options=model_options) as remote:
                    prerender = getattr(dispatch, "prerender", None)  # Ray: perturbed videos as tasks, first
                    if prerender is not None:
                        await asyncio.to_thread(prerender, planned, builder)
                    return await trials(remote)
        finally:
            await close_adapters(adapters)

    summary, figures = asyncio.run(go())
    if figures is not None:
        effective.model_copy(update={"design": figures}).save(out)
    return RunOutcome(out, summary, design=figures)


def run_options(limit: int | None, judge: ModelSpec | None, design: Any = None) -> dict[str, Any]:
    """The run's suite options in run.json (a resumed run must ask for the same: limit, judge, design)."""
    out: dict[str, Any] = {}
    if limit:
        out["limit"] = limit
    if judge is not None:
        out["judge"] = judge.model_dump(mode="json")
    if design is not None:
        out |= {"design": design.info()["name"], "rule": design.info()["rule"]}
    return out


def group_counts(planned: Sequence[PlannedTrial]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for p in planned:
        out[p.trial.model.label] += 1
    return dict(out)
