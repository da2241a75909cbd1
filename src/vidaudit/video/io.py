"""H.264 encode and exact decode with PyAV: the one reader, on a player's clock, at a player's shape.

Frames are addressed by index ``i``: the ``i``-th picture the decoder returns (``Decoder``), which is the
``i``-th frame a player shows, in presentation order (frames an edit list cuts are not counted; a field pair is
one frame; packet order and packet stamps never decide it). Its time is its own presentation time on the clock
of ``core.timeline`` (``i / fps`` only for a constant-rate clip that starts at 0, as rendered videos do), and
every reader returns it as displayed: non-square pixels made square (``streams.displayed_size``) and a display
matrix (a phone clip's rotation) applied the way ffmpeg's autorotate applies it, from the video stream ffmpeg
picks unless another is named (``streams``). A reader that picks frames (``iter_selected``, the perturbation
reader) seeks over groups of pictures that hold none, only to entry points where that gives the same pictures by
the same numbers (``video/seek.py``), and decodes on the calling thread (``threads_pay``). Encoding converts RGB to I420 with OpenCV into a reused buffer and
hands frames to the encoder in a worker thread, so that drawing the next frame overlaps encoding the last
(libx264 dominates the cost); a run of identical frames is converted once and encoded from one buffer.
``iter_frames_reused`` decodes every frame but converts a run of byte-identical decoded frames once (for exact
analyses).
"""

from __future__ import annotations

import math
import os
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import av
import cv2
import numpy as np

from vidaudit.core.errors import DataError
from vidaudit.core.fileio import atomic_path
from vidaudit.core.timeline import Timeline, constant_rate_frames, is_constant
from vidaudit.core.types import MAX_FPS, MAX_FRAMES
from vidaudit.video.seek import SEEK_MIN_SKIP, SeekIndex, build_index
from vidaudit.video.seek import nal_units as _nal_units

if TYPE_CHECKING:
    from vidaudit.core.types import VideoRef
from vidaudit.video.streams import (
    HEADER_DURATION_FORMATS,
    best_effort,
    best_stream,
    cut_off,
    displayed_size,
    frame_rate,
    packets_are_frames,
    stream_sar,
)

#: x264 settings are part of the dataset identity: one thread makes the bitstream independent
#: of the machine's core count; parallelism comes from rendering many videos at once.
#: ``ultrafast`` measured 2.4x faster than ``veryfast`` here on these flat scenes (see
#: benchmarks/README.md). A constant quantiser (not crf) makes identical source frames decode to
#: identical pixels (crf re-refines static frames for several frames after each keyframe), and
#: gives every frame the same quality whatever the motion.
X264_OPTIONS = {"preset": "ultrafast", "qp": "18", "threads": "1", "bframes": "0", "g": "60"}


#: The smallest displayed size worth sending a model (files past ``MAX_FRAMES``/``MAX_FPS`` are refused too).
MIN_SIZE = 2


@dataclass(frozen=True)
class VideoInfo:
    """A video's facts as a player shows it: displayed size (square pixels, upright), presentation clock, stream."""

    fps: float
    width: int                                  # displayed: SAR applied, then rotation
    height: int
    n_frames: int
    duration_s: float
    rotation: int = 0                           # degrees counter-clockwise a player turns the stored picture
    start_s: float = 0.0                        # the first frame's time from the presentation start
    frame_times: tuple[float, ...] | None = None  # each frame's time, when the rate is not constant
    stream: int = 0                             # the index of the video stream read
    video_streams: int = 1                      # how many video streams the file has
    sar: Fraction = Fraction(1)                 # sample aspect ratio of the stored picture
    stored_size: tuple[int, int] = (0, 0)       # the decoded picture's (width, height), before SAR and rotation

    @property
    def timeline(self) -> Timeline:
        return Timeline.of_facts(self.n_frames, self.fps, self.start_s, self.frame_times, self.duration_s)


