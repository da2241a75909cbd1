"""One ``vidaudit run``: validate everything up front, then execute the plan into a run dir."""

from __future__ import annotations

import asyncio
import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from vidaudit.core.contract.roles import sequential_design
from vidaudit.core.contract.suite import Suite
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.gcpause import roomy_young_gc
from vidaudit.core.manifest import dataset_suite, load_samples
from vidaudit.core.registry import get_suite, resolve
from vidaudit.core.types import Condition, ModelSpec, Presentation, Sample, Status, Usage, VideoRef
from vidaudit.models.base import Capabilities, ModelAdapter, request_options
from vidaudit.models.errors_http import input_bound, output_bound
from vidaudit.models.factory import make_adapter
from vidaudit.models.http_base import for_dry_run
from vidaudit.models.judged import JudgedAdapter
from vidaudit.models.pricing import cost_usd, estimate_request_tokens
from vidaudit.run.backlog import Backlog, register_keys
from vidaudit.run.budget import Budget
from vidaudit.run.executor import CallOptions, run_backlog
from vidaudit.run.lock import RunLock
from vidaudit.run.perturbed import PERTURB_CACHE
from vidaudit.run.plan import PlannedTrial, PlanStream
from vidaudit.run.request import PlanRequest, RunRequest
from vidaudit.run.request_builder import RequestBuilder, effective_fps
from vidaudit.run.runconfig import BudgetConfig, RunConfig, open_run_config
from vidaudit.run.servable import check_videos
from vidaudit.run.snapshot import update_snapshot
from vidaudit.run.store.writer import RunStore
from vidaudit.run.summary import FailureCause, ProgressEvent, RunSummary, failure_causes
from vidaudit.run.waves import run_waves

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
    #: planned trials (of this session's plan) with an ok attempt in the store, from any session
    trials_ok: int = 0
    #: why the planned trials that are not ok failed: their latest attempts grouped by cause
    failures: list[FailureCause] = field(default_factory=list)

    @property
    def failed_trials(self) -> int:
        return sum(c.count for c in self.failures)


class CallShape(NamedTuple):
    """What decides a call's estimated input tokens. A plan has few distinct ones (its conditions times the sample
    shapes), so the estimate is computed once per shape (``_input_estimate``), not per trial."""

    spec: ModelSpec
    images: int
    width: int
    height: int
    text_chars: int
    video_seconds: float
    video_fps: float

    @classmethod
    def of(cls, spec: ModelSpec, condition: Condition, selection: Any, video: VideoRef, prompt: str) -> CallShape:
        """The shape of a call of ``spec`` showing ``selection`` of ``video`` as ``condition`` says, with ``prompt``."""
        native = condition.presentation is Presentation.NATIVE
        return cls(
            spec,
            0 if native else len(selection),
            video.width,
            video.height,
            len(prompt) + 100,
            video.duration_s if native else 0,
            effective_fps(selection, video.duration_s) if native else 0,
        )

    @classmethod
    def of_trial(cls, p: PlannedTrial) -> CallShape:
        return cls.of(p.trial.model, p.trial.condition, p.selection, p.sample.video, p.prompt.text)


def _estimate(p: PlannedTrial, caps: Capabilities) -> tuple[int, float | None]:
    if caps.synthetic:
        return 0, 0.0  # baselines: no tokens, no cost
    return _estimate_of(CallShape.of_trial(p), caps.local)


@functools.lru_cache(maxsize=4096)
def _input_estimate(shape: CallShape) -> int:
    """A call's estimated input tokens from its shape."""
    spec = shape.spec
    provider = spec.provider if spec.provider in ("openai", "gemini", "anthropic") else "open"
    if spec.provider == "openai" and spec.base_url:
        provider = "open"
    return estimate_request_tokens(
        shape.images,
        shape.width,
        shape.height,
        shape.text_chars,
        video_seconds=shape.video_seconds,
        video_fps=shape.video_fps,
        provider=provider,
    )


