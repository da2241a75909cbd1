"""The shortcuts of the fast scoring path give what the general path gives (see benchmarks/scoring.py).

Each shortcut is checked against the computation it skips: the fixed-window K pinned by
monotonicity against a count at every window, the plain-digit box against the general box reader,
the equal-label skip against normalising every label, the cached truth against a fresh read.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.types import Event, Sample, Trace, VideoRef
from vidaudit.score.answers import _count_in_any_box, _count_in_box, parse_count
from vidaudit.suites.counting.matching import (
    WINDOW_EPS,
    Matching,
    diagonal_count,
    is_diagonal,
    match_presorted,
    match_times,
    max_match_count,
    window_edges,
)
from vidaudit.suites.counting.scoring import (
    _FIXED_WIDEST_FIRST,
    _TOLERANCE_KEYS,
    FIXED_TOLERANCES_S,
    RATE_RELATIVE,
    _window_counts,
    score_trial,
)
from vidaudit.suites.counting.taxonomy import _norm, classify

times = st.lists(st.floats(0, 30, allow_nan=False), max_size=12)
grid_times = st.lists(st.integers(0, 60).map(lambda i: i * 0.25), max_size=12)  # many exact window edges
deltas = st.sampled_from([0.125, 0.25, 0.5, 1.0, 1 / 3, 1 / 6, 2.0]) | st.floats(0.01, 3, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(st.one_of(times, grid_times), st.one_of(times, grid_times), deltas)
def test_pinned_window_counts_equal_a_count_at_every_window(true_t, rep_t, delta):
    k_delta = match_times(true_t, rep_t, delta).k
    got = _window_counts(sorted(true_t), rep_t, delta, k_delta)
    want = tuple(
        k_delta if d == RATE_RELATIVE or abs(float(d) - delta) < 1e-12 else max_match_count(true_t, rep_t, float(d))
        for d, _ in _TOLERANCE_KEYS
    )
    assert got == want
    edges = [window_edges(sorted(map(float, true_t)), w + WINDOW_EPS) for w in _FIXED_WIDEST_FIRST]
    assert _window_counts(sorted(true_t), rep_t, delta, k_delta, sorted(map(float, rep_t)), edges) == want
    assert len(got) == len(FIXED_TOLERANCES_S) + 1
    if true_t and rep_t:  # as the scorer counts them: the narrower windows of a diagonal matching by diagonal_count
        ts = tuple(sorted(map(float, true_t)))
        matching, rs = match_presorted(range(len(ts)), ts, sorted(rep_t), delta)
        assert _window_counts(ts, sorted(rep_t), delta, matching.k, rs, edges, is_diagonal(matching)) == want


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 60), unique=True, min_size=1, max_size=10).map(sorted),
    st.lists(st.sampled_from([0.0, 0.01, -0.03, 0.1, 0.2, -0.24, 0.26, 0.49, 0.6]), min_size=10, max_size=10),
    st.sampled_from([0.5, 1.0, 1 / 3, 0.125]),
)
def test_diagonal_counts_equal_a_count_at_every_narrower_window(ks, jitter, delta):
    """One report near each true time (the diagonal at delta(F) when each is its time's only candidate): K at each
    narrower fixed window read off the pairs equals a full count."""
    true_t = [k * 0.7 for k in ks]
    rep_t = sorted(t + j for t, j in zip(true_t, jitter, strict=False))
    ts = tuple(true_t)
    matching, rs = match_presorted(range(len(ts)), ts, rep_t, delta)
    if is_diagonal(matching):
        for w in _FIXED_WIDEST_FIRST:
            if w < delta:
                got = diagonal_count(window_edges(ts, w + WINDOW_EPS), rs)
                assert got == max_match_count(true_t, rep_t, w)
    edges = [window_edges(ts, w + WINDOW_EPS) for w in _FIXED_WIDEST_FIRST]
    assert _window_counts(ts, rep_t, delta, matching.k, rs, edges, is_diagonal(matching)) == _window_counts(
        ts, rep_t, delta, matching.k
    )


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789", min_size=1, max_size=20))
def test_plain_digit_box_reads_as_the_general_reader(digits):
    assert _count_in_box(digits) == _count_in_any_box(digits)
    assert parse_count(f"so \\boxed{{{digits}}}").value == _count_in_any_box(digits)


def test_general_box_reader_still_reads_wrapped_and_worded_boxes():
    assert _count_in_box("\\text{4}") == 4 and _count_in_box(" 7 ") == 7 and _count_in_box("four") == 4
    assert _count_in_box("3 or 4") is None and _count_in_box("٣") is None  # a non-ASCII digit is not a count


labels = st.sampled_from([None, "", " ", "A", "a", " A ", "B", "b ", "left", "LEFT", "on", "off"])


@settings(max_examples=300, deadline=None)
@given(st.lists(labels, min_size=1, max_size=8), st.lists(labels, min_size=1, max_size=8), st.data())
def test_misidentified_counts_every_normalised_disagreement(true_l, rep_l, data):
    n, m = len(true_l), len(rep_l)
    k = data.draw(st.integers(0, min(n, m)))
    pairs = tuple(
        zip(sorted(data.draw(st.permutations(range(n)))[:k]), data.draw(st.permutations(range(m)))[:k], strict=True)
    )
    matching = Matching(tuple(sorted(pairs)), 0.0, n, m)
    tax = classify(
        matching,
        [float(i) for i in range(n)],
        [float(j) for j in range(m)],
        0.5,
        true_labels=true_l,
        reported_labels=rep_l,
        predicted=None,
        correct=False,
        f1=None,
    )
    want = sum(
        1
        for i, j in pairs
        if _norm(rep_l[j]) is not None and _norm(true_l[i]) is not None and _norm(rep_l[j]) != _norm(true_l[i])
    )
    assert tax.misidentified == want


def _sample(sid: str, ts: list[float]) -> Sample:
    events = tuple(
        Event(t=t, frame=int(t * 30), type="transition", state_before="A", state_after="B", count=i + 1)
        for i, t in enumerate(ts)
    )
    video = VideoRef(path=f"{sid}.mp4", fps=30.0, width=64, height=64, n_frames=720, duration_s=24.0)
    return Sample(
        sample_id=sid,
        suite="counting",
        params={"domain": "state_machine", "n_events": len(ts), "frequency_hz": 1.0, "seed": 0},
        question="How many?",
        answer=len(ts),
        trace=Trace(events=events),
        video=video,
    )


def test_cached_truth_follows_each_trace():
    """Samples scored one after another (and freed) never read another sample's cached true times."""
    text = "- Event 1: 0:02.00, transition -> B\n- Event 2: 0:05.00, transition -> B\n\\boxed{2}"
    for round_ in range(50):
        shift = 0.0 if round_ % 2 else 10.0  # alternate traces that match the text and traces that do not
        s = _sample(f"s{round_}", [2.0 + shift, 5.0 + shift])
        got = score_trial(s, text)
        assert got.n_matched == (2 if shift == 0.0 else 0)
        assert got.matches == (((0, 0), (1, 1)) if shift == 0.0 else ())
        del s


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3000).map(lambda i: i / 100), max_size=25))
def test_bisected_merge_keeps_what_a_scan_of_every_kept_time_keeps(values):
    """Times within merge_s (0.1 s) of any earlier kept time merge into it; outside [0, 24 + 1] they drop."""
    from vidaudit.suites.counting.timestamps import MERGE_S, extract_timestamps

    text = " ".join(f"{v:.2f}s;" for v in values)
    kept, merged, dropped = [], 0, 0
    for v in (float(f"{v:.2f}") for v in values):
        if not 0.0 <= v <= 25.0:
            dropped += 1
        elif any(abs(v - k) <= MERGE_S + 1e-9 for k in kept):
            merged += 1
        else:
            kept.append(v)
    report = extract_timestamps(text, 24.0)
    assert (report.times, report.n_merged, report.n_dropped) == (kept, merged, dropped)
