"""Sequential designs: run a plan in waves, asking the suite's design which trials to run next.

``vidaudit run SUITE --design NAME`` hands the full plan to the suite's ``Designs`` role
(``designs.sequential_design(NAME, rule, planned)``). The loop here is generic and small: it reads every trial's outcome from the store (an ok
attempt scored by the suite: correct or not; a trial out of attempts: not correct), asks the design
for the next wave (trial ids of the plan), runs that wave with ``run_trials`` into the same store, and
stops when the design returns nothing, or when a wave stops early (budget, quota, ...). Only the
trials of a wave are registered in the store, so trials never run are not planned: score and report
see exactly the trials the design chose. The design is asked again from the store's contents after
every wave, so a killed run resumes from what was stored.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from vidaudit.core.contract.suite import ScoreInput
from vidaudit.core.types import Status
from vidaudit.run.executor import CallOptions, run_trials
from vidaudit.run.store.writer import RunStore
from vidaudit.run.summary import ProgressEvent, RunSummary


class WaveDesign(Protocol):
    """What ``Designs.sequential_design`` returns (the contract's ``SequentialDesign``)."""

    def next_wave(self, outcomes: Mapping[str, bool]) -> Sequence[str]:
        """Trial ids to run next given {trial id: correct} of every trial with a final outcome; empty: done."""
        ...

    def info(self) -> dict[str, Any]:
        """The design's name, rule and settings (written to run.json and the report)."""
        ...


def known_outcomes(
    store: RunStore, planned: Mapping[str, Any], ids: Sequence[str], *, suite: Any, max_attempts: int
) -> dict[str, bool]:
    """{trial id: correct} for the trials of ``ids`` that are ok or out of attempts (a failure counts as wrong)."""
    ok_ids = store.ok_trial_ids()
    counts = store.attempt_counts()
    out: dict[str, bool] = {}
    for tid in ids:
        if tid in ok_ids:
            att = next(a for a in store.attempts(tid) if a.status is Status.OK)
            p = planned[tid]
            text = att.response.text if att.response else None
            trial = ScoreInput(p.sample, text, "ok", frame_times=list(att.frame_times) or None)
            out[tid] = suite.score(trial).correct is True
        elif counts.get(tid, 0) >= max_attempts:
            out[tid] = False
    return out


def _merge(parts: Sequence[RunSummary], planned: int) -> RunSummary:
    if not parts:
        return RunSummary(planned=planned, skipped_already_ok=0, skipped_exhausted=0, called=0, calls=0, ok=0)
    errored: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    for s in parts:
        errored.update(s.errored)
        failed.update(s.failed_attempts)
    last = parts[-1]
    return RunSummary(
        planned=planned,
        skipped_already_ok=sum(s.skipped_already_ok for s in parts),
        skipped_exhausted=sum(s.skipped_exhausted for s in parts),
        called=sum(s.called for s in parts),
        calls=sum(s.calls for s in parts),
        ok=sum(s.ok for s in parts),
        errored=dict(errored),
        failed_attempts=dict(failed),
        not_run=last.not_run,
        cost_usd=sum(s.cost_usd for s in parts),
        tokens=sum(s.tokens for s in parts),
        stop_reason=last.stop_reason,
        stop_message=last.stop_message,
    )


def _shifted(
    on_progress: Callable[[ProgressEvent], Any] | None,
    base: ProgressEvent | None,
    wave: int,
    last: dict[str, ProgressEvent],
) -> Callable[[ProgressEvent], None]:
    """Progress events of one wave shifted by the waves before it (``base``), so one bar counts the session."""

    def emit(ev: ProgressEvent) -> None:
        if base is not None:
            ev = dataclasses.replace(
                ev,
                total=ev.total + base.done,
                done=ev.done + base.done,
                ok=ev.ok + base.ok,
                errors=ev.errors + base.errors,
                cost_usd=ev.cost_usd + base.cost_usd,
                tokens=ev.tokens + base.tokens,
            )
        if ev.kind == "end":
            ev = dataclasses.replace(ev, message=f"wave {wave}: {ev.message}")
        last["event"] = ev
        if on_progress is not None:
            on_progress(ev)

    return emit


async def run_waves(
    planned: Sequence[Any],
    design: WaveDesign,
    adapters: Mapping[str, Any],
    store: RunStore,
    prepare: Callable[[Any], Any],
    options: CallOptions,
    *,
    suite: Any,
) -> tuple[RunSummary, dict[str, Any]]:
    """Run ``design``'s waves to the end (see the module docstring); returns the session's summary and the
    design's figures: its ``info()`` plus ``waves`` (this session), ``trials_planned`` (registered in the
    store), ``trials_run`` (with an attempt) and ``fraction_of_full_grid``."""
    by_id = {p.id: p for p in planned}
    outcomes = known_outcomes(store, by_id, list(by_id), suite=suite, max_attempts=options.max_attempts)
    parts: list[RunSummary] = []
    seen: set[str] = set()
    last: dict[str, ProgressEvent] = {}
    while True:
        ids = [t for t in dict.fromkeys(design.next_wave(outcomes)) if t not in outcomes]
        unknown = [t for t in ids if t not in by_id]
        if unknown:
            raise ValueError(f"the design asked for trial {unknown[0]}, which is not in the plan")
        if not ids:
            break
        emit = _shifted(options.on_progress, last.get("event"), len(parts) + 1, last)
        summary = await run_trials(
            [by_id[t] for t in ids], adapters, store, prepare, dataclasses.replace(options, on_progress=emit)
        )
        parts.append(summary)
        seen.update(ids)
        new = known_outcomes(store, by_id, ids, suite=suite, max_attempts=options.max_attempts)
        outcomes.update(new)
        if summary.stopped_early or not new:
            break  # a stop (budget, quota, ...) ends the session; a resume continues from the store
    complete = not [t for t in design.next_wave(outcomes) if t not in outcomes]
    registered = {r.trial_id for r in store.trial_rows()} & set(by_id)
    counts = store.attempt_counts()
    run = sum(1 for t in registered if counts.get(t, 0) > 0)
    full = len(by_id)
    figures = {
        **design.info(),
        "waves": len(parts),
        "trials_planned": len(registered),
        "trials_run": run,
        "full_grid_trials": full,
        "fraction_of_full_grid": len(registered) / full if full else None,
        "complete": complete,
    }
    return _merge(parts, len(seen)), figures