def _estimate_of(shape: CallShape, local: bool) -> tuple[int, float | None]:
    """A call's estimated tokens and cost (the dry run's figures)."""
    tokens_in = _input_estimate(shape)
    out = shape.spec.settings.max_tokens or UNLIMITED_OUTPUT_ESTIMATE
    usage = Usage(input_tokens=tokens_in, output_tokens=out)
    cost = 0.0 if local else cost_usd(shape.spec, usage)
    return tokens_in + out, cost


def _worst_case(p: PlannedTrial, caps: Capabilities, prices: Any = None) -> tuple[int, float | None, int, int]:
    """What one call can bill at most, ``(tokens, cost, input_tokens, output_tokens)``: the input believed up to
    ``errors_http.input_bound`` of its estimate, the output up to ``output_bound(max_tokens)``, priced with
    ``prices`` (the adapter's table; None: the shipped one). The budget reserves it (``run.budget``)."""
    if caps.synthetic:
        return 0, 0.0, 0, 0
    spec = p.trial.model
    tokens_in = _input_estimate(CallShape.of_trial(p))
    top_in, top_out = input_bound(tokens_in), output_bound(spec.settings.max_tokens)
    cost = 0.0 if caps.local else cost_usd(spec, Usage(input_tokens=top_in, output_tokens=top_out), prices)
    return top_in + top_out, cost, top_in, top_out


def load_suite_samples(suite: Suite, data: Path, limit: int | None) -> list[Sample]:
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be a positive number of samples, got {limit}")
    samples = load_samples(data)
    if not samples:
        raise DataError(f"{data} holds no samples; generate a dataset first (vidaudit generate {suite.name} ...)")
    other = next((x for x in samples if x.suite != suite.name), None)
    if other is not None:
        raise DataError(
            f"{data} holds samples of the {other.suite!r} suite (e.g. {other.sample_id}), not "
            f"{suite.name!r}; run it with `vidaudit run {other.suite}` or point --data at a "
            f"{suite.name} dataset"
        )
    suite.check_samples(samples, str(data))
    return samples[:limit] if limit else samples


def reads_video(spec: ModelSpec) -> bool:
    """False for providers that declare ``needs_video = False`` (``simulated``): no video file is checked or read."""
    return bool(getattr(resolve("providers", spec.provider), "needs_video", True))


def prepare_run(
    plan: PlanRequest, *, check_files: bool = True
) -> tuple[list[PlannedTrial], dict[str, ModelAdapter], Any]:
    """Load, validate and plan; builds adapters (no call is made). Raises on anything wrong.

    ``plan.suite``: None runs the dataset's own suite (``core.manifest.dataset_suite``). The plan is
    ``prepare_stream``'s, made a list."""
    stream, adapters, caps = prepare_stream(plan, check_files=check_files)
    return list(stream), adapters, caps


def prepare_stream(plan: PlanRequest, *, check_files: bool = True) -> tuple[PlanStream, dict[str, ModelAdapter], Any]:
    """``prepare_run`` with the plan as a ``PlanStream``, checked in one pass that holds no trial (a
    :class:`~vidaudit.run.request.RunRequest` is a ``PlanRequest``)."""
    data, models, conditions, model_options = plan.data, plan.models, plan.conditions, plan.model_options
    s = get_suite(plan.suite or dataset_suite(data))
    if not models:
        raise ConfigError("no model given; add --model SPEC (e.g. --model oracle)")
    if not conditions:
        raise ConfigError("no condition given; add --condition native (or frames@K, keyframes)")
    samples = load_suite_samples(s, data, plan.limit)
    if check_files and any(reads_video(m) for m in models):
        check_videos(samples, data, allow_external=True if plan.allow_external_videos else None)
    by_id = {x.sample_id: x for x in samples}
    adapters: dict[str, ModelAdapter] = {}
    for m in models:
        if m.label in adapters:
            raise ConfigError(f"model {m.label} is listed twice")
        adapters[m.label] = make_adapter(m, samples=by_id, suite=s, options=model_options.get(m.provider))
    if plan.judge is not None:
        adapters = with_judge(adapters, plan.judge, suite=s, samples=by_id, model_options=model_options)
    caps = {k: a.capabilities for k, a in adapters.items()}
    opts = {k: request_options(a) for k, a in adapters.items()}
    stream = PlanStream(samples, conditions, models, suite=s, caps_by_model=caps, options_by_model=opts)
    stream.check()
    return stream, adapters, caps


