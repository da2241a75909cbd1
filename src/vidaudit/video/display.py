"""A decoded picture as a player displays it: upright (a display matrix's rotation and mirroring applied the way
ffmpeg's autorotate applies them: ``orientation``) and with square pixels (``streams.displayed_size``), as RGB at
full or half resolution or about a given width (thumbnails); the same half-size RGB from an I420 buffer handed to
the encoder.
"""

from __future__ import annotations

import math
from fractions import Fraction

import av
import cv2
import numpy as np
from av.sidedata.sidedata import SideData

from vidaudit.video.streams import displayed_size


def normalise_rotation(degrees: float | None) -> int:
    """A display rotation as 0, 90, 180 or 270 (counter-clockwise); odd angles go to the nearest quarter."""
    if degrees is None or not math.isfinite(degrees):
        return 0
    return int(round(degrees / 90.0)) % 4 * 90


def upright(rgb: np.ndarray, rotation: int, mirrored: bool = False) -> np.ndarray:
    """The stored picture turned the way a player shows it: mirrored left to right if ``mirrored``, then turned
    ``rotation`` degrees counter-clockwise."""
    k = (rotation // 90) % 4
    if mirrored:
        rgb = rgb[:, ::-1]
    return rgb if k == 0 and not mirrored else np.ascontiguousarray(np.rot90(rgb, k))


def orientation(frame: av.VideoFrame) -> tuple[int, bool]:
    """(degrees counter-clockwise, mirrored) for ``upright``: what ffmpeg's autorotate does with the frame's display
    matrix (``ffmpeg_filter.c``: a ``transpose`` for a quarter turn, ``hflip``/``vflip`` for a half turn, a ``vflip``
    when unturned, as the matrix's signs say), so a mirrored front-camera clip is shown mirrored, not turned; a
    matrix that turns by another angle goes to the nearest quarter, unmirrored."""
    degrees = getattr(frame, "rotation", 0)
    sd = frame.side_data.get("DISPLAYMATRIX") if degrees is not None and math.isfinite(degrees) else None
    if not isinstance(sd, SideData):
        return normalise_rotation(degrees), False
    m = np.frombuffer(bytes(sd), np.int32)  # the 3x3 matrix, row by row, in the host's byte order
    theta = -round(degrees)  # ffmpeg's get_rotation: clockwise, in [-0.9, 359.1)
    theta -= 360 * math.floor(theta / 360 + 0.9 / 360)
    if abs(theta - 90) < 1:
        return (90, True) if m[3] > 0 else (270, False)  # transpose=cclock_flip, else clock
    if abs(theta - 270) < 1:
        return (270, True) if m[3] < 0 else (90, False)  # transpose=clock_flip, else cclock
    if abs(theta - 180) < 1:  # hflip if m[0] < 0, then vflip if m[4] < 0 (both: a half turn)
        hflip, vflip = bool(m[0] < 0), bool(m[4] < 0)
        return (180 if vflip else 0), hflip != vflip
    if abs(theta) < 1:
        return (180, True) if m[4] < 0 else (0, False)  # vflip
    return normalise_rotation(degrees), False


def square(rgb: np.ndarray, sar: Fraction) -> np.ndarray:
    """The stored picture with square pixels (``streams.displayed_size``: ffmpeg's ``scale=iw*sar:ih``, bicubic
    when it widens, area-averaged when it narrows)."""
    if sar == 1:
        return rgb
    h, w = rgb.shape[:2]
    dw, dh = displayed_size(w, h, sar)
    return cv2.resize(rgb, (dw, dh), interpolation=cv2.INTER_CUBIC if dw > w else cv2.INTER_AREA)


#: the colour matrices OpenCV's I420 conversion applies (BT.601), as FFmpeg numbers them (``AVColorSpace``):
#: BT.470BG, SMPTE 170M, and unspecified (FFmpeg's swscale, and so ffmpeg the player, takes BT.601 then too)
BT601_MATRICES = frozenset({2, 5, 6})
#: the ranges it assumes: limited (MPEG), or unspecified (read as limited, as swscale reads it)
LIMITED_RANGES = frozenset({0, 1})


def opencv_converts(frame: av.VideoFrame) -> bool:
    """Whether OpenCV's fast I420 -> RGB conversion gives this frame's colours as ffmpeg shows them: an even-sized
    yuv420p frame in BT.601 and limited range. A BT.709 frame (HD phones, YouTube) read through it came out
    about 11 levels off in red and green; full range (HEVC, VP9) with its contrast squeezed. Those go through
    swscale with the frame's own matrix and range (``to_ndarray``), as ffmpeg converts them."""
    return (
        frame.format.name == "yuv420p"
        and frame.width % 2 == 0
        and frame.height % 2 == 0
        and frame.colorspace in BT601_MATRICES
        and frame.color_range in LIMITED_RANGES
    )


def to_rgb(frame: av.VideoFrame, sar: Fraction = Fraction(1)) -> np.ndarray:
    """Displayed RGB uint8 (square pixels, upright), through OpenCV's I420 conversion where it is the one ffmpeg
    applies (``opencv_converts``: the exact inverse of the encoder's, and fast), else through swscale with the
    frame's own colour matrix and range."""
    if opencv_converts(frame):
        rgb = cv2.cvtColor(frame.to_ndarray(format="yuv420p"), cv2.COLOR_YUV2RGB_I420)
    else:
        rgb = frame.to_ndarray(format="rgb24")
    return upright(square(rgb, sar), *orientation(frame))


def to_rgb_half(frame: av.VideoFrame, sar: Fraction = Fraction(1)) -> np.ndarray:
    """RGB at half resolution straight from the planes (chroma is already half size): 4x less work. For analysis
    only (observers, the counting detector, camera measures): a BT.601 frame's colours come from OpenCV's YUV
    conversion, which does not expand the limited range, the same for frames drawn (``i420_to_rgb_half``) and
    decoded; frames sent to a model or written come from ``to_rgb``."""
    if sar != 1:
        full = to_rgb(frame, sar)
        h, w = full.shape[:2]
        return cv2.resize(full, (w // 2, h // 2), interpolation=cv2.INTER_AREA)
    if not opencv_converts(frame):
        full = frame.to_ndarray(format="rgb24")
        rgb = cv2.resize(full, (frame.width // 2, frame.height // 2), interpolation=cv2.INTER_AREA)
    else:
        rgb = i420_to_rgb_half(frame.to_ndarray(format="yuv420p"), frame.width, frame.height)
    return upright(rgb, *orientation(frame))


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
        not opencv_converts(frame)
        or orientation(frame) != (0, False)
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
