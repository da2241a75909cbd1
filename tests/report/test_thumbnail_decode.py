"""The report's thumbnail decode: on the calling thread (the same frames as the decoder's threads give, for ~30%
less CPU) and scaled from the I420 planes before conversion (what a full-frame conversion then INTER_AREA
would give, within rounding at sharp colour edges), on real H.264 files written with PyAV."""

from __future__ import annotations

import base64
from pathlib import Path

import cv2
import numpy as np
import pytest

from vidaudit.report.viewer import thumbnail_jpeg_b64
from vidaudit.video.decode import iter_selected
from vidaudit.video.display import to_rgb_width
from vidaudit.video.encode import write_video


def _clip(path: Path, w: int, h: int, n: int = 90) -> Path:
    frames = []
    for i in range(n):  # each frame distinct: a coloured bar that moves, and the index in the background
        f = np.full((h, w, 3), (20 + i, 60, 200 - i), np.uint8)
        f[:, (i * 3) % (w - 8) : (i * 3) % (w - 8) + 8] = (240, 200, 30)
        frames.append(f)
    write_video(path, frames, fps=30.0, width=w, height=h)
    return path


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _clip(tmp_path_factory.mktemp("clip") / "clip.mp4", 320, 180)


def test_single_threaded_decoding_gives_the_same_frames(clip: Path) -> None:
    want = [0, 1, 29, 30, 31, 59, 60, 89]
    threaded = dict(iter_selected(clip, want))
    single = dict(iter_selected(clip, want, threaded=False))
    assert sorted(single) == want
    for i in want:
        assert np.array_equal(single[i], threaded[i]), i
    assert not np.array_equal(single[0], single[1])  # distinct frames, so an off-by-one would show


def test_thumbnails_scaled_from_the_planes_match_the_full_frame_path(clip: Path) -> None:
    want = [0, 31, 89]
    full = dict(iter_selected(clip, want))
    small = dict(iter_selected(clip, want, threaded=False, width=160))
    for i in want:
        assert small[i].shape == (90, 160, 3)
        # what the viewer shows: the JPEG (4:2:0, so its colour is at half resolution either way)
        a, b = (
            cv2.imdecode(np.frombuffer(base64.b64decode(thumbnail_jpeg_b64(x)), np.uint8), cv2.IMREAD_COLOR)
            for x in (small[i], full[i])
        )
        diff = np.abs(a.astype(int) - b.astype(int))
        assert a.shape == b.shape and diff.mean() < 2.0 and np.percentile(diff, 95) <= 12, (i, diff.mean())


@pytest.mark.parametrize("w,h,width", [(322, 180, 160), (320, 180, 320), (320, 180, 161), (96, 64, 200)])
def test_sizes_the_planes_cannot_give_come_back_whole(tmp_path: Path, w: int, h: int, width: int) -> None:
    """Odd target sizes, no shrink: the whole frame, for thumbnail_jpeg_b64 to scale as before."""
    path = _clip(tmp_path / "c.mp4", w, h, n=3)
    got = dict(iter_selected(path, [1], width=width))[1]
    whole = dict(iter_selected(path, [1]))[1]
    expect_small = width < w and width % 2 == 0 and round(h * width / w) % 2 == 0 and w % 2 == 0
    assert got.shape == ((round(h * width / w), width, 3) if expect_small else whole.shape)
    if not expect_small:
        assert np.array_equal(got, whole)


def test_to_rgb_width_on_a_decoded_frame(clip: Path) -> None:
    import av

    with av.open(str(clip)) as c:
        frame = next(c.decode(c.streams.video[0]))
        assert to_rgb_width(frame, 80).shape == (180, 320, 3)  # 45 rows: odd, so the whole frame
        assert to_rgb_width(frame, 64).shape == (36, 64, 3)
