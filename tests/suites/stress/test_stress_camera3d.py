"""camera_motion's 3D synthesis (Algorithm 2), the A.3 sweep preset, user stills, and chance on a large set.

Signs are read back from pixels: a single bright sprite is filmed and its centroid and size measured.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from vidaudit.core.contract.suite import ScoreInput
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.hashing import rng_from
from vidaudit.core.manifest import load_samples
from vidaudit.core.types import Sample, VideoRef
from vidaudit.suites.stress import SUITE
from vidaudit.suites.stress.camera_motion.generate import PRESETS, generate, parse_settings, plan_samples
from vidaudit.suites.stress.camera_motion.options import CHANCE, DIRECTIONS
from vidaudit.suites.stress.probe import GenerateOptions
from vidaudit.video.decode import iter_selected
from vidaudit.video.motion import classify_motion
from vidaudit.video.synth3d import (
    Z_REF,
    Camera3DSpec,
    Sprite,
    World,
    focal_length,
    make_world,
    render_frame,
    render_frames,
    rot_x,
    rot_y,
)

W, H = 96, 64


def _world(*sprites: tuple[tuple[float, float, float], float, tuple[int, int, int]]) -> World:
    """Sprites of flat colour (opaque squares) at the given positions and world sizes."""
    textures = []
    out = []
    for i, (pos, size, colour) in enumerate(sprites):
        tex = np.zeros((16, 16, 4), np.uint8)
        tex[..., :3] = colour
        tex[..., 3] = 255
        textures.append((tex,))
        out.append(Sprite(position=pos, size=(size, size), texture=i))
    return World(sprites=tuple(out), textures=tuple(textures), background=(0, 0, 0))


def _blob(img: np.ndarray) -> tuple[float, float, float]:
    """Centroid x, y and area of the bright pixels."""
    ys, xs = np.nonzero(img[..., 0] > 128)
    assert len(xs), "the sprite is not in the frame"
    return float(xs.mean()), float(ys.mean()), float(len(xs))


def test_pinhole_projection() -> None:
    """A sprite at (x, y, z) is drawn centred at (f x / z + W/2, f y / z + H/2), f = (W/2) / tan(FOV/2)."""
    f = focal_length(W, 60.0)
    assert f == pytest.approx(48 / math.tan(math.radians(30)))
    spec = Camera3DSpec("pan_left", W, H, 1.0, 10.0, speed_px_s=1.0)
    x, y, z = 1.0, -0.5, 6.0
    cx, cy, _ = _blob(render_frame(_world(((x, y, z), 0.6, (255, 255, 255))), spec, 0.0))
    assert cx == pytest.approx(f * x / z + W / 2 - 0.5, abs=0.6)
    assert cy == pytest.approx(f * y / z + H / 2 - 0.5, abs=0.6)


def test_rotation_matrices_are_the_papers() -> None:
    t = 0.3
    assert np.allclose(rot_x(t), [[1, 0, 0], [0, math.cos(t), -math.sin(t)], [0, math.sin(t), math.cos(t)]])
    assert np.allclose(rot_y(t), [[math.cos(t), 0, math.sin(t)], [0, 1, 0], [-math.sin(t), 0, math.cos(t)]])


@pytest.mark.parametrize("motion", DIRECTIONS)
def test_a_sprite_moves_the_documented_way(motion: str) -> None:
    """pan_left: the content moves right; tilt_up: down; zoom_in: grows, away from the centre."""
    world = _world(((0.8, 0.5, Z_REF), 0.8, (255, 255, 255)))  # right of and below the optical axis
    spec = Camera3DSpec(motion, W, H, 1.0, 10.0, speed_px_s=20.0, zoom_max=1.5)  # type: ignore[arg-type]
    frames = [f.copy() for f in render_frames(world, spec)]
    (ax, ay, aa), (bx, by, ba) = _blob(frames[0]), _blob(frames[-1])
    moved = {
        "pan_left": bx - ax > 10,
        "pan_right": ax - bx > 10,
        "tilt_up": by - ay > 10,
        "tilt_down": ay - by > 10,
        "zoom_in": bx > ax and by > ay and ba > 1.5 * aa,
        "zoom_out": bx < ax and by < ay and ba < aa / 1.5,
    }
    assert moved[motion], (motion, (ax, ay, aa), (bx, by, ba))


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(DIRECTIONS),
    st.floats(5.0, 200.0),
    st.floats(1.2, 3.0),
    st.sampled_from(["linear", "exponential"]),
    st.floats(-0.5, 0.5),
    st.floats(-0.3, 0.3),
)
def test_signs_hold_across_the_sweep(motion: str, speed: float, zmax: float, curve: str, x: float, y: float) -> None:
    """Early in a 2 s clip (the centre content moved at most 12 px), a sprite near the axis has moved the way
    the motion's name says, by at least half the centre's displacement."""
    world = _world(((x, y, Z_REF), 0.5, (255, 255, 255)))
    spec = Camera3DSpec(motion, W, H, 2.0, 8.0, speed_px_s=speed, zoom_max=zmax, zoom_curve=curve)  # type: ignore[arg-type]
    alpha = min(0.25, 12.0 / (2.0 * speed))
    shift = speed * 2.0 * alpha
    (ax, ay, aa), (bx, by, ba) = _blob(render_frame(world, spec, 0.0).copy()), _blob(render_frame(world, spec, alpha))
    if motion.startswith("pan"):
        assert (bx - ax) * (1 if motion == "pan_left" else -1) > 0.5 * shift
    elif motion.startswith("tilt"):
        assert (by - ay) * (1 if motion == "tilt_up" else -1) > 0.5 * shift
    else:  # half way through, a larger sprite: its size and its distance from the centre both change
        world = _world(((x, y, Z_REF), 2.0, (255, 255, 255)))
        (ax, ay, aa), (bx, by, ba) = _blob(render_frame(world, spec, 0.0).copy()), _blob(render_frame(world, spec, 0.5))
        grow = 1.0 + (zmax - 1.0) * 0.5 if curve == "linear" else zmax**0.5
        ratio = ba / aa if motion == "zoom_in" else aa / ba
        assert ratio > 1 + 0.5 * (grow**2 - 1), (ratio, grow)
        ra, rb = math.hypot(ax - W / 2, ay - H / 2), math.hypot(bx - W / 2, by - H / 2)
        if ra * (grow - 1) > 1.0:  # the distance changes by a pixel or more: below that, rounding hides it
            assert (rb > ra) is (motion == "zoom_in"), (ra, rb, grow)


def test_dolly_grows_the_reference_depth_by_the_zoom_curve() -> None:
    world = _world(((0.0, 0.0, Z_REF), 1.0, (255, 255, 255)))
    for curve, expect in (("linear", 1 + 2.0 * 0.5), ("exponential", 3.0**0.5)):
        spec = Camera3DSpec("zoom_in", 192, 128, 1.0, 10.0, zoom_max=3.0, zoom_curve=curve)  # type: ignore[arg-type]
        a = _blob(render_frame(world, spec, 0.0).copy())[2]
        b = _blob(render_frame(world, spec, 0.5))[2]
        assert math.sqrt(b / a) == pytest.approx(expect, rel=0.06)


def test_painters_algorithm_draws_near_over_far() -> None:
    far, near = ((0.0, 0.0, 10.0), 4.0, (0, 0, 255)), ((0.0, 0.0, 5.0), 1.0, (255, 0, 0))
    spec = Camera3DSpec("zoom_in", W, H, 1.0, 10.0)
    for order in ((far, near), (near, far)):
        img = render_frame(_world(*order), spec, 0.0)
        assert tuple(img[H // 2, W // 2]) == (255, 0, 0)  # the near sprite, whichever is listed first
        assert tuple(img[H // 2, W // 2 + 12]) == (0, 0, 255)  # the far one around it


def test_behind_the_camera_is_not_drawn() -> None:
    spec = Camera3DSpec("zoom_in", W, H, 1.0, 10.0)
    img = render_frame(_world(((0.0, 0.0, -5.0), 3.0, (255, 255, 255))), spec, 0.0)
    assert img.max() == 0


def test_pan_angle_matches_the_centre_speed() -> None:
    spec = Camera3DSpec("pan_left", 320, 180, 4.0, 15.0, speed_px_s=100.0)
    assert spec.theta_max == pytest.approx(100.0 * 4.0 / focal_length(320))
    _, yaw, _ = spec.pose(0.5)
    assert yaw * spec.focal == pytest.approx(100.0 * 2.0)  # centre content moved 200 px after 2 s


def test_world_is_seeded_and_fills_the_frame() -> None:
    a, b = make_world(3), make_world(3)
    assert a.sprites == b.sprites and a.sprites != make_world(4).sprites
    for motion in DIRECTIONS:
        spec = Camera3DSpec(motion, 160, 90, 8.0, 5.0, speed_px_s=200.0, zoom_max=3.0)  # type: ignore[arg-type]
        for alpha in (0.0, 0.5, 0.95):
            img = render_frame(a, spec, alpha)
            covered = np.mean(np.any(img != np.uint8(a.background), axis=2))
            assert covered > 0.3, (motion, alpha, covered)  # a 3x dolly passes the nearest sprites


def test_bad_3d_specs_are_refused() -> None:
    with pytest.raises(ConfigError, match="even-sized"):
        Camera3DSpec("pan_left", 95, 64, 1.0, 10.0)
    with pytest.raises(ConfigError, match="fewer than two frames"):
        Camera3DSpec("pan_left", 96, 64, 0.1, 10.0)
    with pytest.raises(ConfigError, match="unknown camera motion"):
        Camera3DSpec("roll", 96, 64, 1.0, 10.0)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the generator


def test_the_a3_preset_covers_the_sweep() -> None:
    pre = PRESETS["paper"]
    rows = plan_samples(pre, None, ("2d", "3d"))
    assert len(rows) == 36 * 6 * 2
    durations = {r["params"]["duration_s"] for r in rows}
    assert durations == {1.0, 2.0, 3.0, 8.0, 10.0, 15.0}
    fps = {r["params"]["fps"] for r in rows}
    assert min(fps) == 15.0 and max(fps) == 60.0
    frames = {round(r["params"]["duration_s"] * r["params"]["fps"]) for r in rows}
    assert min(frames) == 30 and max(frames) == 600
    pans = {r["params"]["speed_px_s"] for r in rows if r["params"]["motion"].startswith("pan")}
    assert min(pans) == 10.0 and max(pans) == 200.0
    zooms = {(r["params"]["zoom_max"], r["params"]["zoom_curve"]) for r in rows}
    assert min(z for z, _ in zooms) == 1.2 and max(z for z, _ in zooms) == 3.0
    assert {c for _, c in zooms} == {"linear", "exponential"}
    # 30 scenes pair every timing with every speed
    assert len({(r["params"]["duration_s"], r["params"]["speed_px_s"]) for r in rows}) == 6 * 5
    c = Counter((r["params"]["synthesis"], r["params"]["motion"]) for r in rows)
    assert len(c) == 12 and set(c.values()) == {36}
    assert len({r["sample_id"] for r in rows}) == len(rows)


@pytest.mark.parametrize(
    ("text", "err"),
    [("synthesis=4d", "choose 2d, 3d or both"), ("size=100", "WxH"), ("size=33x32", "even"), ("size=16x16", "32")],
)
def test_bad_settings(text: str, err: str) -> None:
    k, _, v = text.partition("=")
    with pytest.raises(ConfigError, match=err):
        parse_settings({k: v})


def test_unknown_setting_is_refused(tmp_path: Path) -> None:
    from vidaudit.suites.stress import SUITE as STRESS

    with pytest.raises(ConfigError, match="synthesis, size"):
        STRESS.probe("camera_motion").generate(tmp_path / "d", GenerateOptions(settings={"speed": "3"}))


@pytest.fixture(scope="module")
def smoke3d(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cm3d") / "data"
    generate(out, GenerateOptions(settings={"synthesis": "3d"}))
    return out


def test_3d_smoke_dataset_and_camera_flow(smoke3d: Path) -> None:
    samples = load_samples(smoke3d)
    assert len(samples) == 12 and {s.params["synthesis"] for s in samples} == {"3d"}
    assert Counter(s.answer for s in samples) == dict.fromkeys(DIRECTIONS, 2)
    SUITE.check_samples(samples, "smoke3d")
    right = total = 0
    for s in samples:
        assert s.params["fov_deg"] == 60.0 and s.video.n_frames == 30
        for step, half in ((2, False), (3, True)):
            frames = [f for _, f in iter_selected(smoke3d / s.video.path, range(0, s.video.n_frames, step), half=half)]
            right += classify_motion(frames)[0] == s.answer
            total += 1
    assert right / total >= 0.95, (right, total)


# --------------------------------------------------------------------------- user stills


def _still(path: Path, w: int, h: int, seed: int = 0) -> Path:
    rng = rng_from("test-still", seed)
    img = cv2.resize(
        rng.integers(0, 256, (h // 8 + 1, w // 8 + 1, 3)).astype(np.uint8), (w, h), interpolation=cv2.INTER_CUBIC
    )
    for _ in range(20):
        cv2.circle(
            img,
            (int(rng.integers(0, w)), int(rng.integers(0, h))),
            int(rng.integers(3, 12)),
            tuple(int(v) for v in rng.integers(0, 256, 3)),
            -1,
        )
    cv2.imwrite(str(path), img)
    return path


def test_user_stills(tmp_path: Path) -> None:
    src = tmp_path / "stills"
    src.mkdir()
    _still(src / "b.png", 400, 200, 1)
    _still(src / "a.jpg", 200, 150, 2)
    (src / "notes.txt").write_text("not an image")
    out = tmp_path / "data"
    generate(out, GenerateOptions(source=src))
    samples = load_samples(out)
    assert len(samples) == 12
    assert {s.params["source_image"] for s in samples} == {"a.jpg", "b.png"}
    assert all(s.params["synthesis"] == "2d" and s.video.width == 160 and s.video.height == 96 for s in samples)
    first = next(s for s in samples if s.params["scene"] == 0)
    assert first.params["source_image"] == "a.jpg"  # sorted by name
    right = 0
    for s in samples:
        frames = [f for _, f in iter_selected(out / s.video.path, range(0, s.video.n_frames, 3))]
        right += classify_motion(frames)[0] == s.answer
    assert right >= 11


def test_user_stills_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="holds no images"):
        generate(tmp_path / "d1", GenerateOptions(source=empty))
    with pytest.raises(ConfigError, match="is not a folder"):
        generate(tmp_path / "d2", GenerateOptions(source=tmp_path / "missing"))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.png").write_bytes(b"\x89PNG not really")
    with pytest.raises(DataError, match="cannot be read as an image"):
        generate(tmp_path / "d3", GenerateOptions(source=bad))
    small = tmp_path / "small"
    small.mkdir()
    _still(small / "tiny.png", 120, 80)
    with pytest.raises(DataError, match=r"120x80 is too small for a 160x96"):
        generate(tmp_path / "d4", GenerateOptions(source=small))
    generate(tmp_path / "d5", GenerateOptions(source=small, settings={"size": "96x64"}))  # a smaller frame fits
    with pytest.raises(ConfigError, match="2D only"):
        generate(tmp_path / "d6", GenerateOptions(source=small, settings={"synthesis": "3d", "size": "96x64"}))
    for d in ("d1", "d2", "d3", "d4", "d6"):
        assert not (tmp_path / d / "manifest.jsonl").exists()


# --------------------------------------------------------------------------- chance


def test_chance_is_within_its_binomial_interval_on_the_a3_set() -> None:
    """The chance baseline over the full A.3 plan (both syntheses) x 5 trials: the count correct lies in
    the central 99.9% of Binomial(n, 1/6), and each direction's count in its own 99.9% interval."""
    rows = plan_samples(PRESETS["paper"], None, ("2d", "3d"))
    k, n = 0, 0
    per: Counter[str] = Counter()
    for r in rows:
        s = Sample(
            sample_id=r["sample_id"],
            suite="stress",
            question="q",
            answer=r["params"]["motion"],
            params=r["params"],
            video=VideoRef(path="v.mp4", fps=10, width=16, height=16, n_frames=3, duration_s=0.3),
        )
        for trial in range(5):
            answer = SUITE.baselines.chance_answer(s, rng_from("chance", s.sample_id, trial))
            ok = bool(SUITE.score(ScoreInput(s, answer, "ok")).correct)
            k += ok
            n += 1
            per[s.answer] += ok
    lo, hi = binom.interval(0.999, n, CHANCE)
    assert lo <= k <= hi, (k, n, lo, hi)
    lo_d, hi_d = binom.interval(0.999, n // 6, CHANCE)
    assert all(lo_d <= per[d] <= hi_d for d in DIRECTIONS), per
