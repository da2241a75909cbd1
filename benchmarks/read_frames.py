"""Frames at stated times, side by side: vidaudit's seeking reader against an exact seek-and-decode-forward reader,
decord, OpenCV, ``ffmpeg -ss`` and lmms-eval's PyAV loop: CPU seconds, and whether each frame is the player's.

Three parts, in one process, each case best of ``--repeats`` (CPU: ``time.process_time``, all threads; a peer run
as a subprocess (``ffmpeg -ss``) adds its children's CPU from ``getrusage``):

1. **A long clip**: 120 s of a moving pattern at 1280x720, 30 fps (``testsrc2``), libx264 with a keyframe every 250
   frames (``-g 250``), made here by Debian's ffmpeg (kept in ``--work``). K = 8 and K = 32 frames: the frame on
   screen at the centre of each of K equal segments (``frames#K``). Readers: vidaudit now (``iter_selected``:
   seeks over groups of pictures holding no frame, on the calling thread), vidaudit at ``--before`` (decoding from
   the start), the exact reference written here (PyAV: for each frame, seek to the keyframe at or before it, decode
   forward to its stamp, on the calling thread; frames converted by vidaudit's ``to_rgb`` so the bytes compare),
   decord, OpenCV, ``ffmpeg -ss`` and lmms-eval's PyAV loop. The player's frames are Debian's ffmpeg's (``select``
   by frame number, times from ffprobe); a reader's frame is right when, of the player's frames i-1, i, i+1, it is
   nearest to frame i, within 3 levels on average (peers convert YUV to RGB their own way).
2. **Real-file fixtures** (tests/realvideos.py, tests/quirkvideos.py, tests/seekvideos.py: rotated, VFR, edit
   lists, B-frames, open GOPs, field pairs, packed-B and DTS-only AVI, MPEG-PS, MXF, SAR, two streams): on each,
   8 stated times (segment centres), each reader asked for the frame at t the way its users ask (vidaudit: the
   player's clock, ``Timeline.on_screen``; decord, OpenCV, lmms-eval: the index ``int(t * fps)`` with the fps each
   reports; ``ffmpeg -ss t``). Each fixture frame carries its number in its pixels: a frame is right when its
   number is the one on screen at t, it is upright, and it has the displayed size.
3. **Short clips no slower than today**: vidaudit now against ``--before`` on 24 s 854x480 clips like the ones
   vidaudit renders (ultrafast, keyframe every 60) and on a 10 s 320x240 clip with one keyframe, at several K.
4. **The demo's report** (``--demo RUN``): ``vidaudit report`` before and after, and its files compared.

A peer that is not installed is skipped with a printed reason (``pip install decord==0.6.0`` for decord; OpenCV
and lmms-eval are extras). Run: ``python benchmarks/read_frames.py [--repeats 3] [--work DIR] [--parts 1,2,3,4] [--demo out/demo/run]``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np
from bench_common import REPO, modules_at

from vidaudit.video.decode import iter_selected
from vidaudit.video.display import to_rgb
from vidaudit.video.probe import probe
from vidaudit.video.sampling import uniform_count

sys.path.insert(0, str(REPO / "tests"))
BEFORE = "cebb2ed"


# --------------------------------------------------------------------------- readers: each (path, times) -> frames


class Ask:
    """What a reader is asked: the stated times, and the frames on the player's clock (vidaudit's probe)."""

    def __init__(self, path: Path, times: list[float]) -> None:
        self.path, self.times = path, times
        info = probe(path)
        self.clock = info.timeline
        self.indices = [self.clock.on_screen(t) for t in times]


def vidaudit_now(ask: Ask) -> list[np.ndarray]:
    got = dict(iter_selected(ask.path, ask.indices))
    return [got[i] for i in ask.indices]


def vidaudit_before(io_before) -> Callable[[Ask], list[np.ndarray]]:
    def read(ask: Ask) -> list[np.ndarray]:
        got = dict(io_before.iter_selected(ask.path, ask.indices))
        return [got[i] for i in ask.indices]

    return read


def reference(ask: Ask) -> list[np.ndarray]:
    """Exact seek + decode forward: frame i is the i-th stamp of the packets (demuxed once); for each frame, seek to
    the keyframe at or before its stamp and decode forward to it."""
    with av.open(str(ask.path)) as c:
        s = c.streams.video[0]
        pts = sorted(p.pts for p in c.demux(s) if p.size and not p.is_discard)
    out: dict[int, np.ndarray] = {}
    with av.open(str(ask.path)) as c:
        s = c.streams.video[0]
        s.thread_count = 1
        for i in sorted(set(ask.indices)):
            c.seek(pts[i], stream=s, backward=True)
            for f in c.decode(s):
                if f.pts == pts[i]:
                    out[i] = to_rgb(f)
                    break
    return [out[i] for i in ask.indices]


def decord_reader(ask: Ask) -> list[np.ndarray]:
    import decord

    vr = decord.VideoReader(str(ask.path), ctx=decord.cpu(0))
    fps, n = vr.get_avg_fps(), len(vr)
    idx = [min(int(t * fps), n - 1) for t in ask.times]
    return list(vr.get_batch(idx).asnumpy())


def opencv_reader(ask: Ask) -> list[np.ndarray]:
    import cv2

    cap = cv2.VideoCapture(str(ask.path))
    fps = cap.get(cv2.CAP_PROP_FPS)
    out = []
    for t in ask.times:
        cap.set(cv2.CAP_PROP_POS_FRAMES, int(t * fps))
        ok, bgr = cap.read()
        out.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB) if ok else np.zeros((1, 1, 3), np.uint8))
    cap.release()
    return out


def ffmpeg_ss(ask: Ask) -> list[np.ndarray]:
    out = []
    for t in ask.times:
        ppm = subprocess.run(
            [
                "ffmpeg",
                "-v",
                "error",
                "-ss",
                f"{t:.6f}",
                "-i",
                str(ask.path),
                "-frames:v",
                "1",
                "-f",
                "image2pipe",
                "-c:v",
                "ppm",
                "pipe:",
            ],
            capture_output=True,
        ).stdout
        m = re.match(rb"P6\s+(\d+)\s+(\d+)\s+255\s", ppm)
        if m is None:
            out.append(np.zeros((1, 1, 3), np.uint8))
            continue
        w, h = int(m.group(1)), int(m.group(2))
        out.append(np.frombuffer(ppm, np.uint8, w * h * 3, m.end()).reshape(h, w, 3))
    return out


def lmms_eval_loop(ask: Ask) -> list[np.ndarray]:
    """lmms-eval's ``read_video`` path for MP4 (``load_video_stream``'s loop, threads on), asked for the index of
    each time at the stream's average rate."""
    from lmms_eval.models.model_utils.load_video import record_video_length_stream

    with av.open(str(ask.path)) as c:
        c.streams.video[0].thread_type = "AUTO"
        rate = float(c.streams.video[0].average_rate or 25)
        idx = [int(t * rate) for t in ask.times]
        order = np.asarray(sorted(set(idx)))
        frames = record_video_length_stream(c, order)
        got = {i: f.to_ndarray(format="rgb24") for i, f in zip(order.tolist(), frames, strict=False)}
    return [got.get(i, np.zeros((1, 1, 3), np.uint8)) for i in idx]


