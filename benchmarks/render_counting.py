"""Time the counting-suite renderer side by side: drawing, full render, an encoder-only bound, Manim.

All measurements run in one process on the same scenes, each the best of ``--repeats`` runs (the
machine may be shared, and the minimum is the least disturbed figure):

- draw (runs): build the scene and iterate ``scene.frame_runs()``, counting repeated frames;
- draw (naive): draw every frame from its visual key, with no run reuse and no frame cache;
- render: ``render()`` end to end (draw, RGB->I420, libx264, mux, probe and sha256 of the file);
- encode-only: the same ``VideoWriter`` and ``X264_OPTIONS`` fed frames pre-drawn into a list,
  the lower bound for any renderer that writes this bitstream (goal: render / encode <= 1.3x);
- Manim CE (where importable): the same bounce-ball motion (our ``position(t)``), walls, colours,
  size, fps and duration, rendered by Manim's Cairo renderer to mp4 (goal: Manim / ours >= 1.8x);
- generate: ``generate(points, out, workers=W, verify=True/False)`` on a stratified sample of the
  ``paper`` preset, extrapolated to its 2,190 videos (goal with verification: < 20 min on 2 cores;
  aim: <= 14 min CPU projection, the margin that keeps an idle 2-core machine well under 20 min wall);
- CPU projection, before / now: ``before`` renders (``render``) and verifies by a full decode
  (``check_video``) as generate did; ``now`` renders with the render-time check (``render_checked``:
  the frames drawn through the detector, the stored packets against the encoder's) and adds the full
  decode's CPU for one video in ``DECODE_EVERY`` (its expected share); same files asserted;
- breakdown: one verified job's stages single-threaded, verification both ways: every frame
  converted and analysed (the previous implementation) and a run of byte-identical decoded frames
  converted and analysed once (``iter_frames_reused``, what ``check_video`` does now).

    python benchmarks/render_counting.py [--repeats 2] [--gen-sample 12] [--workers 2] [--no-manim]

``--encoder-ratio`` measures only issue 34's figure: per point of ``--ratio-points`` (every domain, slow balls
included), the CPU of ``render`` and ``render_checked`` against libx264 alone on the same frames (converted to
I420 beforehand; once with a PyAV frame made per frame, once with one per distinct frame, the tighter floor)
and against the ``VideoWriter`` on the runs drawn beforehand, all interleaved, and asserts that all but the
libx264 loops write the same file. ``--before REV`` adds ``render_checked`` of git revision REV (its ``src``
exported with ``git archive``, run in a child process that takes its turn in the same interleaved loop) and
asserts that it writes the same file, byte for byte.

    python benchmarks/render_counting.py --encoder-ratio [--repeats 5] [--before REV]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from bench_common import REPO, best_of, parse_points

from vidaudit.core.hashing import rng_from, sha256_file
from vidaudit.suites.counting.blinking import Blinking
from vidaudit.suites.counting.bounce_ball import BounceBall
from vidaudit.suites.counting.detector import detect_events
from vidaudit.suites.counting.generate import DECODE_EVERY, generate
from vidaudit.suites.counting.grid import DOMAINS, GridPoint, preset
from vidaudit.suites.counting.render import render, render_checked
from vidaudit.suites.counting.scene import RenderSettings, Scene
from vidaudit.suites.counting.scenes import make_scene
from vidaudit.suites.counting.state_machine import StateMachine
from vidaudit.suites.counting.verify import check_video
from vidaudit.video.decode import iter_frames, iter_frames_reused
from vidaudit.video.encode import X264_OPTIONS, VideoWriter
from vidaudit.video.probe import probe

PAPER_VIDEOS = len(preset("paper"))
DEFAULT_POINTS = (
    "bounce_ball:12:4,bounce_ball:0:1,bounce_ball:3:0.5,blinking:12:4,blinking:0:1,state_machine:12:4,state_machine:0:1"
)
GOAL_RENDER_OVER_ENCODE = 1.3
GOAL_MANIM_OVER_OURS = 1.8
GOAL_PAPER_MINUTES = 20.0
AIM_PAPER_CPU_MINUTES = 14.0  # the CPU projection's margin under the 20 min wall goal
GOAL_PAPER_CPU_MINUTES = 10.0  # issue 24: the preset at the encode floor, <= 10 min on 2 cores
GOAL_CHECKED_OVER_X264 = 1.1  # issue 34: render (what generate runs) at the encoder's floor, per domain
#: the points of the encoder-ratio table: every domain, fast and slow balls (a slow ball draws the most frames)
RATIO_POINTS = (
    "bounce_ball:12:4,bounce_ball:3:0.5,bounce_ball:1:0.5,bounce_ball:0:1,blinking:12:4,blinking:3:0.5,"
    "state_machine:12:4,state_machine:3:0.5"
)


# -- drawing ---------------------------------------------------------------------------------------


def draw_runs(point: GridPoint, settings: RenderSettings) -> tuple[int, int]:
    """(frames covered, distinct runs) for a freshly built scene: what ``render`` draws."""
    frames = runs = 0
    for _, repeat in make_scene(point, settings).frame_runs():
        frames += repeat
        runs += 1
    return frames, runs


def draw_uncached(scene: Scene, key: object) -> np.ndarray:
    """Draw one frame from scratch, bypassing each scene's own frame cache."""
    if isinstance(scene, Blinking):
        return scene._render(bool(key))
    if isinstance(scene, StateMachine):
        scene.cache.clear()
    return scene.draw(key)


