"""Where a reader can enter a stream by seeking and still return exactly the frames decoding from the start returns.

``decode.Decoder`` numbers frames by decoding from the start; it may jump ahead (or back) to a keyframe only where a
seek provably gives the same pictures, by the same numbers. A :class:`SeekIndex` is read from the stream's packets
(demuxed, never decoded) and holds the frames' stamps in presentation order (frame ``i`` has ``pts[i]``) and the
**clean entry points**: keyframes after which decoding reproduces every later frame. A keyframe is one when

- packets are frames (``streams.packets_are_frames``: MP4/MOV, MKV/WebM, progressive), every one stamped, no two
  frames sharing a stamp, and the frames an edit list cuts all come before the first shown one;
- it is a **clean cut** in presentation order: every packet stored before it is shown before it, every packet
  stored after it is shown after it (no leading pictures: an open GOP's B-frames, which need the previous group,
  make the keyframe no entry point);
- its bitstream starts afresh: an IDR picture in H.264 (a non-IDR I-frame the container flags as a keyframe may
  be referenced across), an IRAP picture in HEVC; other codecs' keyframes (VP8/VP9/AV1 key frames, MPEG-2/MPEG-4
  I-pictures, intra-only codecs) reset what later frames may reference.

Everywhere else (AVI, MPEG-TS/PS, MXF, ASF, FLV, field-coded streams, a stream without stamps) there is no index
and readers decode forward. The decoder checks the index while it reads (``decode.Decoder.next``): after a seek the
first picture must be a keyframe at an entry point and each later one must carry the next frame's stamp, and
decoding from the start must meet the stamps in order; one disagreement marks the index unusable (for every reader
of the file in this process) and the reader goes back to decoding from the start.

**When to seek** (``should_seek``): only to skip frames that hold no target and only when that saves work: the
entry point before the next target lies more than ``SEEK_MIN_SKIP`` frames past the frame the decoder would return
next. Targets inside the group of pictures being decoded, or just past its end, are reached by decoding on
(seeking to every target re-decodes the same group from its keyframe once per target: 1.3-4x slower on short
clips with long keyframe gaps).
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

import av

from vidaudit.video.streams import packets_are_frames

#: Seek only when it skips more than this many frames: a seek (demuxer reposition, decoder flush) costs about as
#: much as decoding 1-3 frames (benchmarks/README.md, "Reading frames"), so a shorter skip saves nothing.
SEEK_MIN_SKIP = 4

#: H.264 IDR slice; HEVC IRAP NAL unit types (BLA, IDR, CRA and reserved IRAP types)
_H264_IDR = 5
_HEVC_IRAP = range(16, 24)


@dataclass
class SeekIndex:
    """A stream's frames by stamp and its clean entry points (see the module docstring)."""

    pts: Sequence[int]  # frame i's presentation stamp (time-base units), ascending
    points: Sequence[int]  # frame numbers of the clean entry points, ascending; 0 (the start) first
    usable: bool = field(default=True)  # False once a decoder disagreed with it: nobody seeks on it again

    @property
    def n_frames(self) -> int:
        return len(self.pts)

    def number_of(self, pts: int | None) -> int | None:
        """The frame whose stamp is ``pts``, or None."""
        if pts is None:
            return None
        k = bisect.bisect_left(self.pts, pts)
        return k if k < len(self.pts) and self.pts[k] == pts else None

    def point_before(self, i: int) -> int:
        """The last entry point at or before frame ``i`` (0: the start)."""
        return self.points[bisect.bisect_right(self.points, i) - 1]

    def is_point(self, i: int) -> bool:
        k = bisect.bisect_left(self.points, i)
        return k < len(self.points) and self.points[k] == i

    def should_seek(self, next_at: int, i: int) -> int | None:
        """The entry point to seek to for frame ``i`` when the decoder's next picture is frame ``next_at``, or None
        to decode on (or, going back with no entry point before ``i``, to start again)."""
        kf = self.point_before(min(i, self.n_frames - 1))
        if next_at <= i:
            return kf if kf - next_at > SEEK_MIN_SKIP else None
        return kf if kf > 0 else None


