"""``vidaudit generate stress --probe camera_motion``: stills moved by ``camera_2d`` (Algorithm 1) and 3D
sprite scenes filmed by a moving pinhole camera (Algorithm 2, ``vidaudit.video.synth3d``).

Every scene is shown under all six motions (and, with ``synthesis=both``, by both syntheses), so a
dataset is balanced by construction (chance = 1/6). A preset fixes the frame size and a sweep: scene
``i`` takes timing ``i mod len(timings)``, speed ``i mod len(speeds)`` and zoom ``i mod len(zooms)``
(the paper preset's cycle lengths 6, 5 and 7 are coprime, so 30 scenes pair every timing with every
speed). The stills are procedural scenes (``scene.py``) or, with ``--source FOLDER``, a user's images and
clips: a clip gives the frame a player shows at ``frame_s`` (default: its middle), read by the stress
sources' one reader (``suites/stress/sources.frame_on_screen``: upright, on the presentation clock). Every
file of the folder is an image (by suffix), a clip (any file FFmpeg plays) or named with the reason it is
left out (``sources.list_clips``); an image or clip that cannot be used (unreadable, too small, no frame at
``frame_s``) is left out with its reason too, never the end of the folder (``SourceLog``, in dataset.json).
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from vidaudit.sdk import (
    ConfigError,
    DataError,
    PerturbationSpec,
    PoolFactory,
    Sample,
    Trace,
    VideoRef,
    VideoWriter,
    check_choice,
    dataset_dir,
    guard_replace,
    perturb,
    run_jobs,
    synth3d,
    video_ref,
    write_dataset_info,
    write_manifest,
)
from vidaudit.suites.stress.camera_motion.options import DIRECTIONS, LETTER_OF
from vidaudit.suites.stress.camera_motion.prompts import QUESTION
from vidaudit.suites.stress.camera_motion.scene import render_scene
from vidaudit.suites.stress.sources import SourceLog, frame_on_screen, is_clip, list_clips, reason_of

PROBE = "camera_motion"
SYNTHESES = ("2d", "3d")
SETTINGS = ("synthesis", "size", "frame_s")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff")
KINDS = f"still images ({', '.join(IMAGE_SUFFIXES)}) or clips (any video FFmpeg plays)"


@dataclass(frozen=True)
class Preset:
    name: str
    width: int
    height: int
    scenes: int
    #: (duration_s, fps) per scene index (cycled)
    timings: tuple[tuple[float, float], ...]
    #: pan and tilt speeds per scene index (cycled): px/s of the rendered frame, or with
    #: ``speeds_per_side`` a fraction of the frame's width (pan) / height (tilt) per second
    speeds: tuple[float, ...]
    #: (zoom_max, zoom_curve) per scene index (cycled)
    zooms: tuple[tuple[float, str], ...]
    speeds_per_side: bool = False


PRESETS: dict[str, Preset] = {
    "smoke": Preset("smoke", 160, 96, 2, ((3.0, 10.0),), (0.25,), ((1.5, "linear"),), speeds_per_side=True),
    # Reveal A.3: durations 1-15 s, 15-60 fps (30-600 frames), pan 10-200 px/s, zoom 1.2-3.0x linear or
    # exponential; 36 scenes x 6 motions = 216 videos per synthesis (the paper: "more than 200")
    "paper": Preset("paper", 320, 180, 36,
                    ((1.0, 30.0), (2.0, 60.0), (3.0, 15.0), (8.0, 24.0), (10.0, 30.0), (15.0, 40.0)),
                    (10.0, 50.0, 100.0, 150.0, 200.0),
                    ((1.2, "linear"), (1.5, "exponential"), (2.0, "linear"), (2.0, "exponential"),
                     (2.5, "linear"), (3.0, "linear"), (3.0, "exponential"))),
}


@dataclass(frozen=True)
class Point:
    """One scene's place in the sweep."""

    duration_s: float
    fps: float
    pan_px_s: float
    tilt_px_s: float
    zoom_max: float
    zoom_curve: str

    def speed(self, motion: str) -> float:
        return self.pan_px_s if motion.startswith("pan") else self.tilt_px_s


def sweep_point(preset: Preset, scene: int, width: int, height: int) -> Point:
    dur, fps = preset.timings[scene % len(preset.timings)]
    v = preset.speeds[scene % len(preset.speeds)]
    zmax, curve = preset.zooms[scene % len(preset.zooms)]
    pan, tilt = (v * width, v * height) if preset.speeds_per_side else (v, v)
    return Point(dur, fps, round(pan, 6), round(tilt, 6), zmax, curve)


