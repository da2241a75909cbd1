"""Exact decode with PyAV: the one reader, on a player's clock, at a player's shape.

Frames are addressed by index ``i``: the ``i``-th picture the decoder returns (``Decoder``), which is the
``i``-th frame a player shows, in presentation order (frames an edit list cuts are not counted; a field pair is
one frame; packet order and packet stamps never decide it). Its time is its own presentation time on the clock
of ``core.timeline`` (``i / fps`` only for a constant-rate clip that starts at 0, as rendered videos do), and
every reader returns it as displayed (``video.display``: non-square pixels made square, a display matrix applied
the way ffmpeg's autorotate applies it), from the video stream ffmpeg picks unless another is named
(``video.streams``). A reader that picks frames (``iter_selected``, the perturbation reader) seeks over groups of
pictures that hold none, only to entry points where that gives the same pictures by the same numbers
(``video/seek.py``), and decodes on the calling thread (``threads_pay``). ``iter_frames_reused`` decodes every
frame but converts a run of byte-identical decoded frames once (for exact analyses). A file's facts are
``video.probe``'s; writing one is ``video.encode``'s.
"""

from __future__ import annotations

import bisect
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from vidaudit.core.errors import DataError
from vidaudit.core.timeline import constant_rate_frames
from vidaudit.video.display import to_rgb, to_rgb_half, to_rgb_width
from vidaudit.video.probe import probe
from vidaudit.video.seek import SEEK_MIN_SKIP, SeekIndex, build_index
from vidaudit.video.streams import displayed_size, open_video, packets_are_frames, stream_sar, video_stream

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
    return _packet_index(path, stream)


def packet_stamps(path: str | Path, stream: int) -> Sequence[int] | None:
    """The stamps of the frames ``probe`` counts in a stream whose packets are frames (presentation order; the
    index's), or None where there is no index: what ``Decoder`` checks each decoded picture against."""
    idx = _packet_index(path, stream)
    return idx.pts if idx is not None else None


