"""A decoded picture as a player displays it: upright (a display matrix's rotation applied the way ffmpeg's
autorotate applies it) and with square pixels (``streams.displayed_size``), as RGB at full or half resolution or
about a given width (thumbnails); the same half-size RGB from an I420 buffer handed to the encoder.
"""

from __future__ import annotations

import math
from fractions import Fraction

import av
import cv2
import numpy as np

from vidaudit.video.streams import displayed_size


def normalise_rotation(degrees: float | None) -> int:
    """A display rotation as 0, 90, 180 or 270 (counter-clockwise); odd angles go to the nearest quarter."""
    if degrees is None or not math.isfinite(degrees):
        return 0
    return int(round(degrees / 90.0)) % 4 * 90


def upright(rgb: np.ndarray, rotation: int) -> np.ndarray:
    """The stored picture turned the way a player shows it (``rotation`` counter-clockwise)."""
    k = (rotation // 90) % 4
    return rgb if k == 0 else np.ascontiguousarray(np.rot90(rgb, k))


def square(rgb: np.ndarray, sar: Fraction) -> np.ndarray:
    """The stored picture with square pixels (``streams.displayed_size``: ffmpeg's ``scale=iw*sar:ih``, bicubic
    when it widens, area-averaged when it narrows)."""
    if sar == 1:
        return rgb
    h, w = rgb.shape[:2]
    dw, dh = displayed_size(w, h, sar)
    return cv2.resize(rgb, (dw, dh), interpolation=cv2.INTER_CUBIC if dw > w else cv2.INTER_AREA)


def _rotation(frame: av.VideoFrame) -> int:
    return normalise_rotation(frame.rotation)


def to_rgb(frame: av.VideoFrame, sar: Fraction = Fraction(1)) -> np.ndarray:
    """Displayed RGB uint8 (square pixels, upright) through OpenCV's I420 conversion: the exact inverse of the
    encoder's, and fast."""
    if frame.format.name == "yuv420p" and frame.width % 2 == 0 and frame.height % 2 == 0:
        rgb = cv2.cvtColor(frame.to_ndarray(format="yuv420p"), cv2.COLOR_YUV2RGB_I420)
    else:
        rgb = frame.to_ndarray(format="rgb24")
    return upright(square(rgb, sar), _rotation(frame))


def to_rgb_half(frame: av.VideoFrame, sar: Fraction = Fraction(1)) -> np.ndarray:
    """Displayed RGB at half resolution straight from the planes (chroma is already half size): 4x less work."""
    if sar != 1:
        full = to_rgb(frame, sar)
        h, w = full.shape[:2]
        return cv2.resize(full, (w // 2, h // 2), interpolation=cv2.INTER_AREA)
    if frame.format.name != "yuv420p" or frame.width % 2 or frame.height % 2:
        full = frame.to_ndarray(format="rgb24")
        rgb = cv2.resize(full, (frame.width // 2, frame.height // 2), interpolation=cv2.INTER_AREA)
    else:
        rgb = i420_to_rgb_half(frame.to_ndarray(format="yuv420p"), frame.width, frame.height)
    return upright(rgb, _rotation(frame))


def i420_to_rgb_half(yuv: np.ndarray, width: int, height: int) -> np.ndarray:
    """RGB at half resolution from an I420 buffer ((H * 3 / 2, W) uint8, even W and H), as ``to_rgb_half`` reads a
    decoded frame: so an analysis of the frames handed to the encoder sees them as it would see them decoded."""
    h, w = height, width
    y = cv2.resize(yuv[:h], (w // 2, h // 2), interpolation=cv2.INTER_AREA)
    chroma = yuv[h:].reshape(2, h // 2, w // 2)
    return cv2.cvtColor(cv2.merge([y, chroma[0], chroma[1]]), cv2.COLOR_YUV2RGB)


def to_rgb_width(frame: av.VideoFrame, width: int, sar: Fraction = Fraction(1)) -> np.ndarray:
    """Displayed RGB about ``width`` pixels wide, for thumbnails: an upright square-pixel I420 frame is scaled plane by
    plane (INTER_AREA) and then converted, ~3x less work than converting every pixel first; where that cannot
    give exactly ``width`` x ``round(h * width / w)`` (another format, a rotation, non-square pixels, odd sizes,
    no shrink) the frame comes back whole from ``to_rgb``, for the caller to scale."""
    w, h = frame.width, frame.height
    height = max(1, round(h * width / w))
    if (
        frame.format.name != "yuv420p"
        or _rotation(frame)
        or sar != 1
        or width >= w
        or w % 2
        or h % 2
        or width % 2
        or height % 2
    ):
        return to_rgb(frame, sar)
    # the planes are scaled where the decoder left them (rows with their padding), not copied out first
    y, u, v = (
        np.frombuffer(memoryview(p), np.uint8, p.height * p.line_size).reshape(p.height, p.line_size)[:, : p.width]
        for p in frame.planes
    )
    small = [
        cv2.resize(y, (width, height), interpolation=cv2.INTER_AREA).ravel(),
        *(cv2.resize(c, (width // 2, height // 2), interpolation=cv2.INTER_AREA).ravel() for c in (u, v)),
    ]
    return cv2.cvtColor(np.concatenate(small).reshape(height * 3 // 2, width), cv2.COLOR_YUV2RGB_I420)