def camera_spec(motion: str, width: int, height: int, duration_s: float, fps: float, frac: float,
                zoom_max: float, zoom_curve: str) -> PerturbationSpec:
    """A ``camera_2d`` spec whose pan/tilt speed is ``frac`` of the frame's width/height per second."""
    speed = frac * (width if motion.startswith("pan") else height)
    return spec_2d(motion, Point(duration_s, fps, speed, speed, zoom_max, zoom_curve))


def spec_2d(motion: str, pt: Point) -> PerturbationSpec:
    return PerturbationSpec(name="camera_2d", params={"motion": motion, "speed_px_s": round(pt.speed(motion), 6),
                                                      "zoom_max": pt.zoom_max, "zoom_curve": pt.zoom_curve,
                                                      "duration_s": pt.duration_s, "fps": pt.fps})


def spec_3d(motion: str, pt: Point, width: int, height: int):

    return synth3d.Camera3DSpec(motion=motion, width=width, height=height, duration_s=pt.duration_s,  # type: ignore[arg-type]
                        fps=pt.fps, speed_px_s=pt.speed(motion), zoom_max=pt.zoom_max,
                        zoom_curve=pt.zoom_curve)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- settings and sources


@dataclass(frozen=True)
class Settings:
    syntheses: tuple[str, ...] = ("2d",)
    size: tuple[int, int] | None = None
    frame_s: float | None = None


def parse_settings(settings: Mapping[str, str]) -> Settings:
    """``synthesis=2d|3d|both`` (default 2d), ``size=WxH`` (default: the preset's; even, >= 32x32) and
    ``frame_s=T`` (a ``--source`` clip's frame at T s on its clock; default its middle)."""
    syn = settings.get("synthesis", "2d").strip().lower()
    if syn not in ("2d", "3d", "both"):
        raise ConfigError(f"--set synthesis={syn!r}: choose 2d, 3d or both")
    size = None
    if "size" in settings:
        w, sep, h = settings["size"].lower().partition("x")
        try:
            size = (int(w), int(h))
        except ValueError:
            size = None
        if not sep or size is None or min(size) < 32 or size[0] % 2 or size[1] % 2 or max(size) > 4096:
            raise ConfigError(f"--set size={settings['size']!r}: give WxH, both even and in [32, 4096], e.g. 320x180")
    frame_s = None
    if "frame_s" in settings:
        try:
            frame_s = float(settings["frame_s"])
        except ValueError:
            frame_s = None
        if frame_s is None or not math.isfinite(frame_s) or frame_s < 0:
            raise ConfigError(f"--set frame_s={settings['frame_s']!r}: give a time in seconds >= 0 on the clips' clock")
    return Settings(SYNTHESES if syn == "both" else (syn,), size, frame_s)


def source_images(folder: Path, log: SourceLog | None = None) -> list[Path]:
    """The images and clips of a user's ``--source`` folder, by name (anything else named in ``log`` with its
    reason); an error for a missing folder or one with neither."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"--source {folder} is not a folder; camera_motion reads a folder of {KINDS}")
    log = log if log is not None else SourceLog()
    try:
        return list_clips(folder, log, images=True, companions=())
    except DataError:
        raise DataError(f"--source {folder} holds no images or clips"
                        + (f" ({log.reasons()})" if log.skipped else "") + f"; add {KINDS}") from None


def usable_sources(paths: list[Path], width: int, height: int, frame_s: float | None, log: SourceLog
                   ) -> list[tuple[Path, np.ndarray, dict[str, Any]]]:
    """Each image or clip's still (``read_source``); one that cannot give one is named in ``log`` with its reason
    and left out. A DataError with the reasons when none can."""
    out = []
    for p in paths:
        try:
            img, params = read_source(p, width, height, frame_s)
        except DataError as e:
            log.skip(p.name, reason_of(e, p))
            continue
        out.append((p, img, params))
    if not out:
        raise DataError(f"--source {paths[0].parent}: no image or clip gives a {width}x{height} still "
                        f"({log.reasons()}); fix them, or pass a smaller --set size=WxH")
    return out


def read_source(path: Path, width: int, height: int, frame_s: float | None = None
                ) -> tuple[np.ndarray, dict[str, Any]]:
    """A user's image, or a clip's frame on the player's clock (``sources.frame_on_screen``), fitted to the frame
    (``fit_image``), and the params that say where it came from."""
    if is_clip(path):
        still = frame_on_screen(path, frame_s)
        return fit_image(still.image, width, height, path), {
            "source_clip": path.name, "source_frame_s": round(still.t_s, 6), "source_frame": still.frame}
    return fit_still(path, width, height), {"source_image": path.name}


def fit_still(path: Path, width: int, height: int) -> np.ndarray:
    """A user's image file as an RGB ``height x width`` still (``fit_image``)."""
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None:
        raise DataError(f"{path}: cannot be read as an image (corrupt, or not a format OpenCV reads); fix or "
                        "remove it")
    return fit_image(cv2.cvtColor(img, cv2.COLOR_BGR2RGB), width, height, path)