def nal_units(data: bytes, length_size: int = 0) -> list[bytes]:
    """The NAL units of one H.264/HEVC packet: Annex B (``length_size`` 0: start codes, as libx264 emits them) or
    length-prefixed (sizes of ``length_size`` bytes, as MP4 and Matroska store them)."""
    if not length_size:
        # a NAL never ends in a zero byte (its stop bit), so zeros before a start code belong to the next one
        return [n.rstrip(b"\x00") for n in data.split(b"\x00\x00\x01")[1:]]
    out, i = [], 0
    while i + length_size <= len(data):
        size = int.from_bytes(data[i : i + length_size], "big")
        out.append(data[i + length_size : i + length_size + size])
        i += length_size + size
    if i != len(data):
        out.append(data[i:])  # a malformed tail: kept, so that it changes a digest
    return out


def _length_size(codec: str, extradata: bytes) -> int:
    """The size of a NAL length field in the stream's packets (from its avcC / hvcC record), 0 for start codes."""
    at = 21 if codec == "hevc" else 4
    if len(extradata) <= at or extradata[0] != 1:
        return 0
    return (extradata[at] & 3) + 1


def starts_afresh(data: bytes, codec: str, length_size: int) -> bool:
    """Whether a keyframe packet's picture references nothing stored before it (H.264: an IDR picture; HEVC: an IRAP
    picture; see the module docstring for the other codecs)."""
    nals = [n for n in nal_units(data, length_size) if n]
    if codec == "h264":
        return any(n[0] & 0x1F == _H264_IDR for n in nals)
    if codec == "hevc":
        vcl = [t for t in ((n[0] >> 1) & 0x3F for n in nals) if t < 32]
        return bool(vcl) and vcl[0] in _HEVC_IRAP
    return True


def build_index(c: av.container.InputContainer, s: av.video.stream.VideoStream) -> SeekIndex | None:
    """The stream's ``SeekIndex`` from one pass over its packets (``c`` freshly opened), or None where seeking
    cannot be exact (see the module docstring)."""
    if not packets_are_frames(c, s):
        return None
    codec = s.codec_context.name
    length_size = _length_size(codec, bytes(s.codec_context.extradata or b""))
    stamps: list[int] = []  # every packet's pts, in stored (decode) order
    shown: list[bool] = []  # not cut by an edit list
    fresh: list[bool] = []  # a keyframe whose bitstream starts afresh
    try:
        for pkt in c.demux(s):
            if not pkt.size:
                continue
            if pkt.pts is None:
                return None
            fresh.append(
                bool(pkt.is_keyframe)
                and not pkt.is_discard
                and (codec not in ("h264", "hevc") or starts_afresh(bytes(pkt), codec, length_size))
            )
            stamps.append(pkt.pts)
            shown.append(not pkt.is_discard)
    except av.error.FFmpegError:
        return None
    frames = sorted(p for p, v in zip(stamps, shown, strict=True) if v)
    if not frames or len(set(frames)) != len(frames):
        return None
    if any(p >= frames[0] for p, v in zip(stamps, shown, strict=True) if not v):
        return None  # a cut frame among the shown ones: an edit list this index does not model
    n = len(stamps)
    later_min = [0] * n  # the smallest stamp stored after each packet (None past the last)
    low: int | None = None
    for k in range(n - 1, -1, -1):
        later_min[k] = low if low is not None else stamps[k] + 1
        low = stamps[k] if low is None else min(low, stamps[k])
    points = {0}
    earlier_max: int | None = None  # the largest stamp stored before the packet
    for k, p in enumerate(stamps):
        if fresh[k] and (earlier_max is None or earlier_max < p) and later_min[k] > p:
            points.add(bisect.bisect_left(frames, p))
        earlier_max = p if earlier_max is None else max(earlier_max, p)
    return SeekIndex(array("q", frames), tuple(sorted(points)))  # 8 bytes a frame: an hour at 30 fps is 0.9 MB
