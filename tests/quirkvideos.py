"""Real files with the quirks of camcorders, old AVIs, broadcast and archive formats, written in their real formats.

Each fixture is what a user's file of that kind is on disk, made by a real encoder and muxer (Debian's ``ffmpeg``
or PyAV), except the field-coded H.264: no encoder at hand writes field pictures (x264 writes interlaced video as
MBAFF, which is frame-coded), so :func:`paff_h264` writes that bitstream itself, in the standard's syntax
(Main profile, CAVLC, every macroblock ``I_PCM``, one slice per field, ``field_pic_flag = 1``), and ffmpeg
decodes it like any AVCHD stream (``ffprobe -show_packets``: two packets per frame; ``-show_frames``: one
interlaced frame per field pair). Every frame ``k`` shows ``realvideos.frame_image(k)`` at the displayed size, so
:func:`realvideos.frame_code` reads it back from any reader's output.

========================  ==================================================================================
fixture                   its quirk (what was verified with ffprobe when it was written)
========================  ==================================================================================
``paff.mts``              H.264 field pictures in a BDAV (M2TS) stream, 64x64, 12 frames at 25i: 24 packets
                          of 20 ms, 12 frames of 40 ms, ``r_frame_rate`` 50; the two fields of a frame differ
                          (a comb block), so a deinterlaced frame is told from a woven one
``xvid_packed.avi``       XviD (libxvid, 2 B-frames) in AVI: packed bitstream (a P and a B frame in one packet,
                          then a few-byte "N-VOP" placeholder); the decoded frames' pts come out of order
                          (3, 4, 6, 5, 7, 9, 8, ...), their decode-order stamps in order from 3 / 25 s
``h264_dts_only.avi``     H.264 with B-frames in AVI: ffprobe prints no pts for any frame (as NTU RGB+D's clips);
                          the decode-order stamps put frame 0 at 2 / 25 s
``mpeg2_ps.mpg``          MPEG-2 with B-frames in an MPEG program stream (``-f vob``): ffprobe prints no pts for
                          some frames
``mpeg1_aspect.mpg``      MPEG-1 352x288 in an MPEG-1 system stream with a pel aspect code (ffprobe: SAR 49:33)
``mxf_sar.mxf``           MPEG-2 720x576 in MXF, 4:3 with SAR 16:15
``kinetics_sar.mp4``      H.264 340x256 with SAR 64:51 (Kinetics' anamorphic clips)
``two_streams.mkv``       two video streams: 64x48 first, 96x64 second; ffmpeg picks the larger
``cut.mkv``               an MKV cut off after about a tenth of its bytes: the header says 20 s, ~2 s remain
``guessed_rate.asf``      WMV2 in ASF, variable rate (20 frames over ~6.7 s): no average rate in the file,
                          a guessed rate far above the frames' own
========================  ==================================================================================

:func:`make_agreed` writes files every player shows alike (``cover_art.mp4``, ``empty_edit_tmcd.mov``,
``negative_cts.mp4``, ``cut_mid_gop.ts``, ``soft_telecine.ts``; their quirks are checked with ffprobe in
``test_each_agreed_fixture_has_its_quirk``).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np

from realvideos import frame_image


@dataclass(frozen=True)
class Quirk:
    """A fixture and its truth: each shown frame's code in presentation order, its time, the sizes."""

    path: Path
    codes: tuple[int, ...]
    times: tuple[float, ...]  # seconds from the container's presentation start
    stored: tuple[int, int]  # stored (width, height)
    shown: tuple[int, int]  # displayed (width, height): SAR applied
    sar: Fraction = Fraction(1)
    stream: int = 0  # the index of the stream a player picks
    notes: dict[str, object] = field(default_factory=dict)

    def on_screen(self, t: float) -> int:
        i = max(0, int(np.searchsorted(np.asarray(self.times), t + 5e-7, side="right")) - 1)
        return self.codes[i]


def ffmpeg() -> str:
    exe = shutil.which("ffmpeg")
    if exe is None:
        raise RuntimeError("ffmpeg not found: apt-get install -y ffmpeg")
    return exe