def with_judge(
    adapters: dict[str, Any],
    judge: ModelSpec,
    *,
    suite: Suite,
    samples: dict[str, Any],
    model_options: dict[str, dict[str, Any]] | None,
) -> dict[str, Any]:
    """Every model wrapped so that the suite's judge prompt goes to ``judge`` after each answer."""
    if not suite.judges_any(list(samples.values())):
        raise ConfigError(
            f"the {suite.name} suite asks no judge for these samples (their answers are parsed); drop --judge"
        )
    judge_adapter = make_adapter(judge, samples=samples, suite=suite, options=(model_options or {}).get(judge.provider))
    return {k: JudgedAdapter(a, judge_adapter, suite=suite, samples=samples) for k, a in adapters.items()}


async def close_adapters(adapters: dict[str, Any]) -> None:
    """Close every model, then each judge once (judges are shared by the models they judge)."""
    judges = {id(j): j for a in adapters.values() if (j := getattr(a, "judge", None)) is not None}
    for a in adapters.values():
        await a.aclose()
    for j in judges.values():
        await j.aclose()


def dry_run_rows(planned: Iterable[PlannedTrial] | PlanStream, caps: dict[str, Any]) -> list[DryRunRow]:
    """Trials, frames and estimated tokens and cost per (model, condition). A ``PlanStream`` is counted from
    its inputs: no trial is built or hashed, and a prompt is rendered only where a model's estimate needs it."""
    if isinstance(planned, PlanStream):
        return _stream_rows(planned, caps)
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


def _stream_rows(stream: PlanStream, caps: dict[str, Any]) -> list[DryRunRow]:
    rows: dict[tuple[str, str], DryRunRow] = {}
    for g, s, sel, _pin in stream.inputs():
        key = (g.label, g.condition_id)
        row = rows.get(key) or rows.setdefault(key, DryRunRow(*key))
        row.trials += 1
        row.frames += len(sel)
        c = caps[key[0]]
        if c.synthetic:
            continue  # baselines: no tokens, no cost
        prompt = stream.suite.render_prompt(s, g.condition).text
        tokens, cost = _estimate_of(CallShape.of(g.model, g.condition, sel, s.video, prompt), c.local)
        row.est_tokens += tokens
        row.est_cost_usd = None if cost is None or row.est_cost_usd is None else row.est_cost_usd + cost
    return list(rows.values())


