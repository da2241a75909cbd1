"""The scoring path's fast constructors make the very objects their dataclasses make (issue 13 speed-up).

``TrialScore``, ``Taxonomy``, ``ReportedEvent`` and ``TimestampReport`` are frozen dataclasses; the hot path fills an
instance's ``__dict__`` in one step instead of calling the generated ``__init__`` (one
``object.__setattr__`` per field). Equality, ``repr``, the field order of ``__dict__`` (which
``TrialScore.to_dict`` copies) and the record dict must be the same.
"""

from __future__ import annotations

from dataclasses import fields

from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.suites.counting.scoring import TrialScore, _scored_trial
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


@settings(max_examples=100, deadline=None)
@given(st.lists(SMALL, min_size=len(fields(TrialScore)), max_size=len(fields(TrialScore))), PAIRS,
       st.dictionaries(st.sampled_from(["1", "0.5", "rate_relative"]), st.dictionaries(st.just("f1"), SMALL)))
def test_fast_trial_score_is_the_dataclass(values: list, pairs: tuple, tolerance: dict) -> None:
    names = [f.name for f in fields(TrialScore)]
    values[names.index("matches")] = values[names.index("displaced_pairs")] = pairs
    values[names.index("reported_times")] = values[names.index("reported_labels")] = ()
    values[names.index("parse_span")], values[names.index("taxonomy")] = None, None
    values[names.index("tolerance")] = tolerance
    fast, slow = _scored_trial(tuple(values)), TrialScore(*values)
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
