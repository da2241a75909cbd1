"""Temporal ops: maps (property tests on paper) and decoded frames (tiny videos), and the streaming reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from realvideos import Player
from test_perturb_fixtures import decoded_ids, frame_id, frame_pixels, info, is_second, make_video
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import PerturbationSpec
from vidaudit.video.decode import iter_frames
from vidaudit.video.encode import VideoWriter
from vidaudit.video.perturb.engine import apply, plan_for
from vidaudit.video.perturb.source import PlannedReader, open_source
from vidaudit.video.probe import probe

FAST = settings(max_examples=40, deadline=None)


def spec(name: str, **params: object) -> PerturbationSpec:
    return PerturbationSpec(name=name, params=params)


@pytest.fixture(scope="module")
def src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_video(tmp_path_factory.mktemp("temporal") / "src.mp4", n=24, fps=12.0)


@pytest.fixture(scope="module")
def second(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_video(tmp_path_factory.mktemp("temporal2") / "second.mp4", n=20, fps=10.0, second=True)


# --------------------------------------------------------------------------- reverse


@FAST
@given(n=st.integers(2, 400), a=st.integers(0, 399), b=st.integers(1, 400))
def test_reverse_twice_is_the_identity_map(n: int, a: int, b: int) -> None:
    a, b = min(a, n - 1), min(max(b, a + 1), n)
    sp = spec("reverse", start_s=a / 10, end_s=b / 10)
    once = plan_for(sp, info(n=n, fps=10.0)).map["source_frame"]
    twice = plan_for(sp, info(n=n, fps=10.0)).map["source_frame"]
    assert sorted(once) == list(range(n))
    assert [once[j] for j in twice] == list(range(n))
    assert once[a:b] == list(range(b - 1, a - 1, -1)) and once[:a] == list(range(a))


def test_reverse_twice_gives_back_the_pixels(src: Path, tmp_path: Path) -> None:
    r1 = apply(src, spec("reverse"), tmp_path / "r1.mp4")
    r2 = apply(r1.video, spec("reverse"), tmp_path / "r2.mp4")
    assert decoded_ids(r1.video) == list(range(23, -1, -1)) == r1.meta.map["source_frame"]
    m1, m2 = r1.meta.map["source_frame"], r2.meta.map["source_frame"]
    assert [m1[j] for j in m2] == list(range(24))
    a = np.stack(list(iter_frames(src))).astype(int)
    b = np.stack(list(iter_frames(r2.video))).astype(int)
    diff = np.abs(a - b)
    assert diff.mean() < 1.5 and np.percentile(diff, 99.9) <= 12, (diff.mean(), diff.max())  # two qp-18 generations


# --------------------------------------------------------------------------- shuffles


@FAST
@given(n=st.integers(2, 300), seed=st.integers(0, 2**63), a=st.integers(0, 299))
def test_a_frame_shuffle_map_inverts_it(n: int, seed: int, a: int) -> None:
    a = min(a, n - 2)
    p = plan_for(spec("shuffle_frames", start_s=a / 10), info(n=n, fps=10.0), seed=seed)
    m = p.map["source_frame"]
    assert sorted(m) == list(range(n)) and m != list(range(n))
    inverse = [0] * n
    for i, s in enumerate(m):
        inverse[s] = i
    assert [m[inverse[s]] for s in range(n)] == list(range(n))
    assert m[:a] == list(range(a))  # frames before the range stay put
    assert p.info["shuffled"]["frames"] == [a, n]


def test_a_decoded_shuffle_is_undone_by_its_map(src: Path, tmp_path: Path) -> None:
    r = apply(src, spec("shuffle_frames"), tmp_path / "s.mp4", seed=3)
    frames = list(iter_frames(r.video))
    m = r.meta.map["source_frame"]
    restored = [None] * len(m)
    for i, s in enumerate(m):
        restored[s] = frames[i]
    assert [int(round((f[12:36, 8:24].mean() - 20) / 6)) for f in restored] == list(range(24))
    again = apply(src, spec("shuffle_frames"), tmp_path / "s2.mp4", seed=3)
    other = apply(src, spec("shuffle_frames"), tmp_path / "s3.mp4", seed=4)
    assert again.meta.map == r.meta.map and again.sha256 == r.sha256  # a pure function of the seed
    assert other.meta.map != r.meta.map


segments_strategy = st.lists(st.integers(1, 30), min_size=2, max_size=8).flatmap(
    lambda lens: st.tuples(st.just(lens), st.lists(st.integers(0, 5), min_size=len(lens) + 1, max_size=len(lens) + 1))
)


@FAST
@given(
    layout=segments_strategy,
    query=st.sampled_from(["order", "first", "last", "every"]),
    gaps=st.sampled_from(["keep", "drop"]),
    seed=st.integers(0, 2**32),
)
def test_segment_shuffle_moves_the_queried_position(
    layout: tuple[list[int], list[int]], query: str, gaps: str, seed: int
) -> None:
    lens, pads = layout
    segs, t = [], pads[0]
    for L, pad in zip(lens, pads[1:]):
        segs.append((t, t + L))
        t += L + pad
    n = t
    p = plan_for(
        spec("shuffle_segments", segments=[[a / 10, b / 10] for a, b in segs], query=query, gaps=gaps),
        info(n=n, fps=10.0),
        seed=seed,
    )
    order = p.info["order"]
    m = len(segs)
    assert sorted(order) == list(range(m)) and order != list(range(m))
    if query == "first":
        assert order[0] != 0
    if query == "last":
        assert order[-1] != m - 1
    if query == "every":
        assert all(order[j] != j for j in range(m))
    sf, seg = p.map["source_frame"], p.map["segment"]
    if gaps == "keep":
        assert sorted(sf) == list(range(n))  # a permutation of every frame
    else:
        assert sorted(sf) == sorted(i for a, b in segs for i in range(a, b))
    for out in p.info["segments_out"]:  # each output slot is one whole source segment
        a, b = out["frames"]
        sa, sb = segs[out["source_segment"]]
        assert sf[a:b] == list(range(sa, sb)) and set(seg[a:b]) == {out["source_segment"]}


def test_segment_shuffle_decodes_in_the_new_order(src: Path, tmp_path: Path) -> None:
    r = apply(
        src,
        spec("shuffle_segments", segments=[[0, 0.5], [0.5, 1.25], [1.5, 2.0]], query="first"),
        tmp_path / "seg.mp4",
        seed=0,
    )
    assert decoded_ids(r.video) == r.meta.map["source_frame"]
    assert r.meta.info["first_segment"] != 0


# --------------------------------------------------------------------------- cut, gap, mix, speed


def test_cut_and_gap_remove_exactly_the_named_range(src: Path, tmp_path: Path) -> None:
    g = apply(src, spec("temporal_gap", start_s=0.5, end_s=1.0, label="opens the jar"), tmp_path / "g.mp4")
    assert g.meta.info["removed"] == {"frames": [6, 12], "t": [0.5, 1.0]} and g.meta.info["label"] == "opens the jar"
    assert decoded_ids(g.video) == list(range(6)) + list(range(12, 24)) == g.meta.map["source_frame"]
    assert g.meta.n_frames == 18 and g.meta.duration_s == 1.5
    c = apply(src, spec("cut", duration_s=0.5), tmp_path / "c.mp4", seed=9)
    a, b = c.meta.info["removed"]["frames"]
    assert b - a == 6 and 1 <= a and b <= 23
    assert decoded_ids(c.video) == list(range(a)) + list(range(b, 24))
    with pytest.raises(ConfigError, match="start_s must be in"):
        plan_for(spec("cut", duration_s=0.5, start_s=1.9), info(n=24, fps=12.0))
    with pytest.raises(ConfigError, match="frames before and after"):
        plan_for(spec("temporal_gap", start_s=0, end_s=1.0), info(n=24, fps=12.0))


def test_scene_mix_records_which_video_each_frame_comes_from(src: Path, second: Path, tmp_path: Path) -> None:
    r = apply(
        src,
        spec("scene_mix", start_s=0.5, duration_s=0.5, second_start_s=0.3),
        tmp_path / "mix.mp4",
        second_source=second,
    )
    vid, sf = r.meta.map["source_video"], r.meta.map["source_frame"]
    assert vid == ["source"] * 6 + ["second"] * 6 + ["source"] * 12
    assert sf[6:12] == [int((0.3 + j / 12) * 10) for j in range(6)] == [3, 3, 4, 5, 6, 7]  # 10 fps in, 12 fps out
    frames = list(iter_frames(r.video))
    assert [is_second(f) for f in frames] == [v == "second" for v in vid]
    assert decoded_ids(r.video) == sf
    assert r.meta.second_sha256 and r.meta.info["mixed"] == {"frames": [6, 12], "t": [0.5, 1.0]}
    ins = apply(
        src, spec("scene_mix", start_s=0.5, duration_s=0.5, mode="insert"), tmp_path / "ins.mp4", second_source=second
    )
    assert ins.meta.n_frames == 30 and ins.meta.map["source_frame"][:6] == list(range(6))
    with pytest.raises(ConfigError, match="second_start_s must be in"):
        apply(src, spec("scene_mix", duration_s=1.0, second_start_s=1.5), tmp_path / "bad.mp4", second_source=second)


def test_scene_mix_records_the_second_videos_frames_and_times_shown(src: Path, second: Path, tmp_path: Path) -> None:
    """A splice asked for at a time inside a second-video frame (0.35 s: frame 3 is on screen from 0.3 s) and for a
    duration that is not whole output frames (0.45 s at 12 fps: 5 frames, 0.417 s): ``second_frames`` and
    ``second_t`` name exactly the second video's frames that Debian's ffmpeg shows in the output and their times
    as ffmpeg reads them from the second file (the requested [0.35, 0.8] s would name frame 7, never shown)."""
    player = Player.required()
    r = apply(
        src,
        spec("scene_mix", start_s=0.5, duration_s=0.45, second_start_s=0.35),
        tmp_path / "mix.mp4",
        second_source=second,
    )
    lo, hi = r.meta.info["mixed"]["frames"]
    _, out = player.frames(r.video)
    assert [is_second(f) for f in out] == [lo <= i < hi for i in range(len(out))]
    shown = sorted({frame_id(f) for f in out[lo:hi]})
    assert shown == [3, 4, 5, 6]  # floor((0.35 + j / 12) * 10), j < 5
    times, frames = player.frames(second)
    assert [frame_id(f) for f in frames] == list(range(len(frames)))
    first, last = shown[0], shown[-1]
    assert r.meta.info["second_frames"] == [first, last + 1]
    assert r.meta.info["second_t"] == pytest.approx([times[first], times[last + 1]], abs=1e-6)  # [0.3, 0.7]


@FAST
@given(n=st.integers(1, 500), factor=st.sampled_from([0.125, 0.25, 0.5, 0.75, 1.5, 2.0, 3.0, 8.0]))
def test_speed_map_is_monotone_and_spans_the_clip(n: int, factor: float) -> None:
    p = plan_for(spec("speed", factor=factor), info(n=n, fps=30.0))
    sf = p.map["source_frame"]
    assert sf[0] == 0 and all(b >= a for a, b in zip(sf, sf[1:])) and sf[-1] <= n - 1
    assert abs(p.n_frames - n / factor) < 1


# --------------------------------------------------------------------------- the reader


def test_reader_reverses_with_one_decode_per_frame_and_a_bounded_window(tmp_path: Path) -> None:
    path = make_video(tmp_path / "long.mp4", n=38, fps=10.0)
    with VideoWriter(
        tmp_path / "gop.mp4",
        10.0,
        64,
        48,
        options={"preset": "ultrafast", "qp": "18", "threads": "1", "bframes": "0", "g": "8"},
    ) as w:
        for i in range(38):
            w.write(frame_pixels(i))
    for p in (path, tmp_path / "gop.mp4"):
        s = open_source(p)
        r = PlannedReader(s, list(range(37, -1, -1)))
        got = [int(round((f[12:36, 8:24].mean() - 20) / 6)) for f in r]
        assert got == list(range(37, -1, -1))
        assert r.decoded <= 38 + 8, r.decoded  # each frame about once, not once per request
    small = PlannedReader(open_source(tmp_path / "gop.mp4"), list(range(37, -1, -1)), budget_bytes=64 * 48 * 3 * 4)
    assert [int(round((f[12:36, 8:24].mean() - 20) / 6)) for f in small] == list(range(37, -1, -1))
    assert small.peak_held <= 4  # the budget holds, at the cost of re-decoding
    rep = PlannedReader(open_source(path), [i // 4 for i in range(38 * 4)])
    assert sum(1 for _ in rep) == 152 and rep.decoded == 38 and rep.peak_held == 1


@settings(max_examples=15, deadline=None)
@given(order=st.lists(st.integers(0, 37), min_size=1, max_size=120), budget=st.integers(2, 12))
def test_recycled_buffers_never_hand_out_a_stale_frame(gop_video: Path, order: list[int], budget: int) -> None:
    r = PlannedReader(open_source(gop_video), order, budget_bytes=64 * 48 * 3 * budget)
    got = [int(round((f[12:36, 8:24].mean() - 20) / 6)) for f in r]  # read each frame when it is handed out
    assert got == order
    assert r.peak_held <= budget and r.allocated <= budget + 2  # buffers are reused, not made per frame


@pytest.fixture(scope="module")
def gop_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gop") / "gop8.mp4"
    with VideoWriter(
        path, 10.0, 64, 48, options={"preset": "ultrafast", "qp": "18", "threads": "1", "bframes": "0", "g": "8"}
    ) as w:
        for i in range(38):
            w.write(frame_pixels(i))
    return path


def test_odd_sized_non_420_sources_are_cropped_and_read_correctly(tmp_path: Path) -> None:
    """A 66x49 yuv444p source: decoded through the generic path, cropped to 66x48 (recorded), streamed."""
    import av

    path = tmp_path / "odd.mp4"
    with av.open(str(path), "w") as c:
        st_ = c.add_stream("libx264", rate=10)
        st_.width, st_.height, st_.pix_fmt = 66, 49, "yuv444p"
        st_.options = {"qp": "18", "g": "8", "bframes": "0", "threads": "1"}
        for i in range(20):
            img = np.zeros((49, 66, 3), np.uint8)
            img[:, :33] = 20 + 6 * i
            for pkt in st_.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                c.mux(pkt)
        for pkt in st_.encode():
            c.mux(pkt)
    s = open_source(path)
    assert (s.width, s.height, s.crop) == (66, 48, (0, 1))
    r = PlannedReader(s, list(range(19, -1, -1)) * 2, budget_bytes=66 * 48 * 3 * 3)
    assert [int(round((f[12:36, 8:24].mean() - 20) / 6)) for f in r] == list(range(19, -1, -1)) * 2
    assert r._pool == [] and r.allocated == 0  # nothing pooled from the generic path
    out = apply(path, spec("reverse"), tmp_path / "rev.mp4")
    assert (out.meta.width, out.meta.height) == (66, 48) and out.meta.source["crop_px"] == [0, 1]
    assert decoded_ids(out.video) == list(range(19, -1, -1))


def test_frame_counts_are_read_back_from_the_file(src: Path, tmp_path: Path) -> None:
    r = apply(src, spec("speed", factor=0.5), tmp_path / "slow.mp4")
    info_back = probe(r.video)
    assert (r.meta.n_frames, r.meta.fps, r.meta.duration_s) == (info_back.n_frames, info_back.fps, info_back.duration_s)
    assert r.meta.n_frames == len(r.meta.map["source_frame"]) == 48