def pipe_encode(
    path: Path, frames: Sequence[np.ndarray], fps: float | str, args: Sequence[str], pre: Sequence[str] = ()
) -> None:
    """Encode RGB frames with Debian's ffmpeg (``args``: codec and muxer options)."""
    h, w = frames[0].shape[:2]
    cmd = [
        ffmpeg(),
        "-v",
        "error",
        "-y",
        *pre,
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-s",
        f"{w}x{h}",
        "-r",
        str(fps),
        "-i",
        "pipe:",
        *args,
        str(path),
    ]
    subprocess.run(
        cmd, input=b"".join(np.ascontiguousarray(f).tobytes() for f in frames), check=True, capture_output=True
    )


# --------------------------------------------------------------------------- field-coded H.264 (PAFF)


class _Bits:
    def __init__(self) -> None:
        self.bits: list[int] = []

    def u(self, n: int, v: int) -> None:
        self.bits.extend((v >> i) & 1 for i in range(n - 1, -1, -1))

    def ue(self, v: int) -> None:
        n = (v + 1).bit_length()
        self.u(n - 1, 0)
        self.u(n, v + 1)

    def se(self, v: int) -> None:
        self.ue(2 * v - 1 if v > 0 else -2 * v)

    def align(self) -> None:
        self.bits.extend([0] * (-len(self.bits) % 8))

    def trailing(self) -> None:
        self.bits.append(1)
        self.align()

    def raw(self, data: bytes) -> None:
        for b in data:
            self.u(8, b)

    def tobytes(self) -> bytes:
        return np.packbits(np.asarray(self.bits, np.uint8)).tobytes()


def _nal(ref_idc: int, kind: int, rbsp: bytes) -> bytes:
    """A NAL unit with its start code, emulation prevention applied."""
    out, zeros = bytearray(b"\x00\x00\x00\x01" + bytes([ref_idc << 5 | kind])), 0
    for b in rbsp:
        if zeros >= 2 and b <= 3:
            out.append(3)
            zeros = 0
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
    return bytes(out)