def draw_naive(point: GridPoint, settings: RenderSettings) -> int:
    """Draw every frame (no run reuse): the baseline the run-length drawing replaces."""
    scene = make_scene(point, settings)
    n = settings.n_frames
    for j in range(n):
        draw_uncached(scene, scene.visual_key(j / settings.fps))
    return n


# -- encoding --------------------------------------------------------------------------------------


def predrawn_frames(point: GridPoint, settings: RenderSettings) -> list[np.ndarray]:
    """Every frame of the clip, drawn before timing (repeats share one array)."""
    return [frame for frame, repeat in make_scene(point, settings).frame_runs() for _ in range(repeat)]


def encode_only(frames: list[np.ndarray], settings: RenderSettings, out: Path) -> None:
    with VideoWriter(out, settings.fps, settings.width, settings.height) as w:
        for frame in frames:
            w.write(frame)


def read_back(path: Path) -> None:
    probe(path)
    sha256_file(path)


# -- where a generate job's CPU time goes -----------------------------------------------------------


@dataclass
class Breakdown:
    label: str
    cvt_frames_s: float  # RGB -> I420 once per frame, as VideoWriter.write does for each repeat
    cvt_runs_s: float  # ... once per run of identical frames (a possible speed-up)
    x264_s: float  # libx264 + mux alone on pre-converted I420 frames
    decode_s: float  # decode to half-size RGB, every frame converted (iter_frames(half=True): before)
    reused_s: float  # decode, one conversion per run of identical decoded frames (iter_frames_reused: now)
    detect_s: float  # the pixel detector, every frame analysed (before)
    detect_reused_s: float  # the pixel detector on iter_frames_reused's frames: a repeat reuses its feature (now)

    @property
    def before_s(self) -> float:
        return self.cvt_runs_s + self.x264_s + self.decode_s + self.detect_s

    @property
    def now_s(self) -> float:
        return self.cvt_runs_s + self.x264_s + self.reused_s + self.detect_reused_s


def x264_alone(yuv: list[np.ndarray], settings: RenderSettings, out: Path, wrap_once: bool = False) -> None:
    """libx264 + mux on frames converted to I420 beforehand; ``wrap_once``: one PyAV frame per distinct array
    (a run's repeats are one array in ``yuv``), else one per frame (``from_numpy_buffer`` costs ~11 us)."""
    import av

    frames: dict[int, av.VideoFrame] = {}
    with av.open(str(out), mode="w", format="mp4") as c:
        st = c.add_stream("libx264", rate=int(settings.fps))
        st.width, st.height, st.pix_fmt = settings.width, settings.height, "yuv420p"
        st.options = dict(X264_OPTIONS)
        for i, y in enumerate(yuv):
            frame = frames.get(id(y)) if wrap_once else None
            if frame is None:
                frame = av.VideoFrame.from_numpy_buffer(y, format="yuv420p")
                if wrap_once:
                    frames[id(y)] = frame
            frame.pts = i
            for packet in st.encode(frame):
                c.mux(packet)
        for packet in st.encode():
            c.mux(packet)


