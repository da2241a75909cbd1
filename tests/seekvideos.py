"""Real files with several groups of pictures, each with what makes seeking in it exact, unsafe or impossible.

Each is made by a real encoder and muxer (Debian's ``ffmpeg``, or PyAV for a rotated VFR clip) and shows
``realvideos.frame_image(k)``, so :func:`realvideos.frame_code` reads its frame number back from any reader's output.
They are tiny (64x48, 72-96 frames) but have 3-4 keyframes, so a reader can seek in them.

========================  ==================================================================================
fixture                   what it holds for a seeking reader (checked with ffprobe in tests/video/test_video_seek.py)
========================  ==================================================================================
``gop_bframes.mp4``       H.264 with 3 B-frames, an IDR every 24 frames (closed GOPs): 4 clean entry points
``gop_bframes.mkv``       the same stream in Matroska (seeks by its Cues)
``gop_nocues.mkv``        the same stream in Matroska written to a pipe: no Cues, the demuxer seeks by reading
``open_gop.mp4``          H.264 with open GOPs: the keyframes are non-IDR I-frames with leading B-frames that
                          reference the previous group; no entry point but the start
``hevc_cra.mp4``          HEVC with CRA keyframes whose leading (RASL) pictures need the previous group
``intra_refresh.mp4``     H.264 with periodic intra refresh: the packets flagged as keyframes every 24 frames are
                          P-pictures (recovery points) that still reference the frames before them
``vp9_gop.webm``          VP9 in WebM, a key frame every 24 frames, millisecond stamps
``editlist_gop.mp4``      ``gop_bframes.mp4`` cut at 0.5 s by stream copy: an edit list whose first shown frame
                          is in the middle of the first group (the frames before it are decoded, not shown)
``rot90_vfr_gop.mp4``     a phone-like clip: display matrix 90 degrees, variable frame rate, a keyframe every
                          12 frames (PyAV's libx264)
========================  ==================================================================================
"""

from __future__ import annotations

import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np

from quirkvideos import Quirk, ffmpeg, pipe_encode
from realvideos import frame_image, write_video

W, H = 64, 48
FPS = 24


def _frames(n: int) -> list[np.ndarray]:
    return [frame_image(k, W, H) for k in range(n)]


def _cfr(path: Path, n: int, fps: float = FPS, first: int = 0, start: float = 0.0) -> Quirk:
    return Quirk(path, tuple(range(first, first + n)), tuple(start + k / fps for k in range(n)), (W, H), (W, H))


X264 = [
    "-c:v",
    "libx264",
    "-pix_fmt",
    "yuv420p",
    "-bf",
    "3",
    "-g",
    "24",
    "-keyint_min",
    "24",
    "-sc_threshold",
    "0",
    "-x264-params",
    "log-level=error",
]


def make_seekable(d: Path) -> dict[str, Quirk]:
    d.mkdir(parents=True, exist_ok=True)
    out: dict[str, Quirk] = {}
    frames = _frames(96)

    pipe_encode(d / "gop_bframes.mp4", frames, FPS, X264)
    out["gop_bframes.mp4"] = _cfr(d / "gop_bframes.mp4", 96)
    subprocess.run(
        [ffmpeg(), "-v", "error", "-y", "-i", str(d / "gop_bframes.mp4"), "-c", "copy", str(d / "gop_bframes.mkv")],
        check=True,
        capture_output=True,
    )
    out["gop_bframes.mkv"] = _cfr(d / "gop_bframes.mkv", 96)
    with open(d / "gop_nocues.mkv", "wb") as f:  # a pipe is not seekable: the muxer writes no Cues
        subprocess.run(
            [ffmpeg(), "-v", "error", "-i", str(d / "gop_bframes.mp4"), "-c", "copy", "-f", "matroska", "pipe:"],
            check=True,
            stdout=f,
            stderr=subprocess.PIPE,
        )
    out["gop_nocues.mkv"] = _cfr(d / "gop_nocues.mkv", 96)

    pipe_encode(d / "open_gop.mp4", frames, FPS, [*X264[:-1], "log-level=error:open-gop=1"])
    out["open_gop.mp4"] = _cfr(d / "open_gop.mp4", 96)
    pipe_encode(
        d / "hevc_cra.mp4",
        frames,
        FPS,
        [
            "-c:v",
            "libx265",
            "-pix_fmt",
            "yuv420p",
            "-x265-params",
            "log-level=error:keyint=24:min-keyint=24:scenecut=0:bframes=3",
        ],
    )
    out["hevc_cra.mp4"] = _cfr(d / "hevc_cra.mp4", 96)
    pipe_encode(
        d / "intra_refresh.mp4",
        frames,
        FPS,
        [
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-bf",
            "0",
            "-x264-params",
            "log-level=error:intra-refresh=1:keyint=24",
        ],
    )
    out["intra_refresh.mp4"] = _cfr(d / "intra_refresh.mp4", 96)
    pipe_encode(
        d / "vp9_gop.webm",
        frames[:72],
        FPS,
        ["-c:v", "libvpx-vp9", "-pix_fmt", "yuv420p", "-g", "24", "-deadline", "realtime", "-cpu-used", "8"],
    )
    out["vp9_gop.webm"] = Quirk(
        d / "vp9_gop.webm", tuple(range(72)), tuple(round(k * 1000 / FPS) / 1000 for k in range(72)), (W, H), (W, H)
    )

    # cut at 0.5 s by stream copy: ffmpeg keeps the group the cut falls in and writes an edit list that starts at
    # frame 12; the player's clock starts at the cut
    subprocess.run(
        [
            ffmpeg(),
            "-v",
            "error",
            "-y",
            "-ss",
            "0.5",
            "-i",
            str(d / "gop_bframes.mp4"),
            "-c",
            "copy",
            str(d / "editlist_gop.mp4"),
        ],
        check=True,
        capture_output=True,
    )
    out["editlist_gop.mp4"] = _cfr(d / "editlist_gop.mp4", 84, first=12)

    # rotated 90 degrees, two rates (30 fps then 10 fps), a keyframe every 12 frames
    pts = [i * 3000 for i in range(36)] + [108000 + i * 9000 for i in range(12)]
    write_video(
        d / "rot90_vfr_gop.mp4",
        pts,
        Fraction(1, 90000),
        rotation=90,
        size=(W, H),
        options={"g": "12", "bf": "2", "sc_threshold": "0"},
    )
    out["rot90_vfr_gop.mp4"] = Quirk(
        d / "rot90_vfr_gop.mp4", tuple(range(48)), tuple(p / 90000 for p in pts), (H, W), (W, H)
    )
    return out
