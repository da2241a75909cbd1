"""A request's content as a provider receives it: the one walk over ``Request.parts`` that every API adapter
shares (not to be confused with ``run.request_builder.RequestBuilder``, which makes the ``Request`` from a planned trial).

Adapters differ only in how a text, an image or a video becomes a provider part, so each supplies a
small ``PartEncoder`` and this module does the rest: parts in order (timestamp lines are already
TextParts and go as they are), frames JPEG-encoded once with OpenCV, limits checked before any byte
leaves the machine, and the wall time of the call measured the same way for all.
"""

from __future__ import annotations

import base64
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

import cv2
import numpy as np

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.types import ErrorKind, ImagePart, Request, TextPart, VideoPart
from vidaudit.models.base import Capabilities, ModelCallError, native_fps_problem

DEFAULT_JPEG_QUALITY = 90

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class PartEncoder(Protocol[T_co]):
    """How one provider spells each kind of part."""

    def text(self, text: str) -> T_co: ...

    def image(self, jpeg: bytes, part: ImagePart) -> T_co: ...

    def video(self, part: VideoPart) -> T_co: ...


@dataclass(frozen=True)
class BuiltContent(Generic[T]):
    """Provider parts in request order, and what they weigh (for the request-size limit)."""

    parts: list[T]
    n_images: int
    n_videos: int
    image_bytes: int
    text_chars: int


def check_jpeg_quality(quality: int) -> int:
    if not isinstance(quality, int) or not 1 <= quality <= 100:
        raise ConfigError(f"jpeg_quality must be an integer in 1..100, got {quality!r}")
    return quality


def encode_jpeg(image: np.ndarray, quality: int = DEFAULT_JPEG_QUALITY) -> bytes:
    """An RGB uint8 frame (H, W, 3) as JPEG bytes; OpenCV expects BGR, so channels are swapped first."""
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        shape = getattr(image, "shape", None)
        dtype = getattr(image, "dtype", type(image).__name__)
        raise DataError(
            f"an ImagePart must hold an (H, W, 3) uint8 RGB array, got shape {shape} dtype {dtype}; "
            "decode frames with vidaudit.video.decode.read_frames"
        )
    quality = check_jpeg_quality(quality)
    cacheable = not image.flags.writeable  # frames from FrameCache are read-only: same object, same bytes
    if cacheable and (hit := _JPEG_MEMO.get(id(image), quality)) is not None:
        return hit
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [int(cv2.IMWRITE_JPEG_QUALITY), quality])
    if not ok:
        raise DataError(f"OpenCV could not JPEG-encode a frame of shape {image.shape}")
    data = buf.tobytes()
    if cacheable:
        _JPEG_MEMO.put(image, quality, data)
    return data


class _JpegMemo:
    """JPEG bytes of read-only frames, keyed by the frame object (dropped when the frame dies) and
    bounded in bytes: a warm frames@16 trial then costs milliseconds instead of 384 encodes."""

    def __init__(self, max_bytes: int = 256 << 20) -> None:
        self.max_bytes = max_bytes
        self._data: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: int, quality: int) -> bytes | None:
        with self._lock:
            data = self._data.get((key, quality))
            if data is not None:
                self._data.move_to_end((key, quality))
            return data

    def put(self, image: np.ndarray, quality: int, data: bytes) -> None:
        key = (id(image), quality)
        with self._lock:
            if key in self._data:
                return
            self._data[key] = data
            self._bytes += len(data)
            while self._bytes > self.max_bytes:
                _, old = self._data.popitem(last=False)
                self._bytes -= len(old)
        weakref.finalize(image, self._drop, key)

    def _drop(self, key: tuple[int, int]) -> None:
        with self._lock:
            data = self._data.pop(key, None)
            if data is not None:
                self._bytes -= len(data)


_JPEG_MEMO = _JpegMemo()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{b64(data)}"


def video_path(part: VideoPart) -> Path:
    p = Path(part.path)
    if not p.is_file():
        raise DataError(f"video not found: {p}; render the dataset again or fix the manifest's video.path")
    return p