def peers() -> dict[str, Callable[[Ask], list[np.ndarray]] | str]:
    """The peers, or why one is skipped."""
    out: dict[str, Callable[[Ask], list[np.ndarray]] | str] = {}
    for name, module, fn, hint in (
        ("decord", "decord", decord_reader, "pip install decord==0.6.0"),
        ("OpenCV", "cv2", opencv_reader, "pip install opencv-python-headless"),
        ("lmms-eval PyAV loop", "lmms_eval", lmms_eval_loop, "pip install lmms-eval"),
    ):
        try:
            __import__(module)
            out[name] = fn
        except ImportError:
            out[name] = f"not installed ({hint})"
    out["ffmpeg -ss"] = ffmpeg_ss if shutil.which("ffmpeg") else "ffmpeg not found (apt-get install -y ffmpeg)"
    return out


def cpu_of(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.process_time()
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    got = fn()
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() - t0 + (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime), got


def best(repeats: int, fn: Callable[[], object]) -> tuple[float, object]:
    runs = [cpu_of(fn) for _ in range(repeats)]
    return min(c for c, _ in runs), runs[-1][1]


# --------------------------------------------------------------------------- part 1: the long clip


def make_clip(work: Path) -> Path:
    clip = work / "clip720_120s_g250.mp4"
    if not clip.is_file():
        print(f"making {clip.name} (120 s, 1280x720, libx264 -g 250; a few minutes on a loaded machine)", flush=True)
        subprocess.run(
            [
                "ffmpeg",
                "-v",
                "error",
                "-y",
                "-f",
                "lavfi",
                "-i",
                "testsrc2=size=1280x720:rate=30:duration=120",
                "-c:v",
                "libx264",
                "-g",
                "250",
                "-pix_fmt",
                "yuv420p",
                "-x264-params",
                "log-level=error",
                str(clip) + ".part.mp4",
            ],
            check=True,
        )
        os.replace(str(clip) + ".part.mp4", clip)
    return clip


def player_frames(path: Path, numbers: list[int]) -> dict[int, np.ndarray]:
    """Debian's ffmpeg's frames with these numbers (presentation order), RGB."""
    want = sorted(set(numbers))
    expr = "+".join(f"eq(n\\,{n})" for n in want)
    info = probe(path)
    raw = subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-i",
            str(path),
            "-vf",
            f"select='{expr}'",
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
    size = info.width * info.height * 3
    return {
        n: np.frombuffer(raw, np.uint8, size, k * size).reshape(info.height, info.width, 3) for k, n in enumerate(want)
    }


def right(img: np.ndarray, i: int, theirs: dict[int, np.ndarray]) -> bool:
    if img.shape != theirs[i].shape:
        return False
    d = {j: float(np.abs(img.astype(np.int16) - theirs[j]).mean()) for j in (i - 1, i, i + 1) if j in theirs}
    return d[i] < 3.0 and d[i] == min(d.values())


def part1(work: Path, repeats: int, io_before) -> None:
    clip = make_clip(work)
    info = probe(clip)
    print(
        f"\n1. {clip.name}: {info.n_frames} frames {info.width}x{info.height}; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; CPU s best of {repeats}"
    )
    readers: dict[str, Callable[[Ask], list[np.ndarray]] | str] = {
        "vidaudit (seeking reader)": vidaudit_now,
        f"vidaudit before ({BEFORE}, from the start)": vidaudit_before(io_before) if io_before else "--before none",
        "exact seek + decode forward (reference)": reference,
        **peers(),
    }
    for k in (8, 32):
        sel = uniform_count(info.timeline, k)
        ask = Ask(clip, list(sel.times))
        numbers = [j for i in ask.indices for j in (i - 1, i, i + 1) if 0 <= j < info.n_frames]
        theirs = player_frames(clip, numbers)
        print(f"   K = {k}: frames {ask.indices[:4]}...{ask.indices[-2:]}")
        ref_cpu = None
        rows = []
        for name, fn in readers.items():
            if isinstance(fn, str):
                print(f"   {name:44} skipped: {fn}")
                continue
            cpu, got = best(repeats if "before" not in name else 1, lambda fn=fn: fn(ask))
            ok = sum(right(g, i, theirs) for g, i in zip(got, ask.indices, strict=True))  # type: ignore[arg-type]
            rows.append((name, cpu, ok))
            if name.startswith("exact"):
                ref_cpu = cpu
        for name, cpu, ok in rows:
            ratio = f"{cpu / ref_cpu:5.2f}x" if ref_cpu else ""
            print(f"   {name:44} {cpu:7.2f} s CPU  {ratio} of the reference   {ok}/{len(ask.indices)} the player's")
        now = {r[0]: r for r in rows}
        if "decord" in now:
            print(f"   vidaudit / decord: {now['vidaudit (seeking reader)'][1] / now['decord'][1]:.2f}x")


# --------------------------------------------------------------------------- part 2: the fixtures


def fixtures(work: Path) -> dict[str, tuple[Path, tuple[int, ...], tuple[float, ...], tuple[int, int]]]:
    from quirkvideos import make_quirks
    from realvideos import make_all
    from seekvideos import make_seekable

    out = {}
    for name, m in make_all(work / "real").items():
        out[name] = (m.path, m.codes, m.times, m.size)
    for maker, sub in ((make_quirks, "quirks"), (make_seekable, "seek")):
        for name, q in maker(work / sub).items():
            if q.codes:
                out[name] = (q.path, q.codes, q.times, q.shown)
    return out


def part2(work: Path, repeats: int) -> None:
    from realvideos import frame_code, is_upright

    fx = fixtures(work / "fixtures")
    readers: dict[str, Callable[[Ask], list[np.ndarray]] | str] = {"vidaudit (seeking reader)": vidaudit_now, **peers()}
    asks = []
    for _name, (path, codes, times, size) in fx.items():
        end = probe(path).duration_s
        ts = [(j + 0.5) * end / 8 for j in range(8)]
        truth = [codes[max(0, int(np.searchsorted(np.asarray(times), t + 5e-7, side="right")) - 1)] for t in ts]
        asks.append((Ask(path, ts), truth, size))
    total = sum(len(a.times) for a, _, _ in asks)
    print(f"\n2. {len(fx)} real-file fixtures, 8 stated times each ({total} frames); CPU s best of {repeats}")
    for name, fn in readers.items():
        if isinstance(fn, str):
            print(f"   {name:28} skipped: {fn}")
            continue
        ok, cpu, wrong = 0, 0.0, []
        for ask, truth, size in asks:
            try:
                c, got = best(repeats, lambda fn=fn, ask=ask: fn(ask))
            except Exception as e:  # a peer that cannot read a file gets none of its frames right
                c, got = 0.0, [np.zeros((1, 1, 3), np.uint8)] * len(truth)
                wrong.append(f"{ask.path.name} ({type(e).__name__})")
            cpu += c
            good = [
                g.shape[1::-1] == size and is_upright(g) and frame_code(g) == want
                for g, want in zip(got, truth, strict=True)
            ]  # type: ignore[call-overload]
            ok += sum(good)
            if not all(good) and not any(w.startswith(ask.path.name) for w in wrong):
                wrong.append(f"{ask.path.name} {sum(good)}/{len(good)}")
        print(f"   {name:28} {ok:3d}/{total} the player's  {cpu:6.2f} s CPU   wrong: {', '.join(wrong) or '-'}")


# --------------------------------------------------------------------------- part 3: short clips


def part3(work: Path, repeats: int, io_before) -> None:
    if io_before is None:
        print("\n3. skipped: --before none")
        return
    clips = {}
    for name, size, secs, args in (
        (
            "854x480 24 s, keyframe every 60 (rendered-like)",
            "854x480",
            24,
            ["-preset", "ultrafast", "-qp", "18", "-bf", "0", "-g", "60"],
        ),
        ("320x240 10 s, one keyframe", "320x240", 10, []),
    ):
        path = work / f"short-{size}-{secs}.mp4"
        if not path.is_file():
            subprocess.run(
                [
                    "ffmpeg",
                    "-v",
                    "error",
                    "-y",
                    "-f",
                    "lavfi",
                    "-i",
                    f"testsrc2=size={size}:rate=30:duration={secs}",
                    "-c:v",
                    "libx264",
                    *args,
                    "-pix_fmt",
                    "yuv420p",
                    str(path),
                ],
                check=True,
            )
        clips[name] = path
    repeats = max(repeats, 7)  # cases of 50-500 ms: more runs, alternating, to see past the load
    print(
        f"\n3. short clips, vidaudit now vs {BEFORE}; CPU s best of {repeats}, the three alternating (the run "
        "path's defaults: now the calling thread, before FFmpeg's threads; and both on the calling thread)"
    )
    for name, path in clips.items():
        clock = probe(path).timeline
        for k in (8, 32, 120):
            idx = list(uniform_count(clock, k).indices)
            cases = {
                "now": lambda: list(iter_selected(path, idx)),
                "before": lambda: list(io_before.iter_selected(path, idx)),
                "before 1": lambda: list(io_before.iter_selected(path, idx, threaded=False)),
            }
            runs: dict[str, list[float]] = {c: [] for c in cases}
            for _ in range(repeats):
                for c, fn in cases.items():
                    runs[c].append(cpu_of(fn)[0])
            now, old, old1 = (min(runs[c]) for c in cases)
            print(
                f"   {name:48} K={k:3d}: now {now:5.2f}  before {old:5.2f} ({now / old:4.2f}x)  "
                f"before 1 thread {old1:5.2f} ({now / old1:4.2f}x)"
            )


# --------------------------------------------------------------------------- part 4: the demo's report


def part4(work: Path, repeats: int, demo: Path | None, before: str) -> None:
    """``vidaudit report`` on a demo run (``vidaudit demo --out out/demo``), the sources at ``before`` against this
    checkout's, both exported outside git (so the reports' provenance is the same), each in a fresh process on its
    own copy of the run (its ``scored_run.jsonl`` kept), alternating; CPU is the child's (``os.wait4``). The three
    report files of the last run of each are compared byte for byte, creation time and run folder aside."""
    if demo is None or not (demo / "run.json").is_file():
        print("\n4. skipped: pass --demo RUN (a run made by `vidaudit demo --out out/demo`: out/demo/run)")
        return
    if before == "none":
        print("\n4. skipped: --before none")
        return
    srcs = {}
    for name, rev in ((before, before), ("now", None)):
        dst = work / f"src-{name}"
        shutil.rmtree(dst, ignore_errors=True)
        dst.mkdir(parents=True)
        if rev is None:
            shutil.copytree(REPO / "src", dst / "src", ignore=shutil.ignore_patterns("__pycache__"))
        else:
            tar = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(dst)], input=tar.stdout, check=True)
        srcs[name] = dst / "src"
    runs = {}
    for name in srcs:
        runs[name] = work / f"demo-{name}"
        shutil.rmtree(runs[name], ignore_errors=True)
        shutil.copytree(demo, runs[name], ignore=shutil.ignore_patterns("report", ".lock"))
    cpu: dict[str, list[float]] = {name: [] for name in srcs}
    loads = [os.getloadavg()[0]]
    for _ in range(repeats):
        for name, src in srcs.items():
            env = {**os.environ, "PYTHONPATH": str(src)}
            proc = subprocess.Popen(
                [sys.executable, "-m", "vidaudit.cli", "report", str(runs[name])],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            _, status, ru = os.wait4(proc.pid, 0)
            if status != 0:
                raise SystemExit(
                    f"report with {name} failed: {proc.stderr.read().decode()[-500:] if proc.stderr else ''}"
                )
            cpu[name].append(ru.ru_utime + ru.ru_stime)
            loads.append(os.getloadavg()[0])
    print(
        f"\n4. vidaudit report on {demo}, {repeats} runs each, alternating; load average {min(loads):.1f}-"
        f"{max(loads):.1f}"
    )
    for name, xs in cpu.items():
        print(f"   {name:10} CPU s: min {min(xs):.2f}, median {sorted(xs)[len(xs) // 2]:.2f}")

    def text(run: Path, f: str) -> str:
        t = (run / "report" / f).read_text(encoding="utf-8")
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", "", t).replace(str(run), "RUN")

    for f in ("report.json", "report.md", "report.html"):
        same = text(runs[before], f) == text(runs["now"], f)
        print(f"   {f}: {'the same bytes' if same else 'DIFFERENT'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", type=Path, help="where the clips are made and kept (default: a temporary folder)")
    ap.add_argument("--parts", default="1,2,3,4")
    ap.add_argument("--demo", type=Path, help="a demo run (out/demo/run) for part 4: `vidaudit report` on it")
    ap.add_argument("--before", default=BEFORE, help="the git revision of 'before' ('none' to skip it)")
    args = ap.parse_args()
    if shutil.which("ffmpeg") is None:
        raise SystemExit("ffmpeg not found: apt-get install -y ffmpeg (it makes the clips and is the player)")
    tmp = None if args.work else tempfile.TemporaryDirectory()
    work = args.work or Path(tmp.name)  # type: ignore[union-attr]
    work.mkdir(parents=True, exist_ok=True)
    parts = set(args.parts.split(","))
    io_before = None
    if args.before != "none" and parts & {"1", "3"}:  # part 4 runs the command line of a whole checkout instead
        io_before = modules_at(args.before, ["vidaudit.video.streams", "vidaudit.video.io"], "_vidaudit_before")[
            "vidaudit.video.io"
        ]
    if "1" in parts:
        part1(work, args.repeats, io_before)
    if "2" in parts:
        part2(work, args.repeats)
    if "3" in parts:
        part3(work, args.repeats, io_before)
    if "4" in parts:
        part4(work, args.repeats, args.demo, args.before)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
