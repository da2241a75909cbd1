"""Run planned trials against model adapters: resumable, retried in one layer, budgeted, stored as they end.

Rules:
- A trial with an ok attempt in the store is never called again. An errored trial is retried until
  it has ``max_attempts`` attempts in total, counting those stored by earlier sessions.
- Each adapter gets ``capabilities.concurrency`` concurrent calls (an ``asyncio.Semaphore``), and
  batches of ``capabilities.batch_size`` when it has ``generate_batch`` and a batch size above 1.
  Requests are built by ``prepare`` in a worker thread by a bounded pool of workers, so at most
  about twice the concurrency of prepared requests (and their frames) are held in memory.
- Every attempt is stored when it ends. QUOTA, AUTH, a budget stop, a ``prepare`` failure or an
  adapter raising an unclassified exception stop the run: no new calls start, calls in flight
  finish and are stored. The first two and the budget end in the summary's ``stop_reason``; the
  last two are bugs or bad input and are raised (``PrepareError``, ``AdapterError``) with the
  summary attached, after in-flight calls are stored. When the store itself fails (a full disk) the
  message counts the answered attempts it could not take (``lanes.in_flight``) instead: they are not stored
  and their calls are made again on resume.
- ``retry_errors`` (``vidaudit run --retry-errors``) gives each trial not yet ok ``max_attempts`` more
  attempts, so a trial out of attempts is called again once its cause is fixed.
- Adapters are owned by the caller: ``run_trials`` does not close them.

Composite models (``models.base.CompositeAdapter``: several calls per sample) run through the same
rules, one trial attempt per ``run(request, call)``; each of their calls goes through the executor's
``StageCall`` (``run.stage_calls``): cached by content in the store, stored the moment it ends, never
repeated on retry or resume. Their trial attempts are stored as any other (status, final response,
frames sent) with the stages they used. A failing stage fails the trial's attempt with the stage's
own ``ModelCallError`` (the message says which stage), so the retry layer decides as for a plain
call; a QUOTA, AUTH or unclassified failure of a stage stops the run the moment the stage ends, even
if the composite handles it; a Retry-After pauses the composite's lane. Concurrency: the composite's
``capabilities.concurrency`` bounds the samples in flight, each sub-adapter's bounds its own calls
(one gate per adapter object, shared with the adapter's own lane if it also runs alone).

Budget for composites: the trial's estimate (``Budget.estimate(planned)``) is reserved for the whole
composite run, as for one plain call. Each stage call's actual tokens and cost are spent the moment
it ends (cache hits spend nothing); the reservation is released when the run ends. A new stage call
may start only while the budget is not already overrun (spent + reserved, counting this run's
reservation only beyond what it has already spent, is within every limit); otherwise the run stops
with ``budget``. If a stage call reports no cost, the run is charged at least its estimate in all (the
tracker never assumes a call was free). A trial whose composite run was interrupted by a stop before
a stage could start stores no attempt (nothing of it failed): it is run again on resume, its stored
stages being cache hits.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vidaudit.core.errors import ConfigError, VidauditError
from vidaudit.core.types import Request, Trial
from vidaudit.models.base import AnyAdapter, is_composite
from vidaudit.run.attempt_loop import AttemptLoop
from vidaudit.run.backlog import Backlog, Planned, attempt_limit, register_plan
from vidaudit.run.budget import Budget, BudgetTracker
from vidaudit.run.lanes import GROUP_DELAY_S, GROUP_ROWS, YIELD_EVERY, Lane, LoopState, in_flight
from vidaudit.run.retry import Clock, RetryPolicy, SystemClock
from vidaudit.run.store.writer import RunStore
from vidaudit.run.summary import ProgressEvent, RunSummary, StopReason


class RunAborted(VidauditError):
    """The run stopped on a bug or bad input; ``summary`` says what was done before it stopped."""

    def __init__(self, message: str, summary: RunSummary | None = None) -> None:
        super().__init__(message)
        self.summary = summary


class PrepareError(RunAborted):
    """``prepare`` failed for a trial: validate inputs before the run, then fix and resume."""


class AdapterError(RunAborted):
    """An adapter raised something other than ``ModelCallError``: a bug in the adapter."""


def _validate(planned: Sequence[Any], adapters: Mapping[str, AnyAdapter], max_attempts: int) -> None:
    if not isinstance(max_attempts, int) or max_attempts < 1:
        raise ConfigError(f"max_attempts must be an integer >= 1, got {max_attempts!r}")
    seen: set[str] = set()
    missing: set[str] = set()
    for p in planned:
        trial = getattr(p, "trial", None)
        if not isinstance(trial, Trial):
            raise ConfigError(f"planned item {p!r} has no .trial of type Trial")
        if p.id != trial.id:
            raise ConfigError(
                f"planned id {p.id} is not its trial's content id {trial.id}; ids must hash the "
                f"trial so that the store never confuses two trials"
            )
        if p.id in seen:
            raise ConfigError(f"trial {p.id} is planned twice; deduplicate the plan")
        seen.add(p.id)
        if trial.model.label not in adapters:
            missing.add(trial.model.label)
    if missing:
        raise ConfigError(
            f"no adapter for model(s) {', '.join(sorted(missing))}; pass one per model label "
            f"(have: {', '.join(sorted(adapters)) or 'none'})"
        )
    for label, a in adapters.items():
        caps = a.capabilities
        if caps.concurrency < 1 or caps.batch_size < 1:
            raise ConfigError(f"adapter {label}: concurrency and batch_size must be >= 1")
        if is_composite(a):
            if caps.batch_size != 1:
                raise ConfigError(f"composite model {label}: batch_size must be 1 (its stages are the calls)")
        elif not callable(getattr(a, "generate", None)):
            raise ConfigError(
                f"adapter {label} has no generate(); a composite model must be marked "
                f"composite = True and have run(request, call)"
            )
        elif caps.batch_size > 1 and not callable(getattr(a, "generate_batch", None)):
            raise ConfigError(f"adapter {label} declares batch_size {caps.batch_size} but has no generate_batch")


@dataclass(frozen=True)
class CallOptions:
    """How a session calls its trials, built once and passed whole (``run_trials``, ``run_backlog``,
    ``waves.run_waves``), so the layers between the session and the attempt loop do not each spell it out."""

    #: attempts per trial, counting those stored by earlier sessions
    max_attempts: int = 3
    budget: Budget | None = None
    on_progress: Callable[[ProgressEvent], Any] | None = None
    #: None: ``RetryPolicy()``
    retry_policy: RetryPolicy | None = None
    #: None: ``SystemClock()``
    clock: Clock | None = None
    #: ``max_attempts`` more attempts for every trial not yet ok, even one out of attempts
    retry_errors: bool = False


async def run_trials(
    planned: Sequence[Planned],
    adapters: Mapping[str, AnyAdapter],
    store: RunStore,
    prepare: Callable[[Any], Request],
    options: CallOptions | None = None,
) -> RunSummary:
    """Call every planned trial not yet ok in ``store``; return what this session did.

    ``options`` says how (None: ``CallOptions()``; ``CallOptions(max_attempts=2)``, or ``dataclasses.replace`` of
    a session's, to change a field). Its ``retry_errors`` gives every trial not yet ok ``max_attempts`` more attempts in this session, even
    one out of attempts from earlier sessions (``vidaudit run --resume RUN --retry-errors``, after the
    cause of its failures is fixed).

    ``adapters`` maps ``trial.model.label`` to an adapter or a composite model (``is_composite``);
    ``prepare(planned) -> Request`` runs in a worker thread. Raises ``PrepareError`` /
    ``AdapterError`` (with ``.summary``) when the run had to stop on a bug or bad input, after
    storing every call that was in flight. Progress events of kind ``stage`` report each stage
    call of a composite as it ends.
    """
    o = options or CallOptions()
    planned = list(planned)
    _validate(planned, adapters, o.max_attempts)
    backlog = register_plan(store, planned, max_attempts=o.max_attempts, retry_errors=o.retry_errors)
    by_label: dict[str, list[Planned]] = {}
    for p in planned:
        by_label.setdefault(p.trial.model.label, []).append(p)
    return await run_backlog(backlog, {label: iter(ps) for label, ps in by_label.items()}, adapters, store, prepare, o)


async def run_backlog(
    backlog: Backlog,
    sources: Mapping[str, Iterator[Planned]],
    adapters: Mapping[str, AnyAdapter],
    store: RunStore,
    prepare: Callable[[Any], Request],
    options: CallOptions,
) -> RunSummary:
    """``run_trials`` on a registered plan read as it goes: ``sources`` gives each model label its trials in
    plan order (e.g. ``PlanStream.for_model``), ``backlog`` what ``register_plan`` counted of them (made
    by it: its ``tried`` says which labels' trials had attempts). Each lane reads its trials a window ahead
    of its workers, so the session holds no per-trial state beyond the calls in flight and their windows."""
    missing = sorted(label for label, n in backlog.todo.items() if n and label not in adapters)
    if missing:
        raise ConfigError(
            f"no adapter for model(s) {', '.join(missing)}; pass one per model label "
            f"(have: {', '.join(sorted(adapters)) or 'none'})"
        )
    prior = store.summary_spend()
    tracker = BudgetTracker(options.budget, spent_tokens=prior[0], spent_cost_usd=prior[1])
    todo = sum(backlog.todo.values())
    state = LoopState(total=todo, skipped=backlog.already_ok + backlog.exhausted)
    semaphores: dict[int, asyncio.Semaphore] = {}  # one concurrency gate per adapter object
    ex = AttemptLoop(
        store,
        prepare,
        options.max_attempts,
        tracker,
        options.retry_policy or RetryPolicy(),
        options.clock or SystemClock(),
        options.on_progress,
        state,
        semaphores,
    )
    ex.limit = attempt_limit(options.max_attempts, options.retry_errors)

    lanes: list[Lane] = []
    n_workers: list[int] = []
    for label, adapter in adapters.items():
        n = backlog.todo.get(label, 0)
        if n:
            caps = adapter.capabilities
            sem = semaphores.setdefault(id(adapter), asyncio.Semaphore(caps.concurrency))
            # twice the concurrency, so that workers build requests (in threads) while others call; a lane whose
            # requests are built on the loop (``inline_model``) has nothing to overlap, and a worker more than
            # the semaphore lets in would only queue on it, one suspension per trial
            inline = getattr(prepare, "inline_model", None)
            on_loop = inline is not None and bool(inline(label))
            k = min((1 if on_loop else 2) * caps.concurrency, -(-n // caps.batch_size))
            lanes.append(
                Lane(
                    label,
                    adapter,
                    deque(),
                    sem,
                    caps.batch_size,
                    composite=is_composite(adapter),
                    source=sources.get(label),
                    window=max(2 * k * caps.batch_size, 16),
                    lookup=label in backlog.tried,
                    yield_every=YIELD_EVERY if caps.synthetic else 1,
                    inline=on_loop,
                )
            )
            n_workers.append(k)
    ex.emit("start")
    with store.grouped(GROUP_ROWS, GROUP_DELAY_S):
        ticker = asyncio.create_task(ex.ticker(GROUP_DELAY_S), name="vidaudit-commit")
        workers = [
            asyncio.create_task(ex.worker(lane), name=f"vidaudit-{lane.label}-{i}")
            for lane, n in zip(lanes, n_workers, strict=True)
            for i in range(n)
        ]
        try:
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()
            ticker.cancel()
        await ex.flush()  # the last group, before the summary says what was stored
    backlog.failed |= state.failed_ids
    if state.stop_reason is StopReason.BUDGET:  # what the calls that were in flight at the stop spent, too
        state.stop_message = f"{state.stop_message}; at the end: {tracker.describe()}"
    summary = RunSummary(
        planned=backlog.planned,
        skipped_already_ok=backlog.already_ok,
        skipped_exhausted=backlog.exhausted,
        called=state.called,
        calls=state.calls,
        ok=state.ok,
        errored=dict(state.errored),
        failed_attempts=dict(state.failed_attempts),
        not_run=todo - state.called,
        cost_usd=state.cost_usd,
        tokens=state.tokens,
        stop_reason=state.stop_reason,
        stop_message=state.stop_message,
    )
    described = summary.describe()
    if any(lane.composite for lane in lanes):
        described += f"; composite stages: {state.stage_calls} calls, {state.stage_hits} cached"
    ex.emit("end", described)
    if state.fatal is not None:
        cls = {StopReason.PREPARE_ERROR: PrepareError, StopReason.ADAPTER_ERROR: AdapterError}.get(
            state.stop_reason, RunAborted
        )
        fix = {
            StopReason.PREPARE_ERROR: "validate the inputs before running, fix them and resume",
            StopReason.ADAPTER_ERROR: "adapters must raise ModelCallError; fix the adapter and resume",
        }.get(state.stop_reason, "fix the cause and resume")
        raise cls(f"run stopped: {state.stop_message}; {in_flight(state.unstored)}; {fix}", summary) from state.fatal
    return summary
