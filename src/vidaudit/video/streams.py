"""What a player makes of a file's streams and stamps: which video stream, how many frames, when, at what shape.

The rules every reader applies (``video.probe``, ``video.decode``), each ffmpeg's (Debian's ``ffmpeg`` is the player the tests compare with):

- **The stream**: with several video streams, ffmpeg's own pick when nothing is mapped: the largest
  ``width * height``, plus 5,000,000 for a stream marked default; cover art (an attached picture) only when
  nothing else is there; the first of equals. A caller may name another stream by its index.
- **Frames are decoded pictures.** A field-coded stream (AVCHD, broadcast: each field its own packet) gives one
  frame per field pair, woven as ffmpeg outputs it by default (no deinterlacing); a packed-B-frame AVI gives the
  frames its decoder returns. Packets stand in for frames only where they cannot differ: in ISO BMFF (MP4, MOV)
  and Matroska/WebM, whose packets each carry one frame's own presentation time, and not for a codec that can
  store fields apart (H.264, MPEG-2, VC-1) unless the stream is progressive. Elsewhere (AVI, MPEG-TS/PS, MXF,
  ASF, FLV, ...) the stream is decoded to count and time its frames.
- **A frame's time** is ffmpeg's best-effort timestamp, decided for the whole stream: the decoded frames'
  presentation stamps when every frame has one and they increase; else the stamps of the packets that
  returned them (decode-order stamps, which is all an AVI has), a missing one at the end taken as one frame
  after the last; else ffmpeg's per-frame guess. Packet order is never frame order.
- **The rate** is the stream's average rate (frames over duration), unless the frames' own times do not
  support it: a rate that is only guessed from the time base (``r_frame_rate``), or an average more than 1.5x
  away from the frames' own mean rate, gives way to that mean, so a variable-rate clip converted to a
  constant rate keeps about as many frames as it has.
- **The displayed shape**: a non-square sample aspect ratio (SAR) is applied as ``ffmpeg -vf scale=iw*sar:ih``
  does: the width becomes ``floor(width * SAR)``, the height stays.
- **Cut-off files** are refused: a file whose video ends more than ``max(1 s, 5%)`` before the duration its
  header promises (an interrupted download or copy) is a ``DataError``; only containers whose header states
  a duration (MP4/MOV, MKV/WebM, AVI, ASF, MXF, FLV) promise one. A Matroska Duration runs from the segment's
  time 0 (its muxer writes the latest end), so a recording that starts late (a broadcast remuxed with
  ``-copyts``) promises no more than it holds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from itertools import pairwise
from pathlib import Path

import av

from vidaudit.core.errors import DataError

#: ``AV_FIELD_PROGRESSIVE``: the parser found frame pictures only.
PROGRESSIVE = 1
#: Containers whose packets each hold one frame with its own presentation time.
PACKET_CLOCK_FORMATS = frozenset({"mov", "mp4", "matroska", "webm"})
#: Codecs that can code a frame as two field pictures, one packet each.
FIELD_CODECS = frozenset({"h264", "mpeg2video", "vc1", "wmv3"})
#: A header's duration may exceed the video's by this much (or by 5%) before the file counts as cut off.
CUT_OFF_SLACK_S = 1.0
#: Containers whose header states a duration (elsewhere ffmpeg estimates one from the stamps it finds, or from
#: the bit rate, which promises nothing).
HEADER_DURATION_FORMATS = frozenset({"mov", "mp4", "matroska", "webm", "avi", "asf", "mxf", "flv"})
#: Containers whose header's duration is the end of the latest block on the file's clock, not a length from its start.
END_DURATION_FORMATS = frozenset({"matroska", "webm"})


def ffmpeg_score(s: av.video.stream.VideoStream) -> int:
    """ffmpeg's score for a video stream when no ``-map`` is given (``ffmpeg_mux_init.c``, ``map_auto_video``)."""
    disposition = int(s.disposition)
    if disposition & int(av.stream.Disposition.attached_pic):
        return 1
    cc = s.codec_context
    return (cc.width or 0) * (cc.height or 0) + 5_000_000 * bool(disposition & int(av.stream.Disposition.default))


def best_stream(streams: Sequence[av.video.stream.VideoStream]) -> av.video.stream.VideoStream:
    """The stream ffmpeg shows: the highest score, the first of equals (``max`` keeps the first)."""
    return max(streams, key=ffmpeg_score)


def stream_sar(s: av.video.stream.VideoStream) -> Fraction:
    """The sample aspect ratio a player applies: the container's, else the codec's (``av_guess_sample_aspect_ratio``);
    1 when neither says."""
    sar = s.sample_aspect_ratio
    return Fraction(sar) if sar and sar > 0 else Fraction(1)


def displayed_size(width: int, height: int, sar: Fraction) -> tuple[int, int]:
    """The stored picture's size once its pixels are square: ``floor(width * sar) x height`` (ffmpeg's
    ``scale=iw*sar:ih``)."""
    if sar == 1:
        return width, height
    return max(1, math.floor(width * sar)), height


def packets_are_frames(c: av.container.InputContainer, s: av.video.stream.VideoStream) -> bool:
    """Whether the stream's packets are its frames, one each, stamped with their own presentation times."""
    if not set(c.format.name.split(",")) & PACKET_CLOCK_FORMATS:
        return False
    return s.codec_context.name not in FIELD_CODECS or s.codec_context.field_order == PROGRESSIVE


