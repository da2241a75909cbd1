"""Counting's ``aggregate`` (records read once, in columns) equals the record-by-record one it replaced
(issue 24, fourth round), to the byte of its JSON.

The reference is ``tests/aggregate_reference.py``, the module as it was (a4d1acc), imported here only.
Records are drawn as the module docstring allows them: several models and conditions interleaved,
missing optional keys, None values, statuses other than ok, N = 0 controls, real videos (no frequency),
arbitrary floats (so that a sum in another order would show), domains whose ``repr`` sorts apart from
their text; and, for the DataError path, records lacking a required key.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aggregate_reference as reference
from vidaudit.core.errors import DataError
from vidaudit.suites.counting.aggregate import aggregate
from vidaudit.suites.counting.taxonomy import TAXONOMY_KEYS

METRIC = st.none() | st.floats(0, 1, allow_nan=False) | st.booleans()
WINDOWS = ("0.25", "0.5", "1.0", "rate_relative")
ROW = st.fixed_dictionaries({}, optional={m: METRIC for m in ("precision", "recall", "f1", "acr", "rfr", "n_matched")})
TAXONOMY = st.fixed_dictionaries({}, optional={k: st.none() | st.integers(0, 9) for k in TAXONOMY_KEYS})
TAXONOMY_FULL = st.fixed_dictionaries({k: st.integers(0, 9) for k in TAXONOMY_KEYS})
COUNT = st.none() | st.integers(0, 9)
USAGE = st.none() | st.dictionaries(
    st.sampled_from(["input_tokens", "output_tokens", "frames"]),
    st.integers(0, 10_000) | st.floats(0, 1e4, allow_nan=False) | st.booleans(),
    max_size=3,
)
USAGE_PLAIN = st.fixed_dictionaries({"input_tokens": st.integers(0, 10_000), "output_tokens": st.integers(0, 500)})
OPTIONAL: dict[str, Any] = {
    "status": st.sampled_from(["ok", "ok", "ok", "ok", "api_error", "timeout", "refused", None]),
    "correct": st.none() | st.booleans(),
    "parse_method": st.sampled_from(["boxed", "unparseable", "ledger"]) | st.none(),
    "trace_available": st.sampled_from([True, True, True, False, None]),
    **{k: METRIC for k in ("vor", "precision", "recall", "f1", "acr", "rfr")},
    "taxonomy": st.none() | TAXONOMY | TAXONOMY_FULL,
    "tolerance": st.none() | st.dictionaries(st.sampled_from(WINDOWS), ROW, max_size=4),
    "n_reported": COUNT,
    "usage": USAGE | USAGE_PLAIN,
    "cost_usd": st.none() | st.floats(0, 1, allow_nan=False),
    "n_dropped_timestamps": COUNT,
    "n_frame_mentions": COUNT,
    "n_frame_out_of_range": COUNT,
}
CELL = {
    "model": st.sampled_from(["m", "n"]),
    "condition": st.sampled_from(["a", "b", "c"]),
    "domain": st.sampled_from(["bounce_ball", "blinking", "it's", "b"]),
    "n_events": st.integers(0, 12) | st.sampled_from([0, 16, 25, 31, 40]),
    "frequency_hz": st.none() | st.sampled_from([0.5, 1.0, 1, 2.0, 2.2, 2.5, 3.0, 4.0]),
    "sample_id": st.text(max_size=3),
}


@st.composite
def _record(draw: st.DrawFn) -> dict[str, Any]:
    """Every optional key, then a few of them dropped (so that both the read-at-once path and the
    record-by-record fallback run, and ok, traced trials are common)."""
    r = draw(st.fixed_dictionaries({**CELL, **OPTIONAL}))
    for k in draw(st.lists(st.sampled_from(sorted(OPTIONAL)), max_size=3)):
        r.pop(k, None)
    return r


RECORD = _record()
#: a record as score_trial and the benchmark make it: every key there (the read-everything-at-once path)
FULL_RECORD = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["m", "n"]),
        "condition": st.sampled_from(["a", "b"]),
        "domain": st.sampled_from(["bounce_ball", "blinking"]),
        "n_events": st.integers(0, 6),
        "frequency_hz": st.sampled_from([0.5, 1.0, 2.5, 4.0]),
        "status": st.just("ok"),
        "correct": st.booleans(),
        "parse_method": st.sampled_from(["boxed", "unparseable"]),
        "trace_available": st.just(True),
        **{k: st.floats(0, 1, allow_nan=False) for k in ("vor", "precision", "recall", "f1")},
        "acr": st.booleans(),
        "rfr": st.booleans(),
        "taxonomy": TAXONOMY_FULL,
        "tolerance": st.fixed_dictionaries(
            {
                w: st.fixed_dictionaries(
                    {m: st.floats(0, 1, allow_nan=False) for m in ("precision", "recall", "f1", "acr", "rfr")}
                )
                for w in WINDOWS
            }
        ),
        "n_reported": st.integers(0, 9),
        "usage": USAGE_PLAIN,
        "cost_usd": st.floats(0, 1, allow_nan=False),
        "n_dropped_timestamps": st.integers(0, 3),
        "n_frame_mentions": st.integers(0, 3),
        "n_frame_out_of_range": st.integers(0, 3),
    }
)


def _same(records: list[dict[str, Any]]) -> None:
    want = reference.aggregate(records)
    got = aggregate(records)
    assert json.dumps(got) == json.dumps(want)
    assert got == want


@settings(max_examples=200, deadline=None)
@given(st.lists(RECORD, min_size=10, max_size=60))
def test_aggregate_equals_the_record_by_record_reference(records: list[dict[str, Any]]) -> None:
    _same(records)


@settings(max_examples=100, deadline=None)
@given(st.lists(FULL_RECORD, min_size=1, max_size=60))
def test_aggregate_equals_the_reference_on_complete_records(records: list[dict[str, Any]]) -> None:
    _same(records)
    _same(sorted(records, key=_grid_order))  # cell by cell, as a run's records come: regions copy runs


def _grid_order(r: dict[str, Any]) -> tuple[Any, ...]:
    return r["model"], r["condition"], r["domain"], r["n_events"], r["frequency_hz"]


#: what varies between a cell's trials in a region (the rest of FULL_RECORD fixed: smaller draws)
RUN_RECORD = st.fixed_dictionaries(
    {
        "n_events": st.integers(0, 6),
        "frequency_hz": st.sampled_from([0.5, 1.0, 2.2, 2.5, 4.0]),
        "correct": st.booleans(),
        **{k: st.floats(0, 1, allow_nan=False) for k in ("vor", "precision", "recall", "f1")},
        "acr": st.booleans(),
        "rfr": st.booleans(),
    }
)
RUN_FIXED = {
    "model": "m",
    "condition": "a",
    "domain": "blinking",
    "status": "ok",
    "parse_method": "boxed",
    "trace_available": True,
    "taxonomy": dict.fromkeys(TAXONOMY_KEYS, 1),
    "tolerance": {},
    "n_reported": 1,
    "usage": {},
    "cost_usd": 0.5,
}


@settings(max_examples=50, deadline=None)
@given(st.lists(RUN_RECORD, min_size=40, max_size=100), st.booleans())
def test_regions_of_long_runs_equal_the_reference(records: list[dict[str, Any]], frequency_first: bool) -> None:
    """One model, condition and domain, cell by cell: a region's trials are copied run by run."""
    one = [{**RUN_FIXED, **r} for r in records]
    _same(
        sorted(
            one,
            key=lambda r: (r["frequency_hz"], r["n_events"]) if frequency_first else (r["n_events"], r["frequency_hz"]),
        )
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(RECORD, min_size=1, max_size=12), st.data())
def test_a_missing_required_key_raises_the_reference_error(records: list[dict[str, Any]], data: st.DataObject) -> None:
    for _ in range(data.draw(st.integers(1, 3))):
        r = records[data.draw(st.integers(0, len(records) - 1))]
        r.pop(data.draw(st.sampled_from(["model", "condition", "domain", "n_events", "frequency_hz"])), None)
    with pytest.raises(DataError) as want:
        reference.aggregate(records)
    with pytest.raises(DataError) as got:
        aggregate(records)
    assert str(got.value) == str(want.value)


def test_no_records() -> None:
    _same([])
