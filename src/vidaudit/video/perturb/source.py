"""Reading a source: its facts, and its frames in any planned order without holding the clip.

:class:`PlannedReader` is given the whole request order up front (the op's map). It reads through the one
reader every path uses (``video.decode.Decoder``: frame ``i`` is the ``i``-th decoded picture, displayed, from
the stream a player picks): it decodes forward, seeks to the keyframe before a frame when that is cheaper than
decoding on, where the file's packets index its frames (elsewhere it goes back by decoding again from the
start), and keeps a decoded frame
only while it will be asked for again, evicting the frame whose next use is furthest away (Belady's
rule, optimal for a known order) when the byte budget is full. A reversal decodes each group of
pictures once and holds one of them; ``k`` repeats of a frame hold that frame alone.

Decoded frames are converted into recycled buffers (a frame handed out stays valid until the next one
is asked for, unless the reader keeps it): holding a group of pictures in fresh arrays cost about 1 s of
page faults per 720 frames at 854x480, 70% more CPU than the decode itself.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from pathlib import Path

import cv2
import numpy as np

from vidaudit.core.errors import DataError
from vidaudit.core.hashing import sha256_file
from vidaudit.video.decode import Decoder
from vidaudit.video.display import orientation
from vidaudit.video.perturb.base import SourceInfo
from vidaudit.video.probe import probe

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff"})

#: Decoded frames a reader may hold at once (at 854x480 RGB: about 200 frames).
DEFAULT_BUDGET_BYTES = 256 << 20


def is_still(path: str | Path) -> bool:
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def _even_crop(width: int, height: int) -> tuple[int, int, tuple[int, int]]:
    return width - width % 2, height - height % 2, (width % 2, height % 2)


def read_still(path: str | Path) -> np.ndarray:
    """An image file as RGB uint8, cropped to even width and height."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"image not found: {p}")
    img = cv2.imread(str(p), cv2.IMREAD_COLOR)
    if img is None:
        raise DataError(f"cannot decode {p} as an image; is it a PNG/JPEG file?")
    rgb = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    h, w = rgb.shape[:2]
    ew, eh, _ = _even_crop(w, h)
    if ew < 2 or eh < 2:
        raise DataError(f"{p} is {w}x{h}: too small to encode (need at least 2x2)")
    out = np.ascontiguousarray(rgb[:eh, :ew])
    out.setflags(write=False)
    return out


