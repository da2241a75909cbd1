"""The audit log's attempt and trial lines written field by field (``run.log_lines``) are the generic
``encode_line`` bytes, or None where only the generic path can write them; the plan's spliced trial JSON for
the log is ``json.dumps`` of the trial's data."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from vidaudit.core.types import Attempt, Condition, ErrorKind, ModelSpec, Response, Status, Trial, Usage
from vidaudit.run import log_lines
from vidaudit.run.audit_log import encode_line, line_json
from vidaudit.run.store.records import KeyedTrial, attempt_row, log_attempt, ok_record
from vidaudit.run.trial_json import PER_TRIAL, TrialJson

texts = st.one_of(
    st.none(),
    st.text(max_size=30),
    st.sampled_from(["\\boxed{3}", "\ud800", "a\udcffb", '\x00\n"\\', "\u00e9\u4e2d\U0001f600", "\ud83d\ude00"]),
)
floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-3, 3).map(float),
    st.sampled_from([0.0, -0.0, 1e-5, 1e22, 1796210516.1552937]),
)
usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 10**12),
    output_tokens=st.integers(0, 99),
    reasoning_tokens=st.integers(0, 9),
    cached_tokens=st.integers(0, 9),
)
responses = st.builds(
    Response,
    text=texts.filter(lambda t: t is not None),
    usage=usages,
    latency_s=floats,
    finish_reason=texts,
    model_version=texts,
    cost_usd=st.one_of(st.none(), floats),
    frames_sent=st.one_of(st.none(), st.lists(st.integers(0, 10**6), max_size=4).map(tuple)),
    frames_estimated=st.booleans(),
)
attempts = st.builds(
    Attempt,
    trial_id=st.text(max_size=70),
    attempt=st.integers(1, 10**9),
    status=st.sampled_from(list(Status)),
    error_kind=st.one_of(st.none(), st.sampled_from(list(ErrorKind))),
    error_message=texts,
    response=st.one_of(st.none(), responses),
    frame_indices=st.lists(st.integers(0, 10**6), max_size=5).map(tuple),
    frame_times=st.lists(floats, max_size=5).map(tuple),
    started_at=floats,
    ended_at=floats,
)


def _generic(a: Attempt) -> bytes | None:
    try:
        return encode_line(log_attempt(a, None))
    except ValueError:  # a non-finite float: the generic line refuses it (allow_nan=False)
        return None


@settings(max_examples=400, deadline=None)
@given(attempts)
def test_an_attempt_line_is_the_generic_line_or_left_to_it(a: Attempt) -> None:
    fast = log_lines.attempt_line(a)
    if fast is not None:
        assert fast == _generic(a)
    else:  # left to the generic path only for a non-finite float or a lone surrogate
        assert _generic(a) is None or _has_surrogate(a)


def _has_surrogate(a: Attempt) -> bool:
    try:
        json.dumps(log_attempt(a, None), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@settings(max_examples=200, deadline=None)
@given(attempts)
def test_the_frame_columns_are_json_dumps_of_the_lists(a: Attempt) -> None:
    for vs in (a.frame_indices, a.frame_times):
        got = log_lines.frames_json(vs)
        if got is not None:
            assert got == json.dumps(list(vs))
    try:
        row = attempt_row(a)
    except ValueError:
        return
    assert row[11] == json.dumps(list(a.frame_indices)) and row[12] == json.dumps(list(a.frame_times))


#: attempts shaped like a plain call's (no error, no frames, mostly ASCII text and finite floats), where
#: ``ok_record`` may write them whole
ascii_texts = st.one_of(st.text(st.characters(max_codepoint=127), max_size=20), texts)
mostly_finite = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    floats,
    st.sampled_from([float("inf"), float("-inf"), float("nan")]),
)
plain_attempts = st.builds(
    Attempt,
    trial_id=st.one_of(st.text("0123456789abcdef", min_size=64, max_size=64), st.text(max_size=70)),
    attempt=st.integers(1, 10**9),
    status=st.sampled_from(list(Status)),
    response=st.builds(
        Response,
        text=ascii_texts.filter(lambda t: t is not None),
        usage=usages,
        latency_s=mostly_finite,
        finish_reason=ascii_texts,
        model_version=ascii_texts,
        cost_usd=st.one_of(mostly_finite, st.none(), st.integers(0, 3)),
        frames_sent=st.one_of(st.none(), st.just(())),
        frames_estimated=st.booleans(),
    ),
    frame_indices=st.one_of(st.just(()), st.lists(st.integers(0, 9), max_size=2).map(tuple)),
    started_at=mostly_finite,
    ended_at=mostly_finite,
)


def _plain(text: str = "x", cost: float | None = 0.0, started: float = 1.5) -> Attempt:
    return Attempt(
        trial_id="t" * 64,
        attempt=1,
        status=Status.OK,
        started_at=started,
        ended_at=2.0,
        response=Response(text=text, latency_s=1e-5, finish_reason="stop", model_version="m", cost_usd=cost),
    )


@settings(max_examples=500, deadline=None)
@given(st.one_of(plain_attempts, attempts))
@example(_plain()).via("a plain call's")
@example(_plain(started=float("inf"))).via("a non-finite clock")
@example(_plain(cost=float("nan"))).via("a non-finite cost")
@example(_plain(cost=None)).via("no cost")
@example(_plain(text="\u00e9")).via("non-ASCII text")
@example(_plain(text="a\udcffb")).via("a lone surrogate")
def test_an_attempt_written_whole_is_its_row_and_its_line_or_left_to_them(a: Attempt) -> None:
    got = ok_record(a)
    if got is None:
        return
    assert got == (attempt_row(a), _generic(a))
    assert got[1] == log_lines.attempt_line(a)
    assert [type(v) for v in got[0]] == [type(v) for v in attempt_row(a)]  # a float column stays a float


def test_a_plain_ok_attempt_is_written_whole() -> None:
    a = Attempt(
        trial_id="t" * 64,
        attempt=1,
        status=Status.OK,
        response=Response(
            text="\\boxed{3}", latency_s=1.5e-5, finish_reason="stop", model_version="simulated:x.csv", cost_usd=0.0
        ),
        started_at=1.5,
        ended_at=2.0,
    )
    assert ok_record(a) == (attempt_row(a), encode_line(log_attempt(a, None)))


def test_a_plain_ok_attempt_takes_the_fast_path() -> None:
    a = Attempt(
        trial_id="t" * 64,
        attempt=1,
        status=Status.OK,
        response=Response(
            text="\\boxed{3}", latency_s=1.5e-5, finish_reason="stop", model_version="simulated:x.csv", cost_usd=0.0
        ),
        started_at=1.5,
        ended_at=2.0,
    )
    assert log_lines.ENABLED
    assert log_lines.attempt_line(a) == encode_line(log_attempt(a, None))


@settings(max_examples=200, deadline=None)
@given(sample_id=st.text(max_size=20), video=st.one_of(st.none(), st.text(max_size=10)), created=floats)
def test_a_spliced_trial_line_is_the_generic_line(sample_id: str, video: str | None, created: float) -> None:
    first = KeyedTrial.of(
        Trial(
            sample_id="s0",
            video_sha256=None,
            condition=Condition(prompt="p\u00e9"),
            model=ModelSpec.parse("oracle"),
            suite="counting",
            prompt_sha256="a",
            input_sha256="b",
        )
    )
    splice = TrialJson(first.data, line_json(first.data), line_json)
    assert splice.ok
    fields = {"sample_id": sample_id, "video_sha256": video, "prompt_sha256": "c" * 64, "input_sha256": "d" * 64}
    data = {**first.data, **fields}
    text = splice({k: fields[k] for k in PER_TRIAL})
    assert text == line_json(data)
    fast = log_lines.trial_line(text, "i" * 64, created)
    try:
        generic = encode_line({"trial": data, "trial_id": "i" * 64, "created_at": created})
    except ValueError:
        assert fast is None
        return
    assert fast is None or fast == generic
