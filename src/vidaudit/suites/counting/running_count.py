"""Counting's ledger on a sample's true events: each event carries its running count (``count``).

The count is counting's own field of a core ``Event`` (an extra field, serialised after the shared ones),
so the shared layers hold a plain record of true events and this suite checks its ledger: executing a
trace replays the running count (``count_i = count_{i-1} + 1`` from 1) and returns the final count, which a
synthetic sample's answer must equal (``verify.answer_problems``).
"""

from __future__ import annotations

from collections.abc import Iterable

from vidaudit.sdk import Event, Trace

#: the extra field of an ``Event`` that holds its running count
COUNT = "count"


class LedgerError(ValueError):
    """A trace whose running counts do not replay (the message names the first bad event)."""


def counting_event(
    t: float, frame: int, type: str, count: int, state_before: str | None = None, state_after: str | None = None
) -> Event:
    """One counting event; the fields serialise in the manifest's order (t, frame, type, states, count)."""
    return Event(t=t, frame=frame, type=type, state_before=state_before, state_after=state_after, **{COUNT: count})


def counting_trace(events: Iterable[Event]) -> Trace:
    """A trace of counting events, its ledger replayed (raises ``LedgerError`` when it does not)."""
    trace = Trace(events=tuple(events))
    replay(trace)
    return trace


def replay(trace: Trace) -> int:
    """Replay the ledger, checking every running count follows the one before; return the final count."""
    count = 0
    for i, e in enumerate(trace.events):
        c = e.extra(COUNT)
        if isinstance(c, bool) or not isinstance(c, int):
            raise LedgerError(
                f"event {i}: running count {c!r} is not an integer (each counting event carries "
                f"its running count as {COUNT!r})"
            )
        if c != count + 1:
            raise LedgerError(f"event {i}: count {c} does not follow {count}")
        count = c
    return count


def ledger_problems(trace: Trace) -> list[str]:
    """Why a trace's ledger does not replay (empty when it does)."""
    try:
        replay(trace)
    except LedgerError as e:
        return [f"trace ledger: {e}"]
    return []
