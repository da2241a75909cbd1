"""A video file's facts as a player shows it (``probe``): the stream ffmpeg picks (or the one named), its frames
as decoded pictures with each one's best-effort time, a rate the frame times support, the displayed size (SAR
applied, then rotation); a file cut off before its header's duration is refused (the rules are
``video/streams.py``'s). ``video_ref`` / ``ref_from`` turn the facts into a manifest's ``VideoRef``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av

from vidaudit.core.errors import DataError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.timeline import Timeline, is_constant
from vidaudit.core.types import MAX_FPS, MAX_FRAMES, VideoRef
from vidaudit.video.display import orientation
from vidaudit.video.streams import (
    END_DURATION_FORMATS,
    HEADER_DURATION_FORMATS,
    best_effort,
    cut_off,
    displayed_size,
    frame_rate,
    open_video,
    packets_are_frames,
    stream_sar,
    video_stream,
)

#: The smallest displayed size worth sending a model (files past ``MAX_FRAMES``/``MAX_FPS`` are refused too).
MIN_SIZE = 2


@dataclass(frozen=True)
class VideoInfo:
    """A video's facts as a player shows it: displayed size (square pixels, upright), presentation clock, stream."""

    fps: float
    width: int  # displayed: SAR applied, then rotation
    height: int
    n_frames: int
    duration_s: float
    rotation: int = 0  # degrees counter-clockwise a player turns the stored picture
    start_s: float = 0.0  # the first frame's time from the presentation start
    frame_times: tuple[float, ...] | None = None  # each frame's time, when the rate is not constant
    stream: int = 0  # the index of the video stream read
    video_streams: int = 1  # how many video streams the file has
    sar: Fraction = Fraction(1)  # sample aspect ratio of the stored picture
    stored_size: tuple[int, int] = (0, 0)  # the decoded picture's (width, height), before SAR and rotation

    @property
    def timeline(self) -> Timeline:
        return Timeline.of_facts(self.n_frames, self.fps, self.start_s, self.frame_times, self.duration_s)


#: the facts a ``VideoInfo`` and a ``VideoRef`` both declare, under the same name and type (the clock, the displayed
#: size and rotation): ``ref_from`` copies them as they are. The three others a ref records (``sar``,
#: ``stored_size``, ``stream``) are written only where they differ from an ordinary file's, so they are not here;
#: ``tests/video/test_video_probe_facts.py`` checks that this lists every other field the two share.
SHARED_FACTS = ("fps", "width", "height", "n_frames", "duration_s", "rotation", "start_s", "frame_times")


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
    ends: dict[int, float]  # stream index -> end of its last packet (seconds)


#: ``probe(packets=)``: given the video stream read, a function called with each of its packets' bytes (those with
#: any), in stored order, during the pass ``probe`` makes anyway
PacketFeed = Callable[[av.video.stream.VideoStream], Callable[[bytes], None]]


def _by_packets(
    c: av.container.InputContainer, s: av.video.stream.VideoStream, p: Path, feed: Callable[[bytes], None] | None = None
) -> _Read:
    """Frames from the video packets' presentation stamps (where packets are frames: ``packets_are_frames``)."""
    stamps: list[int] = []
    durations: dict[int, int] = {}
    ends: dict[int, float] = {}
    try:
        for pkt in _video_packets(c, s, ends):
            if feed is not None and pkt.size:
                feed(bytes(pkt))
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


def _by_decoding(
    c: av.container.InputContainer, s: av.video.stream.VideoStream, p: Path, feed: Callable[[bytes], None] | None = None
) -> _Read:
    """Frames as the decoder returns them (field pairs woven into one, packed B-frames unpacked), each timed by the
    whole stream's best-effort rule (``streams.best_effort``)."""
    pts: list[int | None] = []
    dts: list[int | None] = []
    last_duration = 0
    first: av.VideoFrame | None = None
    ends: dict[int, float] = {}
    try:
        for pkt in _video_packets(c, s, ends):
            if feed is not None and pkt.size:
                feed(bytes(pkt))
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
        raise DataError(
            f"{p}: two frames share a presentation time (or the frames' stamps go back); re-encode it "
            "(e.g. ffmpeg -i IN OUT.mp4)"
        )
    return _Read(stamps, last_duration or step, first, ends)


def _video_packets(
    c: av.container.InputContainer, s: av.video.stream.VideoStream, ends: dict[int, float]
) -> Iterator[av.Packet[Any]]:
    """The packets of the video stream ``s`` in file order; every other stream's packets only note in ``ends``
    where that stream ends."""
    for pkt in c.demux():
        if pkt.stream_index != s.index:
            _note_end(ends, pkt)
            continue
        yield pkt


def _note_end(ends: dict[int, float], pkt: av.Packet[Any]) -> None:
    ts = pkt.pts if pkt.pts is not None else pkt.dts
    if ts is not None and pkt.time_base is not None:
        end = float((ts + (pkt.duration or 0)) * pkt.time_base)
        if end > ends.get(pkt.stream_index, -math.inf):
            ends[pkt.stream_index] = end