def execute(
    request: RunRequest | Path | str | None = None,
    out: Path | str | None = None,
    models: Sequence[ModelSpec] | None = None,
    conditions: Sequence[Condition] | None = None,
    *,
    dry_run: bool = False,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    dispatch: AdapterDispatch | None = None,
    **fields: Any,
) -> RunOutcome:
    """Plan and run (or, with ``dry_run``, only count) every trial of ``request`` into its ``out``.

    ``request`` is a :class:`~vidaudit.run.request.RunRequest` (what the CLI, a run config, ``--resume`` and
    ``vidaudit audit`` build); the keyword form ``execute(data, out, models, conditions, suite=..., ...)`` (or
    ``data=...``) builds it from its fields. A ``design`` other than ``"full"`` asks the suite for a sequential design (its ``Designs``
    role) that chooses the trials wave by wave (``vidaudit.run.waves``); ``rule`` is that design's decision rule.
    ``dispatch`` (e.g. ``run.ray_executor.RayDispatch``) swaps the adapters for adapter-shaped proxies
    that call elsewhere while the run lasts; the executor, the store and the audit log stay here.
    """
    if not isinstance(request, RunRequest):  # the keyword form: data given first or as ``data=``
        data = fields.pop("data") if request is None and "data" in fields else request
        request = RunRequest.build(data=data, out=out, models=models, conditions=conditions, **fields)
    elif out is not None or models is not None or conditions is not None or fields:
        raise TypeError("execute(request) takes the RunRequest alone; change it with request.model_copy(update=...)")
    if request.suite is None:  # the dataset's own suite, read once
        request = request.model_copy(update={"suite": dataset_suite(request.data)})
    design, rule, suite = request.design, request.rule, str(request.suite)
    if dry_run:  # adapters that call nothing: no SDK, no API key, no client (models/http_base.py)
        with for_dry_run():
            stream, _, caps = prepare_stream(request, check_files=False)
        if design != "full":
            sequential_design(get_suite(suite), design, rule, list(stream))  # the design's refusals come first
        return RunOutcome(request.out, None, dry_run_rows(stream, caps))
    stream, adapters, caps = prepare_stream(request)
    # a sequential design chooses among every trial of the plan by id: it holds the plan as a list
    planned: PlanStream | list[PlannedTrial] = stream if design == "full" else list(stream)
    seq = None if isinstance(planned, PlanStream) else sequential_design(get_suite(suite), design, rule, planned)
    try:
        request.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create the run dir {request.out}: {e.strerror}; pass a writable --out") from None
    with RunLock(request.out):
        return _execute_locked(request, planned, adapters, caps, design=seq, on_progress=on_progress, dispatch=dispatch)


