"""The render-time check's shortcuts change nothing it sees: a bouncing ball's frame is its template outside the
ball's box, a patch converted from that box holds the bytes of the whole frame's conversion, and the detector
fed patches finds what it finds in whole frames (``render.drawn_as_decoded``, ``detector.detect_events``), contacts
to the same sub-frame instants (``detector.contact_times``, what ``verify.pixel_problems`` reads)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.suites.counting.bounce_ball import BounceBall
from vidaudit.suites.counting.detector import _background, _foreground, contact_times, detect_events
from vidaudit.suites.counting.grid import GridPoint
from vidaudit.suites.counting.render import drawn_as_decoded
from vidaudit.suites.counting.scene import RenderSettings
from vidaudit.suites.counting.scenes import make_scene
from vidaudit.video.display import i420_to_rgb_half

SMALL = RenderSettings(duration_s=6.0, fps=30.0, width=320, height=240)
FULL = RenderSettings()
#: slow and fast balls, either wall first, radii and angles of several seeds, controls at rest
BALLS = [
    GridPoint("bounce_ball", n, f, seed)
    for n, f, seed in (
        (3, 0.5, 0),
        (12, 4.0, 0),
        (1, 0.5, 3),
        (5, 2.0, 7),
        (8, 3.5, 9),
        (0, 1.0, 4),
        (2, 1.0, 5),
        (10, 2.5, 2),
    )
]
OTHERS = [
    GridPoint("blinking", 12, 4.0, 0),
    GridPoint("blinking", 3, 0.5, 6),
    GridPoint("state_machine", 12, 4.0, 1),
    GridPoint("state_machine", 2, 0.5, 8),
]


def _runs(point: GridPoint, s: RenderSettings) -> list[tuple[object, np.ndarray, int]]:
    return [(key, frame.copy(), repeat) for key, frame, repeat in make_scene(point, s).keyed_runs()]


@pytest.mark.parametrize("point", BALLS, ids=str)
@pytest.mark.parametrize("s", [SMALL, FULL], ids=["320x240", "854x480"])
def test_a_ball_frame_is_its_template_outside_the_ball_box(point: GridPoint, s: RenderSettings) -> None:
    scene = make_scene(point, s)
    assert isinstance(scene, BounceBall)
    buf = np.full_like(scene.template, 7)
    again, drawn = np.full_like(scene.template, 7), None
    for key, frame, _ in scene.keyed_runs():
        x0, y0, x1, y1 = scene.ball_box(key)
        assert x0 % 2 == y0 % 2 == x1 % 2 == y1 % 2 == 0 and 0 <= x0 < x1 <= s.width and 0 <= y0 < y1 <= s.height
        outside = np.ones(frame.shape[:2], bool)
        outside[y0:y1, x0:x1] = False
        assert np.array_equal(frame[outside], scene.template[outside]), key
        assert not np.array_equal(frame, scene.template)  # the ball is drawn, inside the box
        assert np.array_equal(scene.draw_into(key, buf), frame)  # drawing into any array draws the same
        if drawn is None:
            scene.draw_into(key, again)
        else:  # into the frame of the key drawn before (only its ball is taken out): the same
            assert np.array_equal(scene.draw_into(key, again, drawn), frame)
        drawn = key
    assert [f.tobytes() for _, f, _ in scene.keyed_runs(reuse=True)] == [
        f.tobytes() for _, f, _ in scene.keyed_runs()
    ]  # drawn into buffers used again: the same frames


def _decoded(frame: np.ndarray, s: RenderSettings) -> np.ndarray:
    """What a decoder of the encoder's I420 frame sees at half size: the whole frame converted."""
    return i420_to_rgb_half(cv2.cvtColor(frame, cv2.COLOR_RGB2YUV_I420), s.width, s.height)


def _stream(point: GridPoint, s: RenderSettings) -> tuple[list[tuple], list[tuple[np.ndarray, int]]]:
    written: list[tuple[np.ndarray, int]] = []
    items = list(drawn_as_decoded(make_scene(point, s), lambda f, r, box: written.append((f.copy(), r))))
    return items, written


@pytest.mark.parametrize("point", BALLS + OTHERS, ids=str)
def test_the_patched_frames_are_the_whole_conversion(point: GridPoint) -> None:
    items, written = _stream(point, FULL)
    assert [(f.tobytes(), r) for _, f, r in _runs(point, FULL)] == [(f.tobytes(), r) for f, r in written]
    frames = [f for f, r in written for _ in range(r)]
    assert len(items) == len(frames) == FULL.n_frames
    seen: np.ndarray | None = None
    patches = 0
    for (i, t, arr, *box), frame in zip(items, frames, strict=True):
        assert i / FULL.fps == t
        if box:
            x0, y0, x1, y1 = box[0]
            assert seen is not None
            seen = seen.copy()
            seen[y0:y1, x0:x1] = arr
            patches += 1
        else:
            seen = arr
        assert np.array_equal(seen, _decoded(frame, FULL)), i
    assert patches > 0 if point.domain == "bounce_ball" and point.n_events else patches == 0  # (a control rests)


