"""A user's ``--source`` folder for the camera_motion probe: the stills its images and clips give.

A clip gives the frame a player shows at ``frame_s`` (default: its middle), read by the stress sources' one
reader (``suites/stress/sources.frame_on_screen``: upright, on the presentation clock). Every file of the folder
is an image (by suffix), a clip (any file FFmpeg plays) or named with the reason it is left out
(``sources.list_clips``); an image or clip that cannot be used (unreadable, too small, no frame at ``frame_s``)
is left out with its reason too, never the end of the folder (``SourceLog``, in dataset.json).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from vidaudit.sdk import ConfigError, DataError
from vidaudit.suites.stress.sources import SourceLog, frame_on_screen, is_clip, list_clips, reason_of

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff")
KINDS = f"still images ({', '.join(IMAGE_SUFFIXES)}) or clips (any video FFmpeg plays)"


def source_images(folder: Path, log: SourceLog | None = None) -> list[Path]:
    """The images and clips of a user's ``--source`` folder, by name (anything else named in ``log`` with its
    reason); an error for a missing folder or one with neither."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"--source {folder} is not a folder; camera_motion reads a folder of {KINDS}")
    log = log if log is not None else SourceLog()
    try:
        return list_clips(folder, log, images=True, companions=())
    except DataError:
        raise DataError(
            f"--source {folder} holds no images or clips"
            + (f" ({log.reasons()})" if log.skipped else "")
            + f"; add {KINDS}"
        ) from None


def usable_sources(
    paths: list[Path], width: int, height: int, frame_s: float | None, log: SourceLog
) -> list[tuple[Path, np.ndarray, dict[str, Any]]]:
    """Each image or clip's still (``read_source``); one that cannot give one is named in ``log`` with its reason
    and left out. A DataError with the reasons when none can."""
    out = []
    for p in paths:
        try:
            img, params = read_source(p, width, height, frame_s)
        except DataError as e:
            log.skip(p.name, reason_of(e, p))
            continue
        out.append((p, img, params))
    if not out:
        raise DataError(
            f"--source {paths[0].parent}: no image or clip gives a {width}x{height} still "
            f"({log.reasons()}); fix them, or pass a smaller --set size=WxH"
        )
    return out


def read_source(path: Path, width: int, height: int, frame_s: float | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """A user's image, or a clip's frame on the player's clock (``sources.frame_on_screen``), fitted to the frame
    (``fit_image``), and the params that say where it came from."""
    if is_clip(path):
        still = frame_on_screen(path, frame_s)
        return fit_image(still.image, width, height, path), {
            "source_clip": path.name,
            "source_frame_s": round(still.t_s, 6),
            "source_frame": still.frame,
        }
    return fit_still(path, width, height), {"source_image": path.name}


def fit_still(path: Path, width: int, height: int) -> np.ndarray:
    """A user's image file as an RGB ``height x width`` still (``fit_image``)."""
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None:
        raise DataError(f"{path}: cannot be read as an image (corrupt, or not a format OpenCV reads); fix or remove it")
    return fit_image(cv2.cvtColor(img, cv2.COLOR_BGR2RGB), width, height, path)


def fit_image(img: np.ndarray, width: int, height: int, path: Path) -> np.ndarray:
    """An RGB image as a ``height x width`` still: the centred crop of the frame's aspect, reduced to the frame
    (never enlarged: an image smaller than the frame is refused, naming the size needed)."""
    h, w = img.shape[:2]
    if w < width or h < height:
        raise DataError(
            f"{path}: {w}x{h} is too small for a {width}x{height} camera move (it would be enlarged "
            f"and blurred); use an image of at least {width}x{height}, or a smaller --set size=WxH"
        )
    scale = max(width / w, height / h)
    cw, ch = min(w, int(math.ceil(width / scale))), min(h, int(math.ceil(height / scale)))
    x0, y0 = (w - cw) // 2, (h - ch) // 2
    crop = img[y0 : y0 + ch, x0 : x0 + cw]
    return cv2.resize(np.ascontiguousarray(crop), (width, height), interpolation=cv2.INTER_AREA)
