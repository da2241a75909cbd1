"""Registering a plan and counting what is left to run: the executor's first pass over a plan.

``register_plan`` / ``register_keys`` register the plan's trials in plan order, in chunks (a resumed plan costs
an indexed lookup per trial), and return a ``Backlog``: counts per model, never the trials, which each model's
lane reads again as it runs (``executor.run_backlog``). ``attempt_limit`` is the one rule for when a trial is
out of attempts.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from vidaudit.core.types import Trial
from vidaudit.run.store.reader import LOOKUP_CHUNK
from vidaudit.run.store.records import KeyedTrial, TrialDraft, TrialStatus
from vidaudit.run.store.writer import RunStore


class Planned(Protocol):
    """What the executor needs of a planned trial."""

    @property
    def id(self) -> str: ...

    @property
    def trial(self) -> Trial: ...


@dataclass
class Backlog:
    """What a plan leaves to run, from one pass over it: counts only (the trials are read again per lane)."""

    planned: int = 0
    already_ok: int = 0
    exhausted: int = 0
    todo: Counter[str] = field(default_factory=Counter)  # per model label
    #: trials with a failed attempt and none ok when counted, and those failing in the session since (their
    #: latest attempts are the run's failure causes; bounded by the failures, not the plan)
    failed: set[str] = field(default_factory=set)
    #: model labels with a trial that had stored attempts when counted: only their lanes look their trials up
    #: in the store as they read them (a trial of another label has none, and only its own lane makes one)
    tried: set[str] = field(default_factory=set)


def attempt_limit(max_attempts: int, retry_errors: bool) -> Callable[[int], int]:
    """The attempt number after which a trial with ``n`` stored attempts is out of attempts."""
    if retry_errors:  # max_attempts more than those already stored
        return lambda n: n + max_attempts
    return lambda n: max_attempts


def register_plan(
    store: RunStore, planned: Iterable[Planned], *, max_attempts: int, retry_errors: bool = False
) -> Backlog:
    """Register the plan's trials in plan order (in chunks, so a resumed plan costs an indexed lookup per
    trial) and count what is left to run per model; holds one chunk at a time."""
    return register_keys(
        store,
        (TrialDraft(p.id, p.trial.model.label, functools.partial(_keyed, p)) for p in planned),
        max_attempts=max_attempts,
        retry_errors=retry_errors,
    )


def register_keys(
    store: RunStore, keys: Iterable[TrialDraft], *, max_attempts: int, retry_errors: bool = False
) -> Backlog:
    """``register_plan`` on ``TrialDraft``s, e.g. ``PlanStream.keys()``: a trial the store has already registered
    is never built, and a new one whose draft gives its row is stored from the draft's strings."""
    limit = attempt_limit(max_attempts, retry_errors)
    out = Backlog()
    todo = out.todo
    it = iter(keys)
    # a store with no trial yet has none of these (the plan's ids are distinct): nothing to look up
    fresh = not store.has_trials()
    while chunk := list(itertools.islice(it, LOOKUP_CHUNK)):
        out.planned += len(chunk)
        if fresh:  # every trial new, none tried: each is to run
            store.register_trials(chunk)
            for label, n in Counter([d.model for d in chunk]).items():
                todo[label] += n
            continue
        ids = [d.id for d in chunk]
        known = store.registered(ids)
        new = [d for d in chunk if d.id not in known] if known else chunk
        if new:
            store.register_trials(new)
        # an attempt needs its trial registered (a foreign key): only the trials known before can have any
        status = store.trial_status([tid for tid in ids if tid in known]) if known else {}
        for d in chunk:
            st = status.get(d.id, NOT_TRIED)
            if st.attempts:
                out.tried.add(d.model)
            if st.ok:
                out.already_ok += 1
                continue
            if st.attempts:
                out.failed.add(d.id)
            if st.attempts >= limit(st.attempts):
                out.exhausted += 1
            else:
                todo[d.model] += 1
    return out


#: the status of a trial with no stored attempt (one object for all)
NOT_TRIED = TrialStatus()


def _keyed(p: Planned) -> Trial | KeyedTrial:
    keyed = getattr(p, "keyed", None)
    return keyed if isinstance(keyed, KeyedTrial) else p.trial