def read_video_bytes(part: VideoPart) -> bytes:
    return video_path(part).read_bytes()


def video_sha256(part: VideoPart) -> str:
    """The content hash that keys upload caches: the manifest's when given, else computed from the file."""
    return part.sha256 or sha256_file(video_path(part))


def check_request(request: Request, caps: Capabilities, provider: str) -> None:
    """Refuse, before any upload or call, what this adapter cannot serve (UNSUPPORTED) or an empty request."""
    if not request.parts:
        raise ModelCallError(
            ErrorKind.BAD_REQUEST, f"{provider}: the request has no parts; a trial must send at least its question text"
        )
    n_videos = sum(isinstance(p, VideoPart) for p in request.parts)
    if n_videos and not caps.native_video:
        raise ModelCallError(
            ErrorKind.UNSUPPORTED,
            f"{provider} takes no native video input here; use a frames@K or keyframes condition for this model",
        )
    n_images = sum(isinstance(p, ImagePart) for p in request.parts)
    if caps.max_images is not None and n_images > caps.max_images:
        raise ModelCallError(
            ErrorKind.UNSUPPORTED,
            f"{provider}: {n_images} images exceed the limit of "
            f"{caps.max_images} per request; lower the condition's fps or use keyframes",
        )
    if n_images and not caps.images:
        raise ModelCallError(ErrorKind.UNSUPPORTED, f"{provider} takes no image input")


def check_native_fps(request: Request, caps: Capabilities, provider: str) -> None:
    """Refuse (UNSUPPORTED), before any upload, a video sampled faster than the backend accepts."""
    for p in request.videos:
        problem = native_fps_problem(caps, p.fps, provider)
        if problem is not None:
            raise ModelCallError(ErrorKind.UNSUPPORTED, problem)


def check_size(n_bytes: int, caps: Capabilities, provider: str) -> None:
    if caps.max_request_bytes is not None and n_bytes > caps.max_request_bytes:
        raise ModelCallError(
            ErrorKind.UNSUPPORTED,
            f"{provider}: the request would be about {n_bytes / 1e6:.1f} MB, "
            f"over the limit of {caps.max_request_bytes / 1e6:.1f} MB; lower the fps, the frame "
            "size or jpeg_quality",
        )


def build_content(
    request: Request, encoder: PartEncoder[T], *, jpeg_quality: int = DEFAULT_JPEG_QUALITY
) -> BuiltContent[T]:
    """Encode every part in order; no part is dropped, merged or reordered."""
    out: list[T] = []
    n_images = n_videos = image_bytes = text_chars = 0
    for part in request.parts:
        if isinstance(part, TextPart):
            out.append(encoder.text(part.text))
            text_chars += len(part.text)
        elif isinstance(part, ImagePart):
            jpeg = encode_jpeg(part.image, jpeg_quality)
            out.append(encoder.image(jpeg, part))
            n_images += 1
            image_bytes += len(jpeg)
        elif isinstance(part, VideoPart):
            out.append(encoder.video(part))
            n_videos += 1
        else:
            raise DataError(f"unknown request part {type(part).__name__}; expected TextPart, ImagePart or VideoPart")
    return BuiltContent(out, n_images, n_videos, image_bytes, text_chars)


def base64_size(n_bytes: int) -> int:
    return 4 * ((n_bytes + 2) // 3)


@dataclass
class Stopwatch:
    """Wall time around the provider call only (not request building), in seconds."""

    seconds: float = 0.0

    @contextmanager
    def running(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds = time.perf_counter() - start


def resolve_api_key(env_names: tuple[str, ...], *, provider: str, required: bool, placeholder: str = "EMPTY") -> str:
    """The first non-empty key among ``env_names``; a ConfigError naming them when a hosted API needs one.

    The value is returned to be handed straight to the SDK client; callers must not store it on the adapter.
    """
    for name in env_names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    if required:
        names = " or ".join(env_names)
        raise ConfigError(
            f"{provider} needs an API key: set the environment variable {names} "
            "(or pass api_key_env=NAME to read another variable)"
        )
    return placeholder
