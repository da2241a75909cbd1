"""The scoring path's fast constructors make the very objects their dataclasses make (issue 13 speed-up).

``TrialScore`` (as ``score_trial`` makes it), ``Taxonomy``, ``ReportedEvent`` and ``TimestampReport`` are frozen
dataclasses; the hot path fills an instance's ``__dict__`` in one step instead of calling the generated ``__init__`` (one
``object.__setattr__`` per field). Equality, ``repr``, the field order of ``__dict__`` (which
``TrialScore.to_dict`` copies) and the record dict must be the same.
"""

from __future__ import annotations

from dataclasses import fields

from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.types import Event, Sample, Trace, VideoRef
from vidaudit.suites.counting.scoring import TrialScore, score_trial
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
@given(st.floats(0, 30, allow_nan=False), st.tuples(st.integers(0, 99), st.integers(0, 99)),
       st.none() | st.text(max_size=3), st.none() | st.integers(1, 50))
def test_fast_event_is_the_dataclass(t: float, span: tuple, label: str | None, frame: int | None) -> None:
    _same(_new_event(t, span, label, frame), ReportedEvent(t, span, label, frame))


LEDGERS = st.lists(st.tuples(st.floats(0, 30, allow_nan=False).map(lambda v: round(v, 2)), st.sampled_from("ABCD")),
                   max_size=6).map(lambda evs: "\n".join(f"- Event {i}: t={t}s, -> {s}, count {i}"
                                                         for i, (t, s) in enumerate(evs, 1)))


@settings(max_examples=100, deadline=None)
@given(LEDGERS, st.integers(0, 6), st.sampled_from([0.5, 1.0, 4.0]))
def test_scored_trial_is_the_dataclass(ledger: str, answer: int, f: float) -> None:
    """score_trial fills the TrialScore's ``__dict__`` in one step: every field, in field order, as __init__ would."""
    events = tuple(Event(t=1.0 + i / f, frame=30 + int(30 * i / f), type="transition", state_before="ABCD"[i],
                         state_after="BCDA"[i], count=i + 1) for i in range(4))
    sample = Sample(sample_id="s", suite="counting", params={"domain": "state_machine", "n_events": 4, "frequency_hz": f},
                    question="How many?", answer=4, trace=Trace(events=events),
                    video=VideoRef(path="v.mp4", sha256="x", fps=30.0, width=64, height=64, n_frames=720,
                                   duration_s=24.0))
    fast = score_trial(sample, f"{ledger}\nFinal answer: \\boxed{{{answer}}}")
    slow = TrialScore(**vars(fast))
    _same(fast, slow)
    assert fast.to_dict() == slow.to_dict()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 30, allow_nan=False), st.none() | st.text(max_size=3)), max_size=4),
       st.lists(st.integers(0, 9), min_size=4, max_size=4), st.lists(st.floats(-5, 60, allow_nan=False), max_size=3))
def test_fast_report_is_the_dataclass(evs: list, counts: list[int], dropped: list[float]) -> None:
    events = tuple(ReportedEvent(t, (i, i + 1), label) for i, (t, label) in enumerate(evs))
    a, b, c, d = counts
    fast, slow = _new_report(events, a, b, tuple(dropped), c, d), TimestampReport(events, a, b, tuple(dropped), c, d)
    _same(fast, slow)
    assert fast.to_dict() == slow.to_dict() and fast.times == slow.times and fast.labels == slow.labels