def probe(path: str | Path, stream: int | None = None, packets: PacketFeed | None = None) -> VideoInfo:
    """A video's facts as a player shows it: its frames (decoded pictures), their times, its displayed shape.

    ``stream``: the index of the video stream to read (default: the one ffmpeg picks). ``packets``: handed the
    stream, it returns a function that sees every packet of it (``PacketFeed``; ``encode.probe_stored`` digests
    them: one pass over the file, not two). Where packets are frames
    (``streams.packets_are_frames``: MP4, MOV, MKV, WebM, progressive) they are read without decoding; elsewhere
    the stream is decoded and timed by its best-effort stamps (``streams.best_effort``). The rate is the stream's
    average where the frames support it (``streams.frame_rate``); the clip is constant-rate only if every stamp
    agrees with it. Any file that is not a usable video (no video stream, no frames, an absurd rate or size,
    undecodable, cut off) is a ``DataError`` naming the file.
    """
    p = Path(path)
    with open_video(p) as c:
        s = video_stream(c, p, stream)
        tb = s.time_base
        if tb is None or tb <= 0:
            raise DataError(f"{p}: the video stream has no time base; re-encode it (e.g. ffmpeg -i IN OUT.mp4)")
        feed = packets(s) if packets is not None else None
        read = _by_packets(c, s, p, feed) if packets_are_frames(c, s) else _by_decoding(c, s, p, feed)
        stamps = read.stamps
        if not stamps:
            raise DataError(f"{p} has a video stream with no frames; give a file with at least one frame")
        if len(set(stamps)) != len(stamps):
            raise DataError(f"{p}: two frames share a presentation time; re-encode it (e.g. ffmpeg -i IN OUT.mp4)")
        first = read.first or _first_frame(p, s.index)
        rotation = orientation(first)[0]
        origin = _presentation_start(c, float(stamps[0] * tb))
        num, den = tb.numerator, tb.denominator  # float(st * tb), written in ints: int / int rounds as exactly
        times = [st * num / den - origin for st in stamps]
        n = len(times)
        fps = frame_rate(s.average_rate, s.guessed_rate, times, lambda r: is_constant(times, r))
        if not (math.isfinite(fps) and 0 < fps <= MAX_FPS):
            raise DataError(
                f"{p}: frame rate {fps:g} is not usable (must be in (0, {MAX_FPS:g}]); re-encode it "
                "at a constant rate (e.g. ffmpeg -i IN -r 30 OUT.mp4)"
            )
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
        info = VideoInfo(
            fps=fps,
            width=w,
            height=h,
            n_frames=n,
            duration_s=duration,
            rotation=rotation,
            start_s=start,
            frame_times=frame_times,
            stream=s.index,
            video_streams=len(c.streams.video),
            sar=sar,
            stored_size=(first.width, first.height),
        )
        _refuse_cut_off(c, s, p, float(stamps[0] * tb), info.duration_s + origin, read.ends)
    return info


def _refuse_cut_off(
    c: av.container.InputContainer,
    s: av.video.stream.VideoStream,
    p: Path,
    first_s: float,
    end_s: float,
    ends: dict[int, float],
) -> None:
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
        if set(c.format.name.split(",")) & END_DURATION_FORMATS:
            start = min(start, 0.0)  # Matroska's Duration counts from time 0, however late the first block is
        promised, present = c.duration / av.time_base, max([end_s, *ends.values()]) - start
    else:
        return
    if cut_off(promised, present):
        raise DataError(
            f"{p} is cut off: its header promises {promised:.3g} s of video but the file holds "
            f"{max(present, 0):.3g} s (an interrupted download or copy?); fetch it again, or keep the "
            "part present by remuxing it (ffmpeg -i IN -c copy OUT.mkv)"
        )


def _first_frame(p: Path, index: int | None = None) -> av.VideoFrame:
    """The first frame a player shows (it carries the display matrix and the decoded size)."""
    with open_video(p) as c:
        try:
            for frame in c.decode(video_stream(c, p, index)):
                return frame
        except av.error.FFmpegError as e:
            raise DataError(f"cannot decode {p}: its first frame fails ({e.strerror or e}); the file is damaged") from e
    raise DataError(f"cannot decode {p}: no frame decodes; the file is damaged or truncated")


def video_ref(root: str | Path, rel: str, stream: int | None = None) -> VideoRef:
    """A manifest's ``VideoRef`` for the written file ``root/rel``: its sha256 and the facts ``probe`` reads."""
    path = Path(root) / rel
    return ref_from(probe(path, stream), rel, sha256_file(path))


def ref_from(info: VideoInfo, path: str, sha256: str | None) -> VideoRef:
    """The ``VideoRef`` of a probed file: every fact a run relies on (clock, orientation, shape, stream included).

    The stream is recorded where the file has several video streams, the stored size and SAR where pixels are not
    square; an ordinary file's ref has neither, so its manifest line is what it always was."""
    square_px = info.sar == 1
    return VideoRef(
        path=path,
        sha256=sha256,
        **{name: getattr(info, name) for name in SHARED_FACTS},
        sar=None if square_px else (info.sar.numerator, info.sar.denominator),
        stored_size=None if square_px else info.stored_size,
        stream=info.stream if info.video_streams > 1 else None,
    )
