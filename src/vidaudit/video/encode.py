"""H.264 encode with PyAV, and proof of what was written.

``VideoWriter`` converts RGB to I420 with OpenCV into a reused buffer and hands frames to the encoder in a worker
thread, so that drawing the next frame overlaps encoding the last (libx264 dominates the cost); a run of identical
frames is converted once and encoded from one buffer, through the PyAV frame that wraps that buffer (made once per
buffer, not per frame: wrapping costs ~11 us, 8 ms a 720-frame clip). The x264 settings (``X264_OPTIONS``) are
part of a rendered dataset's identity. ``NalDigest`` / ``stored_nal_digest`` compare what the encoder emitted with
what the file stores, NAL unit for NAL unit, without decoding.
"""

from __future__ import annotations

import contextlib
import hashlib
import queue
import threading
from collections.abc import Callable, Iterable
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any

import av
import cv2
import numpy as np

from vidaudit.core.errors import DataError
from vidaudit.core.fileio import atomic_path
from vidaudit.video.probe import VideoInfo, probe
from vidaudit.video.seek import nal_units as _nal_units
from vidaudit.video.streams import open_video, video_stream

#: x264 settings are part of the dataset identity: one thread makes the bitstream independent
#: of the machine's core count; parallelism comes from rendering many videos at once.
#: ``ultrafast`` measured 2.4x faster than ``veryfast`` here on these flat scenes (see
#: benchmarks/README.md). A constant quantiser (not crf) makes identical source frames decode to
#: identical pixels (crf re-refines static frames for several frames after each keyframe), and
#: gives every frame the same quality whatever the motion.
X264_OPTIONS = {"preset": "ultrafast", "qp": "18", "threads": "1", "bframes": "0", "g": "60"}


def _fps_fraction(fps: float) -> Fraction:
    f = Fraction(fps).limit_denominator(1001)
    if f <= 0 or abs(float(f) - fps) > 1e-6 * fps:  # e.g. one frame an hour: 1/3600 is not x/1001
        f = Fraction(fps).limit_denominator(1 << 24)
    return f


def _even_box(box: tuple[int, int, int, int], w: int, h: int) -> bool:
    x0, y0, x1, y1 = box
    return 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h and not (x0 % 2 or y0 % 2 or x1 % 2 or y1 % 2)


def _union(boxes: list[tuple[int, int, int, int] | None]) -> tuple[int, int, int, int] | None:
    """The box holding every one of ``boxes`` (None if one is None: a whole frame changed)."""
    if not boxes or None in boxes:
        return None
    x0, y0, x1, y1 = boxes[0]  # type: ignore[misc]
    for b in boxes[1:]:
        assert b is not None
        x0, y0, x1, y1 = min(x0, b[0]), min(y0, b[1]), max(x1, b[2]), max(y1, b[3])
    return x0, y0, x1, y1