def paff_h264(frames: Sequence[np.ndarray], fps: int) -> bytes:
    """Annex B H.264 of RGB ``frames`` (width a multiple of 16, height of 32) coded as field pairs, top field
    first: each frame's even rows are one field picture, its odd rows the next (I_PCM macroblocks: exact pixels)."""
    h, w = frames[0].shape[:2]
    assert w % 16 == 0 and h % 32 == 0
    b = _Bits()
    b.u(8, 77), b.u(8, 0), b.u(8, 30), b.ue(0)  # Main profile, level 3, sps 0
    b.ue(0), b.ue(0), b.ue(4), b.ue(1), b.u(1, 0)  # frame_num 4 bits, poc type 0 (8 bits), 1 ref
    b.ue(w // 16 - 1), b.ue(h // 32 - 1)  # height in map units: field macroblock rows
    b.u(1, 0), b.u(1, 0), b.u(1, 1), b.u(1, 0)  # frame_mbs_only 0, mbaff 0, direct_8x8 1, no crop
    b.u(1, 1), b.u(4, 0)  # VUI: no aspect/overscan/signal/chroma-loc
    b.u(1, 1), b.u(32, 1), b.u(32, 2 * fps), b.u(1, 1)  # timing: 2 * fps ticks a second, fixed
    b.u(4, 0)
    b.trailing()
    out = bytearray(_nal(3, 7, b.tobytes()))
    b = _Bits()
    b.ue(0), b.ue(0), b.u(1, 0), b.u(1, 0), b.ue(0), b.ue(0), b.ue(0), b.u(1, 0), b.u(2, 0)
    b.se(0), b.se(0), b.se(0), b.u(1, 1), b.u(1, 0), b.u(1, 0)  # deblocking control present
    b.trailing()
    out += _nal(3, 8, b.tobytes())
    for k, rgb in enumerate(frames):
        yuv = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2YUV_I420)
        y, u, v = yuv[:h], yuv[h : h + h // 4].reshape(h // 2, w // 2), yuv[h + h // 4 :].reshape(h // 2, w // 2)
        for bottom in (0, 1):
            idr = k == 0 and bottom == 0
            fy, fu, fv = y[bottom::2], u[bottom::2], v[bottom::2]
            b = _Bits()
            b.ue(0), b.ue(7), b.ue(0), b.u(4, k % 16), b.u(1, 1), b.u(1, bottom)  # I slice, a field
            if idr:
                b.ue(0)
            b.u(8, (4 * k + bottom) % 256)  # pic_order_cnt_lsb
            b.u(2, 0) if idr else b.u(1, 0)  # ref pic marking
            b.se(0), b.ue(1)  # qp delta, no deblocking
            for my in range(fy.shape[0] // 16):
                for mx in range(w // 16):
                    b.ue(25)  # I_PCM
                    b.align()
                    for plane, s in ((fy, 16), (fu, 8), (fv, 8)):
                        b.raw(np.clip(plane[my * s : (my + 1) * s, mx * s : (mx + 1) * s], 1, 255).tobytes())
            b.trailing()
            out += _nal(3, 5 if idr else 1, b.tobytes())
    return bytes(out)


def mux_fields(annexb: Path, dst: Path, fps: int, start_s: float = 1.0) -> int:
    """Remux a field-coded Annex B stream into BDAV MPEG-TS (``.mts``), one PES per field at the field rate, as an
    AVCHD camcorder stores it; returns the number of packets written."""
    tb = Fraction(1, 90000)
    step = 90000 // (2 * fps)
    n = 0
    with (
        av.open(str(annexb), format="h264") as src,
        av.open(str(dst), "w", format="mpegts", options={"mpegts_m2ts_mode": "1"}) as out,
    ):
        st = out.add_stream_from_template(src.streams.video[0])
        st.time_base = tb
        for p in src.demux(src.streams.video[0]):
            if not p.size:
                continue
            p.pts = p.dts = int(start_s * 90000) + n * step
            p.duration, p.time_base, p.stream = step, tb, st
            out.mux(p)
            n += 1
    return n


def comb(img: np.ndarray) -> np.ndarray:
    """The picture with a block whose even rows are bright and odd rows dark: the two fields differ there."""
    out = img.copy()
    h, w = out.shape[:2]
    out[h // 8 : h // 2 : 2, w // 2 : w // 2 + w // 4] = 240
    out[h // 8 + 1 : h // 2 : 2, w // 2 : w // 2 + w // 4] = 20
    return out


# --------------------------------------------------------------------------- the fixtures


def _cfr(
    path: Path,
    n: int,
    fps: float,
    stored: tuple[int, int],
    shown: tuple[int, int] | None = None,
    sar: Fraction = Fraction(1),
    start: float = 0.0,
    **notes: object,
) -> Quirk:
    return Quirk(
        path, tuple(range(n)), tuple(start + k / fps for k in range(n)), stored, shown or stored, sar, notes=dict(notes)
    )


def _anamorphic(k: int, stored: tuple[int, int], shown: tuple[int, int]) -> np.ndarray:
    """Frame ``k`` as stored when it is displayed at ``shown``: the displayed picture squeezed to the stored size."""
    return cv2.resize(frame_image(k, *shown), stored, interpolation=cv2.INTER_AREA)


def make_quirks(d: Path) -> dict[str, Quirk]:
    d.mkdir(parents=True, exist_ok=True)
    out: dict[str, Quirk] = {}

    # field-coded H.264 in M2TS: 12 frames at 25i (24 field packets), first frame at 1.0 s on the stream's
    # clock (the container's start), so the clock starts at 0
    raw = d / "paff.h264"
    raw.write_bytes(paff_h264([comb(frame_image(k, 64, 64)) for k in range(12)], 25))
    packets = mux_fields(raw, d / "paff.mts", 25)
    raw.unlink()
    out["paff.mts"] = _cfr(d / "paff.mts", 12, 25, (64, 64), packets=packets)

    # XviD with packed B-frames in AVI
    frames = [frame_image(k, 64, 48) for k in range(30)]
    pipe_encode(d / "xvid_packed.avi", frames, 25, ["-c:v", "libxvid", "-bf", "2", "-g", "12", "-q:v", "3"])
    # the encoder's last two B-frames never leave it: 28 frames; decode-order stamps put frame 0 at 3 / 25 s
    out["xvid_packed.avi"] = _cfr(d / "xvid_packed.avi", 28, 25, (64, 48), start=0.12)

    # H.264 with B-frames in AVI: no pts
    pipe_encode(
        d / "h264_dts_only.avi",
        frames,
        25,
        ["-c:v", "libx264", "-bf", "2", "-g", "12", "-pix_fmt", "yuv420p", "-x264-params", "log-level=error"],
    )
    # decode-order stamps: the decoder's two-frame delay puts frame 0 at 2 / 25 s on ffmpeg's clock
    out["h264_dts_only.avi"] = _cfr(d / "h264_dts_only.avi", 30, 25, (64, 48), start=0.08)

    # MPEG-2 with B-frames in a program stream
    pipe_encode(
        d / "mpeg2_ps.mpg", frames, 25, ["-c:v", "mpeg2video", "-bf", "2", "-g", "12", "-q:v", "3", "-f", "vob"]
    )
    out["mpeg2_ps.mpg"] = _cfr(d / "mpeg2_ps.mpg", 30, 25, (64, 48))

    # MPEG-1 352x288 asked for 16:9: the encoder writes the nearest MPEG-1 pel aspect code, which ffprobe reads as
    # SAR 49:33: shown 522x288
    shown = (522, 288)
    pipe_encode(
        d / "mpeg1_aspect.mpg",
        [_anamorphic(k, (352, 288), shown) for k in range(10)],
        25,
        ["-c:v", "mpeg1video", "-aspect", "16:9", "-q:v", "4", "-f", "mpeg"],
    )
    out["mpeg1_aspect.mpg"] = _cfr(d / "mpeg1_aspect.mpg", 10, 25, (352, 288), shown, Fraction(49, 33))

    # MPEG-2 720x576 4:3 (SAR 16:15) in MXF
    shown = (768, 576)
    pipe_encode(
        d / "mxf_sar.mxf",
        [_anamorphic(k, (720, 576), shown) for k in range(8)],
        25,
        ["-c:v", "mpeg2video", "-aspect", "4:3", "-q:v", "4", "-g", "4", "-f", "mxf"],
    )
    out["mxf_sar.mxf"] = _cfr(d / "mxf_sar.mxf", 8, 25, (720, 576), shown, Fraction(16, 15))

    # Kinetics-style anamorphic H.264: 340x256 stored, SAR 64:51
    shown = (426, 256)
    pipe_encode(
        d / "kinetics_sar.mp4",
        [_anamorphic(k, (340, 256), shown) for k in range(15)],
        30,
        ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-vf", "setsar=64/51", "-x264-params", "log-level=error"],
    )
    out["kinetics_sar.mp4"] = _cfr(d / "kinetics_sar.mp4", 15, 30, (340, 256), shown, Fraction(64, 51))

    # two video streams: a 64x48 first (codes 100 + k) and a 96x64 second (codes k)
    a, b = d / "_a.mp4", d / "_b.mp4"
    pipe_encode(a, [frame_image(100 + k, 64, 48) for k in range(20)], 20, ["-c:v", "libx264", "-pix_fmt", "yuv420p"])
    pipe_encode(b, [frame_image(k, 96, 64) for k in range(20)], 20, ["-c:v", "libx264", "-pix_fmt", "yuv420p"])
    subprocess.run(
        [
            ffmpeg(),
            "-v",
            "error",
            "-y",
            "-i",
            str(a),
            "-i",
            str(b),
            "-map",
            "0:v",
            "-map",
            "1:v",
            "-c",
            "copy",
            str(d / "two_streams.mkv"),
        ],
        check=True,
        capture_output=True,
    )
    a.unlink()
    b.unlink()
    out["two_streams.mkv"] = Quirk(
        d / "two_streams.mkv", tuple(range(20)), tuple(k / 20 for k in range(20)), (96, 64), (96, 64), stream=1
    )

    # an MKV cut off after a tenth of its bytes (its header still says 20 s); noise keeps every frame a few kB
    full = d / "_full.mkv"
    rng = np.random.default_rng(0)
    noisy = []
    for k in range(200):
        img = frame_image(k, 64, 48)
        img[4:20, 40:60] = rng.integers(0, 256, (16, 20, 3), dtype=np.uint8)
        noisy.append(img)
    pipe_encode(full, noisy, 10, ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "10", "-qp", "10"])
    data = full.read_bytes()
    (d / "cut.mkv").write_bytes(data[: len(data) // 10])
    full.unlink()
    out["cut.mkv"] = _cfr(d / "cut.mkv", 0, 10, (64, 48), header_s=20.0)

    # variable-rate WMV2 in ASF (millisecond stamps): 20 frames at irregular times over ~7 s, on a 40 ms grid
    ticks = [0]
    for k in range(1, 20):
        ticks.append(ticks[-1] + (4 if k % 3 else 17))
    times = [t * 0.04 for t in ticks]
    lines = []
    for k in range(20):
        png = d / f"_f{k}.png"
        cv2.imwrite(str(png), cv2.cvtColor(frame_image(k, 64, 48), cv2.COLOR_RGB2BGR))
        gap = (ticks[k + 1] - ticks[k]) * 0.04 if k + 1 < 20 else 0.16
        lines.append(f"file '{png.name}'\nduration {gap:.2f}\n")
    (d / "_frames.txt").write_text("".join(lines))
    subprocess.run(
        [
            ffmpeg(),
            "-v",
            "error",
            "-y",
            "-f",
            "concat",
            "-i",
            "_frames.txt",
            "-c:v",
            "wmv2",
            "-q:v",
            "3",
            "-fps_mode",
            "vfr",
            "guessed_rate.asf",
        ],
        check=True,
        capture_output=True,
        cwd=d,
    )
    for p in d.glob("_f*"):
        p.unlink()
    out["guessed_rate.asf"] = Quirk(d / "guessed_rate.asf", tuple(range(20)), tuple(times), (64, 48), (64, 48))
    return out


# --------------------------------------------------------------------------- files players agree on, read as they show them


def soft_telecine(m2v: bytes) -> bytes:
    """An MPEG-2 elementary stream of progressive 23.976 fps frames (no B-frames) flagged for 3:2 pulldown, as
    DGPulldown flags a film master for NTSC: every sequence header at 29.97 fps, ``progressive_sequence`` off, and
    each picture's ``top_field_first``/``repeat_first_field`` in the 3, 2, 3, 2 field cadence (progressive frames
    shown for 3, 2, 3, 2 fields: 4 frames every 10 fields)."""
    b = bytearray(m2v)
    at = 0
    while (at := b.find(b"\x00\x00\x01\xb3", at + 1)) >= 0:  # frame_rate_code 1 (24000/1001) -> 4 (30000/1001)
        assert b[at + 7] & 0x0F == 1
        b[at + 7] = (b[at + 7] & 0xF0) | 4
    cadence, n, at = [(1, 1), (0, 0), (0, 1), (1, 0)], 0, 0
    while (at := b.find(b"\x00\x00\x01\xb5", at + 1)) >= 0:
        kind = b[at + 4] >> 4
        if kind == 1:  # sequence extension: progressive_sequence off
            b[at + 5] &= ~0x08
        elif kind == 8:  # picture coding extension: top_field_first, repeat_first_field; progressive_frame on
            tff, rff = cadence[n % 4]
            b[at + 7] = (b[at + 7] & ~0x82) | tff << 7 | rff << 1
            b[at + 8] |= 0x80
            n += 1
    return bytes(b)


def make_agreed(d: Path) -> dict[str, Quirk]:
    """Files with a quirk every player shows the same way (see ``tests/video/test_video_quirks.py``): cover art
    larger than the video, an MP4 that starts with an empty edit beside a timecode track, a TS cut mid-GOP,
    soft-telecined MPEG-2, an MP4 with negative composition offsets and no edit list."""
    d.mkdir(parents=True, exist_ok=True)
    out: dict[str, Quirk] = {}

    def run(*args: str) -> None:
        subprocess.run([ffmpeg(), "-v", "error", "-y", *args], check=True, capture_output=True, cwd=d)

    h264 = ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-x264-params", "log-level=error"]
    pipe_encode(d / "_v.mp4", [frame_image(k, 96, 64) for k in range(30)], 25, [*h264, "-bf", "3"])
    # cover art (a 2600x2000 PNG marked attached_pic) beside a 96x64 default video: by size alone it would outscore
    # the video, default bonus and all, yet ffmpeg never picks a cover
    cv2.imwrite(str(d / "_cover.png"), cv2.cvtColor(frame_image(200, 2600, 2000), cv2.COLOR_RGB2BGR))
    run("-i", "_v.mp4", "-i", "_cover.png", "-map", "0:v", "-map", "1", "-c:v:0", "copy", "-c:v:1", "png",
        "-disposition:v:1", "attached_pic", "cover_art.mp4")  # fmt: skip
    out["cover_art.mp4"] = _cfr(d / "cover_art.mp4", 30, 25, (96, 64))
    # a start delay (an empty edit of 0.5 s, then the media) and a tmcd timecode track: the clock starts with it
    run("-itsoffset", "0.5", "-i", "_v.mp4", "-c", "copy", "-timecode", "01:00:00:00", "empty_edit_tmcd.mov")
    out["empty_edit_tmcd.mov"] = _cfr(d / "empty_edit_tmcd.mov", 30, 25, (96, 64), start=0.5)
    # negative composition offsets (B-frame delay) and no edit list: the first decode stamps are negative
    run("-i", "_v.mp4", "-c", "copy", "-use_editlist", "0", "-movflags", "negative_cts_offsets",
        "-avoid_negative_ts", "disabled", "negative_cts.mp4")  # fmt: skip
    out["negative_cts.mp4"] = _cfr(d / "negative_cts.mp4", 30, 25, (96, 64))
    # MPEG-2 in TS (open GOPs of 12, 2 B-frames) cut at a TS packet boundary 45% in: the first pictures lack
    # their references; ffmpeg shows from the first I-picture on (times: ffmpeg's, from the first packet's)
    pipe_encode(d / "_full.ts", [frame_image(k, 96, 64) for k in range(60)], 25,
                ["-c:v", "mpeg2video", "-bf", "2", "-g", "12", "-q:v", "3"])  # fmt: skip
    data = (d / "_full.ts").read_bytes()
    (d / "cut_mid_gop.ts").write_bytes(data[len(data) // 188 * 45 // 100 * 188 :])
    out["cut_mid_gop.ts"] = Quirk(d / "cut_mid_gop.ts", tuple(range(36, 60)), (), (96, 64), (96, 64))
    # soft telecine: 24 progressive frames flagged 3:2, shown at 3 and 2 field periods of 1/59.94 s
    pipe_encode(d / "_film.m2v", [frame_image(k, 96, 64) for k in range(24)], "24000/1001",
                ["-c:v", "mpeg2video", "-bf", "0", "-g", "12", "-q:v", "3", "-f", "mpeg2video"])  # fmt: skip
    (d / "_soft.m2v").write_bytes(soft_telecine((d / "_film.m2v").read_bytes()))
    fields = [10 * (k // 4) + (0, 3, 5, 8)[k % 4] for k in range(24)]
    ticks = [round(f * 1501.5) for f in fields]  # a field is 1/59.94 s: 1501.5 ticks of 90 kHz, rounded
    with (
        av.open(str(d / "_soft.m2v"), format="mpegvideo") as src,
        av.open(str(d / "soft_telecine.ts"), "w", format="mpegts") as dst,
    ):
        st = dst.add_stream_from_template(src.streams.video[0])
        st.time_base = Fraction(1, 90000)
        packets = [p for p in src.demux(src.streams.video[0]) if p.size]
        assert len(packets) == len(ticks)
        for p, t in zip(packets, ticks, strict=True):  # stamped at the cadence, as a DVD's muxer stamps them
            p.pts = p.dts = t
            p.time_base, p.stream = Fraction(1, 90000), st
            dst.mux(p)
    out["soft_telecine.ts"] = Quirk(
        d / "soft_telecine.ts", tuple(range(24)), tuple(t / 90000 for t in ticks), (96, 64), (96, 64)
    )
    for p in d.glob("_*"):
        p.unlink()
    return out
