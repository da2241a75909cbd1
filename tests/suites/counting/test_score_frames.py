"""'frame K' mentions as times when the frames sent are known (paper C.15: "frame" is a temporal cue)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.types import Event, Sample, Trace, VideoRef
from vidaudit.suites.counting.scoring import LABEL_PATTERNS, score_trial
from vidaudit.suites.counting.timestamps import extract_timestamps

FRAMES_1FPS = [i + 0.5 for i in range(24)]  # frames@1 of a 24 s clip: 0.5, 1.5, ..., 23.5


def test_frame_mention_maps_to_the_kth_frame_sent() -> None:
    """C.15: "we extract minute-second and decimal-second expressions preceded by temporal cues such
    as "at", "from", or "frame"". With the frames' times known, "frame 12" is the 12th frame sent
    (1-based, as models number what they see)."""
    r = extract_timestamps("Event 1 at frame 12", 24.0, frame_times=FRAMES_1FPS)
    assert r.times == [11.5] and r.events[0].frame == 12
    assert (r.n_frame_mentions, r.n_frame_out_of_range) == (1, 0)
    # without the frames' times a frame number is not a time, as before
    r = extract_timestamps("Event 1 at frame 12", 24.0)
    assert r.times == [] and r.n_frame_mentions == 0


@pytest.mark.parametrize(
    "text, times, frames, n_mapped, n_out",
    [
        ("Frame #3: contact. frame no. 5: contact. Frames 7-9: contact", [2.5, 4.5, 6.5], [3, 5, 7], 3, 0),
        ("from frame 2 to frame 4 it is on; FRAME 10 it blinks", [1.5, 9.5], [2, 10], 2, 0),
        ("frame 0 and frame 25 and frame 24", [23.5], [24], 1, 2),
        ("Frame 12 (t = 6.0 s): contact", [6.0], [None], 0, 0),  # beside an explicit time: that time wins
        ("at 6.0s (frame 12): contact", [6.0], [None], 0, 0),
        ("keyframe 3 and frame at 7.25", [7.25], [None], 0, 0),  # 'keyframe' is no cue; 'at' is
        ("frame 1, frame 1 again", [0.5], [1], 2, 0),  # the repeat merges (counted as mapped and merged)
        (r"Frames 2 and 3. \boxed{frame 9}", [1.5], [2], 1, 0),  # boxed answers hold no events
    ],
)
def test_frame_forms(text: str, times: list[float], frames: list[int | None], n_mapped: int, n_out: int) -> None:
    r = extract_timestamps(text, 24.0, frame_times=FRAMES_1FPS)
    assert r.times == pytest.approx(times)
    assert [e.frame for e in r.events] == frames
    assert (r.n_frame_mentions, r.n_frame_out_of_range) == (n_mapped, n_out)


def test_score_trial_passes_frame_times_through() -> None:
    """A frames@2 ledger written in frame numbers is scored against the trace like one in seconds."""
    events = tuple(
        Event(t=t, frame=int(t * 30), type="e", state_after=s, count=i + 1)
        for i, (t, s) in enumerate([(3.0, "C"), (5.0, "A"), (7.0, "B")])
    )
    s = Sample(
        sample_id="sm",
        suite="counting",
        params={"domain": "state_machine", "n_events": 3, "frequency_hz": 0.5, "seed": 0},
        question="How many state transitions occurred in the video?",
        answer=3,
        trace=Trace(events=events),
        video=VideoRef(path="v.mp4", sha256="abc", fps=30.0, width=64, height=64, n_frames=720, duration_s=24.0),
    )
    frames = [i * 0.5 for i in range(48)]  # frame k (1-based) at (k - 1) / 2 s
    text = "Frame 7: A -> C (count 1)\nFrame 11: C -> A (count 2)\nFrame 99: A -> B (count 3)\n\\boxed{3}"
    r = score_trial(s, text, frame_times=frames).to_dict()
    assert r["reported_times"] == [3.0, 5.0] and r["reported_labels"] == ["C", "A"]
    assert (r["n_frame_mentions"], r["n_frame_out_of_range"], r["frame_times_known"]) == (2, 1, True)
    assert r["n_matched"] == 2 and r["recall"] == pytest.approx(2 / 3)
    plain = score_trial(s, text).to_dict()
    assert plain["reported_times"] == [] and plain["frame_times_known"] is False and plain["n_frame_mentions"] == 0


# --------------------------------------------------------------------------- properties


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0.0, 23.0, allow_nan=False).map(lambda x: round(x, 3)), min_size=0, max_size=30),
    st.lists(st.integers(0, 40), max_size=15),
    st.sampled_from(["Event {i}: frame {k}", "frame #{k} - contact", "Frame {k}: blink", "at frame {k}"]),
)
def test_frame_mapping_property(frame_times: list[float], ks: list[int], fmt: str) -> None:
    lines = [fmt.format(i=i + 1, k=k) for i, k in enumerate(ks)]
    r = extract_timestamps("\n".join(lines), 24.0, frame_times=frame_times, merge_s=0.0)
    in_range = [k for k in ks if 1 <= k <= len(frame_times)]
    assert r.n_frame_out_of_range == len(ks) - len(in_range)
    assert r.n_frame_mentions == len(in_range)
    expected: list[float] = []
    for k in in_range:  # text order, exact duplicates merged (merge_s = 0)
        t = frame_times[k - 1]
        if not any(abs(t - e) <= 1e-9 for e in expected):
            expected.append(t)
    assert r.times == pytest.approx(expected, abs=1e-12)
    assert r.n_merged == len(in_range) - len(expected)
    for e in r.events:
        assert e.frame is not None and frame_times[e.frame - 1] == e.t


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("frame FRAME#no.0123456789:-to s\n(),t=at")), max_size=120),
    st.one_of(st.none(), st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=10)),
)
def test_frame_parser_never_raises(text: str, frame_times: list[float] | None) -> None:
    r = extract_timestamps(text, 24.0, label_patterns=LABEL_PATTERNS["bounce_ball"], frame_times=frame_times)
    assert r.n_frame_mentions >= 0 and r.n_frame_out_of_range >= 0
    if frame_times is None:
        assert r.n_frame_mentions == 0 and r.n_frame_out_of_range == 0
        assert all(e.frame is None for e in r.events)
    assert all(0.0 <= e.t <= 25.0 for e in r.events)


@settings(max_examples=150, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("frame Frame#no.0123456789:-to s\nat~=()")), max_size=150)
    | st.text(max_size=150),
    st.lists(st.floats(0.0, 24.0, allow_nan=False), max_size=5),
)
def test_frame_times_only_add_frame_events(text: str, frame_times: list[float]) -> None:
    """Frame times change nothing but frame mentions: with no frame sent (an empty list) the events
    are those read without frame times, and with frames the other events are a subset of those
    (a later explicit time can merge into an earlier frame event, never the reverse)."""
    plain = extract_timestamps(text, 24.0)
    empty = extract_timestamps(text, 24.0, frame_times=[])
    assert empty.events == plain.events and empty.n_frame_mentions == 0
    with_frames = extract_timestamps(text, 24.0, frame_times=frame_times)
    assert {e.span for e in with_frames.events if e.frame is None} <= {e.span for e in plain.events}
