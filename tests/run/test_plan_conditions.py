"""Conditions are lossless and the trial id covers exactly what changes a request; requests built from
planned trials send what each condition says (timestamps, keyframes, exact frames)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vidaudit.core.errors import ConfigError
from vidaudit.core.manifest import load_samples
from vidaudit.core.registry import get_suite
from vidaudit.core.timeline import Timeline
from vidaudit.core.types import Condition, ImagePart, ModelSpec, Presentation, TextPart, VideoPart
from vidaudit.models.base import Capabilities
from vidaudit.models.provider_content import encode_jpeg
from vidaudit.run.conditions import parse_condition
from vidaudit.run.plan import PlanStream, select_frames
from vidaudit.run.request_builder import RequestBuilder
from vidaudit.video.decode import read_frames
from vidaudit.video.sampling import uniform_count

SUITE = get_suite("counting")
CAPS = {
    "a": Capabilities(native_video=True, default_native_fps=2.0),
    "b": Capabilities(native_video=True, default_native_fps=1.0),
    "c": Capabilities(native_video=True, default_native_fps=None),
}


def _plan(samples, conditions, labels=("a",), options=None):
    models = [ModelSpec.parse(f"openai:{x}") for x in labels]
    caps = {m.label: CAPS[x] for m, x in zip(models, labels, strict=True)}
    return PlanStream(samples, conditions, models, suite=SUITE, caps_by_model=caps, options_by_model=options).planned()


# --------------------------------------------------------------------------- parsing and ids


@pytest.mark.parametrize(
    "text,video_id",
    [
        ("native", "native"),
        ("native@2", "native@2"),
        ("native@all", "native@all"),
        ("frames@4", "frames@4"),
        ("frames@0.5", "frames@0.5"),
        ("frames#16", "frames#16"),
        ("keyframes", "keyframes"),
        ("keyframes+-0.2s", "keyframes+-0.2s"),
        ("keyframes+-0.2", "keyframes+-0.2s"),
    ],
)
def test_written_forms_and_their_ids(text: str, video_id: str) -> None:
    c = parse_condition(text, "structured_trace")
    assert c.video_id == video_id
    assert parse_condition(video_id, "structured_trace") == c  # the id reads back as the same condition


@given(
    st.sampled_from(["native@", "frames@"]),
    st.integers(1, 120),
    st.booleans(),
    st.sampled_from(["structured_trace", "direct"]),
)
def test_rates_round_trip(head: str, k: int, ts: bool, prompt: str) -> None:
    c = parse_condition(f"{head}{k / 4:g}", prompt, ts)
    assert parse_condition(c.video_id, prompt, ts) == c
    assert c.id.endswith("/nots") is (not ts)


@pytest.mark.parametrize(
    "text",
    ["native@0", "frames", "frames@", "frames#0", "keyframes@2", "natives", "frames@4#3", "native@-1", "keyframes+-0s"],
)
def test_bad_forms_are_refused(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_condition(text, "structured_trace")


def test_every_input_changing_field_is_in_the_id() -> None:
    base = Condition(presentation=Presentation.KEYFRAMES, prompt="structured_trace")
    variants = [
        base.model_copy(update={"keyframe_offset_s": 0.2}),
        base.model_copy(update={"timestamps": False}),
        base.model_copy(update={"prompt": "direct"}),
    ]
    assert len({base.id, *(v.id for v in variants)}) == 4
    f4 = Condition(presentation=Presentation.FRAMES, fps=4.0, prompt="structured_trace")
    f16 = Condition(presentation=Presentation.FRAMES, n_frames=16, prompt="structured_trace")
    assert f4.id != f16.id


@given(n_frames=st.integers(1, 2000), fps=st.sampled_from([10.0, 24.0, 25.0, 30.0, 29.97]), k=st.integers(1, 64))
def test_frames_count_is_exactly_k_uniform_frames(n_frames: int, fps: float, k: int) -> None:
    sel = uniform_count(Timeline.constant(n_frames, fps), k)
    assert len(sel) == min(k, n_frames) or len(sel) <= n_frames
    if k <= n_frames:
        assert len(sel) == k
    assert list(sel.indices) == sorted(set(sel.indices))
    assert all(0 <= i < n_frames for i in sel.indices)
    duration = n_frames / fps
    for t in sel.times:  # segment centres
        j = round(t * k / duration - 0.5)
        assert abs(t - (j + 0.5) * duration / k) < 1e-5


# --------------------------------------------------------------------------- planning


def test_native_is_resolved_per_model_and_named(smoke_dir: Path) -> None:
    samples = load_samples(smoke_dir)[:2]
    planned = _plan(samples, [parse_condition("native", "structured_trace")], labels=("a", "b", "c"))
    ids = {p.trial.model.label: p.trial.condition.id for p in planned}
    assert ids == {
        "openai:a": "native@2/structured_trace",
        "openai:b": "native@1/structured_trace",
        "openai:c": "native@all/structured_trace",
    }
    c = next(p for p in planned if p.trial.model.label == "openai:c")
    assert len(c.selection) == samples[0].video.n_frames


def test_a_condition_that_resolves_to_another_is_refused(smoke_dir: Path) -> None:
    samples = load_samples(smoke_dir)[:1]
    with pytest.raises(ConfigError, match="same input"):
        _plan(samples, [parse_condition("native", "structured_trace"), parse_condition("native@2", "structured_trace")])


def _ids(samples, conditions=None, labels=("a",), options=None) -> list[str]:
    return [
        p.id for p in _plan(samples, conditions or [parse_condition("frames@1", "structured_trace")], labels, options)
    ]


def test_trial_id_covers_what_changes_the_request_and_nothing_else(smoke_dir: Path) -> None:
    s = load_samples(smoke_dir)[4]
    base = _ids([s])[0]
    other_video = s.model_copy(update={"video": s.video.model_copy(update={"sha256": "0" * 64})})
    other_question = s.model_copy(update={"question": s.question + " Think."})
    moved = s.model_copy(update={"video": s.video.model_copy(update={"path": "elsewhere/x.mp4"})})
    assert _ids([other_video])[0] != base
    assert _ids([other_question])[0] != base  # the rendered prompt text
    assert _ids([s], [parse_condition("frames@2", "structured_trace")])[0] != base  # the condition
    assert _ids([s], [parse_condition("frames@1", "direct")])[0] != base
    assert _ids([s], labels=("b",))[0] != base  # the model spec
    assert _ids([s], options={"openai:a": {"jpeg_quality": 80}})[0] != base  # an input-changing option
    spec = ModelSpec.parse("openai:a", temperature=0.7)
    p = PlanStream(
        [s],
        [parse_condition("frames@1", "structured_trace")],
        [spec],
        suite=SUITE,
        caps_by_model={spec.label: CAPS["a"]},
    ).planned()
    assert p[0].id != base  # generation settings
    assert _ids([moved])[0] == base  # a path is not content
    assert _ids([s, load_samples(smoke_dir)[5]])[0] == base  # nor is the plan's other content


# --------------------------------------------------------------------------- requests


def _request(smoke_dir: Path, sample_index: int, cond: str, prompt: str = "structured_trace", ts: bool = True):
    s = load_samples(smoke_dir)[sample_index]
    (p,) = _plan([s], [parse_condition(cond, prompt, ts)])
    return s, p, RequestBuilder(smoke_dir)(p)


def test_every_frame_follows_its_timestamp_and_none_without(smoke_dir: Path) -> None:
    s, p, req = _request(smoke_dir, 4, "frames@1")
    parts = list(req.parts)
    images = [i for i, x in enumerate(parts) if isinstance(x, ImagePart)]
    assert len(images) == 24
    for i in images:
        assert isinstance(parts[i - 1], TextPart) and parts[i - 1].text == f"t={parts[i].t:.2f}s"
    assert isinstance(parts[-1], TextPart) and parts[-1].text == p.prompt.text
    _, _, bare = _request(smoke_dir, 4, "frames@1", ts=False)
    texts = [x.text for x in bare.parts if isinstance(x, TextPart)]
    assert texts == [p.prompt.text] and not any(t.startswith("t=") for t in texts)


def test_sent_frames_are_the_exact_decoded_frames_and_jpegs_match_a_fresh_encode(smoke_dir: Path) -> None:
    s, p, req = _request(smoke_dir, 4, "frames@2")
    imgs = req.images
    fresh = read_frames(smoke_dir / s.video.path, [x.frame_index for x in imgs[:5]])
    for part, ref in zip(imgs[:5], fresh, strict=True):
        assert np.array_equal(part.image, ref)
        memo = encode_jpeg(part.image, 90)  # memoised for read-only cached frames
        ok, buf = cv2.imencode(
            ".jpg", cv2.cvtColor(np.ascontiguousarray(ref), cv2.COLOR_RGB2BGR), [int(cv2.IMWRITE_JPEG_QUALITY), 90]
        )
        assert ok and memo == buf.tobytes()


def test_keyframes_send_the_paper_windows_and_never_zero_frames(smoke_dir: Path) -> None:
    samples = load_samples(smoke_dir)
    s = next(x for x in samples if x.answer == 3)
    i = samples.index(s)
    _, p, req = _request(smoke_dir, i, "keyframes")
    fps = s.video.fps
    want = set()
    for e in s.trace.events:
        want |= {int((e.t - 0.1) * fps + 1e-9), e.frame, int((e.t + 0.1) * fps + 1e-9)}
    assert {x.frame_index for x in req.images} == want
    zero = next(x for x in samples if x.answer == 0)
    _, pz, reqz = _request(smoke_dir, samples.index(zero), "keyframes")
    n = zero.video.n_frames
    assert [x.frame_index for x in reqz.images] == [int(q * n) for q in (0.25, 0.5, 0.75)]


def test_native_sends_the_video_with_the_resolved_rate(smoke_dir: Path) -> None:
    s, p, req = _request(smoke_dir, 4, "native")
    (video,) = [x for x in req.parts if isinstance(x, VideoPart)]
    assert video.fps == 2.0 and p.trial.condition.id == "native@2/structured_trace"
    assert list(video.frame_indices) == list(select_frames(s, p.trial.condition).indices)
    assert len(video.frame_indices) == 48


def test_role_prompting_sends_its_system_message(smoke_dir: Path) -> None:
    _, p, req = _request(smoke_dir, 4, "frames@1", "role_prompting")
    assert req.system and req.system.startswith("You are an expert video analytics systems auditor")
    _, _, plain = _request(smoke_dir, 4, "frames@1")
    assert plain.system is None


# --------------------------------------------------------------------------- run directories


def test_second_run_on_the_same_dir_refuses_at_once(tmp_path: Path) -> None:
    from vidaudit.run.lock import RunLock

    with RunLock(tmp_path):
        with pytest.raises(ConfigError, match=f"in use by process {__import__('os').getpid()}"):
            RunLock(tmp_path).acquire()
    RunLock(tmp_path).acquire().release()  # free again once released


def test_written_files_honour_the_umask(tmp_path: Path) -> None:
    import os

    from vidaudit.core.fileio import write_text_atomic

    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "a.json", "{}")
        assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o644
        os.umask(0o077)
        write_text_atomic(tmp_path / "b.json", "{}")
        assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


@given(mult=st.integers(1, 8), k=st.sampled_from([1, 2, 4, 6, 12, 24, 30]))
def test_frames_at_a_divisor_rate_take_an_exact_stride(mult: int, k: int) -> None:
    """frames@K of a clip whose fps is a multiple of K takes every (fps/K)-th frame, exactly."""
    from vidaudit.video.sampling import at_fps

    fps = float(k * mult)
    sel = at_fps(Timeline.constant(int(fps * 10), fps), float(k))
    assert list(sel.indices) == [mult * j for j in range(10 * k)]
