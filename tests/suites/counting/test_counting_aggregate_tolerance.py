"""Table 9 (``tolerance``) read column-wise equals the row-by-row reading it replaced (issue 24).

The reference below is the previous implementation (its two helpers included), kept here: each metric
of each row read with ``.get`` and averaged with ``mean``. Records are generated with missing windows, rows lacking
metrics (the ``KeyError`` fallback), None values, failed trials and N = 0 controls.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.suites.counting.aggregate import aggregate
from vidaudit.suites.counting.aggregate_blocks import em_counts, is_ok, is_right, mean, nested, plain
from vidaudit.suites.counting.aggregate_diagnostics import TOLERANCE_METRICS


def _positive_traced(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rs if is_ok(r) and int(r["n_events"]) > 0 and r.get("trace_available")]


def _em_fields(rs: list[dict[str, Any]]) -> dict[str, Any]:
    return em_counts(sum(is_right(r) for r in rs), len(rs))


def _reference(groups: dict[tuple, list[dict[str, Any]]]) -> dict:
    out = nested()
    for (model, cond), rs in groups.items():
        ok = [r for r in rs if is_ok(r)]
        pos = _positive_traced(ok)
        em = _em_fields(rs)
        vor = mean(r.get("vor") for r in pos)
        keys: list[str] = []
        for r in pos:
            for k in r.get("tolerance") or {}:
                if k not in keys:
                    keys.append(k)
        for k in keys:
            rows = [r["tolerance"][k] for r in pos if k in (r.get("tolerance") or {})]
            out[model][cond][k] = {
                "em": em["em"],
                "n": len(rs),
                "completion": len(ok) / len(rs),
                "vor": vor,
                "n_positive": len(rows),
                **{m: mean([x.get(m) for x in rows]) for m in TOLERANCE_METRICS},
            }
    return plain(out)


VALUE = st.none() | st.floats(0, 1, allow_nan=False) | st.booleans()
ROW = st.dictionaries(st.sampled_from([*TOLERANCE_METRICS, "n_matched"]), VALUE)
FULL_ROW = st.fixed_dictionaries({m: VALUE for m in TOLERANCE_METRICS})
RECORD = st.fixed_dictionaries(
    {
        "status": st.sampled_from(["ok", "ok", "ok", "error"]),
        "n_events": st.integers(0, 3),
        "trace_available": st.booleans(),
        "correct": st.none() | st.booleans(),
        "vor": VALUE,
        "tolerance": st.none()
        | st.dictionaries(st.sampled_from(["1", "0.5", "0.25", "rate_relative"]), st.one_of(FULL_ROW, ROW), max_size=4),
    }
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([("m", "a"), ("m", "b"), ("n", "a")]), st.lists(RECORD, min_size=1, max_size=8), min_size=1
    )
)
def test_tolerance_equals_row_by_row(groups: dict[tuple, list[dict[str, Any]]]) -> None:
    records = [
        {**r, "model": model, "condition": cond, "domain": "d", "frequency_hz": 1.0}
        for (model, cond), rs in groups.items()
        for r in rs
    ]
    got, want = aggregate(records)["tolerance"], _reference(groups)
    assert got == want and repr(got) == repr(want)