def _packet_index(path: str | Path, stream: int) -> SeekIndex | None:
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, stream)
    with _indexes_lock:
        if key in _indexes:
            _indexes.move_to_end(key)
            return _indexes[key]
    with open_video(path) as c:
        index = build_index(c, video_stream(c, path, stream))
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

    Every picture is checked against the stream's shape and the file's frames: one of another stored size or pixel
    aspect (SAR) than the stream's is refused (``_check_size``, ``_check_sar``: one shape a stream), and where
    packets are frames (``probe`` counts them), one carrying a later frame's stamp (the decoder dropped a damaged
    picture) is refused, never renumbered (``_check_stamp``).
    """

    def __init__(
        self, path: str | Path, stream: int | None = None, threaded: bool | None = None, whole_clip: bool = False
    ) -> None:
        """``threaded``: decode with FFmpeg's threads (True), on the calling thread (False), or as ``threads_pay``
        rules for the stored picture size (None; ``whole_clip``: the reader decodes the whole clip forward)."""
        self.path = Path(path)
        self.seeks = 0  # times the reader jumped (a seek) or started again
        self.decoded = 0  # pictures decoded (what reading cost; tests read it)
        self._container = open_video(self.path)
        try:
            s = video_stream(self._container, self.path, stream)
        except BaseException:
            self._container.close()
            raise
        cc = s.codec_context
        self.threaded = threads_pay(cc.width or 0, cc.height or 0, whole_clip) if threaded is None else threaded
        self.stream = s.index
        self.sar = stream_sar(s)
        #: the stored picture size every picture must have (the header's; the first picture's when it has none)
        self.size: tuple[int, int] | None = (cc.width, cc.height) if cc.width and cc.height else None
        #: the bitstream's own SAR where the stream starts (``_check_sar``), and whether it can only change at an
        #: IDR/IRAP picture (H.264/HEVC: a new SPS takes effect there, so the change is placed exactly)
        self._coded_sar = _coded_sar(cc)
        self._sar_at_key = cc.name in ("h264", "hevc")
        #: where packets are frames (``probe`` counts them), each frame's stamp: picture ``j`` must carry ``j``'s
        self._stamps = packet_stamps(self.path, s.index) if packets_are_frames(self._container, s) else None
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
            self._container = open_video(self.path)
            self._stream = video_stream(self._container, self.path, self.stream)
        if self.threaded:
            self._stream.thread_type = "AUTO"
        else:
            self._stream.thread_count = 1  # no thread pool at all (FFmpeg's default starts slice threads)
        self._gen = self._container.decode(self._stream)
        self.cur: int | None = None  # the number of the last picture returned
        self._next_at = 0  # the number the next picture has (counted) or should have (stamped)
        self._by_stamp = False  # after a seek: pictures are named by their stamps, and checked
        self._landing = False  # the next picture is the first after a seek

    def _seek(self, k: int) -> None:
        assert self._index is not None
        try:
            self._container.seek(self._index.pts[k], stream=self._stream, backward=True, any_frame=False)
        except av.error.FFmpegError:  # a container the demuxer cannot seek in: decode from the start
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
        return VideoEnded(
            f"{self.path}: the video ends {after}, earlier than its facts say; it changed since it was "
            "read (regenerate the manifest), or it is damaged"
        )

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
                if j is None:  # not where the index said: start again, counting
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
                    self._distrust()  # the stamps do not name the pictures: never seek on them
            assert frame is not None
            self._check_size(j, frame)
            self._check_stamp(j, frame)
            self._check_sar(j, frame)
            self.cur, self._next_at = j, j + 1
            return j, frame

    def _check_size(self, j: int, frame: av.VideoFrame) -> None:
        """Refuse a picture of another size than the stream's (a concatenated capture, a WebRTC recording that
        adapts to bandwidth): players disagree on what to show (ffmpeg scales to the first size, others resize
        the window), and every reader here assumes one size per stream."""
        got = (frame.width, frame.height)
        if self.size is None:
            self.size = got
        elif got != self.size:
            w, h = self.size
            raise DataError(
                f"{self.path}: the picture size changes mid-stream, from {w}x{h} to {got[0]}x{got[1]} at frame {j}; "
                f"vidaudit reads one size per stream: re-encode to one size first "
                f"(ffmpeg -i {self.path.name} -vf scale={w}:{h} OUT.mp4)"
            )

    def _check_stamp(self, j: int, frame: av.VideoFrame) -> None:
        """Refuse a picture that carries another frame's stamp where packets are frames: the decoder dropped a
        damaged packet's picture (ffmpeg skips it, others conceal it), or a packet held no picture, so counting
        would number every later picture one frame early against the file's facts, and its time with it."""
        stamps = self._stamps
        if stamps is None or frame.pts is None:
            return
        k = bisect.bisect_left(stamps, frame.pts)
        if k == j or k >= len(stamps) or stamps[k] != frame.pts:
            return
        if k > j:
            what = f"frame {j} does not" if k == j + 1 else f"frames {j}-{k - 1} do not"
            what += (
                f" decode (a damaged packet, or one with no picture: the next picture, frame {k}, comes in its place)"
            )
        else:
            what = f"the decoder returns an extra picture at frame {j} (it carries frame {k}'s time)"
        raise DataError(
            f"{self.path}: {what}; players disagree on such a file, ffmpeg skips a damaged frame and others conceal "
            f"it, and vidaudit will not renumber the frames after it: re-encode what decodes (ffmpeg -i "
            f"{self.path.name} OUT.mp4) or fetch the file again"
        )

    def _check_sar(self, j: int, frame: av.VideoFrame) -> None:
        """Refuse a picture whose pixel aspect differs from the stream's first (a broadcast capture switching 4:3 and
        16:9 at one stored size): players disagree (ffmpeg keeps the first shape, others reshape the window), and
        every reader here squares pixels by one SAR per stream. The decoder reports the bitstream's SAR as it parses
        it, ahead of the pictures it returns; in H.264/HEVC it takes effect at the next IDR/IRAP picture, where
        it is refused (elsewhere at the first picture returned after it was seen)."""
        now = _coded_sar(self._stream.codec_context)
        if now == self._coded_sar or (self._sar_at_key and not frame.key_frame):
            return
        a, b = self._coded_sar, now
        w, h = displayed_size(frame.width, frame.height, self.sar)
        where = "at" if self._sar_at_key else "by"
        raise DataError(
            f"{self.path}: the pixel aspect ratio (SAR) changes mid-stream, from {a.numerator}:{a.denominator} to "
            f"{b.numerator}:{b.denominator} {where} frame {j}; vidaudit reads one shape per stream: re-encode to "
            f"one shape first (ffmpeg -i {self.path.name} -vf scale={w}:{h},setsar=1 OUT.mp4)"
        )

    def frame(self, i: int) -> av.VideoFrame:
        """Frame ``i``, reached as cheaply as the index allows (``position_for``); a ``VideoEnded`` if there is none."""
        self.position_for(i)
        while True:
            j, f = self.next()
            if j == i:
                return f
            if j > i:  # pragma: no cover - position_for and the checks make it impossible
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


def _coded_sar(cc: av.video.codeccontext.VideoCodecContext) -> Fraction:
    """The SAR the decoder last parsed from the bitstream; unset (0) is square, as players read it."""
    sar = cc.sample_aspect_ratio
    return Fraction(sar) if sar and sar > 0 else Fraction(1)


def iter_frames(
    path: str | Path, half: bool = False, threaded: bool | None = None, stream: int | None = None
) -> Iterator[np.ndarray]:
    """Every frame in presentation order as displayed RGB uint8 (``half``: at half resolution, for analysis).

    ``threaded``: None decodes with FFmpeg's threads where they pay (``threads_pay``: pictures of 720p and
    more), False on the calling thread (cheaper inside a pool that already runs one worker per core).
    """
    with Decoder(path, stream, threaded, whole_clip=True) as d:
        convert = d.rgb_half if half else d.rgb
        for _, frame in d:
            yield convert(frame)


def iter_frames_reused(
    path: str | Path, half: bool = False, threaded: bool | None = None, stream: int | None = None
) -> Iterator[np.ndarray]:
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


def iter_constant_rate(
    path: str | Path, start_s: float = 0.0, end_s: float | None = None, stream: int | None = None
) -> Iterator[np.ndarray]:
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


def iter_selected(
    path: str | Path,
    indices: Sequence[int],
    half: bool = False,
    threaded: bool | None = None,
    width: int | None = None,
    stream: int | None = None,
) -> Iterator[tuple[int, np.ndarray]]:
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

        if want[-1] > SEEK_MIN_SKIP:  # else no seek can skip anything: no index needed
            d.index()
        for j, i in enumerate(want):
            try:
                frame = d.frame(i)
            except VideoEnded:
                raise DataError(
                    f"{path}: frames {want[j : j + 5]} do not exist (the video has fewer frames than its "
                    "manifest says; was it replaced? regenerate the manifest)"
                ) from None
            yield i, convert(frame)
