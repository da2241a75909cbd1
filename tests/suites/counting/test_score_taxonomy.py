"""The trace-error taxonomy against the paper's definitions (Tables 7-8, F.5, F.7), and its invariants."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.types import Event, Sample, Trace, VideoRef
from vidaudit.suites.counting.matching import match_times
from vidaudit.suites.counting.scoring import score_trial
from vidaudit.suites.counting.taxonomy import _align_gap, classify, order_aligned


def tax(true: list[float], rep: list[float], delta: float, **kw):
    mt = match_times(true, rep, delta)
    kw.setdefault("predicted", None)
    kw.setdefault("correct", False)
    kw.setdefault("f1", 2 * mt.k / (len(true) + len(rep)) if true else None)
    return mt, classify(mt, true, rep, delta, **kw)


def make_sample(times: list[float], f: float, answer: int | None = None) -> Sample:
    events = tuple(Event(t=t, frame=int(t * 30), type="e", count=i + 1) for i, t in enumerate(times))
    return Sample(
        sample_id=f"s-{len(times)}-{f}",
        suite="counting",
        params={"domain": "blinking", "n_events": len(times), "frequency_hz": f, "seed": 0},
        question="How many times did the object blink?",
        answer=len(times) if answer is None else answer,
        trace=Trace(events=events),
        video=VideoRef(path="v.mp4", sha256="abc", fps=30.0, width=64, height=64, n_frames=720, duration_s=24.0),
    )


# --------------------------------------------------------------------------- displaced


def test_displaced_is_order_aligned_not_distance_limited() -> None:
    """Table 8: "A displaced event is an order-aligned timestamp outside the tolerance."
    Table 7: "A report corresponds to the appropriate event in the sequence but falls outside the
    timestamp tolerance."

    The issue's case: at F = 1 Hz (delta = 0.5 s) the third blink is reported 1.2 s late. It is the
    third report and the third event is the one left unmatched: displaced, not hallucinated (the old
    2 * delta rule called it hallucinated).
    """
    mt, t = tax([2.0, 3.0, 4.0], [2.0, 3.0, 5.2], 0.5)
    assert mt.k == 2
    assert (t.displaced, t.hallucinated, t.missed) == (1, 0, 1)
    assert t.displaced_pairs == ((2, 2),)


def test_displaced_drift_at_both_ends() -> None:
    """F.7: "the model detects the presence and sequence of visual transitions, but assigns boundary
    timestamps that drift beyond the 1.0s tolerance window relative to physical ground truth".

    At F = 0.5 Hz (delta = 1.0 s) the windows tile the active span, so a drifted report can only
    leave every window before the first or after the last event: the first blink reported 1.1 s
    early and the last 1.3 s late are both displaced, each aligned with the event at its place."""
    true = [2.0, 4.0, 6.0, 8.0]
    mt, t = tax(true, [0.9, 4.0, 6.0, 9.3], 1.0)
    assert mt.k == 2
    assert (t.matched, t.missed, t.displaced, t.hallucinated) == (2, 2, 2, 0)
    assert t.displaced_pairs == ((0, 0), (3, 3))
    # an extra report beside a matched event has no unmatched event at its place: hallucinated
    mt, t = tax(true, [2.0, 3.9, 4.2, 6.0], 1.0)
    assert (t.matched, t.missed, t.displaced, t.hallucinated) == (3, 1, 0, 1)


def test_alignment_never_crosses_a_matched_pair() -> None:
    """Order alignment: a report after a matched event cannot stand for an unmatched event before it.

    True events at 1.0 and 1.2 s, reports at 1.2 and 1.5 s, delta = 0.25 s: 1.2 matches the second
    event; the first event (before that pair) is missed and the report at 1.5 (after it) has no
    event left at its place in the sequence: hallucinated, although it is within 2 * delta of the
    missed event (which the old rule counted as displaced)."""
    mt, t = tax([1.0, 1.2], [1.2, 1.5], 0.25)
    assert mt.pairs == ((1, 0),)
    assert (t.displaced, t.hallucinated, t.missed) == (0, 1, 1)


def test_gap_pairing_takes_the_least_total_deviation() -> None:
    """Within one gap, more reports than events: the order-preserving pairing with the smallest total
    deviation (C.15's tie rule, "breaking ties by the smallest total timestamp deviation")."""
    _, t = tax([1.0, 4.0], [1.0, 5.5, 5.0], 0.25)
    assert t.displaced_pairs == ((1, 2),)  # 5.0 s (1.0 off) rather than 5.5 s (1.5 off)
    assert (t.displaced, t.hallucinated) == (1, 1)
    # events on both sides of a matched pair are aligned inside their own gap only
    _, t = tax([1.0, 3.0, 5.0, 7.0], [1.7, 3.0, 5.6, 9.0], 0.25)
    assert t.displaced_pairs == ((0, 0), (2, 2), (3, 3))


def test_table_8_arithmetic() -> None:
    """Table 8: matched + missed = true events (Gemini: 3,907 + 8,333 = 12,240); every report is
    matched, displaced or hallucinated."""
    true = [1.0, 2.0, 3.0, 4.0]
    rep = [1.05, 2.4, 3.05, 9.0, 5.5]
    _, t = tax(
        true,
        rep,
        0.25,
        true_labels=["B", "C", "A", "D"],
        reported_labels=["B", None, "D", None, None],
        predicted=4,
        correct=True,
    )
    assert t.to_dict() == {
        "matched": 2,
        "missed": 2,
        "hallucinated": 1,
        "displaced": 2,
        "misidentified": 1,
        "wrong_accumulation": 0,
        "ledger_mismatch": 1,
        "accidental_correctness": 1,
    }
    assert t.matched + t.missed == len(true) and t.matched + t.displaced + t.hallucinated == len(rep)


def brute_gap(t: list[float], r: list[float]) -> float:
    """Least total deviation over every order-preserving pairing of min(len) pairs."""
    a, b = sorted((len(t), len(r)))
    if a == 0:
        return 0.0
    short, long_ = (t, r) if len(t) <= len(r) else (r, t)
    return min(sum(abs(short[i] - long_[j]) for i, j in enumerate(c)) for c in itertools.combinations(range(b), a))


gap_times = st.lists(st.floats(0.0, 20.0, allow_nan=False).map(lambda x: round(x, 2)), max_size=6).map(sorted)


@settings(max_examples=200, deadline=None)
@given(gap_times, gap_times)
def test_gap_alignment_matches_brute_force(t: list[float], r: list[float]) -> None:
    pairs = _align_gap(t, r)
    assert len(pairs) == min(len(t), len(r))
    assert [i for i, _ in pairs] == sorted({i for i, _ in pairs}) and [j for _, j in pairs] == sorted(
        {j for _, j in pairs}
    )  # strictly increasing on both sides: order-preserving, one-to-one
    assert sum(abs(t[i] - r[j]) for i, j in pairs) == pytest.approx(brute_gap(t, r), abs=1e-9)


times = st.lists(st.floats(0.0, 24.0, allow_nan=False).map(lambda x: round(x, 2)), max_size=12)


@settings(max_examples=300, deadline=None)
@given(times, times, st.sampled_from([0.125, 0.25, 0.5, 1.0]))
def test_taxonomy_invariants(true: list[float], rep: list[float], delta: float) -> None:
    mt, t = tax(true, rep, delta)
    assert t.matched + t.missed == len(true)
    assert t.matched + t.displaced + t.hallucinated == len(rep)
    um_t, um_r = set(mt.unmatched_true), set(mt.unmatched_reported)
    assert all(i in um_t and j in um_r for i, j in t.displaced_pairs)
    assert len({i for i, _ in t.displaced_pairs}) == len({j for _, j in t.displaced_pairs}) == t.displaced
    for i, j in t.displaced_pairs:  # outside the tolerance, else the matching would have taken the pair
        assert abs(true[i] - rep[j]) > delta
    # no displaced pair crosses a matched pair (in time order on both sides)
    for i, j in t.displaced_pairs:
        for a, b in mt.pairs:
            assert not (true[i] < true[a] and rep[j] > rep[b]) and not (true[i] > true[a] and rep[j] < rep[b])
    # whenever both sides have leftovers in one gap the alignment uses them: nothing left in a gap
    # on both sides at once
    assert order_aligned(mt, true, rep) == list(t.displaced_pairs)


# --------------------------------------------------------------------------- wrong accumulation


def test_wrong_accumulation_is_the_papers_rfr() -> None:
    """Table 8: "Wrong accumulation counts videos with an incorrect final answer and trace F1 >= 0.80."
    F.5: "declaring y = 4 or y = 5 despite correctly listing all 5 or 6 timestamped events"."""
    s = make_sample([2.0, 3.0, 4.0, 5.0, 6.0], 1.0)
    text = "\n".join(f"Event {i + 1} at {t:.1f}s (count {i + 1})" for i, t in enumerate([2.0, 3.0, 4.0, 5.0, 6.0]))
    r = score_trial(s, text + "\nFinal answer: \\boxed{4}").to_dict()
    assert r["f1"] == 1.0 and r["correct"] is False and r["rfr"] is True
    assert r["taxonomy"]["wrong_accumulation"] == 1 and r["taxonomy"]["ledger_mismatch"] == 1


def test_ledger_mismatch_is_not_wrong_accumulation() -> None:
    """A count that differs from the model's own ledger but whose trace is not faithful (F1 < 0.80) is
    no wrong accumulation in the paper's sense ("The reported event sequence is sufficiently
    faithful with trace F1 >= 0.80, but the final count is incorrect", Table 7); vidaudit keeps the
    broader figure as ledger_mismatch."""
    s = make_sample([2.0, 3.0, 4.0, 5.0, 6.0], 1.0)
    text = "at 2.0s, at 3.0s, at 4.0s. Final answer: \\boxed{4}"  # 3 reported, F1 = 6/8 = 0.75
    r = score_trial(s, text).to_dict()
    assert r["f1"] == pytest.approx(0.75) and r["rfr"] is False
    assert r["taxonomy"]["wrong_accumulation"] == 0 and r["taxonomy"]["ledger_mismatch"] == 1
    # a faithful ledger with an unparseable final answer is an incorrect final answer: wrong accumulation
    r = score_trial(s, "at 2.0s, at 3.0s, at 4.0s, at 5.0s, at 6.0s. I am not sure how many.").to_dict()
    assert r["parse_method"] == "unparseable" and r["rfr"] is True
    assert r["taxonomy"]["wrong_accumulation"] == 1 and r["taxonomy"]["ledger_mismatch"] == 0


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 8), st.lists(st.floats(-0.4, 0.4, allow_nan=False), max_size=10), st.integers(0, 12))
def test_wrong_accumulation_equals_rfr(n: int, jitter: list[float], said: int) -> None:
    s = make_sample([2.0 + i for i in range(n)], 1.0)
    rep = [2.0 + i + j for i, j in enumerate(jitter)]
    text = ", ".join(f"at {t:.2f}s" for t in rep) + f". Final answer: \\boxed{{{said}}}"
    r = score_trial(s, text).to_dict()
    assert r["taxonomy"]["wrong_accumulation"] == int(bool(r["rfr"]))
    assert r["taxonomy"]["accidental_correctness"] == int(bool(r["acr"]))
