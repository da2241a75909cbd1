"""The scoring path's fast constructors make the very objects their dataclasses make (issue 13 speed-up), and the
record the suite's ``score`` keeps (``score_record``, built as a dict without the CountingScore, issue 24) is
``score_trial(...).to_dict()``, its own containers, with per-sample facts read once per Sample object.

``CountingScore`` (as ``score_trial`` makes it), ``Taxonomy``, ``ReportedEvent`` and ``TimestampReport`` are frozen
dataclasses; the hot path fills an instance's ``__dict__`` in one step instead of calling the generated ``__init__`` (one
``object.__setattr__`` per field). Equality, ``repr``, the field order of ``__dict__`` (which
``CountingScore.to_dict`` copies) and the record dict must be the same.
"""

from __future__ import annotations

import copy
from dataclasses import fields

from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.types import Event, Sample, Trace, VideoRef
from vidaudit.suites.counting.scoring import CountingScore, score_record, score_trial, trial_score
from vidaudit.suites.counting.taxonomy import Taxonomy, _taxonomy
from vidaudit.suites.counting.timestamps import ReportedEvent, TimestampReport, _new_event, _new_report

SMALL = st.one_of(st.none(), st.integers(-3, 40), st.floats(0, 30, allow_nan=False), st.booleans(), st.text(max_size=4))
PAIRS = st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=4).map(tuple)


def _same(fast: object, slow: object) -> None:
    assert fast == slow and repr(fast) == repr(slow) and type(fast) is type(slow)
    assert list(fast.__dict__) == [f.name for f in fields(slow)]  # type: ignore[arg-type]
    assert fast.__dict__ == slow.__dict__


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=8, max_size=8), PAIRS)
def test_fast_taxonomy_is_the_dataclass(counts: list[int], pairs: tuple) -> None:
    fast, slow = _taxonomy(*counts, pairs), Taxonomy(*counts, displaced_pairs=pairs)
    _same(fast, slow)
    assert fast.to_dict() == slow.to_dict() and fast.displaced_pairs == slow.displaced_pairs


@settings(max_examples=100, deadline=None)
@given(
    st.floats(0, 30, allow_nan=False),
    st.tuples(st.integers(0, 99), st.integers(0, 99)),
    st.none() | st.text(max_size=3),
    st.none() | st.integers(1, 50),
)
def test_fast_event_is_the_dataclass(t: float, span: tuple, label: str | None, frame: int | None) -> None:
    _same(_new_event(t, span, label, frame), ReportedEvent(t, span, label, frame))


LEDGERS = st.lists(
    st.tuples(st.floats(0, 30, allow_nan=False).map(lambda v: round(v, 2)), st.sampled_from("ABCD")), max_size=6
).map(lambda evs: "\n".join(f"- Event {i}: t={t}s, -> {s}, count {i}" for i, (t, s) in enumerate(evs, 1)))


@settings(max_examples=100, deadline=None)
@given(LEDGERS, st.integers(0, 6), st.sampled_from([0.5, 1.0, 4.0]))
def test_scored_trial_is_the_dataclass(ledger: str, answer: int, f: float) -> None:
    """score_trial fills the CountingScore's ``__dict__`` in one step: every field, in field order, as __init__ would."""
    events = tuple(
        Event(
            t=1.0 + i / f,
            frame=30 + int(30 * i / f),
            type="transition",
            state_before="ABCD"[i],
            state_after="BCDA"[i],
            count=i + 1,
        )
        for i in range(4)
    )
    sample = Sample(
        sample_id="s",
        suite="counting",
        params={"domain": "state_machine", "n_events": 4, "frequency_hz": f},
        question="How many?",
        answer=4,
        trace=Trace(events=events),
        video=VideoRef(path="v.mp4", sha256="x", fps=30.0, width=64, height=64, n_frames=720, duration_s=24.0),
    )
    fast = score_trial(sample, f"{ledger}\nFinal answer: \\boxed{{{answer}}}")
    slow = CountingScore(**vars(fast))
    _same(fast, slow)
    assert fast.to_dict() == slow.to_dict()


