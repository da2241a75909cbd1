"""``VideoWriter.write(box=)``: a frame given as the one before it with an even-aligned box changed is converted in
the box only, and the I420 handed to the encoder, so the file, is the whole frame's conversion byte for byte."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.hashing import sha256_file
from vidaudit.video.decode import iter_frames_reused
from vidaudit.video.encode import VideoWriter, _convert_box

sizes = st.tuples(st.integers(1, 24).map(lambda k: 2 * k), st.integers(1, 20).map(lambda k: 2 * k))


@settings(max_examples=200, deadline=None)
@given(size=sizes, seed=st.integers(0, 2**32 - 1), data=st.data())
def test_a_box_converted_alone_is_the_whole_frames_conversion(
    size: tuple[int, int], seed: int, data: st.DataObject
) -> None:
    w, h = size
    rng = np.random.default_rng(seed)
    before = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    x0 = 2 * data.draw(st.integers(0, w // 2 - 1))
    y0 = 2 * data.draw(st.integers(0, h // 2 - 1))
    x1 = 2 * data.draw(st.integers(x0 // 2 + 1, w // 2))
    y1 = 2 * data.draw(st.integers(y0 // 2 + 1, h // 2))
    now = before.copy()
    now[y0:y1, x0:x1] = rng.integers(0, 256, (y1 - y0, x1 - x0, 3), dtype=np.uint8)
    yuv = cv2.cvtColor(before, cv2.COLOR_RGB2YUV_I420)
    _convert_box(now, yuv, (x0, y0, x1, y1), w, h)
    assert np.array_equal(yuv, cv2.cvtColor(now, cv2.COLOR_RGB2YUV_I420))


def _frames(w: int, h: int, n: int) -> list[tuple[np.ndarray, int, tuple[int, int, int, int] | None]]:
    """A disc moving over a textured background: each frame the one before with the disc's old and new box redrawn;
    some boxes odd-aligned (converted whole), some runs repeated."""
    rng = np.random.default_rng(7)
    base = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    out, prev_box = [], None
    for i in range(n):
        frame = base.copy()
        cx, cy = 20 + 5 * i, 30 + 3 * i
        cv2.circle(frame, (cx, cy), 9, (250, 40, 30), -1, cv2.LINE_AA)
        box = (cx - 12, cy - 12, cx + 12, cy + 12)
        if prev_box is not None and i % 5 != 3:
            union = (
                min(box[0], prev_box[0]),
                min(box[1], prev_box[1]),
                max(box[2], prev_box[2]),
                max(box[3], prev_box[3]),
            )
            if i % 7 == 0:  # odd-aligned: converted whole
                union = (union[0] | 1, union[1], union[2], union[3])
            else:
                union = (
                    union[0] - union[0] % 2,
                    union[1] - union[1] % 2,
                    union[2] + union[2] % 2,
                    union[3] + union[3] % 2,
                )
            out.append((frame, 1 + i % 3, union))
        else:
            out.append((frame, 1 + i % 3, None))
        prev_box = box
    return out


def test_a_writer_given_boxes_writes_the_file_it_writes_without(tmp_path: Path) -> None:
    w, h = 160, 120
    frames = _frames(w, h, 20)
    for threaded in (True, False):
        with VideoWriter(tmp_path / "whole.mp4", 30.0, w, h, threaded=threaded) as a:
            for f, r, _ in frames:
                a.write(f, r)
        with VideoWriter(tmp_path / "boxed.mp4", 30.0, w, h, threaded=threaded) as b:
            for f, r, box in frames:
                b.write(f, r, box)
        assert sha256_file(tmp_path / "whole.mp4") == sha256_file(tmp_path / "boxed.mp4")
    decoded = list(iter_frames_reused(tmp_path / "boxed.mp4"))
    assert len(decoded) == sum(r for _, r, _ in frames)
