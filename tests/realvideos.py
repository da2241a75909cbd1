"""Real video files of the kinds users bring, made with PyAV, and an independent player to read them.

Each fixture is a real encoded file with a real quirk: a display matrix (phone clips shot sideways or
upside down), two frame rates, a skipped frame, a first frame later than the container's start (an audio
track that starts first), an edit list that cuts the first frames, millisecond-rounded stamps (WebM),
VP9 / AV1 / HEVC / MPEG-4 Part 2 / odd sizes, and the unusable ones (audio only, no frames, 1x1, cut off).

Every frame ``k`` shows, in its intended (displayed) orientation, a white block at the top left and the
bits of ``k`` as bright cells along the bottom; :func:`frame_code` reads ``k`` back from any upright
image, and :func:`is_upright` checks the block. The file stores the picture turned against its display
matrix, so only a reader that applies the matrix sees it upright.

:class:`Player` is the independent reader: the system's ``ffmpeg``/``ffprobe`` (autorotate on, edit lists
applied, passthrough timing), whose frames are placed on the clock the way a player does (time 0 is the
container's start; the frame at ``t`` is the last one whose time is at or before ``t``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

W, H = 96, 64  # displayed size of the fixtures (before any rotation of the stored picture)
BITS = 8


def frame_image(k: int, w: int = W, h: int = H) -> np.ndarray:
    """The displayed picture of frame ``k``: a white block top left, ``k``'s bits along the bottom."""
    d = np.full((h, w, 3), 30, np.uint8)
    d[: h // 2, : w // 3] = 250
    bw = w // BITS
    for b in range(BITS):
        if (k >> b) & 1:
            d[h - max(h // 5, 4) :, b * bw : (b + 1) * bw] = 230
    return d


def frame_code(img: np.ndarray) -> int:
    """``k`` read back from an upright picture made by :func:`frame_image` (any codec's small errors pass)."""
    h, w = img.shape[:2]
    bw = w // BITS
    row = img[h - max(h // 5, 4) // 2 - 1, :, :].astype(int).mean(axis=1)
    return sum(1 << b for b in range(BITS) if row[b * bw + bw // 2] > 130)


def is_upright(img: np.ndarray) -> bool:
    h, w = img.shape[:2]
    tl = img[h // 8 : h // 3, w // 24 : w // 4].mean()
    tr = img[h // 8 : h // 3, -w // 4 : -w // 24].mean()
    return tl > 180 and tr < 100


@dataclass(frozen=True)
class Made:
    """A fixture file and its truth: each frame's code, in presentation order, and its time on the clock."""

    path: Path
    codes: tuple[int, ...]
    times: tuple[float, ...]  # seconds from the container's presentation start
    rotation: int = 0
    size: tuple[int, int] = (W, H)  # displayed (width, height)

    def on_screen(self, t: float) -> int:
        """The code a player shows at ``t`` (logged times are to the microsecond: half of one is slack)."""
        i = max(0, int(np.searchsorted(np.asarray(self.times), t + 5e-7, side="right")) - 1)
        return self.codes[i]


@contextmanager
def scheduling_kept() -> Iterator[None]:
    """Restore the calling thread's scheduling policy after encoding. PyAV 18.1's bundled SVT-AV1 4.1, run as
    root, switches the thread that opens the encoder to SCHED_FIFO 99; every process a test worker starts
    after that (a browser, a ``vidaudit`` subprocess) inherits real-time priority, and on 2 cores two spinning
    real-time processes starve the kernel work they wait on (seen: headless Chromium stuck in wait4)."""
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        yield
    finally:
        if (os.sched_getscheduler(0), os.sched_getparam(0)) != (policy, param):
            os.sched_setscheduler(0, policy, param)


def _write_video(
    path: Path,
    pts: list[int],
    time_base: Fraction,
    *,
    codec: str = "libx264",
    rate: Fraction | int = 30,
    rotation: int = 0,
    size: tuple[int, int] = (W, H),
    pix_fmt: str = "yuv420p",
    options: dict[str, str] | None = None,
    audio_s: float = 0.0,
    fmt: str | None = None,
) -> None:
    """Encode frames 0..len(pts)-1 at the given stamps (``time_base`` units); audio of ``audio_s`` s from 0."""
    w, h = size
    c = av.open(str(path), "w", format=fmt)
    st = c.add_stream(codec, rate=rate)
    st.width, st.height = (h, w) if rotation in (90, 270) else (w, h)
    st.pix_fmt = pix_fmt
    st.codec_context.time_base = time_base
    st.options = dict(options or {})
    if rotation:
        st.set_display_rotation(rotation)
    a = c.add_stream("aac", rate=8000) if audio_s else None
    for k, p in enumerate(pts):
        stored = np.ascontiguousarray(np.rot90(frame_image(k, w, h), -(rotation // 90)))
        f = av.VideoFrame.from_ndarray(stored, format="rgb24")
        f.pts = p
        for pk in st.encode(f):
            c.mux(pk)
    for pk in st.encode():
        c.mux(pk)
    if a is not None:
        mux_silence(c, a, int(audio_s * 8000 / 1024) + 1)
    c.close()


def write_video(path: Path, pts: list[int], time_base: Fraction, **kw: Any) -> None:
    """Encode frames 0..len(pts)-1 at the given stamps (``time_base`` units), the thread's scheduling kept
    (``scheduling_kept``); the options are ``_write_video``'s."""
    with scheduling_kept():
        _write_video(path, pts, time_base, **kw)


def mux_silence(c: av.container.OutputContainer, a: av.audio.stream.AudioStream, frames: int) -> None:
    """``frames`` blocks of 1024 silent samples at 8 kHz into the AAC stream ``a``, flushed."""
    for i in range(frames):
        af = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
        af.sample_rate, af.pts = 8000, i * 1024
        for pk in a.encode(af):
            c.mux(pk)
    for pk in a.encode():
        c.mux(pk)


def make_all(d: Path) -> dict[str, Made]:
    """Every readable fixture, keyed by name."""
    d.mkdir(parents=True, exist_ok=True)
    out: dict[str, Made] = {}
    x265 = {"x265-params": "log-level=error"}

    def cfr(name: str, n: int, fps: int = 30, start: int = 0, **kw) -> None:
        write_video(d / name, [start + i for i in range(n)], Fraction(1, fps), rate=fps, **kw)
        out[name] = Made(
            d / name, tuple(range(n)), tuple((start + i) / fps for i in range(n)), kw.get("rotation", 0), _shown(kw)
        )

    for rot in (90, 180, 270):
        cfr(f"rot{rot}.mp4", 30, rotation=rot)
    # two rates: 1 s at 30 fps, then 1 s at 10 fps (a phone that slows down in low light)
    pts = [i * 3000 for i in range(30)] + [90000 + i * 9000 for i in range(10)]
    write_video(d / "vfr_two_rates.mp4", pts, Fraction(1, 90000))
    out["vfr_two_rates.mp4"] = Made(d / "vfr_two_rates.mp4", tuple(range(40)), tuple(p / 90000 for p in pts))
    # a phone's jittery VFR with a display matrix: 180 degrees (moviepy's fire2.mp4 is like this)
    jitter = [0, 2900, 6100, 9000, 12100, 14900, 18000, 21200, 23900, 27000, 30100, 33000, 36000, 39100, 41900]
    write_video(d / "phone_vfr_rot180.mp4", jitter, Fraction(1, 90000), rotation=180)
    out["phone_vfr_rot180.mp4"] = Made(
        d / "phone_vfr_rot180.mp4", tuple(range(15)), tuple(p / 90000 for p in jitter), 180
    )
    # MPEG-4 Part 2 in AVI with one skipped frame (frame slot 4 never written)
    skip = [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12]
    write_video(d / "skipped_frame.avi", skip, Fraction(1, 10), codec="mpeg4", rate=10)
    out["skipped_frame.avi"] = Made(d / "skipped_frame.avi", tuple(range(12)), tuple(p / 10 for p in skip))
    # the video starts 0.5 s after the audio: the clock starts with the audio
    write_video(d / "late_start.mp4", [15 + i for i in range(30)], Fraction(1, 30), audio_s=1.6)
    out["late_start.mp4"] = Made(d / "late_start.mp4", tuple(range(30)), tuple((15 + i) / 30 for i in range(30)))
    # HEVC with an edit list that cuts the first 5 frames (as a trimmed stream copy leaves it)
    write_video(d / "hevc_editlist.mp4", [i - 5 for i in range(35)], Fraction(1, 30), codec="libx265", options=x265)
    out["hevc_editlist.mp4"] = Made(d / "hevc_editlist.mp4", tuple(range(5, 35)), tuple(i / 30 for i in range(30)))
    # VP9 in WebM: millisecond stamps at 15 fps (frame k at round(k * 66.67) ms)
    write_video(d / "vp9.webm", list(range(30)), Fraction(1, 15), codec="libvpx-vp9", rate=15, fmt="webm")
    out["vp9.webm"] = Made(d / "vp9.webm", tuple(range(30)), tuple(round(k * 1000 / 15) / 1000 for k in range(30)))
    cfr("av1.mp4", 20, codec="libsvtav1", options={"svtav1-params": "log-level=0"})
    cfr("hevc.mp4", 20, codec="libx265", options=x265)
    cfr("odd_size.mp4", 12, size=(65, 49), pix_fmt="yuv444p")
    return out


#: display matrices of mirrored clips (a front camera's, or a clip flipped by an editor), as a ``tkhd`` stores them
#: (16.16 fixed point, row by row), with the (rotation counter-clockwise, mirrored left to right first) each shows
MIRRORS: dict[str, tuple[tuple[int, ...], int, bool]] = {
    "hflip.mp4": ((-65536, 0, 0, 0, 65536, 0), 0, True),
    "vflip.mp4": ((65536, 0, 0, 0, -65536, 0), 180, True),
    "transpose.mp4": ((0, 65536, 0, 65536, 0, 0), 90, True),
    "antitranspose.mp4": ((0, -65536, 0, -65536, 0, 0), 270, True),
}


def make_mirrored(d: Path, n: int = 12) -> dict[str, Made]:
    """MP4s whose display matrix mirrors the picture (``MIRRORS``): H.264 from Debian's ffmpeg, its ``tkhd`` matrix
    then set as a phone or editor writes it (ffmpeg 5.1 has no option to write a mirroring matrix). The stored
    picture is the displayed one turned back and mirrored, so a player that applies the matrix shows ``frame_image(k)``
    upright; one that only turns it shows it mirrored (or upside down)."""
    d.mkdir(parents=True, exist_ok=True)
    out: dict[str, Made] = {}
    for name, (matrix, rotation, _) in MIRRORS.items():
        stored = [np.ascontiguousarray(np.rot90(frame_image(k, W, H), -(rotation // 90))[:, ::-1]) for k in range(n)]
        h, w = stored[0].shape[:2]
        raw = d / f"_{name}"
        subprocess.run(
            ["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}", "-r", "10"]
            + ["-i", "pipe:", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-x264-params", "log-level=error", str(raw)],
            input=b"".join(f.tobytes() for f in stored),
            check=True,
            capture_output=True,
        )
        data = bytearray(raw.read_bytes())
        raw.unlink()
        at = data.index(b"tkhd") + 4  # version 0: flags, two times, track id, reserved, duration, reserved, layer,
        at += 4 + 4 + 4 + 4 + 4 + 4 + 8 + 2 + 2 + 2 + 2  # group, volume, reserved; then the matrix
        assert data[at : at + 36] == bytes.fromhex("00010000" + "00" * 12 + "00010000" + "00" * 12 + "40000000")
        data[at : at + 24] = b"".join(v.to_bytes(4, "big", signed=True) for v in matrix)
        (d / name).write_bytes(data)
        out[name] = Made(d / name, tuple(range(n)), tuple(k / 10 for k in range(n)), rotation, (W, H))
    return out


def _shown(kw: dict) -> tuple[int, int]:
    w, h = kw.get("size", (W, H))
    return (w, h)


def make_unusable(d: Path) -> dict[str, Path]:
    """Files that are not usable videos, each of a different kind."""
    d.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    audio = d / "audio_only.m4a"
    c = av.open(str(audio), "w", format="mp4")
    mux_silence(c, c.add_stream("aac", rate=8000), 8)
    c.close()
    out["audio_only"] = audio
    zero = d / "zero_frames.mp4"  # a video track with no samples beside an audio track
    c = av.open(str(zero), "w", format="mp4")
    v = c.add_stream("libx264", rate=30)
    v.width, v.height, v.pix_fmt = 64, 48, "yuv420p"
    mux_silence(c, c.add_stream("aac", rate=8000), 4)
    c.close()
    out["zero_frames"] = zero
    tiny = d / "one_pixel.mp4"
    write_video(tiny, [0, 1, 2], Fraction(1, 10), rate=10, size=(1, 1), pix_fmt="yuv444p")
    out["one_pixel"] = tiny
    hourly = d / "one_frame_an_hour.mp4"
    write_video(hourly, [0, 3600, 7200], Fraction(1, 1), rate=Fraction(1, 3600))
    out["one_frame_an_hour"] = hourly
    full = d / "full.mp4"
    write_video(full, list(range(60)), Fraction(1, 30))
    cut = d / "truncated.mp4"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 3])
    out["truncated"] = cut
    text = d / "notes.mp4"
    text.write_text("these are my notes, not a video\n" * 20)
    out["not_a_video"] = text
    return out


#: what ffmpeg showed for a file's bytes: (sha256, suffix, square) -> (times, frames); the same bytes give the same
#: frames, so a file many tests (or one test, frame by frame) ask about is decoded once per process. The frames are
#: read-only arrays (``np.frombuffer``) and each caller gets its own lists. Kept up to _READ_CAP bytes of pixels.
_READ: OrderedDict[tuple[str, str, bool], tuple[list[float], list[np.ndarray]]] = OrderedDict()
_READ_CAP = 256 << 20


class Player:
    """ffmpeg as a player: every frame it shows (upright, edit lists applied) and when, on its clock."""

    def __init__(self) -> None:
        self.ffmpeg, self.ffprobe = shutil.which("ffmpeg"), shutil.which("ffprobe")

    @classmethod
    def required(cls) -> Player:
        p = cls()
        if p.ffmpeg and p.ffprobe:
            return p
        msg = "ffmpeg/ffprobe not found: `apt-get install -y ffmpeg` to check frames against an independent player"
        if os.environ.get("CI"):
            pytest.fail(msg + " (CI installs it in .ci/run)", pytrace=False)
        print(msg)
        pytest.skip(msg)

    def frames(self, path: Path, square: bool = True) -> tuple[list[float], list[np.ndarray]]:
        """(times from the container's start, displayed RGB frames) of the video stream ffmpeg picks (:meth:`read`),
        read once per file content (``_READ``)."""
        key = (hashlib.sha256(Path(path).read_bytes()).hexdigest(), Path(path).suffix.lower(), square)
        got = _READ.get(key)
        if got is None:
            got = _READ[key] = self.read(path, square)
            while len(_READ) > 1 and sum(f.nbytes for _, fs in _READ.values() for f in fs) > _READ_CAP:
                _READ.popitem(last=False)
        _READ.move_to_end(key)
        return list(got[0]), list(got[1])

    def read(self, path: Path, square: bool = True) -> tuple[list[float], list[np.ndarray]]:
        """(times from the container's start, displayed RGB frames) of the video stream ffmpeg picks.

        ffmpeg chooses the stream itself (no ``-map``; the choice is read from its stream mapping), decodes with
        its defaults (autorotate, edit lists; a field pair is one woven frame) and, with ``square``, makes the
        pixels square the way ``-vf scale=iw*sar:ih`` does. A frame's time is its best-effort timestamp as ffprobe
        prints it; one it prints none for (the last frames of a decode-order AVI) is one frame after the last."""
        mapping = subprocess.run(
            [self.ffmpeg, "-v", "info", "-nostats", "-i", str(path), "-frames:v", "1", "-f", "null", "-"],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
        found = re.search(r"Stream #0:(\d+)(?:\[0x[0-9a-f]+\])?(?:\(\w+\))? -> #0:0", mapping)
        if found is None:
            raise AssertionError(f"ffmpeg maps no video stream of {path}:\n{mapping}")
        index = int(found.group(1))
        probe = json.loads(
            subprocess.run(
                [
                    self.ffprobe,
                    "-v",
                    "error",
                    "-select_streams",
                    str(index),
                    "-show_frames",
                    "-show_entries",
                    "frame=pts_time,best_effort_timestamp_time,width,height:format=start_time"
                    ":stream=width,height,sample_aspect_ratio:stream_side_data=rotation",
                    "-of",
                    "json",
                    str(path),
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        start = float(probe["format"].get("start_time") or 0.0)
        stamps = [f.get("best_effort_timestamp_time", f.get("pts_time")) for f in probe["frames"]]
        times: list[float] = []
        for st in stamps:
            if st is None:
                gap = times[-1] - times[-2] if len(times) > 1 else 0.04
                times.append(times[-1] + gap)
            else:
                times.append(float(st) - start)
        w, h = probe["frames"][0]["width"], probe["frames"][0]["height"]
        sar = Fraction(probe["streams"][0].get("sample_aspect_ratio", "1:1").replace(":", "/"))
        vf: list[str] = []
        rot = 0
        for sd in probe["streams"][0].get("side_data_list", []):
            rot = int(round(float(sd.get("rotation", 0)))) % 360
        if rot in (90, 270):  # autorotate's transpose runs first and inverts the SAR
            w, h = h, w
            sar = 1 / sar if sar not in (0, 1) else sar
        if square and sar not in (0, 1):
            w = int(w * sar)
            vf = ["-vf", "scale=iw*sar:ih"]
        raw = subprocess.run(
            [
                self.ffmpeg,
                "-v",
                "error",
                "-i",
                str(path),
                *vf,
                "-fps_mode",
                "passthrough",
                "-f",
                "rawvideo",
                "-pix_fmt",
                "rgb24",
                "pipe:",
            ],
            capture_output=True,
            check=True,
        ).stdout
        n = len(raw) // (w * h * 3)
        imgs = [np.frombuffer(raw, np.uint8, w * h * 3, i * w * h * 3).reshape(h, w, 3) for i in range(n)]
        if n != len(times):
            raise AssertionError(f"ffmpeg gave {n} frames but ffprobe {len(times)} for {path}")
        order = np.argsort(times, kind="stable")
        return [times[i] for i in order], [imgs[i] for i in order]

    def at(self, path: Path, t: float) -> np.ndarray:
        times, imgs = self.frames(path)  # ffprobe prints times to the microsecond: that much slack
        i = max(0, int(np.searchsorted(np.asarray(times), t + 1e-6, side="right")) - 1)
        return imgs[i]
