"""Perturbation throughput against its floor: decode + encode alone, measured side by side.

For each op, ``op s`` is ``apply()`` from start to finish on a 720-frame 854x480 30 fps clip: hashing and
probing the source, the planned-order decode, the op's pixels, RGB->I420 + libx264 + mux, the atomic
renames, and reading the output back (probe + sha256). The floor is

- ``decode s``: ``iter_frames(src)``, every source frame decoded to RGB once (what any op must read), plus
- ``encode s``: the same ``VideoWriter`` (same ``X264_OPTIONS``) given **the op's own output frames**, made
  beforehand in chunks of 120 (untimed) and timed until the encoder has drained each chunk, plus the close.

``ratio = op s / (decode s + encode s)``; the goal is <= 1.3x. Every figure is the best of ``--repeats``,
the repeats of all measurements interleaved so that they see the same background load. The same ratio
is printed in process CPU seconds (``time.process_time``: every thread of the process, i.e. ffmpeg's
decoder threads and the encoder thread too), which other jobs on a shared machine disturb far less
than wall time.

    python benchmarks/perturb_throughput.py --repeats 3
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

from vidaudit.core.hashing import rng_from
from vidaudit.core.types import PerturbationSpec
from vidaudit.video.decode import iter_frames
from vidaudit.video.encode import VideoWriter
from vidaudit.video.perturb.engine import _frames, _inputs, _plan, apply
from vidaudit.video.perturb.registry import resolve

W, H, FPS, N = 854, 480, 30.0, 720
CHUNK = 120

OPS: dict[str, PerturbationSpec] = {
    "strip_mask (defaults)": PerturbationSpec(name="strip_mask"),
    "reverse": PerturbationSpec(name="reverse"),
    "camera_2d pan_left": PerturbationSpec(name="camera_2d", params={"motion": "pan_left"}),
    "camera_2d zoom_in": PerturbationSpec(name="camera_2d", params={"motion": "zoom_in"}),
}


def make_clip(path: Path) -> None:
    """A busy synthetic clip: a textured, slowly drifting background and eight moving antialiased discs."""
    rng = rng_from("benchmarks", "perturb_throughput")
    tex = cv2.GaussianBlur(rng.integers(0, 256, (H * 2, W * 2, 3), dtype=np.uint8), (0, 0), 3)
    grad = np.linspace(40, 200, W, dtype=np.float32)[None, :, None]
    pos = rng.uniform([0, 0], [W, H], (8, 2))
    vel = rng.uniform(-6, 6, (8, 2))
    cols = rng.integers(40, 255, (8, 3))
    with VideoWriter(path, FPS, W, H) as w:
        for t in range(N):
            ox, oy = (t * 2) % W, (t // 2) % H
            bg = (0.6 * tex[oy : oy + H, ox : ox + W].astype(np.float32) + 0.4 * grad).astype(np.uint8)
            for j in range(8):
                x, y = (pos[j] + vel[j] * t) % (W, H)
                cv2.circle(bg, (int(x * 16), int(y * 16)), 16 * 30, tuple(int(c) for c in cols[j]), -1, cv2.LINE_AA, 4)
            w.write(bg)


Timing = tuple[float, float]  # (wall s, process CPU s)


def timed(fn: Callable[[], object]) -> Timing:
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def time_decode(src: Path) -> Timing:
    def run() -> None:
        assert sum(1 for _ in iter_frames(src)) == N

    return timed(run)


def time_encode_op_output(src: Path, spec: PerturbationSpec, out: Path) -> Timing:
    """libx264 on the op's exact output frames, made beforehand (untimed) CHUNK at a time."""
    op, p = resolve(spec)
    s, second = _inputs(op, src, None)
    plan = _plan(op, p, s, second, 0)
    frames = _frames(op, p, plan, s, second, 0, 256 << 20)
    w = VideoWriter(out, plan.fps, plan.width, plan.height)
    wall = cpu = 0.0
    done = 0
    try:
        while done < plan.n_frames:
            chunk = [f.copy() for _, f in zip(range(CHUNK), frames)]  # op buffers are reused: copy
            done += len(chunk)
            w0, c0 = time.perf_counter(), time.process_time()
            for f in chunk:
                w.write(f)
            while w._free.qsize() < len(w._bufs):  # drained: every frame encoded
                time.sleep(0.0002)
            wall, cpu = wall + time.perf_counter() - w0, cpu + time.process_time() - c0
        w0, c0 = time.perf_counter(), time.process_time()
        w.close()
        wall, cpu = wall + time.perf_counter() - w0, cpu + time.process_time() - c0
    except BaseException:
        w.abort()
        raise
    return wall, cpu


def best(times: dict[str, list[Timing]], key: str, fn: Callable[[], Timing]) -> None:
    times.setdefault(key, []).append(fn())


def low(times: dict[str, list[Timing]], key: str) -> Timing:
    """The best wall time and, separately, the best CPU time of the repeats."""
    return min(t[0] for t in times[key]), min(t[1] for t in times[key])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated names from: " + ", ".join(OPS))
    args = ap.parse_args()
    names = [n.strip() for n in args.ops.split(",") if n.strip()]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        src = tmp / "clip.mp4"
        t0 = time.perf_counter()
        make_clip(src)
        print(
            f"clip: {N} frames {W}x{H} @ {FPS:g} fps, {src.stat().st_size / 1e6:.1f} MB, made in "
            f"{time.perf_counter() - t0:.1f} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
        times: dict[str, list[Timing]] = {}
        n_out: dict[str, int] = {}

        def run_op(name: str) -> Timing:
            def run() -> None:
                n_out[name] = apply(src, OPS[name], tmp / "op.mp4").meta.n_frames

            return timed(run)

        for _ in range(args.repeats):
            best(times, "decode", lambda: time_decode(src))
            for name in names:
                best(times, f"op {name}", lambda name=name: run_op(name))
                best(times, f"enc {name}", lambda name=name: time_encode_op_output(src, OPS[name], tmp / "enc.mp4"))
        dec, dec_cpu = low(times, "decode")
        print(f"\ndecode alone (720 frames to RGB): {dec:.2f} s wall, {dec_cpu:.2f} s CPU\n")
        print(
            f"{'op':24s} {'frames out':>10s} {'op s':>7s} {'decode s':>8s} {'encode s':>8s} {'floor s':>7s} "
            f"{'out f/s':>8s} {'ratio':>6s} {'op CPU':>7s} {'floor CPU':>9s} {'CPU ratio':>9s}"
        )
        print("-" * 116)
        worst = worst_cpu = 0.0
        for name in names:
            (op_s, op_cpu), (enc_s, enc_cpu) = low(times, f"op {name}"), low(times, f"enc {name}")
            floor, floor_cpu = dec + enc_s, dec_cpu + enc_cpu
            ratio, ratio_cpu = op_s / floor, op_cpu / floor_cpu
            worst, worst_cpu = max(worst, ratio), max(worst_cpu, ratio_cpu)
            print(
                f"{name:24s} {n_out[name]:10d} {op_s:7.2f} {dec:8.2f} {enc_s:8.2f} {floor:7.2f} "
                f"{n_out[name] / op_s:8.0f} {ratio:5.2f}x {op_cpu:7.2f} {floor_cpu:9.2f} {ratio_cpu:8.2f}x"
            )
        print(
            f"\nworst op / (decode + encode): {worst:.2f}x wall, {worst_cpu:.2f}x CPU "
            f"(goal <= 1.3x: {'met' if worst <= 1.3 else 'NOT met'} in wall time); best of {args.repeats}; "
            f"load average now {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
