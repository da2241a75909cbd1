"""Trace metrics, taxonomy and the counting suite's score_trial on hand-built Samples."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.types import Event, Sample, Trace, VideoRef
from vidaudit.suites.counting.matching import match_times
from vidaudit.suites.counting.metrics import trace_metrics
from vidaudit.suites.counting.scoring import rate_relative_delta, score_trial
from vidaudit.suites.counting.taxonomy import classify


def make_sample(
    domain: str, times: list[float], f: float, states: list[str | None] | None = None, answer: int | None = None
) -> Sample:
    states = states or [None] * len(times)
    events = tuple(
        Event(t=t, frame=int(t * 30), type="e", state_after=s, count=i + 1)
        for i, (t, s) in enumerate(zip(times, states, strict=True))
    )
    return Sample(
        sample_id=f"s-{domain}-{len(times)}-{f}",
        suite="counting",
        params={"domain": domain, "n_events": len(times), "frequency_hz": f, "seed": 0},
        question="How many?",
        answer=len(times) if answer is None else answer,
        trace=Trace(events=events),
        video=VideoRef(path="v.mp4", sha256="abc", fps=30.0, width=64, height=64, n_frames=720, duration_s=24.0),
    )


def test_metric_definitions() -> None:
    m = trace_metrics(4, 5, 3, correct=False)
    assert (m.precision, m.recall, m.vor) == (0.6, 0.75, 1.25)
    assert m.f1 == pytest.approx(2 * 0.6 * 0.75 / 1.35)
    assert m.rfr is False and m.acr is False
    z = trace_metrics(3, 0, 0, correct=True)
    assert (z.precision, z.f1, z.vor, z.acr) == (0.0, 0.0, 0.0, True)
    n0 = trace_metrics(0, 2, 0, correct=False)
    assert (n0.precision, n0.recall, n0.f1, n0.vor, n0.acr, n0.rfr) == (None,) * 6
    edge = trace_metrics(5, 5, 4, correct=False)  # F1 exactly 0.8 counts as faithful
    assert edge.f1 == pytest.approx(0.8) and edge.rfr is True
    with pytest.raises(ConfigError, match="impossible"):
        trace_metrics(2, 2, 3, correct=True)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30), st.integers(0, 30), st.data())
def test_metric_invariants(n: int, m: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(0, min(n, m)))
    correct = data.draw(st.booleans())
    t = trace_metrics(n, m, k, correct)
    assert 0 <= t.f1 <= 1 and 0 <= t.recall <= 1 and 0 <= t.precision <= 1
    assert min(t.precision, t.recall) - 1e-12 <= t.f1 <= max(t.precision, t.recall) + 1e-12
    assert not (t.acr and t.rfr)
    assert t.acr == (correct and t.f1 < 0.8 - 1e-12)


def test_taxonomy_counts() -> None:
    """Table 7 types on one trial; the displaced rule is order alignment (see test_score_taxonomy.py)."""
    true = [1.0, 2.0, 3.0, 4.0]
    rep = [1.05, 2.4, 3.05, 9.0, 5.5]  # 2.4 aligns with 2.0 and 5.5 with 4.0 (displaced); 9.0 is hallucinated
    labels_true = ["B", "C", "A", "D"]
    labels_rep = ["B", None, "D", None, None]
    mt = match_times(true, rep, 0.25)
    tax = classify(
        mt,
        true,
        rep,
        0.25,
        true_labels=labels_true,
        reported_labels=labels_rep,
        predicted=4,
        correct=True,
        f1=2 * 2 / 9,
    )
    assert tax.to_dict() == {
        "matched": 2,
        "missed": 2,
        "hallucinated": 1,
        "displaced": 2,
        "misidentified": 1,
        "wrong_accumulation": 0,
        "ledger_mismatch": 1,
        "accidental_correctness": 1,
    }


def test_score_trial_state_machine() -> None:
    s = make_sample("state_machine", [2.0, 4.0, 6.0], 0.5, ["C", "B", "D"])
    text = (
        "1. Step-by-Step Event Ledger\n- 0:02.3 A -> C, running count 1\n- 0:04.1 C -> A, running count 2\n"
        "- 0:11.0 A -> D, running count 3\n2. Final Answer: \\boxed{3}"
    )
    r = score_trial(s, text).to_dict()
    assert r["predicted_count"] == 3 and r["correct"] is True and r["parse_method"] == "boxed"
    assert text[r["parse_span"][0] : r["parse_span"][1]] == r"\boxed{3}"
    assert r["reported_times"] == [2.3, 4.1, 11.0] and r["reported_labels"] == ["C", "A", "D"]
    assert r["delta_s"] == 1.0 and r["n_reported"] == 3 and r["n_matched"] == 2
    assert r["matches"] == [[0, 0], [1, 1]]
    assert r["precision"] == pytest.approx(2 / 3) and r["recall"] == pytest.approx(2 / 3)
    assert r["acr"] is True and r["rfr"] is False
    assert r["taxonomy"]["misidentified"] == 1
    # the third report (11.0 s) is the third in the sequence, where the 6.0 s transition is unmatched
    assert r["taxonomy"]["displaced"] == 1 and r["taxonomy"]["hallucinated"] == 0
    assert r["taxonomy"]["wrong_accumulation"] == 0 and r["taxonomy"]["ledger_mismatch"] == 0
    assert r["tolerance"]["0.25"]["n_matched"] == 1 and r["tolerance"]["rate_relative"]["n_matched"] == 2
    assert r["tolerance"]["1.0"]["n_matched"] == 2


def test_score_trial_bounce_walls_and_rate_window() -> None:
    s = make_sample("bounce_ball", [3.0, 3.25, 3.5, 3.75], 4.0, ["left", "right", "left", "right"])
    assert rate_relative_delta(4.0) == 0.125
    text = "t=3.0s left wall; t=3.3s right wall; t=3.55s right wall; t=3.9s left wall. Final answer: 5"
    r = score_trial(s, text).to_dict()
    assert r["n_matched"] == 3 and r["correct"] is False
    assert r["taxonomy"]["misidentified"] == 1  # 3.55 s names the right wall, the trace says left
    assert r["taxonomy"]["missed"] == 1 and r["taxonomy"]["displaced"] == 1
    assert r["displaced_pairs"] == [[3, 3]]  # 3.9 s stands for the 4th contact (3.75 s), 0.15 s off
    assert r["taxonomy"]["ledger_mismatch"] == 1  # says 5 but reported 4 events
    assert r["rfr"] is False and r["taxonomy"]["wrong_accumulation"] == 0  # F1 = 0.75: not faithful


def test_zero_events_and_unparseable() -> None:
    s = make_sample("blinking", [], 1.0)
    r = score_trial(s, "Nothing blinks. \\boxed{0}").to_dict()
    assert r["correct"] is True and r["precision"] is None and r["f1"] is None and r["acr"] is None
    r = score_trial(s, "It blinks at 3.0s.").to_dict()
    assert r["correct"] is False and r["parse_method"] == "unparseable" and r["taxonomy"]["hallucinated"] == 1


def test_errored_trial_is_not_scored() -> None:
    s = make_sample("blinking", [1.0], 1.0)
    r = score_trial(s, r"\boxed{1}", status="api_error").to_dict()
    assert r["status"] == "api_error" and r["scored"] is False
    assert r["correct"] is None and r["f1"] is None and r["predicted_count"] is None


def test_bad_answer_and_missing_trace() -> None:
    bad = make_sample("blinking", [1.0], 1.0).model_copy(update={"answer": "one"})
    with pytest.raises(DataError, match="non-negative integer"):
        score_trial(bad, "1")
    count_only = make_sample("blinking", [], 1.0, answer=5)  # e.g. a real video with a count annotation
    r = score_trial(count_only, "\\boxed{5} at 3s").to_dict()
    assert r["correct"] is True and r["trace_available"] is False and r["f1"] is None


@pytest.mark.parametrize("f", [0.5, 1.0, 4.0])
def test_the_matching_window_is_half_an_event_period(f: float) -> None:
    """delta(F) = 1/(2F), not 1/F: a report just inside half a period of its event matches, one just past
    it (well inside a whole period) does not, at every frequency; the tolerance table's rate_relative row
    agrees."""
    period = 1.0 / f
    assert rate_relative_delta(f) == pytest.approx(period / 2)
    s = make_sample("blinking", [2.0 * period], f)
    t0 = 2.0 * period
    for offset, matched in ((0.49 * period, 1), (0.51 * period, 0), (0.9 * period, 0)):
        r = score_trial(s, f"It blinks at t={t0 + offset:.4f}s. Final answer: 1").to_dict()
        assert r["reported_times"] == [pytest.approx(t0 + offset, abs=1e-4)]
        assert r["delta_s"] == pytest.approx(period / 2)
        assert r["n_matched"] == matched, (f, offset)
        assert r["tolerance"]["rate_relative"]["n_matched"] == matched