def _sample(f: float, answer: int = 4, n_trace: int = 4, sample_id: str = "s") -> Sample:
    events = tuple(
        Event(
            t=1.0 + i / f,
            frame=30 + int(30 * i / f),
            type="transition",
            state_before="ABCD"[i],
            state_after="BCDA"[i],
            count=i + 1,
        )
        for i in range(n_trace)
    )
    return Sample(
        sample_id=sample_id,
        suite="counting",
        params={"domain": "state_machine", "n_events": answer, "frequency_hz": f},
        question="How many?",
        answer=answer,
        trace=Trace(events=events),
        video=VideoRef(path="v.mp4", sha256="x", fps=30.0, width=64, height=64, n_frames=720, duration_s=24.0),
    )


_TUPLE_FIELDS = ("parse_span", "reported_times", "reported_labels", "matches", "displaced_pairs")


@settings(max_examples=100, deadline=None)
@given(
    LEDGERS,
    st.integers(0, 6),
    st.sampled_from([0.5, 1.0, 4.0]),
    st.sampled_from(["ok", "ok", "api_error"]),
    st.none() | st.lists(st.floats(0, 24, allow_nan=False), max_size=5),
    st.booleans(),
)
def test_score_record_is_the_trial_scores_dict(
    ledger: str, answer: int, f: float, status: str, frame_times: list[float] | None, traced: bool
) -> None:
    """The record, key order and value types included, is what ``score_trial(...).to_dict()`` gives, on traced and
    count-only samples, failed calls, and "frame K" mentions; and ``trial_score`` turns it back into the CountingScore."""
    sample = _sample(f) if traced else _sample(f, n_trace=2)  # a trace that does not list its 4 events: EM only
    text = f"{ledger}\nframe 2 at frame 3\nFinal answer: \\boxed{{{answer}}}"
    rec = score_record(sample, text, status, frame_times=frame_times)
    ts = score_trial(sample, text, status, frame_times=frame_times)
    assert list(rec) == [fl.name for fl in fields(CountingScore)] and rec == ts.to_dict()
    assert all(isinstance(rec[k], list) or rec[k] is None for k in _TUPLE_FIELDS)
    assert all(type(rec[k]) is type(v) for k, v in ts.to_dict().items())
    _same(trial_score(rec), ts)


@settings(max_examples=50, deadline=None)
@given(LEDGERS, st.integers(0, 6))
def test_score_record_shares_nothing(ledger: str, answer: int) -> None:
    """Every list and dict of a record is its own: writing into one (its tolerance rows, shared by the trials with
    the same counts in the scorer's cache, included) changes no later record."""
    sample = _sample(1.0)
    text = f"{ledger}\n\\boxed{{{answer}}}"
    first = score_record(sample, text)
    kept = copy.deepcopy(first)
    for value in first.values():
        if isinstance(value, list):
            value.append("x")
        elif isinstance(value, dict):
            for inner in value.values():
                if isinstance(inner, dict):
                    inner["f1"] = "x"
            value["x"] = 1
    assert score_record(sample, text) == kept == score_trial(sample, text).to_dict()


def test_per_sample_facts_follow_the_sample_object() -> None:
    """The facts read once per sample are keyed by the object: another Sample with the same id but another answer
    and trace is scored on its own."""
    text = "- Event 1: t=1.0s, -> B\n- Event 2: t=2.0s, -> C\n\\boxed{2}"
    four, two = _sample(1.0), _sample(1.0, answer=2, n_trace=2)
    for _ in range(2):
        a, b = score_record(four, text), score_record(two, text)
        assert (a["n_events"], a["correct"], a["n_matched"], a["recall"]) == (4, False, 2, 0.5)
        assert (b["n_events"], b["correct"], b["n_matched"], b["recall"]) == (2, True, 2, 1.0)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 30, allow_nan=False), st.none() | st.text(max_size=3)), max_size=4),
    st.lists(st.integers(0, 9), min_size=4, max_size=4),
    st.lists(st.floats(-5, 60, allow_nan=False), max_size=3),
)
def test_fast_report_is_the_dataclass(evs: list, counts: list[int], dropped: list[float]) -> None:
    events = tuple(ReportedEvent(t, (i, i + 1), label) for i, (t, label) in enumerate(evs))
    a, b, c, d = counts
    fast, slow = _new_report(events, a, b, tuple(dropped), c, d), TimestampReport(events, a, b, tuple(dropped), c, d)
    _same(fast, slow)
    assert fast.to_dict() == slow.to_dict() and fast.times == slow.times and fast.labels == slow.labels