def fit_image(img: np.ndarray, width: int, height: int, path: Path) -> np.ndarray:
    """An RGB image as a ``height x width`` still: the centred crop of the frame's aspect, reduced to the frame
    (never enlarged: an image smaller than the frame is refused, naming the size needed)."""
    h, w = img.shape[:2]
    if w < width or h < height:
        raise DataError(f"{path}: {w}x{h} is too small for a {width}x{height} camera move (it would be enlarged "
                        f"and blurred); use an image of at least {width}x{height}, or a smaller --set size=WxH")
    scale = max(width / w, height / h)
    cw, ch = min(w, int(math.ceil(width / scale))), min(h, int(math.ceil(height / scale)))
    x0, y0 = (w - cw) // 2, (h - ch) // 2
    crop = img[y0:y0 + ch, x0:x0 + cw]
    return cv2.resize(np.ascontiguousarray(crop), (width, height), interpolation=cv2.INTER_AREA)


# --------------------------------------------------------------------------- the plan


def plan_samples(preset: Preset, scenes: int | None = None, syntheses: tuple[str, ...] = ("2d",),
                 width: int | None = None, height: int | None = None,
                 sources: list[Path] | None = None) -> list[dict[str, Any]]:
    """Every sample to render: scene x synthesis x motion, with its sweep point and ids."""
    w, h = width or preset.width, height or preset.height
    n = len(sources) if sources is not None else preset.scenes if scenes is None else scenes
    if n < 1:
        raise ConfigError(f"--seeds must be at least 1, got {n}")
    if sources is not None and "3d" in syntheses:
        raise ConfigError("--source images are moved in 2D only (Algorithm 1); drop --set synthesis=3d|both, or "
                          "drop --source to render 3D sprite scenes")
    rows = []
    for scene in range(n):
        pt = sweep_point(preset, scene, w, h)
        for synth in syntheses:
            for motion in DIRECTIONS:
                sid = f"stress-{PROBE}-{motion}-s{scene}" if synth == "2d" else f"stress-{PROBE}-3d-{motion}-s{scene}"
                params: dict[str, Any] = {
                    "probe": PROBE, "motion": motion, "synthesis": synth, "scene": scene, "preset": preset.name,
                    "option": LETTER_OF[motion], "duration_s": pt.duration_s, "fps": pt.fps,
                    "speed_px_s": pt.speed(motion), "zoom_max": pt.zoom_max, "zoom_curve": pt.zoom_curve,
                    "width": w, "height": h}
                row: dict[str, Any] = {"sample_id": sid, "scene": scene, "point": pt, "params": params}
                if synth == "2d":
                    row["spec"] = spec_2d(motion, pt)
                    params["perturbation"] = row["spec"].id
                else:
                    row["spec"] = spec_3d(motion, pt, w, h)
                    params.update(row["spec"].info())
                rows.append(row)
    return rows


def _render_3d(world, spec, path: Path) -> dict[str, Any]:

    with VideoWriter(path, spec.fps, spec.width, spec.height) as wr:
        for frame in synth3d.render_frames(world, spec):
            wr.write(frame)
    n = spec.n_frames
    p, yaw, pitch = spec.pose((n - 1) / n)

    return {"content_motion": perturb.CONTENT_MOTION[spec.motion], "final_yaw_deg": round(math.degrees(yaw), 6),
            "final_pitch_deg": round(math.degrees(pitch), 6), "final_camera_z": round(p[2], 6)}


