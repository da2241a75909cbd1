"""The stress suite's camera_motion probe, without the CLI: prompt snapshot, parser, balance, signs,
chance, and the camera-flow observer on the smoke set."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.contract.suite import ScoreInput
from vidaudit.core.hashing import rng_from
from vidaudit.core.manifest import load_samples
from vidaudit.core.types import Sample, VideoRef
from vidaudit.suites.stress import SUITE
from vidaudit.suites.stress.camera_motion.generate import PRESETS, camera_spec, generate, plan_samples
from vidaudit.suites.stress.camera_motion.options import CHANCE, DIRECTIONS, LETTERS
from vidaudit.suites.stress.camera_motion.prompts import camera_motion_prompt
from vidaudit.suites.stress.probe import GenerateOptions
from vidaudit.video.decode import iter_selected
from vidaudit.video.motion import classify_motion
from vidaudit.video.perturb.engine import apply

PROMPT_SNAPSHOT = """\
The camera performs exactly one motion during this video. Which camera motion is it?
A. Zoom in (the scene grows from the centre of the frame)
B. Zoom out (the scene shrinks toward the centre of the frame)
C. Pan left (the camera turns left, so the scene moves right in the frame)
D. Pan right (the camera turns right, so the scene moves left in the frame)
E. Tilt up (the camera tilts up, so the scene moves down in the frame)
F. Tilt down (the camera tilts down, so the scene moves up in the frame)
Answer with the letter of exactly one option inside \\boxed{}, for example \\boxed{A}."""


def _sample(motion: str = "pan_left") -> Sample:
    return Sample(
        sample_id=f"s-{motion}",
        suite="stress",
        question="q",
        answer=motion,
        params={"probe": "camera_motion", "motion": motion, "synthesis": "2d"},
        video=VideoRef(path="v.mp4", fps=10, width=160, height=96, n_frames=30, duration_s=3),
    )


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("stress") / "data"
    generate(out, GenerateOptions())
    return out


def test_prompt_snapshot() -> None:
    assert camera_motion_prompt() == PROMPT_SNAPSHOT
    assert SUITE.render_prompt(_sample(), None).text == PROMPT_SNAPSHOT  # type: ignore[arg-type]
    assert SUITE.probes and "camera_motion" in SUITE.probes


def test_option_order_is_fixed() -> None:
    assert DIRECTIONS == ("zoom_in", "zoom_out", "pan_left", "pan_right", "tilt_up", "tilt_down")
    assert LETTERS == ("A", "B", "C", "D", "E", "F")


@pytest.mark.parametrize(
    ("text", "expected", "method"),
    [
        ("\\boxed{C}", "pan_left", "boxed"),
        ("Answer: (E)", "tilt_up", "answer"),
        ("F. Tilt down", "tilt_down", "leading"),
        ("I think it's a pan. A camera... hard to say B or D", None, "unparseable"),  # no last-letter guess
        ("The scene moves right, so F", None, "unparseable"),
    ],
)
def test_strict_parse(text: str, expected: str | None, method: str) -> None:
    ts = SUITE.score(ScoreInput(_sample("pan_left"), text, "ok"))
    assert ts.metrics["predicted_motion"] == expected
    assert ts.parse is not None and ts.parse.method == method
    assert ts.correct is (expected == "pan_left")


def test_errors_are_not_scored() -> None:
    assert SUITE.score(ScoreInput(_sample(), None, "api_error")).correct is None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_parser_on_hostile_text(text: str) -> None:
    ts = SUITE.score(ScoreInput(_sample("zoom_in"), text, "ok"))
    pm = ts.metrics["predicted_motion"]
    assert pm is None or pm in DIRECTIONS
    assert ts.correct is (pm == "zoom_in")
    if pm is None:
        assert ts.parse is not None and ts.parse.method == "unparseable"


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="ABCDEFabcdef .,:;()\n", max_size=60))
def test_a_letter_only_from_an_answer_position(text: str) -> None:
    """Bare letters scattered in text are never read unless one leads the answer."""
    ts = SUITE.score(ScoreInput(_sample(), "Thinking: " + text, "ok"))
    assert ts.parse is not None and ts.parse.method in ("unparseable", "answer")


def test_baseline_answers_parse() -> None:
    for d in DIRECTIONS:
        s = _sample(d)
        assert SUITE.score(ScoreInput(s, SUITE.baselines.oracle_answer(s), "ok")).correct is True
        assert SUITE.score(ScoreInput(s, SUITE.baselines.constant_answer(s, d), "ok")).correct is True
    assert (
        SUITE.score(ScoreInput(_sample("tilt_up"), SUITE.baselines.constant_answer(_sample(), "E"), "ok")).correct
        is True
    )


def test_chance_is_near_one_sixth() -> None:
    n = 6000
    k = 0
    for i in range(n):
        s = _sample(DIRECTIONS[i % 6])
        k += bool(SUITE.score(ScoreInput(s, SUITE.baselines.chance_answer(s, rng_from("chance", i)), "ok")).correct)
    assert abs(k / n - CHANCE) < 0.02  # ~4 standard errors


def test_plan_is_balanced() -> None:
    for preset, scenes in (("smoke", None), ("paper", 3)):
        rows = plan_samples(PRESETS[preset], scenes)
        c = Counter(r["params"]["motion"] for r in rows)
        assert set(c) == set(DIRECTIONS) and len(set(c.values())) == 1
        assert all(r["params"]["probe"] == "camera_motion" and r["params"]["synthesis"] == "2d" for r in rows)


def test_smoke_dataset(smoke: Path) -> None:
    samples = load_samples(smoke)
    assert len(samples) == 12
    assert Counter(s.answer for s in samples) == dict.fromkeys(DIRECTIONS, 2)
    for s in samples:
        assert s.answer == s.params["motion"] and s.params["probe"] == "camera_motion"
        assert s.video.width == 160 and s.video.height == 96
    SUITE.check_samples(samples, "smoke")


@pytest.mark.parametrize("motion", DIRECTIONS)
def test_a_dot_moves_the_documented_way(tmp_path: Path, motion: str) -> None:
    """pan_left: the content moves right; tilt_up: down; zoom_in: away from the centre."""
    w, h = 96, 64
    img = np.zeros((h, w, 3), np.uint8)
    x0, y0 = 60, 40  # right of and below the centre (48, 32)
    cv2.circle(img, (x0, y0), 3, (255, 255, 255), -1)
    src = tmp_path / "dot.png"
    cv2.imwrite(str(src), img)
    res = apply(src, camera_spec(motion, w, h, 1.0, 10.0, 0.25, 1.5, "linear"), tmp_path / "dot.mp4")
    frames = [f for _, f in iter_selected(res.video, [0, res.meta.n_frames - 1])]

    def centroid(f: np.ndarray) -> tuple[float, float]:
        ys, xs = np.nonzero(f[..., 0] > 128)
        return float(xs.mean()), float(ys.mean())

    (ax, ay), (bx, by) = centroid(frames[0]), centroid(frames[1])
    moved = {
        "pan_left": bx - ax > 5,
        "pan_right": ax - bx > 5,
        "tilt_up": by - ay > 3,
        "tilt_down": ay - by > 3,
        "zoom_in": bx - ax > 1 and by - ay > 1,
        "zoom_out": ax - bx > 1 and ay - by > 1,
    }
    assert moved[motion], (motion, (ax, ay), (bx, by))


def test_camera_flow_on_the_smoke_set(smoke: Path) -> None:
    """frames@4-like selections (every 2nd and 3rd frame, full and half size) and every frame."""
    right = total = 0
    for s in load_samples(smoke):
        for step in (1, 2, 3):
            for half in (False, True):
                frames = [
                    f for _, f in iter_selected(smoke / s.video.path, range(0, s.video.n_frames, step), half=half)
                ]
                right += classify_motion(frames)[0] == s.answer
                total += 1
    assert right / total >= 0.95, (right, total)


@pytest.mark.parametrize(
    ("motion", "speed", "seconds", "zmax", "curve"),
    [
        ("pan_left", 200.0, 4.0, 1.5, "linear"),  # laps a 160-px frame 5 times: a quarter-clip gap aliases
        ("tilt_down", 150.0, 4.0, 1.5, "linear"),
        ("zoom_in", 10.0, 12.0, 1.2, "linear"),  # 1.2x over 12 s: under 0.1 px per frame sent
        ("zoom_out", 10.0, 2.0, 3.0, "exponential"),  # 3x in 2 s: 1.3x between frames sent
    ],
)
def test_camera_flow_chooses_its_gap_from_the_motion(
    tmp_path: Path, motion: str, speed: float, seconds: float, zmax: float, curve: str
) -> None:
    from vidaudit.core.timeline import Timeline
    from vidaudit.suites.stress.camera_motion.generate import Point, spec_2d
    from vidaudit.suites.stress.camera_motion.scene import render_scene
    from vidaudit.video.sampling import at_fps

    still = tmp_path / "s.png"
    cv2.imwrite(str(still), render_scene(7, 160, 96))
    res = apply(still, spec_2d(motion, Point(seconds, 10.0, speed, speed, zmax, curve)), tmp_path / "m.mp4")
    idx = at_fps(Timeline.constant(res.meta.n_frames, 10.0), 4.0).indices  # frames@4
    frames = [f for _, f in iter_selected(res.video, idx)]
    got, ev = classify_motion(frames)
    assert got == motion, ev
