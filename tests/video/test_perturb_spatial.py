"""Spatial ops: the affected frames and region are exactly the recorded ones; blank and noise keep size
and their stated duration."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from test_perturb_fixtures import decoded_ids, info, is_second, make_video
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import PerturbationSpec
from vidaudit.video.decode import iter_frames
from vidaudit.video.perturb.engine import apply, plan_for
from vidaudit.video.probe import probe

#: H.264's deblocking filter and 2x2 chroma carry an edit 3-4 px past its edge (measured); the band of this
#: width around a region is not checked.
BLEED_PX = 6


def spec(name: str, **params: object) -> PerturbationSpec:
    return PerturbationSpec(name=name, params=params)


@pytest.fixture(scope="module")
def src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_video(tmp_path_factory.mktemp("spatial") / "src.mp4", n=24, fps=12.0)


@pytest.fixture(scope="module")
def source_frames(src: Path) -> np.ndarray:
    return np.stack(list(iter_frames(src))).astype(int)


def _changed(out: Path, ref: np.ndarray, thresh: float = 6.0) -> tuple[list[bool], np.ndarray]:
    """Which frames differ from the source, and where (per pixel, over the frames that differ)."""
    got = np.stack(list(iter_frames(out))).astype(int)
    diff = np.abs(got - ref).max(axis=3)
    frames = [bool((d > 40).mean() > 0.01) for d in diff]
    where = (diff[frames] > thresh).mean(axis=0) if any(frames) else np.zeros(diff.shape[1:])
    return frames, where


@pytest.mark.parametrize(
    "name, params",
    [
        ("colour_shift", {"start_s": 0.5, "duration_s": 1.0, "region": [0.0, 0.0, 0.5, 1.0], "hue_deg": 120}),
        ("noise", {"start_s": 0.25, "duration_s": 0.75, "region": [0.0, 0.25, 0.5, 0.75], "sigma": 40}),
        (
            "insert_object",
            {
                "start_s": 1.0,
                "duration_s": 0.5,
                "centre": [0.25, 0.5],
                "size": 0.5,
                "colour": [250, 20, 20],
                "shape": "square",
            },
        ),
    ],
)
def test_spatial_ops_touch_only_the_recorded_frames_and_region(
    src: Path, source_frames: np.ndarray, tmp_path: Path, name: str, params: dict
) -> None:
    # a grey source has no hue: colour_shift runs on a video with a saturated left half
    r = apply(src if name != "colour_shift" else _coloured(tmp_path), spec(name, **params), tmp_path / "o.mp4", seed=4)
    ref = source_frames if name != "colour_shift" else np.stack(list(iter_frames(tmp_path / "col.mp4"))).astype(int)
    a, b = r.meta.info["affected"]["frames"]
    assert r.meta.map["affected"] == [a <= i < b for i in range(24)]
    assert r.meta.map["source_frame"] == list(range(24))
    assert b - a == round(params["duration_s"] * 12) and a == round(params["start_s"] * 12)
    frames, where = _changed(r.video, ref)
    assert frames == r.meta.map["affected"], name
    x0, y0, x1, y1 = r.meta.info["region_px"]
    m = BLEED_PX
    inside = where[y0 + m : y1 - m, x0 + m : x1 - m]
    outside = where.copy()
    outside[max(y0 - m, 0) : y1 + m, max(x0 - m, 0) : x1 + m] = 0
    assert inside.mean() > 0.5 and outside.max() < 0.05, (name, inside.mean(), outside.max())


def _coloured(tmp_path: Path) -> Path:
    """A test video with a saturated left half, so that a hue rotation shows."""
    from vidaudit.video.encode import VideoWriter

    path = tmp_path / "col.mp4"
    with VideoWriter(path, 12.0, 64, 48) as w:
        for i in range(24):
            img = np.full((48, 64, 3), 60, np.uint8)
            img[:, :32] = (200, 40 + 4 * i, 40)
            w.write(img)
    return path


def test_blank_and_noise_video_keep_size_and_their_stated_duration(src: Path, tmp_path: Path) -> None:
    for name, dur, n in (("blank", 1.5, 18), ("blank", None, 24), ("noise_video", 0.75, 9), ("noise_video", None, 24)):
        params = {} if dur is None else {"duration_s": dur}
        r = apply(src, spec(name, **params), tmp_path / f"{name}{n}.mp4", seed=2)
        back = probe(r.video)
        assert (back.width, back.height, back.fps, back.n_frames) == (64, 48, 12.0, n)
        assert r.meta.duration_s == n / 12 and r.meta.map["source_frame"] == [None] * n
        frames = np.stack(list(iter_frames(r.video)))
        if name == "blank":
            assert frames.max() <= 2
        else:
            assert 100 < frames.mean() < 156 and frames.std() > 50  # uniform 0..255
            assert not np.array_equal(frames[0], frames[1])  # fresh noise each frame
    g = apply(src, spec("noise_video", kind="gaussian", sigma=20), tmp_path / "g.mp4")
    assert 15 < np.stack(list(iter_frames(g.video))).std() < 25


def test_noise_keeps_size_and_duration(src: Path, tmp_path: Path) -> None:
    r = apply(src, spec("noise", duration_s=None), tmp_path / "n.mp4")
    assert r.meta.info["affected"] == {"frames": [0, 24], "t": [0.0, 2.0]} and all(r.meta.map["affected"])
    back = probe(r.video)
    assert (back.width, back.height, back.n_frames, back.duration_s) == (64, 48, 24, 2.0)


def test_unrelated_replaces_every_frame_by_the_second_video(src: Path, tmp_path: Path) -> None:
    other = make_video(tmp_path / "other.mp4", n=10, fps=10.0, w=80, h=40, second=True)  # other size, rate, shorter
    r = apply(src, spec("unrelated"), tmp_path / "u.mp4", second_source=other)
    assert r.meta.n_frames == 24 and r.meta.fps == 12.0 and (r.meta.width, r.meta.height) == (64, 48)
    assert r.meta.map["source_video"] == ["second"] * 24 and r.meta.info["looped"] is True
    want = [int(((i / 12) % 1.0) * 10 + 1e-9) for i in range(24)]
    assert r.meta.map["source_frame"] == want
    assert all(is_second(f) for f in iter_frames(r.video))
    with pytest.raises(ConfigError, match="set loop=true"):
        apply(src, spec("unrelated", loop=False), tmp_path / "u2.mp4", second_source=other)


def test_random_windows_come_from_the_seed(tmp_path: Path) -> None:
    a = plan_for(spec("insert_object"), info(n=90), seed=1).info
    b = plan_for(spec("insert_object"), info(n=90), seed=1).info
    c = plan_for(spec("insert_object"), info(n=90), seed=2).info
    assert a == b and a != c
    assert a["affected"]["frames"][1] - a["affected"]["frames"][0] == 60  # 2 s at 30 fps
    x0, y0, x1, y1 = a["region_px"]
    assert 0 <= x0 < x1 <= 854 and 0 <= y0 < y1 <= 480 and x1 - x0 == 96 == round(0.2 * 480)


def test_out_of_range_windows_name_the_allowed_range() -> None:
    with pytest.raises(ConfigError, match=r"duration_s must be at most 0\.8"):
        plan_for(spec("noise", duration_s=2.0), info(n=24, fps=30.0))
    with pytest.raises(ConfigError, match=r"start_s must be in \[0, 0\.3\]"):
        plan_for(spec("colour_shift", duration_s=0.5, start_s=0.5), info(n=24, fps=30.0))
    with pytest.raises(ConfigError, match="region"):
        plan_for(spec("noise", region=[0.5, 0.5, 0.2, 0.9]), info(n=90))
    with pytest.raises(ConfigError, match="hue_deg"):
        plan_for(spec("colour_shift", hue_deg=0.5), info(n=90))


def test_frame_ids_survive_spatial_edits(src: Path, tmp_path: Path) -> None:
    r = apply(src, spec("noise", region=[0.5, 0.0, 1.0, 1.0], duration_s=1.0), tmp_path / "ids.mp4")
    assert decoded_ids(r.video) == list(range(24))  # the left half (the id) is untouched