@pytest.mark.parametrize("point", BALLS + OTHERS, ids=str)
def test_patches_find_what_whole_frames_find(point: GridPoint) -> None:
    items, written = _stream(point, FULL)
    whole = [(i, i / FULL.fps, _decoded(f, FULL)) for i, f in enumerate(f for f, r in written for _ in range(r))]
    assert detect_events(point.domain, items) == detect_events(point.domain, whole)
    assert detect_events(point.domain, items) or point.n_events == 0
    if point.domain == "bounce_ball":
        assert contact_times(items) == contact_times(whole)
        assert len(contact_times(items)) == point.n_events


# ------------------------------------------------------------------ the detector's patches, on any pixels

boxes = st.tuples(st.integers(0, 30), st.integers(0, 22), st.integers(1, 34), st.integers(1, 26))


@settings(max_examples=150, deadline=None)
@given(
    domain=st.sampled_from(["bounce_ball", "blinking", "state_machine"]),
    seed=st.integers(0, 2**32 - 1),
    steps=st.lists(st.tuples(boxes, st.booleans()), min_size=1, max_size=12),
)
def test_a_patch_stream_is_the_whole_frames_stream(
    domain: str, seed: int, steps: list[tuple[tuple[int, int, int, int], bool]]
) -> None:
    """Frames made by pasting random pixels or a moving disc into boxes of the frame before: the detections
    from the patches are those from the whole frames."""
    rng = np.random.default_rng(seed)
    first = np.full((48, 64, 3), (30, 40, 50), np.uint8)
    cv2.circle(first, (20, 20), 6, (220, 60, 40), -1, cv2.LINE_AA)
    frames, patched = [first], [(0, 0.0, first)]
    for k, ((x0, y0, w, h), disc) in enumerate(steps, start=1):
        x1, y1 = min(64, x0 + w), min(48, y0 + h)
        now = frames[-1].copy()
        if disc:  # a disc drawn somewhere: the patch is its box (its antialiased rim within 1 px)
            cx, cy = int(rng.integers(0, 64)), int(rng.integers(0, 48))
            cv2.circle(now, (cx, cy), 6, (220, 60, 40), -1, cv2.LINE_AA)
            x0, y0, x1, y1 = max(0, cx - 8), max(0, cy - 8), min(64, cx + 9), min(48, cy + 9)
        else:
            now[y0:y1, x0:x1] = rng.integers(0, 256, (y1 - y0, x1 - x0, 3), dtype=np.uint8)
        frames.append(now)
        patch = now[y0:y1, x0:x1].copy()
        patched.append((k, k / 30, patch, (x0, y0, x1, y1)))
    whole = [(k, k / 30, f) for k, f in enumerate(frames)]
    kept = [f.copy() for f in frames] + [p[2].copy() for p in patched[1:]]
    assert detect_events(domain, patched) == detect_events(domain, whole)
    if domain == "bounce_ball":
        assert contact_times(patched) == contact_times(whole)
    after = frames + [p[2] for p in patched[1:]]
    assert all(np.array_equal(a, b) for a, b in zip(kept, after, strict=True))  # the caller's arrays untouched


def _ball_reference(first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The background colour and foreground mask of ``detector._Ball`` written plainly in numpy (its rule)."""
    q = (first // 32).reshape(-1, 3)
    codes, counts = np.unique(q[:, 0] * 64 + q[:, 1] * 8 + q[:, 2], return_counts=True)
    bg = first.reshape(-1, 3)[(q[:, 0] * 64 + q[:, 1] * 8 + q[:, 2]) == codes[np.argmax(counts)]].mean(axis=0)
    fg = (np.abs(first.astype(np.int16) - bg.astype(np.int16)).max(axis=2) > 40).astype(np.uint8)
    return bg, fg


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), noise=st.integers(0, 60), discs=st.integers(0, 3))
def test_the_ball_finder_reads_the_background_as_numpy_states_it(seed: int, noise: int, discs: int) -> None:
    """``_Ball``'s background colour (cv2 sums) and foreground (cv2 differences) are the numpy rule's, bit for bit,
    on a flat background with noise and discs (so the ball it finds, its colour and tolerance are too)."""
    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(20, 60)), int(rng.integers(20, 80))
    base = rng.integers(0, 256, 3)
    img = np.clip(base + rng.integers(-noise, noise + 1, (h, w, 3)), 0, 255).astype(np.uint8)
    for _ in range(discs):
        cv2.circle(
            img,
            (int(rng.integers(0, w)), int(rng.integers(0, h))),
            int(rng.integers(2, 9)),
            tuple(int(c) for c in rng.integers(0, 256, 3)),
            -1,
            cv2.LINE_AA,
        )
    bg, fg = _ball_reference(img)
    assert np.array_equal(_background(img), bg) and _background(img).dtype == bg.dtype
    assert np.array_equal(_foreground(img, bg), fg) and _foreground(img, bg).dtype == fg.dtype