def breakdown(point: GridPoint, settings: RenderSettings, repeats: int, tmp: Path) -> Breakdown:
    """Single-threaded wall time of each stage of a verified render job (as in generate's workers)."""
    import cv2

    runs = list(make_scene(point, settings).frame_runs())
    frames = [f for f, r in runs for _ in range(r)]
    buf = np.empty((settings.height * 3 // 2, settings.width), np.uint8)
    cvt_frames = best_of(repeats, lambda: [cv2.cvtColor(f, cv2.COLOR_RGB2YUV_I420, dst=buf) for f in frames])
    cvt_runs = best_of(repeats, lambda: [cv2.cvtColor(f, cv2.COLOR_RGB2YUV_I420, dst=buf) for f, _ in runs])
    yuv = [cv2.cvtColor(f, cv2.COLOR_RGB2YUV_I420) for f in frames]
    x264 = best_of(repeats, lambda: x264_alone(yuv, settings, tmp / "x264.mp4"))
    video = tmp / "verify.mp4"
    render(point, settings, video, "verify.mp4")
    decode = best_of(repeats, lambda: sum(1 for _ in iter_frames(video, half=True, threaded=False)))
    reused = best_of(repeats, lambda: sum(1 for _ in iter_frames_reused(video, half=True, threaded=False)))
    found: dict[str, list] = {}

    def detect_on(name: str, frames: list[np.ndarray]) -> Callable[[], None]:
        def job() -> None:
            found[name] = detect_events(point.domain, ((i, i / settings.fps, f) for i, f in enumerate(frames)))

        return job

    every, runs_of = (
        list(iter_frames(video, half=True, threaded=False)),
        list(iter_frames_reused(video, half=True, threaded=False)),
    )
    detect = best_of(repeats, detect_on("every", every))
    del every
    detect_reused = best_of(repeats, detect_on("reused", runs_of))
    if found["every"] != found["reused"]:
        raise RuntimeError(f"{point}: the reused-frame detections differ from the every-frame ones")
    return Breakdown(
        f"{point.domain} N={point.n_events} F={point.frequency_hz:g}",
        cvt_frames,
        cvt_runs,
        x264,
        decode,
        reused,
        detect,
        detect_reused,
    )


# -- Manim -----------------------------------------------------------------------------------------


def manim_status() -> str | None:
    """None when Manim CE can be imported, else why not."""
    if importlib.util.find_spec("manim") is None:
        return "the 'manim' package is not installed (pip install manim; needs libcairo2-dev, libpango1.0-dev)"
    try:
        import manim  # noqa: F401
    except Exception as e:  # noqa: BLE001  (an install without its system libraries fails in any way here)
        return f"'import manim' failed: {type(e).__name__}: {e}"
    return None


def render_manim(point: GridPoint, settings: RenderSettings, media_dir: Path) -> Path:
    """The same bounce-ball clip with Manim CE: our walls, colours and ``position(t)``, its renderer."""
    import manim

    model = make_scene(point, settings)
    if not isinstance(model, BounceBall):
        raise TypeError("the Manim comparison is defined for bounce_ball only")
    w, h = settings.width, settings.height
    frame_h = 8.0
    frame_w = frame_h * w / h
    unit = frame_h / h  # scene units per pixel

    def to_scene(x: float, y: float) -> np.ndarray:
        return np.array([(x - w / 2) * unit, (h / 2 - y) * unit, 0.0])

    def hexcol(rgb: tuple[int, int, int]) -> str:
        return "#{:02x}{:02x}{:02x}".format(*rgb)

    def ball_xy(t: float) -> np.ndarray:
        p = model.centre - (model.gap / 2.0 - model.radius) * model.u + model.position(t) * model.u
        return to_scene(float(p[0]), float(p[1]))

    class BounceBallManim(manim.Scene):
        def construct(self) -> None:
            for wall in model._walls():
                self.add(
                    manim.Polygon(
                        *[to_scene(float(x), float(y)) for x, y in wall],
                        fill_color=hexcol(model.wall_colour),
                        fill_opacity=1.0,
                        stroke_width=0,
                    )
                )
            clock = manim.ValueTracker(0.0)
            ball = manim.Circle(
                radius=model.radius * unit, fill_color=hexcol(model.ball_colour), fill_opacity=1.0, stroke_width=0
            ).move_to(ball_xy(0.0))
            ball.add_updater(lambda m: m.move_to(ball_xy(clock.get_value())))
            self.add(ball)
            self.play(
                clock.animate.set_value(settings.duration_s), run_time=settings.duration_s, rate_func=manim.linear
            )

    name = f"manim_{point.domain}_N{point.n_events}_F{point.frequency_hz:g}"
    cfg = {
        "pixel_width": w,
        "pixel_height": h,
        "frame_rate": settings.fps,
        "frame_height": frame_h,
        "frame_width": frame_w,
        "background_color": hexcol(model.bg),
        "media_dir": str(media_dir),
        "output_file": name,
        "disable_caching": True,
        "verbosity": "ERROR",
        "progress_bar": "none",
        "format": "mp4",
        "write_to_movie": True,
        "preview": False,
    }
    with manim.tempconfig(cfg):
        scene = BounceBallManim()
        scene.render()
        return Path(scene.renderer.file_writer.movie_file_path)


# -- the paper preset ------------------------------------------------------------------------------


def generate_sample(k: int) -> list[GridPoint]:
    """``k`` points of the paper preset, equally many per domain, drawn with a fixed seed."""
    paper = preset("paper")
    rng = rng_from("benchmarks/render_counting", "generate-sample")
    chosen: list[GridPoint] = []
    for i, d in enumerate(DOMAINS):
        pts = [p for p in paper if p.domain == d]
        take = k // len(DOMAINS) + (1 if i < k % len(DOMAINS) else 0)
        chosen += [pts[int(j)] for j in rng.choice(len(pts), size=take, replace=False)]
    return chosen


def pool_startup_s(workers: int, repeats: int) -> float:
    """Seconds to start ``generate``'s kind of pool and import the renderer in every worker."""
    from concurrent.futures import ProcessPoolExecutor

    from vidaudit.core.parallel import pool_context

    def once() -> None:
        with ProcessPoolExecutor(workers, mp_context=pool_context()) as pool:
            list(pool.map(_import_renderer_job, range(workers)))

    return best_of(repeats, once)


def _import_renderer_job(_: int) -> None:
    """A pool job that only imports what a render job imports, held briefly so every worker starts."""
    import vidaudit.suites.counting.generate  # noqa: F401

    time.sleep(0.05)


def time_generate(points: list[GridPoint], workers: int, repeats: int, tmp: Path) -> dict[bool, float]:
    """Best wall time of ``generate`` with and without verification, repetitions interleaved so that
    both see the same background load."""
    best: dict[bool, float] = {True: float("inf"), False: float("inf")}
    for _ in range(repeats):
        for verify in (True, False):
            out = Path(tempfile.mkdtemp(dir=tmp, prefix="gen-"))
            try:
                t0 = time.perf_counter()
                generate(points, out, workers=workers, verify=verify)
                best[verify] = min(best[verify], time.perf_counter() - t0)
            finally:
                shutil.rmtree(out, ignore_errors=True)
    return best


@dataclass
class CpuPerVideo:
    """Mean CPU seconds per video (all threads of this process, OpenCV on one thread as in generate's workers)."""

    render: float  # render() alone
    decode_verify: float  # check_video: a full decode through the detector (generate's verification before)
    checked: float  # render_checked(): render plus the render-time check

    @property
    def before(self) -> float:
        return self.render + self.decode_verify

    @property
    def now(self) -> float:  # what a verified generate job costs on average: 1 in DECODE_EVERY is also decoded
        return self.checked + self.decode_verify / DECODE_EVERY


def cpu_per_video(points: list[GridPoint], settings: RenderSettings, tmp: Path) -> CpuPerVideo:
    """Before and now on the same points, interleaved, so that other processes' load barely moves the
    comparison; raises unless both ways write the same file and find no problem."""
    import cv2

    threads = cv2.getNumThreads()
    cv2.setNumThreads(1)
    r = v = c = 0.0
    try:
        for p in points:
            c0 = time.process_time()
            trace, video = render(p, settings, tmp / "cpu.mp4", "cpu.mp4")
            c1 = time.process_time()
            problems = check_video(p.domain, tmp / "cpu.mp4", trace, video.fps)
            c2 = time.process_time()
            checked = render_checked(p, settings, tmp / "cpu2.mp4", "cpu.mp4")
            c3 = time.process_time()
            if problems or checked.problems:
                raise RuntimeError(f"{p.sample_id} failed verification: {problems} / {checked.problems}")
            if (checked.trace, checked.video) != (trace, video):
                raise RuntimeError(f"{p.sample_id}: render_checked wrote another file than render")
            r, v, c = r + c1 - c0, v + c2 - c1, c + c3 - c2
    finally:
        cv2.setNumThreads(threads)
    n = len(points)
    return CpuPerVideo(r / n, v / n, c / n)


# -- CPU against the encoder (issue 34) -------------------------------------------------------------


@dataclass
class EncoderRatio:
    label: str
    runs: int
    x264_s: float  # libx264 + mux alone, on the frames already converted to I420 (one frame object each)
    x264_once_s: float  # the same, one frame object per distinct frame (a run's repeats share one): the tighter floor
    writer_s: float  # VideoWriter on the runs already drawn: its RGB->I420 once per run, libx264, mux
    render_s: float  # render(): draw, the writer, probe and sha256 of the file
    checked_s: float  # render_checked(): render() and the render-time check, what generate runs
    before_s: float | None = None  # render_checked() of the ``--before`` revision, in its child process


#: the child process that renders with another revision's code (on its PYTHONPATH): a line "domain n f out" in, a
#: line "cpu_seconds sha256" out, the CPU of ``render_checked`` alone (the child's own process time)
BEFORE_CHILD = """
import sys, time
from pathlib import Path
import cv2
from vidaudit.core.hashing import sha256_file
from vidaudit.suites.counting.grid import GridPoint
from vidaudit.suites.counting.render import render_checked
from vidaudit.suites.counting.scene import RenderSettings
cv2.setNumThreads(1)
settings = RenderSettings()
for line in sys.stdin:
    domain, n, f, out = line.split()
    c0 = time.process_time()
    render_checked(GridPoint(domain, int(n), float(f), 0), settings, Path(out), "c.mp4")
    print(time.process_time() - c0, sha256_file(out), flush=True)
"""


class Before:
    """``render_checked`` of git revision ``rev`` in a child process (its ``src`` exported with ``git archive``)."""

    def __init__(self, rev: str, tmp: Path) -> None:
        root = tmp / "before"
        root.mkdir()
        try:
            archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"], capture_output=True, check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            raise SystemExit(f"cannot export {rev} with git archive ({e}); run from a clone that has {rev}") from e
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
        self.rev = rev
        self.child = subprocess.Popen(
            [sys.executable, "-c", BEFORE_CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tmp,
            env={**os.environ, "PYTHONPATH": str(root / "src")},
        )

    def render_checked(self, p: GridPoint, out: Path) -> tuple[float, str]:
        """(CPU seconds, the file's sha256)."""
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write(f"{p.domain} {p.n_events} {p.frequency_hz!r} {out}\n")
        self.child.stdin.flush()
        line = self.child.stdout.readline()
        if not line:
            raise RuntimeError(f"the child rendering with {self.rev} ended (see its error above)")
        cpu, sha = line.split()
        return float(cpu), sha

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait()


def encoder_ratios(
    points: list[GridPoint], settings: RenderSettings, repeats: int, tmp: Path, before: Before | None = None
) -> list[EncoderRatio]:
    """CPU seconds (this process, every thread; OpenCV on one thread as in generate's workers) of each way to make
    the same file, the best of ``repeats``, interleaved so that they see the same load (``before``: the other
    revision's ``render_checked``, in its child, takes its turn in the same loop)."""
    import cv2

    threads = cv2.getNumThreads()
    cv2.setNumThreads(1)
    out = []
    try:
        for p in points:
            runs = [(f.copy(), r) for f, r in make_scene(p, settings).frame_runs()]
            yuv = [y for f, r in runs for y in [cv2.cvtColor(f, cv2.COLOR_RGB2YUV_I420)] * r]  # a run: one array

            def writer() -> None:
                with VideoWriter(tmp / "w.mp4", settings.fps, settings.width, settings.height) as w:
                    for f, r in runs:
                        w.write(f, r)

            jobs: dict[str, Callable[[], object]] = {
                "x264": lambda: x264_alone(yuv, settings, tmp / "x.mp4"),
                "x264_once": lambda: x264_alone(yuv, settings, tmp / "x1.mp4", wrap_once=True),
                "writer": writer,
                "render": lambda: render(p, settings, tmp / "r.mp4", "r.mp4"),
                "checked": lambda: render_checked(p, settings, tmp / "c.mp4", "c.mp4"),
            }
            best = dict.fromkeys([*jobs, "before"], float("inf"))
            before_sha = None
            for _ in range(repeats):
                for name, job in jobs.items():
                    c0 = time.process_time()
                    job()
                    best[name] = min(best[name], time.process_time() - c0)
                if before is not None:
                    cpu, before_sha = before.render_checked(p, tmp / "b.mp4")
                    best["before"] = min(best["before"], cpu)
            if not (sha256_file(tmp / "r.mp4") == sha256_file(tmp / "c.mp4") == sha256_file(tmp / "w.mp4")):
                raise RuntimeError(f"{p.sample_id}: render, render_checked and the writer wrote different files")
            if before is not None and before_sha != sha256_file(tmp / "c.mp4"):
                raise RuntimeError(f"{p.sample_id}: render_checked of {before.rev} wrote another file than this tree's")
            out.append(
                EncoderRatio(
                    f"{p.domain} N={p.n_events} F={p.frequency_hz:g}",
                    len(runs),
                    best["x264"],
                    best["x264_once"],
                    best["writer"],
                    best["render"],
                    best["checked"],
                    best["before"] if before is not None else None,
                )
            )
    finally:
        cv2.setNumThreads(threads)
    return out


def print_encoder_ratios(rows: list[EncoderRatio], repeats: int, before: str | None = None) -> None:
    bef = before is not None
    head = (
        f"{'CPU s, best of ' + str(repeats):<26}{'runs':>5}{'x264':>7}{'x264/1':>7}{'writer':>7}{'render':>7}"
        f"{'checked':>8}"
        + (f"{'before':>7}" if bef else "")
        + f"{'chk/x264':>9}{'chk/x1':>7}"
        + (f"{'bef/x264':>9}{'bef/x1':>7}" if bef else "")
        + f"{'rnd/x264':>9}"
    )
    print("\n" + head + "\n" + "-" * len(head))
    for r in rows:
        line = (
            f"{r.label:<26}{r.runs:>5}{r.x264_s:>7.3f}{r.x264_once_s:>7.3f}{r.writer_s:>7.3f}{r.render_s:>7.3f}"
            f"{r.checked_s:>8.3f}"
        )
        if r.before_s is not None:
            line += f"{r.before_s:>7.3f}"
        line += f"{r.checked_s / r.x264_s:>8.2f}x{r.checked_s / r.x264_once_s:>6.2f}x"
        if r.before_s is not None:
            line += f"{r.before_s / r.x264_s:>8.2f}x{r.before_s / r.x264_once_s:>6.2f}x"
        print(line + f"{r.render_s / r.x264_s:>8.2f}x")
    worst = max(r.checked_s / r.x264_s for r in rows)
    worst1 = max(r.checked_s / r.x264_once_s for r in rows)
    print(
        "(x264: libx264 + mux on the frames converted to I420 beforehand, a PyAV frame made per frame; x264/1: the "
        "same, one PyAV frame per distinct frame; writer: VideoWriter on the runs drawn beforehand, its conversion "
        "once per run included; checked: render_checked, what generate runs"
        + (f"; before: render_checked at {before}, same file asserted" if bef else "")
        + ")\n"
        f"render_checked / libx264 on the same frames: worst {worst:.2f}x, against x264/1 {worst1:.2f}x (goal <= "
        f"{GOAL_CHECKED_OVER_X264}x: {verdict(worst <= GOAL_CHECKED_OVER_X264)}, against x264/1 "
        f"{verdict(worst1 <= GOAL_CHECKED_OVER_X264)})"
        + (f"; before ({before}): worst {max(r.before_s / r.x264_s for r in rows if r.before_s):.2f}x" if bef else "")
    )


# -- report ----------------------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    frames: int
    runs: int
    draw_runs_s: float
    draw_naive_s: float
    render_s: float
    encode_s: float
    readback_s: float
    manim_s: float | None = None


def measure_point(p: GridPoint, settings: RenderSettings, repeats: int, manim_repeats: int, tmp: Path) -> Row:
    """Every per-scene measurement for one grid point (Manim only for bounce_ball, if ``manim_repeats``)."""
    frames, runs = draw_runs(p, settings)
    video = tmp / "render.mp4"
    pre = predrawn_frames(p, settings)
    jobs: dict[str, Callable[[], object]] = {
        "runs": lambda: draw_runs(p, settings),
        "naive": lambda: draw_naive(p, settings),
        "render": lambda: render(p, settings, video, "render.mp4"),
        "read": lambda: read_back(video),
        "enc": lambda: encode_only(pre, settings, tmp / "encode.mp4"),
    }
    if manim_repeats and p.domain == "bounce_ball":
        jobs["manim"] = lambda: render_manim(p, settings, tmp / "manim")
    best = dict.fromkeys(jobs, float("inf"))
    for i in range(max(repeats, manim_repeats)):  # interleaved: every measurement sees the same load
        for name, job in jobs.items():
            if i < (manim_repeats if name == "manim" else repeats):
                best[name] = min(best[name], best_of(1, job))
    shutil.rmtree(tmp / "manim", ignore_errors=True)
    t_runs, t_naive, t_render, t_read, t_enc = (best[k] for k in ("runs", "naive", "render", "read", "enc"))
    t_manim = best.get("manim")
    return Row(
        f"{p.domain} N={p.n_events} F={p.frequency_hz:g}",
        frames,
        runs,
        t_runs,
        t_naive,
        t_render,
        t_enc,
        t_read,
        t_manim,
    )


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", default=DEFAULT_POINTS, help="domain:N:F items, comma-separated (seed 0)")
    ap.add_argument("--repeats", type=int, default=2, help="repetitions per measurement; the best is kept")
    ap.add_argument(
        "--gen-sample", type=int, default=12, help="paper-preset points for the generate estimate (0: skip)"
    )
    ap.add_argument("--workers", type=int, default=2, help="worker processes for the generate estimate")
    ap.add_argument("--no-manim", action="store_true", help="skip the Manim comparison")
    ap.add_argument("--no-breakdown", action="store_true", help="skip the per-stage CPU breakdown")
    ap.add_argument("--manim-repeats", type=int, default=None, help="repetitions for Manim (default: --repeats)")
    ap.add_argument(
        "--encoder-ratio",
        action="store_true",
        help="only the CPU of render and render_checked against libx264 on the same frames, per point "
        "of --ratio-points (issue 34)",
    )
    ap.add_argument("--ratio-points", default=RATIO_POINTS, help="domain:N:F items for --encoder-ratio")
    ap.add_argument(
        "--before",
        default=None,
        help="with --encoder-ratio: a git revision whose render_checked runs "
        "beside this tree's, in the same interleaved loop (same file asserted)",
    )
    args = ap.parse_args()
    if args.repeats < 1 or args.workers < 1 or args.gen_sample < 0:
        raise SystemExit("--repeats and --workers must be >= 1 and --gen-sample >= 0")
    points = parse_points(args.points)
    settings = RenderSettings()
    manim_why = "--no-manim was given" if args.no_manim else manim_status()
    manim_repeats = args.manim_repeats or args.repeats

    import av
    import cv2

    manim_ver = "-"
    if manim_why is None:
        import manim

        manim_ver = manim.__version__
    print(
        f"machine: {os.cpu_count()} CPUs ({cpu_model()}), Python {platform.python_version()}, "
        f"PyAV {av.__version__}, OpenCV {cv2.__version__}, Manim {manim_ver}"
    )
    print(
        f"clip: {settings.width}x{settings.height} @ {settings.fps:g} fps, {settings.duration_s:g} s "
        f"({settings.n_frames} frames); best of {args.repeats} per measurement, repetitions interleaved; "
        f"load average at start {os.getloadavg()[0]:.2f}\n"
    )

    if args.encoder_ratio:
        with tempfile.TemporaryDirectory(prefix="vidaudit-bench-") as tmp_name:
            before = Before(args.before, Path(tmp_name)) if args.before else None
            try:
                rows = encoder_ratios(parse_points(args.ratio_points), settings, args.repeats, Path(tmp_name), before)
            finally:
                if before is not None:
                    before.close()
            print_encoder_ratios(rows, args.repeats, args.before)
        print(f"\nload average at end: {os.getloadavg()[0]:.2f} (1 min)")
        return

    with tempfile.TemporaryDirectory(prefix="vidaudit-bench-") as tmp_name:
        tmp = Path(tmp_name)
        rows = [
            measure_point(p, settings, args.repeats, manim_repeats if manim_why is None else 0, tmp) for p in points
        ]

        head = (
            f"{'scene':<26}{'runs':>5}{'draw f/s':>11}{'naive f/s':>11}{'render s':>10}{'videos/s':>9}"
            f"{'enc-only s':>11}{'readback s':>11}{'rnd/enc':>8}{'manim s':>9}{'manim/us':>9}"
        )
        print(head)
        print("-" * len(head))
        for r in rows:
            m = f"{r.manim_s:9.2f}{r.manim_s / r.render_s:8.1f}x" if r.manim_s is not None else f"{'-':>9}{'-':>9}"
            print(
                f"{r.label:<26}{r.runs:>5}{r.frames / r.draw_runs_s:>11.0f}{r.frames / r.draw_naive_s:>11.0f}"
                f"{r.render_s:>10.3f}{1 / r.render_s:>9.2f}{r.encode_s:>11.3f}{r.readback_s:>11.3f}"
                f"{r.render_s / r.encode_s:>7.2f}x" + m
            )

        ratio = [r.render_s / r.encode_s for r in rows]
        print(
            f"\nfull render / encoder-only: worst {max(ratio):.2f}x, mean {sum(ratio) / len(ratio):.2f}x "
            f"(goal <= {GOAL_RENDER_OVER_ENCODE}x: {verdict(max(ratio) <= GOAL_RENDER_OVER_ENCODE)})"
        )
        run_speedup = [r.draw_naive_s / r.draw_runs_s for r in rows]
        print(
            f"run-length drawing over naive per-frame drawing: {min(run_speedup):.0f}x to "
            f"{max(run_speedup):.0f}x faster"
        )
        manim_rows = [r for r in rows if r.manim_s is not None]
        if manim_rows:
            mr = [r.manim_s / r.render_s for r in manim_rows]
            print(
                f"Manim / ours (bounce_ball): worst {min(mr):.1f}x, mean {sum(mr) / len(mr):.1f}x "
                f"(goal >= {GOAL_MANIM_OVER_OURS}x: {verdict(min(mr) >= GOAL_MANIM_OVER_OURS)})"
            )
        else:
            why = manim_why or "no bounce_ball point was given in --points"
            print(f"Manim was not measured: {why}")

        if args.gen_sample:
            sample = generate_sample(args.gen_sample)
            startup = pool_startup_s(args.workers, args.repeats)
            print(
                f"\npaper preset ({PAPER_VIDEOS} videos), projected from generate() on {len(sample)} stratified "
                f"points with {args.workers} workers; pool start-up ({startup:.2f} s, measured alone) is "
                f"counted once:"
            )
            best = time_generate(sample, args.workers, args.repeats, tmp)
            for verify in (True, False):
                t = best[verify]
                per = max(t - startup, 0.0) / len(sample)
                minutes = (per * PAPER_VIDEOS + startup) / 60
                goal = (
                    f" (goal < {GOAL_PAPER_MINUTES:g} min: {verdict(minutes < GOAL_PAPER_MINUTES)})" if verify else ""
                )
                print(
                    f"  wall, verify={verify!s:<5}  {t:6.2f} s for {len(sample)} -> {per:.3f} s/video "
                    f"-> {minutes:.1f} min{goal}"
                )
            cpu = cpu_per_video(sample, settings, tmp)

            def minutes_of(per_video: float) -> float:
                return per_video / args.workers * PAPER_VIDEOS / 60

            goal = GOAL_PAPER_CPU_MINUTES
            print(
                f"  CPU,  verify=False          render {cpu.render:.3f} CPU s/video over {args.workers} workers "
                f"-> {minutes_of(cpu.render):.1f} min (the encode floor)"
            )
            print(
                f"  CPU,  before (full decode)  render {cpu.render:.3f} + decode-verify {cpu.decode_verify:.3f} = "
                f"{cpu.before:.3f} CPU s/video -> {minutes_of(cpu.before):.1f} min"
            )
            print(
                f"  CPU,  now (checked at render, 1 in {DECODE_EVERY} decoded)  render_checked {cpu.checked:.3f} + "
                f"decode-verify {cpu.decode_verify:.3f} / {DECODE_EVERY} = {cpu.now:.3f} CPU s/video -> "
                f"{minutes_of(cpu.now):.1f} min (goal <= {goal:g} min: {verdict(minutes_of(cpu.now) <= goal)}); "
                f"verification {cpu.before - cpu.render:.3f} -> {cpu.now - cpu.render:.3f} CPU s/video"
            )

        if not args.no_breakdown:
            threads = cv2.getNumThreads()
            cv2.setNumThreads(1)  # as in generate's workers
            try:
                parts = [breakdown(p, settings, args.repeats, tmp) for p in points]
            finally:
                cv2.setNumThreads(threads)
            head = (
                f"{'one verified job, 1 thread':<26}{'RGB>I420':>9}{'per run':>9}{'x264':>8}{'decode':>8}"
                f"{'reused':>8}{'detect':>8}{'reused':>8}{'before':>8}{'now':>7}{'ratio':>7}"
            )
            print("\n" + head + "\n" + "-" * len(head))
            for b in parts:
                print(
                    f"{b.label:<26}{b.cvt_frames_s:>9.3f}{b.cvt_runs_s:>9.3f}{b.x264_s:>8.3f}{b.decode_s:>8.3f}"
                    f"{b.reused_s:>8.3f}{b.detect_s:>8.3f}{b.detect_reused_s:>8.3f}{b.before_s:>8.2f}"
                    f"{b.now_s:>7.2f}{b.before_s / b.now_s:>6.2f}x"
                )
            print(
                "(single-threaded wall seconds per video; 'per run': RGB>I420 once per run of identical frames, as "
                "VideoWriter does; decode/detect: every frame converted/analysed, 'reused': once per run of "
                "byte-identical decoded frames, as check_video does now; before/now: per run + x264 + decode + "
                "detect; the detections of both ways are checked equal)"
            )
    print(f"\nload average at end: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
