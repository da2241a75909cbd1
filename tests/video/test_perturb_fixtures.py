"""Tiny videos whose frames say who they are, shared by the test_perturb* files (and a check of them).

Frame ``i`` of a test video has its left half at the uniform grey ``20 + 6 i`` (robust to H.264 at qp 18:
the decoded mean is within about 1 of it), and a right half that tells the two test videos apart: a
moving grey texture in the source, a blue field in the "second" video.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from vidaudit.video.decode import iter_frames
from vidaudit.video.encode import VideoWriter

W, H = 64, 48
MAX_ID = 37


def frame_pixels(i: int, w: int = W, h: int = H, second: bool = False) -> np.ndarray:
    img = np.empty((h, w, 3), np.uint8)
    img[:, : w // 2] = 20 + 6 * i
    if second:
        img[:, w // 2 :] = (30, 60, 220)
    else:
        x = np.arange(w - w // 2)
        y = np.arange(h)[:, None]
        tex = (96 + 60 * np.sin((x[None, :] + 2 * i) / 3.0) * np.cos(y / 4.0)).astype(np.uint8)
        img[:, w // 2 :] = tex[..., None]
    return img


def make_video(path: Path, n: int = 24, fps: float = 12.0, w: int = W, h: int = H, second: bool = False) -> Path:
    assert n <= MAX_ID + 1
    with VideoWriter(path, fps, w, h) as vw:
        for i in range(n):
            vw.write(frame_pixels(i, w, h, second))
    return path


def frame_id(frame: np.ndarray) -> int:
    h, w = frame.shape[:2]
    level = float(frame[h // 4 : 3 * h // 4, w // 8 : 3 * w // 8].mean())
    return int(round((level - 20) / 6))


def is_second(frame: np.ndarray) -> bool:
    h, w = frame.shape[:2]
    right = frame[:, w // 2 + 2 :].reshape(-1, 3).mean(axis=0)
    return bool(right[2] > right[0] + 80)


def decoded_ids(path: Path) -> list[int]:
    return [frame_id(f) for f in iter_frames(path)]


def make_dot_still(path: Path, w: int = 96, h: int = 64, centre: tuple[int, int] = (30, 20)) -> Path:
    """A dark still with one bright dot (for the camera direction tests)."""
    img = np.full((h, w, 3), 16, np.uint8)
    cv2.circle(img, centre, 3, (250, 250, 250), -1)
    cv2.imwrite(str(path), img)
    return path


def bright_centroid(frame: np.ndarray) -> tuple[float, float]:
    m = frame.mean(axis=2) > 128
    ys, xs = np.nonzero(m)
    assert len(xs), "no bright pixel"
    return float(xs.mean()), float(ys.mean())


def test_frame_ids_survive_the_codec(tmp_path: Path) -> None:
    src = make_video(tmp_path / "a.mp4", n=MAX_ID + 1)
    assert decoded_ids(src) == list(range(MAX_ID + 1))
    sec = make_video(tmp_path / "b.mp4", n=4, second=True)
    assert [is_second(f) for f in iter_frames(sec)] == [True] * 4
    assert not any(is_second(f) for f in iter_frames(src))


def info(n: int = 720, fps: float = 30.0, w: int = 854, h: int = 480, still: bool = False):
    """Facts of a source that exists only on paper (for plan-level tests: no file is read)."""
    from vidaudit.video.perturb.base import SourceInfo

    return SourceInfo(
        path=Path("paper.png" if still else "paper.mp4"),
        sha256="0" * 64,
        width=w,
        height=h,
        n_frames=1 if still else n,
        fps=None if still else fps,
        still=still,
    )
