"""Rendering and verification made faster must not move a bit or a decision: a golden sha256 per domain
pins the bitstream (X264_OPTIONS and every encoder input are the dataset's identity), verification's
reused-frame decode gives exactly the detections of converting and analysing every frame, and a video
whose pixels were tampered with still fails."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vidaudit.core.errors import ConfigError
from vidaudit.suites.counting.detector import detect_events
from vidaudit.suites.counting.grid import COUNTS, DOMAINS, FREQUENCIES, GridPoint
from vidaudit.suites.counting.render import render
from vidaudit.suites.counting.scene import RenderSettings
from vidaudit.suites.counting.scenes import make_scene
from vidaudit.suites.counting.verify import check_video
from vidaudit.video.decode import iter_frames, iter_frames_reused
from vidaudit.video.encode import write_video

TINY = RenderSettings(duration_s=3.0, width=320, height=240)  # 90 frames: two keyframes (g=60)
#: sha256 of render(GridPoint(domain, 2, 2.0, 0), TINY), written by the renderer before its speed work
#: (commit 6f014f5). A change means every dataset's videos change: only on purpose, with a new
#: GENERATOR_VERSION, or after upgrading PyAV (its bundled libx264) or OpenCV (drawing, RGB->I420).
GOLDEN = {
    "bounce_ball": ("99de7881ec66ffbb949297311842417edf88a670873b44d9166edecff2b3bdd1", [15, 30]),
    "blinking": ("97085d69972c99518f39052e21d11611ac49162b3c140ae2a017a35015445463", [10, 25]),
    "state_machine": ("6dabc5e468cee54f9e117837b3930f981a35fb4e1b189136c7d5744bde6c34c1", [31, 46]),
}


@pytest.mark.parametrize("domain", DOMAINS)
def test_tiny_clip_bitstream_is_pinned(domain: str, tmp_path: Path) -> None:
    trace, video = render(GridPoint(domain, 2, 2.0, 0), TINY, tmp_path / "x.mp4", "x.mp4")
    sha, frames = GOLDEN[domain]
    assert [e.frame for e in trace.events] == frames
    assert video.n_frames == 90
    assert video.sha256 == sha, (
        f"the {domain} bitstream changed: rendered datasets would no longer match their manifests' sha256 (see GOLDEN)"
    )


def _detections(domain: str, frames) -> list[tuple]:
    found = detect_events(domain, ((i, i / 30.0, f) for i, f in enumerate(frames)))
    return [(d.position, d.frame, d.t, d.label) for d in found]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    domain=st.sampled_from(DOMAINS), n=st.sampled_from(COUNTS), f=st.sampled_from(FREQUENCIES), seed=st.integers(0, 99)
)
def test_reused_frames_give_the_detections_of_every_frame(
    tmp_path: Path, domain: str, n: int, f: float, seed: int
) -> None:
    """Any paper grid point at the paper's size and length: iter_frames_reused yields every frame's exact
    pixels, repeats as one read-only object, and the detector's verdict equals the all-frames verdict
    (every frame converted into its own writable array, so each one is analysed: the old path)."""
    point = GridPoint(domain, n, 1.0 if n == 0 else f, seed)
    try:
        trace, video = render(point, RenderSettings(), tmp_path / "v.mp4", "v.mp4")
    except ConfigError:  # N events at F that do not fit in 24 s are not in the grid either
        return
    path = tmp_path / "v.mp4"
    repeats = []

    def every_frame_checked():
        prev = None
        for a, b in zip(
            iter_frames(path, half=True, threaded=False),
            iter_frames_reused(path, half=True, threaded=False),
            strict=True,
        ):
            assert np.array_equal(a, b) and a.flags.writeable and not b.flags.writeable
            repeats.append(b is prev)
            prev = b
            yield a

    want = _detections(domain, every_frame_checked())
    assert len(repeats) == video.n_frames and any(repeats)
    assert _detections(domain, iter_frames_reused(path, half=True, threaded=False)) == want
    true = [e.frame for e in trace.events]
    assert len(want) == len(true) and all(abs(d[1] - t) <= 1 for d, t in zip(want, true))


def test_a_writable_buffer_refilled_in_place_is_analysed_again() -> None:
    """Only a read-only array supplied twice is known unchanged: a caller may refill one writable buffer."""
    scene = make_scene(GridPoint("bounce_ball", 2, 2.0, 0), TINY)
    clip = [f for f, r in scene.frame_runs() for _ in range(r)]
    want = _detections("bounce_ball", [f.copy() for f in clip])
    assert len(want) == 2
    buf = clip[0].copy()

    def refilled():
        for f in clip:
            buf[:] = f
            yield buf

    assert _detections("bounce_ball", refilled()) == want
    still = clip[0].copy()
    still.flags.writeable = False
    assert _detections("bounce_ball", [still] * len(clip)) == []


def _tamper(src: Path, dst: Path, fps: float, edit) -> None:
    frames = [f.copy() for f in iter_frames(src)]
    edit(frames)
    h, w = frames[0].shape[:2]
    write_video(dst, frames, fps, w, h)


@pytest.mark.parametrize("domain", DOMAINS)
def test_verification_fails_on_tampered_pixels(domain: str, tmp_path: Path) -> None:
    """Remove the second event from the pixels (the trace untouched): verification names the mismatch."""
    s = RenderSettings(duration_s=6.0)
    trace, video = render(GridPoint(domain, 3, 1.0, 5), s, tmp_path / "ok.mp4", "ok.mp4")
    assert check_video(domain, tmp_path / "ok.mp4", trace, video.fps) == []
    a, b, c = (e.frame for e in trace.events)

    def edit(frames: list[np.ndarray]) -> None:
        if domain == "blinking":  # the second pulse shows the OFF frame
            for j in range(b, c):
                frames[j] = frames[0]
        elif domain == "state_machine":  # the highlight stays where it was, so event 2 merges into event 3
            for j in range(b, c):
                frames[j] = frames[b - 1]
        else:  # the ball stops short of its second wall and stays there
            for j in range(b - 3, len(frames)):
                frames[j] = frames[b - 4]

    _tamper(tmp_path / "ok.mp4", tmp_path / "again.mp4", video.fps, lambda frames: None)
    assert check_video(domain, tmp_path / "again.mp4", trace, video.fps) == []  # re-encoding alone passes
    _tamper(tmp_path / "ok.mp4", tmp_path / "bad.mp4", video.fps, edit)
    problems = check_video(domain, tmp_path / "bad.mp4", trace, video.fps)
    assert problems and "detector found" in problems[0], problems
