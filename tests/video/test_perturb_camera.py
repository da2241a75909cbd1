"""camera_2d: physical direction names (checked on pixels), the full-width wrap, zoom, and per-frame use."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from realvideos import Player
from test_perturb_fixtures import bright_centroid, decoded_ids, info, make_dot_still, make_video
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import PerturbationSpec
from vidaudit.video.decode import iter_frames
from vidaudit.video.perturb.engine import apply, plan_for


def cam(**params: object) -> PerturbationSpec:
    return PerturbationSpec(name="camera_2d", params=params)


@pytest.fixture(scope="module")
def dot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dot_still(tmp_path_factory.mktemp("cam") / "dot.png", w=96, h=64, centre=(30, 26))  # never wraps


def _track(path: Path) -> list[tuple[float, float]]:
    return [bright_centroid(f) for f in iter_frames(path)]


@pytest.mark.parametrize(
    "motion, axis, sign", [("pan_left", 0, +1), ("pan_right", 0, -1), ("tilt_up", 1, +1), ("tilt_down", 1, -1)]
)
def test_pan_and_tilt_move_the_content_the_physical_way(
    dot: Path, tmp_path: Path, motion: str, axis: int, sign: int
) -> None:
    """pan_left: the camera turns left, so the dot moves right; tilt_up: the dot moves down (rows grow down)."""
    r = apply(dot, cam(motion=motion, speed_px_s=20, duration_s=1.0, fps=10), tmp_path / "c.mp4")
    track = _track(r.video)
    steps = [b[axis] - a[axis] for a, b in zip(track, track[1:])]
    assert all(sign * s > 0 for s in steps), (motion, steps)
    assert abs(sum(steps) - sign * 18) < 1.0  # 20 px/s over 0.9 s
    col = "dx" if axis == 0 else "dy"
    assert (
        r.meta.map[col] == [sign * 2 * t for t in range(10)]
        and r.meta.info["content_motion"]
        == {"pan_left": "right", "pan_right": "left", "tilt_up": "down", "tilt_down": "up"}[motion]
    )


@pytest.mark.parametrize("motion, grows", [("zoom_in", True), ("zoom_out", False)])
def test_zoom_moves_content_away_from_or_toward_the_centre(dot: Path, tmp_path: Path, motion: str, grows: bool) -> None:
    r = apply(dot, cam(motion=motion, duration_s=1.0, fps=10, zoom_max=2.0), tmp_path / "z.mp4")
    cx, cy = 48, 32
    dist = [math.hypot(x - cx, y - cy) for x, y in _track(r.video)]
    steps = [b - a for a, b in zip(dist, dist[1:])]
    assert all((s > 0) == grows for s in steps), steps
    z = r.meta.map["zoom"]
    assert z[0] == (1.0 if grows else 2.0) and all((b > a) == grows for a, b in zip(z, z[1:]))
    area = [(f.mean(axis=2) > 128).sum() for f in iter_frames(r.video)]
    assert (area[-1] > area[0]) == grows  # the dot itself grows under zoom_in


@settings(max_examples=25, deadline=None)
@given(
    motion=st.sampled_from(["zoom_in", "zoom_out"]),
    zmax=st.floats(1.05, 4.0),
    n=st.integers(2, 300),
    curve=st.sampled_from(["linear", "exponential"]),
)
def test_zoom_follows_alpha_t_over_n(motion: str, zmax: float, n: int, curve: str) -> None:
    p = plan_for(cam(motion=motion, zoom_max=zmax, zoom_curve=curve, duration_s=n / 30), info(still=True))
    assert p.n_frames == n
    for t, z in enumerate(p.map["zoom"]):
        a = t / n  # alpha never reaches 1
        want = (
            (1 + (zmax - 1) * a if curve == "linear" else zmax**a)
            if motion == "zoom_in"
            else (zmax - (zmax - 1) * a if curve == "linear" else zmax ** (1 - a))
        )
        assert abs(z - want) < 1e-6


def test_paper_zoom_is_one_plus_half_alpha() -> None:
    p = plan_for(cam(motion="zoom_in"), info(still=True))
    assert p.n_frames == 240 and p.fps == 30.0  # Algorithm 1: T = 8 s at 30 fps
    assert p.map["zoom"][120] == 1.25 and abs(p.map["zoom"][-1] - (1 + 0.5 * 239 / 240)) < 1e-9


def test_a_pan_by_the_full_width_returns_the_source(tmp_path: Path) -> None:
    img = np.zeros((48, 64, 3), np.uint8)
    img[:, :, 0] = np.arange(64, dtype=np.uint8)[None, :] * 3
    img[:, :, 1] = np.arange(48, dtype=np.uint8)[:, None] * 4
    cv2.circle(img, (20, 30), 6, (255, 255, 255), -1)
    png = tmp_path / "grad.png"
    cv2.imwrite(str(png), cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
    for motion, size in (("pan_left", 64), ("pan_right", 64), ("tilt_up", 48), ("tilt_down", 48)):
        r = apply(png, cam(motion=motion, speed_px_s=size * 4, duration_s=1.0, fps=16), tmp_path / f"{motion}.mp4")
        frames = list(iter_frames(r.video))
        col = r.meta.map["dx" if motion.startswith("pan") else "dy"]
        assert abs(col[4]) == size  # 4 frames at 4 widths per second
        codec = np.abs(frames[0].astype(int) - img).mean()  # frame 0 is the source, encoded once
        assert np.abs(frames[4].astype(int) - img).mean() < codec + 0.5, motion  # back where it started
        assert np.abs(frames[2].astype(int) - img).mean() > 20  # and really moved on the way


def test_camera_over_every_frame_of_a_video(tmp_path: Path) -> None:
    src = make_video(tmp_path / "v.mp4", n=12, fps=12.0)
    r = apply(src, cam(motion="pan_right", speed_px_s=24), tmp_path / "pv.mp4")
    assert r.meta.map["source_frame"] == list(range(12)) and r.meta.map["dx"] == [-2 * t for t in range(12)]
    assert r.meta.n_frames == 12 and r.meta.fps == 12.0
    still = apply(src, cam(motion="zoom_in", still_s=0.5, duration_s=0.5, fps=8), tmp_path / "st.mp4")
    assert still.meta.map["source_frame"] == [6] * 4 and decoded_ids(still.video)[0] == 6
    with pytest.raises(ConfigError, match="duration_s and fps apply to a still"):
        plan_for(cam(motion="zoom_in", fps=10), info(n=12, fps=12.0))
    with pytest.raises(ConfigError, match="camera_2d needs motion: one of pan_left"):
        plan_for(cam(), info(still=True))


def test_algorithm_1_as_printed_has_tilt_backwards_and_we_do_not(dot: Path, tmp_path: Path) -> None:
    """Algorithm 1's tilt_U: C = [F; F], delta = floor(alpha s T) mod H, F' = C[delta : delta + H] on a row-down
    array. Its content moves *up*: what a camera tilting down shows. Ours (tilt_up) moves it down."""
    img = cv2.cvtColor(cv2.imread(str(dot)), cv2.COLOR_BGR2RGB)
    h = img.shape[0]
    canvas = np.concatenate([img, img], axis=0)
    printed_up = [canvas[(2 * t) % h : (2 * t) % h + h] for t in range(10)]  # s = 20 px/s at 10 fps
    ys_printed = [bright_centroid(f)[1] for f in printed_up]
    assert ys_printed[-1] < ys_printed[0]  # content up: physically tilt down
    ours = apply(dot, cam(motion="tilt_up", speed_px_s=20, duration_s=1.0, fps=10), tmp_path / "up.mp4")
    ys_ours = [y for _, y in _track(ours.video)]
    assert ys_ours[-1] > ys_ours[0]
    down = apply(dot, cam(motion="tilt_down", speed_px_s=20, duration_s=1.0, fps=10), tmp_path / "down.mp4")
    for f, g in zip(iter_frames(down.video), printed_up):  # = the paper's printed "up"
        assert abs(bright_centroid(f)[1] - bright_centroid(g)[1]) < 0.5


def _texture_still(path: Path, w: int = 96, h: int = 64) -> Path:
    """A smooth random texture: every shift of it is measurable by phase correlation."""
    img = cv2.GaussianBlur(np.random.default_rng(1).integers(0, 256, (h, w, 3)).astype(np.float32), (0, 0), 2.0)
    img = (img - img.min()) / (img.max() - img.min()) * 255
    cv2.imwrite(str(path), img.astype(np.uint8))
    return path


@pytest.mark.parametrize(
    "motion, speed, renders",
    [
        ("pan_left", 1410.0, True),  # 47 px a frame on a 96 px frame: just under half, seen as labelled
        ("tilt_down", 930.0, True),  # 31 px a frame on 64 px rows
        ("pan_left", 1500.0, False),  # 50 px a frame: seen as a 46 px step to the left
        ("pan_right", 2000.0, False),  # 66-67 px: seen as ~30 px to the right
        ("tilt_up", 1500.0, False),  # 50 px on 64 px rows: seen as 14 px up
        ("tilt_down", 3000.0, False),  # 100 px = 36 mod 64: seen as 28 px down
        ("pan_left", 0.5, False),  # 0.5 px/s for 0.2 s: never a whole pixel, a still picture labelled pan_left
    ],
)
def test_the_motion_a_player_sees_is_the_labelled_one_or_the_op_refuses(
    tmp_path: Path, motion: str, speed: float, renders: bool
) -> None:
    """Measured on ffmpeg's decode by phase correlation between consecutive frames, never from dx/dy: a pan or tilt
    of half the frame or more per frame wraps into a motion the other way, and one under a pixel is no motion."""
    player = Player.required()
    png = _texture_still(tmp_path / "tex.png")
    try:
        r = apply(png, cam(motion=motion, speed_px_s=speed, duration_s=0.2, fps=30), tmp_path / "c.mp4")
    except ConfigError as e:
        assert not renders and "speed_px_s must be at" in str(e)
        return
    _, frames = player.frames(r.video)
    axis, sign = {"pan_left": (0, 1), "pan_right": (0, -1), "tilt_up": (1, 1), "tilt_down": (1, -1)}[motion]
    gray = [cv2.cvtColor(f, cv2.COLOR_RGB2GRAY).astype(np.float64) for f in frames]
    seen = [cv2.phaseCorrelate(a, b)[0][axis] for a, b in zip(gray, gray[1:])]
    assert all(sign * s > 0.5 for s in seen), (motion, r.meta.info["content_motion"], seen)


def test_one_frame_or_a_zoom_that_never_changes_the_crop_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="1 frame shows no motion"):
        plan_for(cam(motion="pan_left", duration_s=0.02, fps=30), info(still=True))
    with pytest.raises(ConfigError, match="never changes the 96x64 crop"):  # every crop is 95x63: one still picture
        plan_for(cam(motion="zoom_out", zoom_max=1.001, duration_s=1, fps=30), info(still=True, w=96, h=64))
    assert plan_for(cam(motion="zoom_in", zoom_max=1.001, duration_s=1, fps=30), info(still=True, w=96, h=64))
