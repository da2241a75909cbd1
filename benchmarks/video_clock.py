"""The cost of choosing frames by presentation time and turning them upright, side by side with the code before.

Issue 20 moved every reader onto one clock (frames chosen by pts through ``core.timeline``) and made it apply
display rotation. On vidaudit's own videos (constant rate from 0, upright) the bytes are the same; this
script measures what the change costs on the two hot paths the issue names, in one process, interleaved,
best of ``--repeats``:

- **render / verify** of counting videos: render (unchanged) + ``probe`` (now also the packets' stamps, the
  presentation start and the first frame's display matrix) + verification's full decode at half size
  (``iter_frames_reused``, now with a rotation check per frame) and the pixel detector;
- **frames@16 preparation**: the ``frames#16`` selection (now on the video's ``Timeline``) and the exact
  decode of those frames (``iter_selected``).

The "before" modules are read from git (``--before``, default the commit before the change) and imported
under another name; ``--before ba900cb`` measures issue 31's reader (decoded pictures, SAR, stream choice, the
cut-off check) against the one before it. Run: ``python benchmarks/video_clock.py [--videos 6] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import inspect
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_common import modules_at

from vidaudit.core.timeline import Timeline
from vidaudit.suites.counting.detector import detect_events
from vidaudit.suites.counting.grid import GridPoint
from vidaudit.suites.counting.scene import RenderSettings
from vidaudit.suites.counting.scenes import make_scene
from vidaudit.video import decode, encode
from vidaudit.video import probe as video_probe
from vidaudit.video import sampling as now_sampling

BEFORE = "aa989c3"
POINTS = [
    GridPoint("bounce_ball", 12, 4.0, 0),
    GridPoint("blinking", 6, 1.0, 1),
    GridPoint("state_machine", 3, 0.5, 2),
    GridPoint("bounce_ball", 1, 2.0, 3),
    GridPoint("blinking", 12, 4.0, 4),
    GridPoint("state_machine", 10, 2.5, 5),
]


def render(point: GridPoint, path: Path, settings: RenderSettings) -> float:
    t0 = time.process_time()
    scene = make_scene(point, settings)
    with encode.VideoWriter(path, settings.fps, settings.width, settings.height) as w:
        for frame, repeat in scene.frame_runs():
            w.write(frame, repeat)
    return time.process_time() - t0


def verify(io: Any, point: GridPoint, path: Path, fps: float) -> int:
    """``io``: the before commit's ``video.io``, or this checkout's reader (``video.decode``)."""
    frames = io.iter_frames_reused(path, half=True, threaded=False)
    return len(detect_events(point.domain, ((i, i / fps, f) for i, f in enumerate(frames))))


def old_uniform(sampling, clock: Timeline, k: int):
    """``frames#K`` with the "before" commit's sampling API: (n, fps, K) before issue 20, (clock, K) after it."""
    if len(inspect.signature(sampling.uniform_count.__wrapped__).parameters) == 3:
        return sampling.uniform_count(clock.n_frames, clock.fps, k)
    return sampling.uniform_count(clock, k)


def prepare_before(io, sampling, path: Path, clock: Timeline) -> int:
    sel = old_uniform(sampling, clock, 16)
    return sum(1 for _ in io.iter_selected(path, sel.indices))


def prepare_now(path: Path, clock: Timeline) -> int:
    sel = now_sampling.uniform_count(clock, 16)
    return sum(1 for _ in decode.iter_selected(path, sel.indices))


def cpu(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--videos", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--before", default=BEFORE)
    args = ap.parse_args()
    old = modules_at(args.before, ["vidaudit.video.io", "vidaudit.video.sampling"], "_vidaudit_before")
    old_io, old_sampling = old["vidaudit.video.io"], old["vidaudit.video.sampling"]
    settings = RenderSettings()
    rows = {k: [0.0, 0.0] for k in ("probe", "verify", "frames#16 prep")}
    render_s = 0.0
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for k, point in enumerate(POINTS[: args.videos]):
            path = Path(d) / f"v{k}.mp4"
            render_s += render(point, path, settings)
            paths.append((point, path))
        for point, path in paths:
            info = video_probe.probe(path)
            assert info.frame_times is None and info.rotation == 0, "a rendered clip is constant-rate and upright"
            assert old_io.probe(path).n_frames == info.n_frames
            clock = info.timeline
            assert verify(old_io, point, path, info.fps) == verify(decode, point, path, info.fps)
            assert old_uniform(old_sampling, clock, 16).indices == now_sampling.uniform_count(clock, 16).indices
            for _ in range(args.repeats):  # interleaved: before, now, before, now ...
                old_sampling.uniform_count.cache_clear()
                now_sampling.uniform_count.cache_clear()
                for j, fns in enumerate(((lambda: old_io.probe(path)), (lambda: video_probe.probe(path)))):
                    rows["probe"][j] += cpu(fns) / args.repeats
                rows["verify"][0] += cpu(lambda: verify(old_io, point, path, info.fps)) / args.repeats
                rows["verify"][1] += cpu(lambda: verify(decode, point, path, info.fps)) / args.repeats
                rows["frames#16 prep"][0] += (
                    cpu(lambda: prepare_before(old_io, old_sampling, path, clock)) / args.repeats
                )
                rows["frames#16 prep"][1] += cpu(lambda: prepare_now(path, clock)) / args.repeats
    n = len(paths)
    print(
        f"{n} counting videos ({settings.duration_s:g} s, {settings.fps:g} fps, {settings.width}x{settings.height}); "
        f"CPU seconds per video, mean of {args.repeats} interleaved repeats; before = {args.before}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(f"{'path':<28}{'before':>10}{'now':>10}{'now/before':>12}")
    for name, (b, a) in rows.items():
        print(f"{name:<28}{b / n:>10.4f}{a / n:>10.4f}{a / b:>12.3f}")
    r = render_s / n
    pb, pa = rows["probe"][0] / n, rows["probe"][1] / n
    vb, va = rows["verify"][0] / n, rows["verify"][1] / n
    print(
        f"{'render + probe + verify':<28}{r + pb + vb:>10.4f}{r + pa + va:>10.4f}{(r + pa + va) / (r + pb + vb):>12.3f}"
        f"   (render {r:.3f} s, unchanged)"
    )
    print("goal: every ratio of a whole path within 1.05")


if __name__ == "__main__":
    main()
