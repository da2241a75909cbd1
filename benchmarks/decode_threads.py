"""Single- against multi-threaded decoding, per codec and size: CPU seconds and wall seconds, side by side.

For each codec (H.264, HEVC, VP9, AV1, MPEG-4 Part 2) and size (320x240 to 1920x1080) a short clip of a moving
pattern is encoded with Debian's ffmpeg (``testsrc2``, 30 fps, keyframe every 60 frames), then decoded with PyAV
(the decoder vidaudit reads with) on the calling thread (``thread_count = 1``) and with FFmpeg's threads
(``thread_type = "AUTO"``, what ``io.Decoder(threaded=True)`` sets), two ways each:

- **long**: every frame of the clip, from the start (a full decode: verification, imports, perturbations);
- **short**: the 12 frames after a seek to a keyframe (what a seeking reader decodes per target).

CPU is the process's CPU time (all threads, ``time.process_time``), wall is ``time.perf_counter``; the cases
alternate and each figure is the best of ``--repeats``. The ratios it prints (threaded / single: CPU above 1 is
the threads' overhead, wall below 1 their gain) are what ``io.DECODE_THREADS_MIN_PIXELS`` is chosen from
(benchmarks/README.md, "Reading frames"). Run: ``python benchmarks/decode_threads.py [--frames 90] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import av

CODECS = {
    "h264": ("mp4", ["-c:v", "libx264", "-x264-params", "log-level=error"]),
    "hevc": ("mp4", ["-c:v", "libx265", "-preset", "fast", "-x265-params", "log-level=error"]),
    "vp9": ("webm", ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-row-mt", "1"]),
    "av1": ("mp4", ["-c:v", "libsvtav1", "-preset", "10"]),
    "mpeg4": ("mp4", ["-c:v", "mpeg4", "-q:v", "4"]),
}
SIZES = ["320x240", "640x360", "1280x720", "1920x1080"]
SHORT = 12


def make(dst: Path, codec: str, size: str, frames: int) -> Path:
    ext, args = CODECS[codec]
    out = dst / f"{codec}-{size}.{ext}"
    if not out.is_file():
        subprocess.run(
            [
                "ffmpeg",
                "-v",
                "error",
                "-y",
                "-f",
                "lavfi",
                "-i",
                f"testsrc2=size={size}:rate=30",
                "-frames:v",
                str(frames),
                *args,
                "-g",
                "60",
                "-pix_fmt",
                "yuv420p",
                str(out),
            ],
            check=True,
            capture_output=True,
        )
    return out


def decode(path: Path, threaded: bool, short: bool) -> int:
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        if threaded:
            s.thread_type = "AUTO"
        else:
            s.thread_count = 1
        n = 0
        if short:
            c.seek(int(2 / s.time_base), stream=s, backward=True)  # the keyframe at 2 s
        for _ in c.decode(s):
            n += 1
            if short and n == SHORT:
                break
        return n


def measure(fn, repeats: int) -> tuple[float, float]:
    cpu, wall = [], []
    for _ in range(repeats):
        t0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - t0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=90, help="frames per clip (the long decode)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--codecs", default=",".join(CODECS))
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--keep", type=Path, help="keep the clips in this folder (and reuse them)")
    args = ap.parse_args()
    if shutil.which("ffmpeg") is None:
        raise SystemExit("ffmpeg not found: apt-get install -y ffmpeg")
    tmp = None if args.keep else tempfile.TemporaryDirectory()
    dst = args.keep or Path(tmp.name)  # type: ignore[union-attr]
    dst.mkdir(parents=True, exist_ok=True)
    print(
        f"decode, single thread vs FFmpeg's threads (AUTO, {os.cpu_count()} CPUs); best of {args.repeats}; "
        f"load average {os.getloadavg()[0]:.1f}; {args.frames} frames long, {SHORT} after a seek short"
    )
    print(
        f"{'codec':6} {'size':>9} {'case':5} {'1t CPU ms':>9} {'mt CPU ms':>9} {'CPU x':>6} "
        f"{'1t wall ms':>10} {'mt wall ms':>10} {'wall x':>6} {'ms/frame 1t':>11}"
    )
    for codec in args.codecs.split(","):
        for size in args.sizes.split(","):
            clip = make(dst, codec, size, args.frames)
            for case, short in (("long", False), ("short", True)):
                n = decode(clip, False, short)
                one: list[tuple[float, float]] = []
                many: list[tuple[float, float]] = []
                for _ in range(args.repeats):  # alternate, so both meet the same load
                    one.append(measure(lambda: decode(clip, False, short), 1))
                    many.append(measure(lambda: decode(clip, True, short), 1))
                c1, w1 = min(c for c, _ in one), min(w for _, w in one)
                cm, wm = min(c for c, _ in many), min(w for _, w in many)
                print(
                    f"{codec:6} {size:>9} {case:5} {1000 * c1:9.1f} {1000 * cm:9.1f} {cm / c1:6.2f} "
                    f"{1000 * w1:10.1f} {1000 * wm:10.1f} {wm / w1:6.2f} {1000 * c1 / n:11.2f}"
                )
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