def render_job(synthesis: str, scene: int, spec: Any, still: str | None, out: str,
               rel: str) -> tuple[dict[str, Any], VideoRef]:
    """One video (a pure function of its arguments): the still moved by ``spec`` (2d, seeded by the scene),
    or scene ``scene``'s 3D world filmed by ``spec``; returns the measured params and the written file."""

    if synthesis == "2d":
        if still is None:
            raise ValueError("a 2d camera_motion job needs the path of its still")
        res = perturb.apply(still, spec, Path(out) / rel, seed=int(scene))
        m = res.meta.map
        extra = {"content_motion": res.meta.info["content_motion"], "final_dx": m["dx"][-1],
                 "final_dy": m["dy"][-1], "final_zoom": m["zoom"][-1]}
    else:
        extra = _render_3d(synth3d.make_world(scene), spec, Path(out) / rel)
    return extra, video_ref(out, rel)


def generate(out: Path, preset: str = "smoke", scenes: int | None = None, *, force: bool = False,
             settings: Mapping[str, str] | None = None, source: Path | None = None,
             on_progress: Callable[[int, int], None] | None = None, workers: int | None = 1,
             pool: PoolFactory | None = None, log: SourceLog | None = None) -> Path:
    """Write the stills (here: each feeds six videos), then one ``render_job`` per video (see ``core.jobs``)."""
    check_choice("preset", preset, PRESETS)
    pre = PRESETS[preset]
    st = parse_settings(settings or {})
    w, h = st.size or (pre.width, pre.height)
    log = log if log is not None else SourceLog()
    listed = source_images(source, log) if source is not None else None
    if listed is not None and scenes is not None:
        raise ConfigError("--seeds sets the number of procedural scenes; with --source every image is a scene")
    if st.frame_s is not None and not any(is_clip(p) for p in listed or ()):
        raise ConfigError("--set frame_s picks a frame of a --source clip; the source holds none")
    if listed is not None and "3d" in st.syntheses:
        plan_samples(pre, scenes, st.syntheses, w, h, listed)       # the 2D-only refusal, before any file is read
    used = usable_sources(listed, w, h, st.frame_s, log) if listed is not None else None
    sources = [p for p, _, _ in used] if used is not None else None
    rows = plan_samples(pre, scenes, st.syntheses, w, h, sources)
    read = {i: (img, params) for i, (_, img, params) in enumerate(used)} if used is not None else {}
    stills = {i: img for i, (img, _) in read.items()}
    for r in rows:
        if r["scene"] in read:
            r["params"].update(read[r["scene"]][1])
    out = dataset_dir(out)
    placeholder = VideoRef(path="", fps=1.0, width=w, height=h, n_frames=0, duration_s=0)
    guard_replace(out, [Sample(sample_id=r["sample_id"], suite="stress", params=r["params"], question=QUESTION,
                               answer=r["params"]["motion"], video=placeholder) for r in rows],
                  force=force, key=lambda s: (s.params, s.answer), command="generate stress")
    (out / "videos").mkdir(parents=True, exist_ok=True)
    (out / "scenes").mkdir(exist_ok=True)
    jobs: list[tuple[Any, ...]] = []
    written: set[Path] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            still = None
            if r["params"]["synthesis"] == "2d":
                name = f"user-{r['scene']}" if sources is not None else f"scene-{r['scene']}"
                still = out / "scenes" / f"{name}-{w}x{h}.png"
                # a user's still is always rewritten (its image may have changed), a procedural one once
                if still not in written and (sources is not None or not still.is_file()):
                    img = stills[r["scene"]] if sources is not None else render_scene(r["scene"], w, h)
                    part = Path(tmp) / still.name
                    cv2.imwrite(str(part), cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
                    shutil.move(str(part), still)
                written.add(still)
            jobs.append((r["params"]["synthesis"], int(r["scene"]), r["spec"], str(still) if still else None,
                         str(out), f"videos/{r['sample_id']}.mp4"))
    done = run_jobs(render_job, jobs, workers=workers, pool=pool, on_progress=on_progress)
    samples = [Sample(sample_id=r["sample_id"], suite="stress", params={**r["params"], **extra}, question=QUESTION,
                      answer=r["params"]["motion"], trace=Trace(events=[]), video=ref)
               for r, (extra, ref) in zip(rows, done, strict=True)]
    manifest = write_manifest(out, samples)
    write_dataset_info(out, {"suite": "stress", "probe": PROBE, "preset": pre.name, "n_samples": len(samples),
                             "width": w, "height": h, "syntheses": list(st.syntheses),
                             "timings": [list(t) for t in pre.timings], "speeds": list(pre.speeds),
                             "speeds_per_side": pre.speeds_per_side, "zooms": [list(z) for z in pre.zooms],
                             "source": str(source) if source is not None else None, "directions": list(DIRECTIONS),
                             **({} if source is None else {"source_log": log.as_json()})})
    return manifest