def _fps_fraction(fps: float) -> Fraction:
    f = Fraction(fps).limit_denominator(1001)
    if f <= 0 or abs(float(f) - fps) > 1e-6 * fps:   # e.g. one frame an hour: 1/3600 is not x/1001
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
    yuv[y0:y1, x0:x1] = part[:bw * bh].reshape(bh, bw)
    chroma, part_chroma = yuv[h:].reshape(-1), part[bw * bh:]
    q, bq = (w // 2) * (h // 2), (bw // 2) * (bh // 2)
    for k in range(2):  # U, then V
        plane = chroma[k * q:(k + 1) * q].reshape(h // 2, w // 2)
        plane[y0 // 2:y1 // 2, x0 // 2:x1 // 2] = part_chroma[k * bq:(k + 1) * bq].reshape(bh // 2, bw // 2)


class VideoWriter:
    """Write RGB frames to an MP4 (H.264, yuv420p) under a temporary name, renamed on close."""

    def __init__(self, path: str | Path, fps: float, width: int, height: int,
                 options: dict[str, str] | None = None, threaded: bool = True,
                 on_packet: Callable[[bytes], None] | None = None) -> None:
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
        self._free: queue.Queue[np.ndarray] = queue.Queue()
        for b in self._bufs:
            self._free.put(b)
        self._todo: queue.Queue[tuple[np.ndarray, int, int] | None] = queue.Queue()
        #: ``write(box=)``: the number of the write each buffer holds (by ``id``), and the boxes of the recent
        #: writes (None: a whole frame), the last ``len(self._bufs)`` of them
        self._holds: dict[int, int] = {}
        self._writes = 0
        self._boxes: list[tuple[int, int, int, int] | None] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._encode_loop, daemon=True) if threaded else None
        if self._thread:
            self._thread.start()

    def _encode(self, yuv: np.ndarray, pts: int) -> None:
        # from_numpy_buffer (no copy) misreads the height of an I420 buffer whose height is 2 mod 4 (160x90
        # came out 88 rows high, garbled); such sizes take the copying constructor
        frame = av.VideoFrame.from_numpy_buffer(yuv, format="yuv420p") if self._h % 4 == 0 \
            else av.VideoFrame.from_ndarray(yuv, format="yuv420p")
        frame.pts = pts
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
                    for k in range(repeat):
                        self._encode(yuv, pts + k)
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
        even-aligned box holds exactly the whole frame's conversion there (``tests/test_video_writer_box.py``).
        A box not even-aligned, a write without one among them, or a buffer not written yet: the whole frame.
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
        if self._thread:
            self._todo.put((yuv, self._n, repeat))
            self._n += repeat
            return
        for _ in range(repeat):
            self._encode(yuv, self._n)
            self._n += 1
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
            try:
                self._ctx.__exit__(RuntimeError, err, None)
            except RuntimeError:
                pass

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_video(path: str | Path, frames: Iterable[np.ndarray], fps: float, width: int, height: int) -> None:
    with VideoWriter(path, fps, width, height) as w:
        for f in frames:
            w.write(f)


def _open(path: str | Path) -> av.container.InputContainer:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"video not found: {p}; regenerate it or fix the manifest's video.path")
    try:
        return av.open(str(p))
    except av.error.FFmpegError as e:  # e.g. a text file or a truncated download: say what, not FFmpeg's errno
        reason = (getattr(e, "strerror", None) or str(e)).rstrip(".").lower()
        raise DataError(f"cannot decode {p}: not a readable video ({reason}); give a video file FFmpeg can "
                        "decode (e.g. an MP4, WebM, MKV, AVI or MOV), or, if vidaudit wrote it, delete it and "
                        "generate it again") from e


def _video_stream(c: av.container.InputContainer, p: str | Path,
                  index: int | None = None) -> av.video.stream.VideoStream:
    """The video stream a player shows (``streams.best_stream``), or the one at ``index``."""
    if not c.streams.video:
        kinds: list[str] = sorted({str(s.type) for s in c.streams}) or ["no streams"]
        raise DataError(f"cannot decode {p}: not a readable video, it has no video stream (only {', '.join(kinds)}); "
                        "give a video file (e.g. an MP4) or a still image")
    if index is None:
        return best_stream(c.streams.video)
    for s in c.streams.video:
        if s.index == index:
            return s
    have = ", ".join(f"{s.index} ({s.codec_context.width}x{s.codec_context.height})" for s in c.streams.video)
    raise DataError(f"{p}: stream {index} is not a video stream of the file; its video streams are {have}")


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


def _presentation_start(c: av.container.InputContainer, first_s: float) -> float:
    """Time 0 of the player's clock: the container's start (all streams, edit lists applied)."""
    if c.start_time is not None:
        return min(c.start_time / av.time_base, first_s)
    return first_s


@dataclass
class _Read:
    """What one pass over a file found: the video's frame stamps (time-base units, presentation order), the last
    frame's duration, the first decoded frame, and where every stream ends (for the cut-off check)."""

    stamps: list[int]
    last_duration: int
    first: av.VideoFrame | None
    ends: dict[int, float]          # stream index -> end of its last packet (seconds)


def _by_packets(c: av.container.InputContainer, s: av.video.stream.VideoStream, p: Path) -> _Read:
    """Frames from the video packets' presentation stamps (where packets are frames: ``packets_are_frames``)."""
    stamps: list[int] = []
    durations: dict[int, int] = {}
    ends: dict[int, float] = {}
    try:
        for pkt in c.demux():
            if pkt.stream_index != s.index:
                _note_end(ends, pkt)
                continue
            if not pkt.size or pkt.is_discard:
                continue
            ts = pkt.pts if pkt.pts is not None else pkt.dts
            if ts is None:
                raise DataError(f"{p}: a video packet has no timestamp; re-encode it (e.g. ffmpeg -i IN OUT.mp4)")
            stamps.append(ts)
            durations[ts] = pkt.duration or 0
            if len(stamps) > MAX_FRAMES:
                raise DataError(f"{p} has more than {MAX_FRAMES:,} frames; cut it into shorter clips")
    except av.error.FFmpegError as e:
        if not stamps:
            raise DataError(f"cannot decode {p}: {e.strerror or e}; the file is damaged or truncated") from e
        # a damaged tail: the frames read so far are the video (decoding checks them again; the cut-off check too)
    stamps.sort()
    return _Read(stamps, durations.get(stamps[-1], 0) if stamps else 0, None, ends)


def _by_decoding(c: av.container.InputContainer, s: av.video.stream.VideoStream, p: Path) -> _Read:
    """Frames as the decoder returns them (field pairs woven into one, packed B-frames unpacked), each timed by the
    whole stream's best-effort rule (``streams.best_effort``)."""
    pts: list[int | None] = []
    dts: list[int | None] = []
    last_duration = 0
    first: av.VideoFrame | None = None
    ends: dict[int, float] = {}
    try:
        for pkt in c.demux():
            if pkt.stream_index != s.index:
                _note_end(ends, pkt)
                continue
            for f in pkt.decode():
                assert isinstance(f, av.VideoFrame)
                if first is None:
                    first = f
                pts.append(f.pts)
                dts.append(f.dts)
                last_duration = f.duration or 0
                if len(pts) > MAX_FRAMES:
                    raise DataError(f"{p} has more than {MAX_FRAMES:,} frames; cut it into shorter clips")
    except av.error.FFmpegError as e:
        raise DataError(f"cannot decode {p}: {e.strerror or e}; the file is damaged or truncated") from e
    if not pts:
        return _Read([], 0, None, ends)
    rate = s.average_rate or s.guessed_rate
    tb = s.time_base
    step = last_duration or (round(1 / (rate * tb)) if rate and tb else 1)
    stamps = best_effort(pts, dts, step)
    if stamps is None:
        raise DataError(f"{p}: two frames share a presentation time (or the frames' stamps go back); re-encode it "
                        "(e.g. ffmpeg -i IN OUT.mp4)")
    return _Read(stamps, last_duration or step, first, ends)


def _note_end(ends: dict[int, float], pkt: av.Packet[Any]) -> None:
    ts = pkt.pts if pkt.pts is not None else pkt.dts
    if ts is not None and pkt.time_base is not None:
        end = float((ts + (pkt.duration or 0)) * pkt.time_base)
        if end > ends.get(pkt.stream_index, -math.inf):
            ends[pkt.stream_index] = end


def probe(path: str | Path, stream: int | None = None) -> VideoInfo:
    """A video's facts as a player shows it: its frames (decoded pictures), their times, its displayed shape.

    ``stream``: the index of the video stream to read (default: the one ffmpeg picks). Where packets are frames
    (``streams.packets_are_frames``: MP4, MOV, MKV, WebM, progressive) they are read without decoding; elsewhere
    the stream is decoded and timed by its best-effort stamps (``streams.best_effort``). The rate is the stream's
    average where the frames support it (``streams.frame_rate``); the clip is constant-rate only if every stamp
    agrees with it. Any file that is not a usable video (no video stream, no frames, an absurd rate or size,
    undecodable, cut off) is a ``DataError`` naming the file.
    """
    p = Path(path)
    with _open(p) as c:
        s = _video_stream(c, p, stream)
        tb = s.time_base
        if tb is None or tb <= 0:
            raise DataError(f"{p}: the video stream has no time base; re-encode it (e.g. ffmpeg -i IN OUT.mp4)")
        read = _by_packets(c, s, p) if packets_are_frames(c, s) else _by_decoding(c, s, p)
        stamps = read.stamps
        if not stamps:
            raise DataError(f"{p} has a video stream with no frames; give a file with at least one frame")
        if len(set(stamps)) != len(stamps):
            raise DataError(f"{p}: two frames share a presentation time; re-encode it (e.g. ffmpeg -i IN OUT.mp4)")
        first = read.first or _first_frame(p, s.index)
        rotation = normalise_rotation(getattr(first, "rotation", 0))
        origin = _presentation_start(c, float(stamps[0] * tb))
        num, den = tb.numerator, tb.denominator  # float(st * tb), written in ints: int / int rounds as exactly
        times = [st * num / den - origin for st in stamps]
        n = len(times)
        fps = frame_rate(s.average_rate, s.guessed_rate, times, lambda r: is_constant(times, r))
        if not (math.isfinite(fps) and 0 < fps <= MAX_FPS):
            raise DataError(f"{p}: frame rate {fps:g} is not usable (must be in (0, {MAX_FPS:g}]); re-encode it "
                            "at a constant rate (e.g. ffmpeg -i IN -r 30 OUT.mp4)")
        sar = stream_sar(s)
        w, h = displayed_size(first.width, first.height, sar)
        if rotation in (90, 270):
            w, h = h, w
        if w < MIN_SIZE or h < MIN_SIZE:
            raise DataError(f"{p} is {w}x{h}: too small to show anything (at least {MIN_SIZE}x{MIN_SIZE})")
        if is_constant(times, fps):
            start = round(times[0], 6)
            duration, frame_times = round(start + n / fps, 6), None
        else:
            step = float(read.last_duration * tb) if read.last_duration else (times[-1] - times[0]) / max(n - 1, 1)
            start, duration = round(times[0], 6), round(times[-1] + step, 6)
            frame_times = tuple(round(t, 6) for t in times)
        info = VideoInfo(fps=fps, width=w, height=h, n_frames=n, duration_s=duration, rotation=rotation, start_s=start,
                         frame_times=frame_times, stream=s.index, video_streams=len(c.streams.video), sar=sar,
                         stored_size=(first.width, first.height))
        _refuse_cut_off(c, s, p, float(stamps[0] * tb), info.duration_s + origin, read.ends)
    return info


def _refuse_cut_off(c: av.container.InputContainer, s: av.video.stream.VideoStream, p: Path, first_s: float,
                    end_s: float, ends: dict[int, float]) -> None:
    """A ``DataError`` when the file holds less than its header promises (``streams.cut_off``): the video stream's own
    duration where the header gives one, else the container's against the end of its latest stream (only in a
    container whose header states a duration: ``streams.HEADER_DURATION_FORMATS``)."""
    if not set(c.format.name.split(",")) & HEADER_DURATION_FORMATS:
        return
    tb = s.time_base
    if s.duration and tb:
        start = float(s.start_time * tb) if s.start_time is not None else first_s
        promised, present = float(s.duration * tb), end_s - start
    elif c.duration:
        start = c.start_time / av.time_base if c.start_time is not None else first_s
        promised, present = c.duration / av.time_base, max([end_s, *ends.values()]) - start
    else:
        return
    if cut_off(promised, present):
        raise DataError(f"{p} is cut off: its header promises {promised:.3g} s of video but the file holds "
                        f"{max(present, 0):.3g} s (an interrupted download or copy?); fetch it again, or keep the "
                        "part present by remuxing it (ffmpeg -i IN -c copy OUT.mkv)")


def _first_frame(p: Path, index: int | None = None) -> av.VideoFrame:
    """The first frame a player shows (it carries the display matrix and the decoded size)."""
    with _open(p) as c:
        try:
            for frame in c.decode(_video_stream(c, p, index)):
                return frame
        except av.error.FFmpegError as e:
            raise DataError(f"cannot decode {p}: its first frame fails ({e.strerror or e}); the file is damaged") from e
    raise DataError(f"cannot decode {p}: no frame decodes; the file is damaged or truncated")


def video_ref(root: str | Path, rel: str, stream: int | None = None) -> VideoRef:
    """A manifest's ``VideoRef`` for the written file ``root/rel``: its sha256 and the facts ``probe`` reads."""
    from vidaudit.core.hashing import sha256_file

    path = Path(root) / rel
    return ref_from(probe(path, stream), rel, sha256_file(path))


def ref_from(info: VideoInfo, path: str, sha256: str | None) -> VideoRef:
    """The ``VideoRef`` of a probed file: every fact a run relies on (clock, orientation, shape, stream included).

    The stream is recorded where the file has several video streams, the stored size and SAR where pixels are not
    square; an ordinary file's ref has neither, so its manifest line is what it always was."""
    from vidaudit.core.types import VideoRef

    square_px = info.sar == 1
    return VideoRef(path=path, sha256=sha256, fps=info.fps, width=info.width, height=info.height,
                    n_frames=info.n_frames, duration_s=info.duration_s, rotation=info.rotation,
                    start_s=info.start_s, frame_times=info.frame_times,
                    sar=None if square_px else (info.sar.numerator, info.sar.denominator),
                    stored_size=None if square_px else info.stored_size,
                    stream=info.stream if info.video_streams > 1 else None)


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


class NalDigest:
    """sha256 over the NAL units of a stream's packets, in order, whichever framing carries them: equal for
    what an encoder emitted (``VideoWriter(on_packet=digest.update)``, Annex B) and what the file stores
    (``stored_nal_digest``), so a file that differs in any coded byte from its encode is caught without decoding."""

    def __init__(self, length_size: int = 0) -> None:
        import hashlib

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


def stored_nal_digest(path: str | Path) -> tuple[str, int]:
    """(``NalDigest`` of the first video stream's stored packets, their number), demuxed, never decoded; a file
    that cannot be demuxed is a ``DataError``."""
    with _open(path) as c:
        s = _video_stream(c, path)
        extra = bytes(s.codec_context.extradata or b"")
        # an avcC record (MP4) starts with version 1 and gives the size of each NAL's length field
        digest = NalDigest((extra[4] & 3) + 1 if len(extra) > 4 and extra[0] == 1 else 0)
        try:
            for packet in c.demux(s):
                if packet.size:
                    digest.update(bytes(packet))
        except av.error.FFmpegError as e:
            raise DataError(f"cannot read {path}: {e.strerror or e}; the file is damaged or truncated") from e
    return digest.hexdigest(), digest.n_packets


def to_rgb_width(frame: av.VideoFrame, width: int, sar: Fraction = Fraction(1)) -> np.ndarray:
    """Displayed RGB about ``width`` pixels wide, for thumbnails: an upright square-pixel I420 frame is scaled plane by
    plane (INTER_AREA) and then converted, ~3x less work than converting every pixel first; where that cannot
    give exactly ``width`` x ``round(h * width / w)`` (another format, a rotation, non-square pixels, odd sizes,
    no shrink) the frame comes back whole from ``to_rgb``, for the caller to scale."""
    w, h = frame.width, frame.height
    height = max(1, round(h * width / w))
    if (frame.format.name != "yuv420p" or _rotation(frame) or sar != 1 or width >= w or w % 2 or h % 2
            or width % 2 or height % 2):
        return to_rgb(frame, sar)
    # the planes are scaled where the decoder left them (rows with their padding), not copied out first
    y, u, v = (np.frombuffer(memoryview(p), np.uint8, p.height * p.line_size).reshape(p.height, p.line_size)
               [:, :p.width] for p in frame.planes)
    small = [cv2.resize(y, (width, height), interpolation=cv2.INTER_AREA).ravel(),
             *(cv2.resize(c, (width // 2, height // 2), interpolation=cv2.INTER_AREA).ravel() for c in (u, v))]
    return cv2.cvtColor(np.concatenate(small).reshape(height * 3 // 2, width), cv2.COLOR_YUV2RGB_I420)


#: FFmpeg's decoding threads pay only in a whole-clip decode of pictures at least this large, where they can cut wall
#: time for 2-18% more CPU; on smaller pictures, and for the few frames a seeking reader decodes per target, they cost
#: 1.1-2.2x the CPU of the calling thread and saved no wall time (``benchmarks/decode_threads.py``; benchmarks/
#: README.md, "Reading frames"). Readers that pick frames (runs, observers, perturbations, thumbnails) run in pools
#: that already keep the cores busy.
THREADS_MIN_PIXELS = 1280 * 720


def threads_pay(width: int, height: int, whole_clip: bool) -> bool:
    """Whether to decode with FFmpeg's threads (``THREADS_MIN_PIXELS``): only a whole-clip decode of large pictures."""
    return whole_clip and width * height >= THREADS_MIN_PIXELS


#: Seek indexes kept per process (``seek_index``; at most 0.9 MB each for an hour at 30 fps).
CACHED_INDEXES = 32
_indexes: OrderedDict[tuple[str, int, int, int, int, int], SeekIndex | None] = OrderedDict()
_indexes_lock = threading.Lock()


def seek_index(path: str | Path, stream: int) -> SeekIndex | None:
    """``seek.build_index`` of the video stream ``stream`` of the file at ``path`` (None: it has no clean entry
    points), kept for the process per file (its path, inode, size and modification time): a run asks the same
    videos for frames trial after trial."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, stream)
    with _indexes_lock:
        if key in _indexes:
            _indexes.move_to_end(key)
            return _indexes[key]
    with _open(path) as c:
        index = build_index(c, _video_stream(c, path, stream))
    with _indexes_lock:
        _indexes[key] = index
        while len(_indexes) > CACHED_INDEXES:
            _indexes.popitem(last=False)
    return index


class VideoEnded(DataError):
    """The video has no picture where one was asked for: it ends earlier than its facts say."""


class Decoder:
    """The one reader: the decoded pictures of one video stream, numbered as a player shows them.

    Frame ``i`` is the ``i``-th picture the decoder returns from the start of the file: a field pair is one
    picture (woven), a packed B-frame is unpacked, and the decoder returns pictures in presentation order whatever
    order their packets are stored in; identity never comes from a packet's stamp alone. Every reading path
    (sampling for runs, observers, verification, perturbations, imports, stills, thumbnails) goes through it, and
    converts with ``rgb``/``rgb_half``/``rgb_width``: square pixels (``sar``), upright.

    Seeking (``index``, then ``frame`` or ``position_for``): where the stream has clean entry points
    (``seek.SeekIndex``: MP4/MOV and MKV/WebM, see ``video/seek.py``), the reader jumps to the entry point before a
    frame when that skips more than ``seek.SEEK_MIN_SKIP`` frames, and goes back to one instead of starting again.
    After a seek it names each picture by its stamp and checks it: the first must be a keyframe at an entry point no
    later than the one sought, each next one must carry the next frame's stamp, none may be flagged corrupt; from
    the start, each picture must carry its frame's stamp too. One disagreement marks the index unusable (for every
    reader of the file) and the reader starts again from the top, counting pictures: the count is the truth, and
    the index is only a faster way to the same pictures.
    """

    def __init__(self, path: str | Path, stream: int | None = None, threaded: bool | None = None,
                 whole_clip: bool = False) -> None:
        """``threaded``: decode with FFmpeg's threads (True), on the calling thread (False), or as ``threads_pay``
        rules for the stored picture size (None; ``whole_clip``: the reader decodes the whole clip forward)."""
        self.path = Path(path)
        self.seeks = 0                                # times the reader jumped (a seek) or started again
        self.decoded = 0                              # pictures decoded (what reading cost; tests read it)
        self._container = _open(self.path)
        try:
            s = _video_stream(self._container, self.path, stream)
        except BaseException:
            self._container.close()
            raise
        cc = s.codec_context
        self.threaded = threads_pay(cc.width or 0, cc.height or 0, whole_clip) if threaded is None else threaded
        self.stream = s.index
        self.sar = stream_sar(s)
        self._stream: av.video.stream.VideoStream = s
        self._index: SeekIndex | None = None
        self._gen: Iterator[av.VideoFrame] | None = None
        self._start()

    # ------------------------------------------------------------------ conversion

    def rgb(self, frame: av.VideoFrame) -> np.ndarray:
        return to_rgb(frame, self.sar)

    def rgb_half(self, frame: av.VideoFrame) -> np.ndarray:
        return to_rgb_half(frame, self.sar)

    def rgb_width(self, frame: av.VideoFrame, width: int) -> np.ndarray:
        return to_rgb_width(frame, width, self.sar)

    # ------------------------------------------------------------------ positioning

    def index(self, n_frames: int | None = None) -> bool:
        """Learn where the stream can be entered exactly (``seek_index``), so that skipping ahead and going back can
        seek; with ``n_frames`` (the frames the caller's facts give the file), only if the index has as many.
        Returns whether seeking is on."""
        idx = seek_index(self.path, self.stream)
        if idx is None or not idx.usable or (n_frames is not None and idx.n_frames != n_frames):
            return False
        self._index = idx
        return True

    @property
    def seeking(self) -> bool:
        return self._index is not None

    def _start(self) -> None:
        """Decode from the first frame (re-opening the file when it was read before), counting pictures."""
        if self._gen is not None:
            self._container.close()
            self._container = _open(self.path)
            self._stream = _video_stream(self._container, self.path, self.stream)
        if self.threaded:
            self._stream.thread_type = "AUTO"
        else:
            self._stream.thread_count = 1    # no thread pool at all (FFmpeg's default starts slice threads)
        self._gen = self._container.decode(self._stream)
        self.cur: int | None = None          # the number of the last picture returned
        self._next_at = 0                    # the number the next picture has (counted) or should have (stamped)
        self._by_stamp = False               # after a seek: pictures are named by their stamps, and checked
        self._landing = False                # the next picture is the first after a seek

    def _seek(self, k: int) -> None:
        assert self._index is not None
        try:
            self._container.seek(self._index.pts[k], stream=self._stream, backward=True, any_frame=False)
        except av.error.FFmpegError:         # a container the demuxer cannot seek in: decode from the start
            self._distrust()
            self._start()
            return
        self._gen = self._container.decode(self._stream)
        self.cur = None
        self._next_at, self._by_stamp, self._landing = k, True, True

    def _distrust(self) -> None:
        """The decoder disagreed with the index: nobody seeks on it again."""
        if self._index is not None:
            self._index.usable = False
            self._index = None

    def position_for(self, i: int) -> None:
        """Make the next picture one at or before frame ``i``, as cheaply as possible: decoding on, seeking to an
        entry point (``SeekIndex.should_seek``), or starting again."""
        k = self._index.should_seek(self._next_at, i) if self._index is not None else None
        if k is not None:
            self.seeks += 1
            self._seek(k)
        elif self._next_at > i:
            self.seeks += 1
            self._start()

    def _pull(self) -> av.VideoFrame | None:
        assert self._gen is not None
        try:
            frame = next(self._gen)
            self.decoded += 1
            return frame
        except StopIteration:
            return None
        except av.error.FFmpegError as e:
            raise DataError(f"cannot decode {self.path}: {e.strerror or e}; the file is damaged or truncated") from e

    def _ended(self) -> VideoEnded:
        after = "before its first frame" if self.cur is None else f"after frame {self.cur}"
        return VideoEnded(f"{self.path}: the video ends {after}, earlier than its facts say; it changed since it was "
                          "read (regenerate the manifest), or it is damaged")

    def _stamped(self, frame: av.VideoFrame | None) -> int | None:
        """The number of a picture decoded after a seek, by its stamp, if it is the picture the index says comes
        next (see the class docstring); None if not."""
        idx = self._index
        assert idx is not None
        if frame is None:
            if self._next_at >= idx.n_frames and not self._landing:
                raise self._ended()
            return None
        j = idx.number_of(frame.pts)
        if j is None or frame.is_corrupt:
            return None
        if self._landing:
            ok = j <= self._next_at and idx.is_point(j) and (j == 0 or frame.key_frame)
            self._landing = False
            return j if ok else None
        return j if j == self._next_at else None

    def next(self) -> tuple[int, av.VideoFrame]:
        """The next picture and its number; a ``VideoEnded`` past the last frame, a ``DataError`` on a decoding
        failure."""
        while True:
            frame = self._pull()
            if self._by_stamp:
                j = self._stamped(frame)
                if j is None:                # not where the index said: start again, counting
                    self._distrust()
                    self.seeks += 1
                    self._start()
                    continue
            else:
                if frame is None:
                    raise self._ended()
                j = self._next_at
                idx = self._index
                if idx is not None and (j >= idx.n_frames or frame.pts != idx.pts[j]):
                    self._distrust()         # the stamps do not name the pictures: never seek on them
            assert frame is not None
            self.cur, self._next_at = j, j + 1
            return j, frame

    def frame(self, i: int) -> av.VideoFrame:
        """Frame ``i``, reached as cheaply as the index allows (``position_for``); a ``VideoEnded`` if there is none."""
        self.position_for(i)
        while True:
            j, f = self.next()
            if j == i:
                return f
            if j > i:                        # pragma: no cover - position_for and the checks make it impossible
                raise AssertionError(f"{self.path}: decoding went past frame {i} (got {j})")

    def __iter__(self) -> Iterator[tuple[int, av.VideoFrame]]:
        """Every picture from the current position (the start, for a fresh reader) to the end, numbered."""
        while True:
            try:
                yield self.next()
            except VideoEnded:
                return

    def close(self) -> None:
        self._container.close()
        self._gen = None

    def __enter__(self) -> Decoder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_frames(path: str | Path, half: bool = False, threaded: bool | None = None,
                stream: int | None = None) -> Iterator[np.ndarray]:
    """Every frame in presentation order as displayed RGB uint8 (``half``: at half resolution, for analysis).

    ``threaded``: None decodes with FFmpeg's threads where they pay (``threads_pay``: pictures of 720p and
    more), False on the calling thread (cheaper inside a pool that already runs one worker per core).
    """
    with Decoder(path, stream, threaded, whole_clip=True) as d:
        convert = d.rgb_half if half else d.rgb
        for _, frame in d:
            yield convert(frame)


def iter_frames_reused(path: str | Path, half: bool = False, threaded: bool | None = None,
                       stream: int | None = None) -> Iterator[np.ndarray]:
    """``iter_frames``, but a frame whose decoded planes are byte-identical to the previous frame's is
    yielded as the previous frame's array, the same object (converted once; read-only).

    Rendered clips are mostly runs of identical frames, so an analysis that is a pure function of each
    frame's pixels can reuse its result when ``frame is previous`` and stay exact. The comparison covers
    every byte of every plane (line padding included), so a false "identical" is impossible; a
    difference in padding alone only costs one conversion.
    """
    last_planes: tuple[bytes, ...] | None = None
    last: np.ndarray | None = None
    with Decoder(path, stream, threaded, whole_clip=True) as d:
        convert = d.rgb_half if half else d.rgb
        for _, frame in d:
            planes = tuple(bytes(p) for p in frame.planes)
            if last is None or planes != last_planes:
                last, last_planes = convert(frame), planes
                last.flags.writeable = False  # yielded at several positions: nobody may change it
            yield last


def iter_constant_rate(path: str | Path, start_s: float = 0.0, end_s: float | None = None,
                       stream: int | None = None) -> Iterator[np.ndarray]:
    """The clip as a constant-rate sequence at its rate (``probe``'s fps) from ``start_s`` to ``end_s`` on the
    player's clock: frame ``k`` is the frame on screen at ``start_s + k / fps`` (a variable-rate clip's frames are
    repeated or skipped, never moved in time), displayed. What an importer re-encodes a user's clip from."""
    info = probe(path, stream)
    order = constant_rate_frames(info.timeline, info.fps, start_s, end_s)
    want = iter(order)
    nxt = next(want, None)
    for i, frame in enumerate(iter_frames(path, stream=info.stream)):
        while nxt == i:
            yield frame
            nxt = next(want, None)
        if nxt is None:
            return


def read_frames(path: str | Path, indices: Sequence[int], stream: int | None = None) -> np.ndarray:
    """Decode exactly the frames at ``indices`` (any order, repeats allowed) -> (k, H, W, 3) displayed RGB."""
    if len(indices) == 0:
        raise ValueError("read_frames needs at least one index")
    got = dict(iter_selected(path, indices, stream=stream))
    return np.stack([got[int(i)] for i in indices])


def iter_selected(path: str | Path, indices: Sequence[int], half: bool = False, threaded: bool | None = None,
                  width: int | None = None, stream: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """(index, displayed RGB) for the sorted, distinct ``indices``, streaming (no whole-clip buffer).

    Index ``i`` is the ``i``-th frame a player shows (``Decoder``). Where the stream has clean entry points it
    seeks over the groups of pictures that hold no index (``Decoder.frame``), and decodes forward elsewhere: the
    same frames either way, decoded on the calling thread (``threads_pay``: FFmpeg's threads cost 1.1-2.2x the CPU
    here; ``threaded=True`` asks for them). ``width``: frames for thumbnails, about that wide (``to_rgb_width``)."""
    want = sorted(set(int(i) for i in indices))
    if not want:
        return
    if want[0] < 0:
        raise ValueError(f"negative frame index {want[0]}")
    with Decoder(path, stream, threaded) as d:
        def convert(frame: av.VideoFrame) -> np.ndarray:
            return d.rgb_width(frame, width) if width is not None else d.rgb_half(frame) if half else d.rgb(frame)

        if want[-1] > SEEK_MIN_SKIP:         # else no seek can skip anything: no index needed
            d.index()
        for j, i in enumerate(want):
            try:
                frame = d.frame(i)
            except VideoEnded:
                raise DataError(f"{path}: frames {want[j:j + 5]} do not exist (the video has fewer frames than its "
                                "manifest says; was it replaced? regenerate the manifest)") from None
            yield i, convert(frame)