def best_effort(pts: Sequence[int | None], dts: Sequence[int | None], step: int) -> list[int] | None:
    """Each decoded frame's time (time-base units), ffmpeg's best effort decided for the whole stream (see the module
    docstring): presentation stamps if complete and increasing, else decode stamps with a missing tail filled in at
    ``step`` per frame, else ffmpeg's per-frame guess (``guess_correct_pts``); None if no rule gives increasing times."""
    if pts and all(p is not None for p in pts) and _increasing(pts):  # type: ignore[arg-type]
        return list(pts)  # type: ignore[arg-type]
    for times in (_filled(dts, step), _filled(_guessed(pts, dts), step)):
        if times is not None and _increasing(times):
            return times
    return None


def _increasing(xs: Sequence[int]) -> bool:
    return all(b > a for a, b in pairwise(xs))


def _filled(xs: Sequence[int | None], step: int) -> list[int] | None:
    """``xs`` with each missing stamp one ``step`` after the one before (none before the first: None)."""
    out: list[int] = []
    for x in xs:
        if x is None:
            if not out:
                return None
            x = out[-1] + max(step, 1)
        out.append(x)
    return out


def _guessed(pts: Sequence[int | None], dts: Sequence[int | None]) -> list[int | None]:
    """FFmpeg's ``guess_correct_pts``, frame by frame: pts until they have gone back more often than dts have."""
    out: list[int | None] = []
    faulty_pts = faulty_dts = 0
    last_pts = last_dts = None
    for p, d in zip(pts, dts, strict=True):
        if d is not None:
            faulty_dts += last_dts is not None and d <= last_dts
            last_dts = d
        elif p is not None:
            last_dts = p
        if p is not None:
            faulty_pts += last_pts is not None and p <= last_pts
            last_pts = p
        elif d is not None:
            last_pts = d
        out.append(p if p is not None and (faulty_pts <= faulty_dts or d is None) else d)
    return out


def frame_rate(
    average: Fraction | None, guessed: Fraction | None, times: Sequence[float], constant_at: Callable[[float], bool]
) -> float:
    """The clip's rate (see the module docstring). ``constant_at(fps)``: whether every frame time is on that rate's
    grid, in which case the rate is supported whatever its source."""
    n = len(times)
    mean = Fraction(n - 1) / Fraction(times[-1] - times[0]) if n > 1 and times[-1] > times[0] else None
    for rate in (average, guessed):
        if rate is None or rate <= 0:
            continue
        if n < 2 or constant_at(float(rate)):
            return float(rate)
        if rate is average and mean is not None and mean / 1.5 <= rate <= mean * 1.5:
            return float(rate)
    if mean is None:
        return float(average or guessed or 0)
    return float(mean.limit_denominator(1001))


def cut_off(promised_s: float | None, present_s: float) -> bool:
    """Whether a header's promise of ``promised_s`` of video is broken by the ``present_s`` the file holds."""
    if promised_s is None or not math.isfinite(promised_s) or promised_s <= 0:
        return False
    return promised_s - present_s > max(CUT_OFF_SLACK_S, 0.05 * promised_s)


def open_video(path: str | Path) -> av.container.InputContainer:
    """The file opened for reading; a missing or unreadable file is a ``DataError`` saying what to give instead."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"video not found: {p}; regenerate it or fix the manifest's video.path")
    try:
        return av.open(str(p))
    except av.error.FFmpegError as e:  # e.g. a text file or a truncated download: say what, not FFmpeg's errno
        reason = (getattr(e, "strerror", None) or str(e)).rstrip(".").lower()
        raise DataError(
            f"cannot decode {p}: not a readable video ({reason}); give a video file FFmpeg can "
            "decode (e.g. an MP4, WebM, MKV, AVI or MOV), or, if vidaudit wrote it, delete it and "
            "generate it again"
        ) from e


def video_stream(
    c: av.container.InputContainer, p: str | Path, index: int | None = None
) -> av.video.stream.VideoStream:
    """The video stream a player shows (``streams.best_stream``), or the one at ``index``."""
    if not c.streams.video:
        kinds: list[str] = sorted({str(s.type) for s in c.streams}) or ["no streams"]
        raise DataError(
            f"cannot decode {p}: not a readable video, it has no video stream (only {', '.join(kinds)}); "
            "give a video file (e.g. an MP4) or a still image"
        )
    if index is None:
        return best_stream(c.streams.video)
    for s in c.streams.video:
        if s.index == index:
            return s
    have = ", ".join(f"{s.index} ({s.codec_context.width}x{s.codec_context.height})" for s in c.streams.video)
    raise DataError(f"{p}: stream {index} is not a video stream of the file; its video streams are {have}")


def header_size(path: str | Path, index: int | None = None) -> tuple[int, int]:
    """The displayed width and height (square pixels, before any turn) of the stream a reader decodes
    (``video_stream``: the one ffmpeg shows, or ``index``), from the file's header: no frame is decoded."""
    with open_video(path) as c:
        s = video_stream(c, path, index)
        return displayed_size(s.codec_context.width, s.codec_context.height, stream_sar(s))