def open_source(path: str | Path, sha256: str | None = None, stream: int | None = None) -> SourceInfo:
    """Facts of a video (``probe``: its frames, clock and displayed size) or a still image; ``DataError`` if it
    does not decode. ``sha256`` is computed from the bytes unless given; ``stream``: the video stream to read
    (default: the one a player picks)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"source not found: {p}")
    digest = sha256 or sha256_file(p)
    if is_still(p):
        img = read_still(p)
        h, w = img.shape[:2]
        raw = cv2.imread(str(p), cv2.IMREAD_UNCHANGED)
        if raw is None:
            raise DataError(f"{p}: OpenCV cannot read this still; save it as PNG or JPEG")
        full = raw.shape
        return SourceInfo(
            path=p, sha256=digest, width=w, height=h, n_frames=1, fps=None, still=True, crop=(full[1] - w, full[0] - h)
        )
    info = probe(p, stream)  # a file that is not a usable video is a DataError naming it
    w, h, crop = _even_crop(info.width, info.height)
    if w < 2 or h < 2:
        raise DataError(f"{p} is {info.width}x{info.height}: too small to encode")
    shape: dict[str, object] = {}
    if info.video_streams > 1:
        shape["stream"] = info.stream
    if info.sar != 1:
        shape.update(sar=[info.sar.numerator, info.sar.denominator], stored_size=list(info.stored_size))
    return SourceInfo.of_video(
        p,
        digest,
        w,
        h,
        info.timeline,
        crop,
        stream=info.stream if stream is not None or info.video_streams > 1 else None,
        shape=shape,
    )


class PlannedReader:
    """Frames of one video in a known order (repeats and any permutation allowed), streaming."""

    def __init__(self, src: SourceInfo, order: Sequence[int], budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.src = src
        self.order = [int(i) for i in order]
        bad = [i for i in self.order if not 0 <= i < src.file_frames]
        if bad:
            raise AssertionError(f"frames {bad[:5]} outside 0..{src.file_frames - 1}")  # pragma: no cover
        frame_bytes = max(1, src.width * src.height * 3)
        self.capacity = max(2, budget_bytes // frame_bytes)
        self.decoded = 0  # frames decoded (a measure of the cost; tests read it)
        self.seeks = 0  # times the reader went back (a seek or a fresh start)
        self.peak_held = 0
        self.allocated = 0  # RGB buffers made (the rest are recycled)
        self._uses: dict[int, list[int]] = {}
        for pos, i in enumerate(self.order):
            self._uses.setdefault(i, []).append(pos)
        self._ptr: dict[int, int] = {i: 0 for i in self._uses}
        self._cache: dict[int, tuple[int, np.ndarray]] = {}
        self._heap: list[tuple[int, int]] = []  # (-next_use, frame): the furthest next use on top
        self._dec: Decoder | None = None
        self._pool: list[np.ndarray] = []  # free RGB buffers of the decoded size
        self._current: np.ndarray | None = None  # the frame handed out last (not free until the next step)
        self._owned: set[int] = set()  # ids of the buffers this reader made (only they are pooled)

    # ------------------------------------------------------------------ decoding

    def _next(self) -> tuple[int, np.ndarray]:
        assert self._dec is not None
        j, frame = self._dec.next()
        self.decoded += 1
        plain = self.src.crop == (0, 0) and self._dec.sar == 1 and orientation(frame) == (0, False)
        if frame.format.name == "yuv420p" and plain:
            if self._pool:
                rgb = self._pool.pop()
            else:
                rgb = np.empty((self.src.height, self.src.width, 3), np.uint8)
                self._owned.add(id(rgb))
                self.allocated += 1
            rgb.setflags(write=True)
            cv2.cvtColor(frame.to_ndarray(format="yuv420p"), cv2.COLOR_YUV2RGB_I420, dst=rgb)  # = io.to_rgb
        else:
            rgb = self._dec.rgb(frame)
            if self.src.crop != (0, 0):
                rgb = np.ascontiguousarray(rgb[: self.src.height, : self.src.width])
        rgb.setflags(write=False)
        return j, rgb

    def _release(self, arr: np.ndarray) -> None:
        """Back to the pool, if the fast path made it and nobody is handed it (fallback frames are dropped)."""
        if arr is not self._current and id(arr) in self._owned:
            self._pool.append(arr)

    # ------------------------------------------------------------------ the cache

    def _next_use(self, i: int, after: int) -> int | None:
        uses, k = self._uses.get(i), self._ptr.get(i, 0)
        if uses is None:
            return None
        while k < len(uses) and uses[k] <= after:
            k += 1
        self._ptr[i] = k
        return uses[k] if k < len(uses) else None

    def _keep(self, i: int, frame: np.ndarray, nxt: int) -> None:
        self._cache[i] = (nxt, frame)
        heapq.heappush(self._heap, (-nxt, i))
        while len(self._cache) > self.capacity:
            neg, j = heapq.heappop(self._heap)
            entry = self._cache.get(j)
            if entry is not None and entry[0] == -neg:
                del self._cache[j]
                self._release(entry[1])
        self.peak_held = max(self.peak_held, len(self._cache))
        if len(self._heap) > 4 * self.capacity + 64:  # drop stale entries now and then
            self._heap = [(-n, j) for j, (n, _) in self._cache.items()]
            heapq.heapify(self._heap)

    def _fetch(self, pos: int, i: int) -> np.ndarray:
        hit = self._cache.pop(i, None)
        if hit is not None:
            return hit[1]
        assert self._dec is not None
        self._dec.position_for(i)
        restarted = False
        while True:
            j, f = self._next()
            if j == i:
                return f
            if j > i:
                if restarted:  # pragma: no cover - numbering from the start reaches every frame
                    raise DataError(f"{self.src.path}: frame {i} cannot be decoded (got {j})")
                self._release(f)
                self._dec.position_for(0)  # a seek landed past the frame: start over from the top
                restarted = True
                continue
            nxt = self._next_use(j, pos) if j not in self._cache else None  # already held: keep that copy
            if nxt is not None:
                self._keep(j, f, nxt)
            else:
                self._release(f)

    def __iter__(self) -> Iterator[np.ndarray]:
        if not self.order:
            return
        self._dec = Decoder(self.src.path, self.src.stream)
        self._dec.index(self.src.file_frames)  # seeking (back, or over groups of pictures no frame is asked from)
        try:
            prev_i = -1
            for pos, i in enumerate(self.order):
                prev, self._current = self._current, None
                if prev is not None:  # the consumer is done with it: free unless kept
                    entry = self._cache.get(prev_i)
                    if entry is None or entry[1] is not prev:
                        self._release(prev)
                f = self._fetch(pos, i)
                self._current = f
                nxt = self._next_use(i, pos)
                if nxt is not None:
                    self._keep(i, f, nxt)
                prev_i = i
                yield f
        finally:
            self.close()

    def close(self) -> None:
        if self._dec is not None:
            self.seeks += self._dec.seeks
            self._dec.close()
            self._dec = None
        self._cache.clear()
        self._heap.clear()
        self._pool.clear()
        self._owned.clear()
        self._current = None


def iter_source(
    src: SourceInfo, order: Sequence[int], budget_bytes: int = DEFAULT_BUDGET_BYTES
) -> Iterator[np.ndarray]:
    """Frames of ``src`` in ``order``: a still yields its image for every request."""
    if src.still:
        img = read_still(src.path)
        for i in order:
            if i != 0:
                raise AssertionError(f"a still has only frame 0, asked for {i}")  # pragma: no cover
            yield img
        return
    yield from PlannedReader(src, order, budget_bytes)
