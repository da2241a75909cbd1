"""Counting's ledger lives with counting: the shared event record carries the running count as a suite field,
serialises it to the manifest's bytes, and only the counting suite replays and refuses it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vidaudit.core.errors import DataError
from vidaudit.core.types import Event, Sample, Trace, VideoRef
from vidaudit.suites.counting.running_count import (
    COUNT,
    LedgerError,
    counting_event,
    counting_trace,
    ledger_problems,
    replay,
)
from vidaudit.suites.counting.verify import answer_problems, check_answers

VIDEO = VideoRef(path="v.mp4", sha256="0" * 64, fps=30.0, width=64, height=48, n_frames=720, duration_s=24.0)


def _sample(trace: Trace, answer: int) -> Sample:
    return Sample(
        sample_id="s",
        suite="counting",
        params={"domain": "blinking", "n_events": answer, "frequency_hz": 1.0, "seed": 0},
        question="How many?",
        answer=answer,
        trace=trace,
        video=VIDEO,
    )


def test_a_counting_event_serialises_as_the_manifest_always_did() -> None:
    e = counting_event(1.5, 45, "blink", 1)
    assert json.dumps(e.model_dump(mode="json")) == (
        '{"t": 1.5, "frame": 45, "type": "blink", "state_before": null, "state_after": null, "count": 1}'
    )
    # read back from a manifest line, the suite's field survives and keeps its place
    again = Event.model_validate_json(json.dumps(e.model_dump(mode="json")))
    assert again == e and again.extra(COUNT) == 1 and list(again.model_dump()) == list(e.model_dump())
    # an event of another suite has no running count, and the shared record does not invent one
    plain = Event(t=0.0, frame=0, type="lane_change")
    assert plain.extra(COUNT) is None and COUNT not in plain.model_dump()


@given(st.lists(st.integers(-2, 8), max_size=8))
def test_replay_accepts_exactly_the_ledgers_that_count_up_from_one(counts: list[int]) -> None:
    trace = Trace(events=tuple(counting_event(float(i), i * 30, "blink", c) for i, c in enumerate(counts)))
    ok = counts == list(range(1, len(counts) + 1))
    assert (ledger_problems(trace) == []) is ok
    if ok:
        assert replay(trace) == len(counts) and counting_trace(trace.events) == trace
    else:
        with pytest.raises(LedgerError, match=r"event \d+: count"):
            replay(trace)


def test_an_event_without_a_running_count_is_refused_by_counting_only() -> None:
    trace = Trace(events=(Event(t=1.0, frame=30, type="blink"),))  # a valid record of true events
    assert ledger_problems(trace) == [
        "trace ledger: event 0: running count None is not an integer (each "
        "counting event carries its running count as 'count')"
    ]
    bad = _sample(trace, 1)
    assert answer_problems(bad) == ledger_problems(trace)
    with pytest.raises(DataError, match="does not replay"):
        check_answers([bad])


def test_a_broken_ledger_is_refused_even_for_a_real_video_with_an_annotated_count() -> None:
    trace = Trace(events=(counting_event(1.0, 30, "rep", 1), counting_event(2.0, 60, "rep", 3)))
    real = _sample(trace, 2).model_copy(
        update={"params": {"domain": "real:squat", "n_events": 2, "frequency_hz": None, "source": "repcount"}}
    )
    assert answer_problems(real) == ["trace ledger: event 1: count 3 does not follow 1"]


def test_the_shared_record_still_refuses_events_out_of_time_order() -> None:
    with pytest.raises(ValueError, match="precedes"):
        Trace(events=(Event(t=2.0, frame=60, type="x"), Event(t=1.0, frame=30, type="x")))