def _convert_box(rgb: np.ndarray, yuv: np.ndarray, box: tuple[int, int, int, int], w: int, h: int) -> None:
    """Write the I420 of ``rgb``'s even-aligned ``box`` into ``yuv``, a whole frame's I420 (the Y plane, then U and
    V at half size, as ``cv2.COLOR_RGB2YUV_I420`` lays them out)."""
    x0, y0, x1, y1 = box
    bw, bh = x1 - x0, y1 - y0
    part = cv2.cvtColor(rgb[y0:y1, x0:x1], cv2.COLOR_RGB2YUV_I420).reshape(-1)
    yuv[y0:y1, x0:x1] = part[: bw * bh].reshape(bh, bw)
    chroma, part_chroma = yuv[h:].reshape(-1), part[bw * bh :]
    q, bq = (w // 2) * (h // 2), (bw // 2) * (bh // 2)
    for k in range(2):  # U, then V
        plane = chroma[k * q : (k + 1) * q].reshape(h // 2, w // 2)
        plane[y0 // 2 : y1 // 2, x0 // 2 : x1 // 2] = part_chroma[k * bq : (k + 1) * bq].reshape(bh // 2, bw // 2)


class VideoWriter:
    """Write RGB frames to an MP4 (H.264, yuv420p) under a temporary name, renamed on close."""

    def __init__(
        self,
        path: str | Path,
        fps: float,
        width: int,
        height: int,
        options: dict[str, str] | None = None,
        threaded: bool = True,
        on_packet: Callable[[bytes], None] | None = None,
    ) -> None:
        """``on_packet``: called with each encoded packet's bytes, in mux order, before it is muxed (from the
        encoder thread): what the encoder produced, for a writer that must prove what it wrote (``NalDigest``)."""
        if width % 2 or height % 2:
            raise ValueError(f"width and height must be even for yuv420p, got {width}x{height}")
        self._final = Path(path)
        self._ctx = atomic_path(self._final, suffix=".part.mp4")
        tmp = self._ctx.__enter__()
        self._container = av.open(str(tmp), mode="w", format="mp4")
        self._stream = self._container.add_stream("libx264", rate=_fps_fraction(fps))
        self._stream.width, self._stream.height = width, height
        self._stream.pix_fmt = "yuv420p"
        self._stream.options = dict(options or X264_OPTIONS)
        self._stream.codec_context.time_base = 1 / _fps_fraction(fps)
        self._w, self._h = width, height
        self._n = 0
        self._on_packet = on_packet
        self._bufs = [np.empty((height * 3 // 2, width), np.uint8) for _ in range(4)]
        self._frames: dict[int, av.VideoFrame] = {}  # ``_frame_of``: the frame wrapping each buffer, by ``id``
        self._free: queue.Queue[np.ndarray] = queue.Queue()
        for b in self._bufs:
            self._free.put(b)
        self._todo: queue.Queue[tuple[np.ndarray, int, int] | None] = queue.Queue()
        #: ``write(box=)``: the number of the write each buffer holds (by ``id``), and the boxes of the recent
        #: writes (None: a whole frame), the last ``len(self._bufs)`` of them
        self._holds: dict[int, int] = {}
        self._writes = 0
        self._boxes: list[tuple[int, int, int, int] | None] = []
        self._last: np.ndarray | None = None  # the buffer of the last write
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._encode_loop, daemon=True) if threaded else None
        if self._thread:
            self._thread.start()

    def _frame_of(self, yuv: np.ndarray) -> av.VideoFrame:
        """The encoder's frame for buffer ``yuv``: one per buffer, made once (wrapping a buffer costs ~11 us, as much
        as a small box's conversion), since it points at the buffer's memory and so shows what the buffer holds.
        ``from_numpy_buffer`` (no copy) misreads the height of an I420 buffer whose height is 2 mod 4 (160x90 came
        out 88 rows high, garbled); such sizes take the copying constructor, once per write."""
        if self._h % 4:
            return av.VideoFrame.from_ndarray(yuv, format="yuv420p")
        frame = self._frames.get(id(yuv))
        if frame is None:
            frame = self._frames[id(yuv)] = av.VideoFrame.from_numpy_buffer(yuv, format="yuv420p")
        return frame

    def _encode(self, frame: av.VideoFrame, pts: int, repeat: int) -> None:
        """Encode ``frame`` ``repeat`` times from ``pts`` on (the encoder copies its pixels on each ``encode``, and
        libavcodec never writes the frame it is given, so one frame serves a run)."""
        for k in range(repeat):
            frame.pts = pts + k
            for packet in self._stream.encode(frame):
                self._mux(packet)

    def _mux(self, packet: av.Packet[Any]) -> None:
        if self._on_packet is not None:
            self._on_packet(bytes(packet))
        self._container.mux(packet)

    def _encode_loop(self) -> None:
        while (item := self._todo.get()) is not None:
            yuv, pts, repeat = item
            try:
                if self._error is None:
                    self._encode(self._frame_of(yuv), pts, repeat)
            except BaseException as e:  # surfaced to the caller in write()/close()
                self._error = e
            finally:
                self._free.put(yuv)

    def write(self, rgb: np.ndarray, repeat: int = 1, box: tuple[int, int, int, int] | None = None) -> None:
        """Append ``rgb`` (H, W, 3 uint8) ``repeat`` times.

        It is converted to I420 once, and that one buffer is handed to the encoder for every repeat
        (the encoder copies each frame's pixels before ``encode`` returns, and nothing writes the
        buffer until its last repeat is encoded), so a run costs no copies.

        ``box`` (x0, y0, x1, y1), even-aligned: ``rgb`` is the frame written before it outside the box (a bouncing
        ball's frame is its template outside the ball: ``render``). The buffer handed to the encoder holds the I420
        of a frame written a few writes before (the encoder hands buffers back in turn), so only the union of the
        boxes of the writes since is converted, from ``rgb``: RGB -> I420 reads each 2x2 block alone, so an
        even-aligned box holds exactly the whole frame's conversion there (``tests/video/test_video_writer_box.py``).
        A buffer not written yet is first given a copy of the last write's. A box not even-aligned, or a write
        without one among them: the whole frame.
        """
        if self._error is not None:
            raise self._error
        if rgb.shape != (self._h, self._w, 3):
            raise ValueError(f"frame shape {rgb.shape} != {(self._h, self._w, 3)}")
        if repeat < 1:
            return
        yuv = self._free.get()
        if box is not None and not _even_box(box, self._w, self._h):
            box = None
        self._boxes.append(box)
        if len(self._boxes) > len(self._bufs) + 1:
            del self._boxes[0]
        if box is not None and id(yuv) not in self._holds and self._last is not None:
            # a buffer not written yet takes a copy of the last write's I420 (a memory copy, a quarter of a whole
            # conversion's cost); nothing writes that buffer meanwhile (the encoder only reads it)
            np.copyto(yuv, self._last)
            self._holds[id(yuv)] = self._writes - 1
        # the buffer holds the frame of an earlier write: what changed since is the union of the boxes of the
        # writes after it, converted from this frame (which is the whole frame); else the whole frame
        since = len(self._boxes) - (self._writes - self._holds.get(id(yuv), -len(self._boxes) - 1))
        union = _union(self._boxes[since:]) if since >= 0 else None
        if union is None:
            cv2.cvtColor(rgb, cv2.COLOR_RGB2YUV_I420, dst=yuv)
        else:
            _convert_box(rgb, yuv, union, self._w, self._h)
        self._holds[id(yuv)] = self._writes
        self._writes += 1
        self._last = yuv
        if self._thread:
            self._todo.put((yuv, self._n, repeat))
            self._n += repeat
            return
        self._encode(self._frame_of(yuv), self._n, repeat)
        self._n += repeat
        self._free.put(yuv)

    def close(self) -> None:
        if self._thread:
            self._todo.put(None)
            self._thread.join()
        try:
            if self._error is not None:
                raise self._error
            for packet in self._stream.encode():
                self._mux(packet)
            self._container.close()
        except BaseException as e:
            self._container.close()
            self._ctx.__exit__(type(e), e, e.__traceback__)
            raise
        self._ctx.__exit__(None, None, None)

    def abort(self) -> None:
        if self._thread:
            self._todo.put(None)
            self._thread.join()
        try:
            self._container.close()
        finally:
            err = RuntimeError("aborted")
            with contextlib.suppress(RuntimeError):  # the temporary is removed; the abort is no error
                self._ctx.__exit__(RuntimeError, err, None)

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_video(path: str | Path, frames: Iterable[np.ndarray], fps: float, width: int, height: int) -> None:
    with VideoWriter(path, fps, width, height) as w:
        for f in frames:
            w.write(f)


class NalDigest:
    """sha256 over the NAL units of a stream's packets, in order, whichever framing carries them: equal for
    what an encoder emitted (``VideoWriter(on_packet=digest.update)``, Annex B) and what the file stores
    (``stored_nal_digest``), so a file that differs in any coded byte from its encode is caught without decoding."""

    def __init__(self, length_size: int = 0) -> None:
        self._h = hashlib.sha256()
        self._length_size = length_size
        self.n_packets = 0

    def update(self, packet: bytes) -> None:
        self.n_packets += 1
        for nal in _nal_units(packet, self._length_size):
            self._h.update(len(nal).to_bytes(4, "big"))
            self._h.update(nal)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def _stored_digest(s: av.video.stream.VideoStream) -> NalDigest:
    """An empty ``NalDigest`` for the packets of stream ``s`` as its file stores them."""
    extra = bytes(s.codec_context.extradata or b"")
    # an avcC record (MP4) starts with version 1 and gives the size of each NAL's length field
    return NalDigest((extra[4] & 3) + 1 if len(extra) > 4 and extra[0] == 1 else 0)


def stored_nal_digest(path: str | Path) -> tuple[str, int]:
    """(``NalDigest`` of the first video stream's stored packets, their number), demuxed, never decoded; a file
    that cannot be demuxed is a ``DataError``."""
    with open_video(path) as c:
        s = video_stream(c, path)
        digest = _stored_digest(s)
        try:
            for packet in c.demux(s):
                if packet.size:
                    digest.update(bytes(packet))
        except av.error.FFmpegError as e:
            raise DataError(f"cannot read {path}: {e.strerror or e}; the file is damaged or truncated") from e
    return digest.hexdigest(), digest.n_packets


def probe_stored(path: str | Path) -> tuple[VideoInfo, str, int]:
    """(``probe(path)``, then ``stored_nal_digest(path)``'s two values) from one pass over the file's packets: what a
    renderer reads back from what it wrote (``counting.render.render_checked``). Where ``probe`` keeps the frames
    before a damaged tail, the digest covers those packets only (so it differs from the encoder's)."""
    digests: list[NalDigest] = []

    def start(s: av.video.stream.VideoStream) -> Callable[[bytes], None]:
        digests.append(_stored_digest(s))
        return digests[-1].update

    info = probe(path, packets=start)
    return info, digests[0].hexdigest(), digests[0].n_packets