def _execute_locked(
    request: RunRequest,
    planned: PlanStream | list[PlannedTrial],
    adapters: dict[str, ModelAdapter],
    caps: dict[str, Capabilities],
    *,
    design: Any,
    on_progress: Callable[[ProgressEvent], None] | None,
    dispatch: AdapterDispatch | None,
) -> RunOutcome:
    """``execute``'s run, under the run dir's lock: ``request.suite`` is resolved, ``design`` the sequential design
    (None: the full one)."""
    data, out, models, suite = request.data, request.out, request.models, str(request.suite)
    max_cost_usd, max_tokens = request.max_cost_usd, request.max_tokens
    samples = _samples_of(planned)
    update_snapshot(out, samples.values())
    config = RunConfig.new(
        suite=suite,
        data_dir=str(data.resolve()),
        models=list(models),
        conditions=list(request.conditions),
        max_attempts=request.max_attempts,
        budget=BudgetConfig(max_cost_usd=max_cost_usd, max_tokens=max_tokens),
        options=run_options(request.limit, request.judge, design),
        model_options=request.model_options,
    )
    effective = open_run_config(out, config)
    budget = None
    if max_cost_usd is not None or max_tokens is not None:
        prices = {label: getattr(a, "prices", None) for label, a in adapters.items()}
        if max_cost_usd is not None:  # a price is the model's: its first trial says whether one is known
            firsts = (
                [next(iter(planned.for_model(m)), None) for m in planned.labels]
                if isinstance(planned, PlanStream)
                else planned
            )
            firsts = [p for p in firsts if p is not None]
            unknown = sorted(
                {
                    p.trial.model.label
                    for p in firsts
                    if _worst_case(p, caps[p.trial.model.label], prices.get(p.trial.model.label))[1] is None
                }
            )
            if unknown:
                raise ConfigError(
                    f"--max-cost-usd cannot be enforced: no price is known for {', '.join(unknown)}; "
                    "add it to a prices YAML or use --max-tokens"
                )
            unbounded = sorted(
                {
                    p.trial.model.label
                    for p in firsts
                    if p.trial.model.settings.max_tokens is None
                    and not caps[p.trial.model.label].local
                    and not caps[p.trial.model.label].synthetic
                }
            )
            if unbounded:
                raise ConfigError(
                    f"--max-cost-usd cannot be enforced: {', '.join(unbounded)} asks for no max_tokens "
                    "(provider defaults), so what a call can bill has no bound; set max_tokens"
                )

        def estimate(p: PlannedTrial) -> tuple[int, float, int, int]:
            label = p.trial.model.label
            tokens, cost, top_in, top_out = _worst_case(p, caps[label], prices.get(label))
            return tokens, cost or 0.0, top_in, top_out

        budget = Budget(max_cost_usd=max_cost_usd, max_tokens=max_tokens, estimate=estimate)
    calls = CallOptions(
        max_attempts=request.max_attempts, budget=budget, on_progress=on_progress, retry_errors=request.retry_errors
    )
    builder = RequestBuilder(
        data, perturb_cache=out / PERTURB_CACHE, pixel_free=[m.label for m in models if not reads_video(m)]
    )

    async def go() -> tuple[RunSummary, dict[str, Any] | None, tuple[int, list[FailureCause]]]:
        try:
            with RunStore(out) as store:
                backlog = Backlog()

                async def trials(use: dict[str, Any]) -> tuple[RunSummary, dict[str, Any] | None]:
                    if design is not None:
                        assert isinstance(planned, list)
                        return await run_waves(planned, design, use, store, builder, calls, suite=get_suite(suite))
                    assert isinstance(planned, PlanStream)
                    nonlocal backlog
                    backlog = await asyncio.to_thread(
                        register_keys,
                        store,
                        planned.keys(),
                        max_attempts=calls.max_attempts,
                        retry_errors=calls.retry_errors,
                    )
                    sources = {m: planned.for_model(m) for m in planned.labels}
                    return await run_backlog(backlog, sources, use, store, builder, calls), None

                if dispatch is None:
                    done = await trials(adapters)
                else:
                    async with dispatch(
                        adapters, suite=suite, samples=samples, model_options=request.model_options
                    ) as remote:
                        prerender = getattr(dispatch, "prerender", None)  # Ray: perturbed videos as tasks, first
                        if prerender is not None:
                            await asyncio.to_thread(prerender, planned, builder)
                        done = await trials(remote)
                if not isinstance(planned, PlanStream):
                    return (*done, outcomes(store, planned))
                return (*done, backlog_outcomes(store, backlog, done[0]))
        finally:
            await close_adapters(adapters)

    with roomy_young_gc():  # each trial's objects live a window long: let them die young (core/gcpause)
        summary, figures, (trials_ok, failures) = asyncio.run(go())
    if figures is not None:
        effective.model_copy(update={"design": figures}).save(out)
    return RunOutcome(out, summary, design=figures, trials_ok=trials_ok, failures=failures)


def _samples_of(planned: PlanStream | Sequence[PlannedTrial]) -> dict[str, Any]:
    if isinstance(planned, PlanStream):
        return {s.sample_id: s for s in planned.samples}
    return {p.sample.sample_id: p.sample for p in planned}


def backlog_outcomes(store: RunStore, backlog: Any, summary: RunSummary) -> tuple[int, list[FailureCause]]:
    """``outcomes`` of a streamed plan, from what its session counted: the trials ok before it plus those it
    made ok, and the latest attempts of the trials that failed (read by id; the plan is not read again)."""
    failed = sorted(backlog.failed)
    status = store.trial_status(failed)
    latest = [a for tid in failed if not status[tid].ok and (a := store.latest(tid)) is not None]
    return backlog.already_ok + summary.ok, failure_causes(latest)


def outcomes(store: RunStore, planned: Sequence[PlannedTrial]) -> tuple[int, list[FailureCause]]:
    """How many planned trials are ok in the store, and the causes of the latest failure of the others."""
    ids = {p.id for p in planned}
    best = {row.trial_id: a for row, a in store.results() if row.trial_id in ids and a is not None}
    ok = sum(1 for a in best.values() if a.status is Status.OK)
    return ok, failure_causes(best.values())


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
