"""``vidaudit generate stress --probe camera_motion``: stills moved by ``camera_2d`` (Algorithm 1) and 3D
sprite scenes filmed by a moving pinhole camera (Algorithm 2, ``vidaudit.video.synth3d``).

Every scene is shown under all six motions (and, with ``synthesis=both``, by both syntheses), so a
dataset is balanced by construction (chance = 1/6). A preset fixes the frame size and a sweep: scene
``i`` takes timing ``i mod len(timings)``, speed ``i mod len(speeds)`` and zoom ``i mod len(zooms)``
(the paper preset's cycle lengths 6, 5 and 7 are coprime, so 30 scenes pair every timing with every
speed). The stills are procedural scenes (``scene.py``) or, with ``--source FOLDER``, a user's images and
clips (``stills.py``).
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

from vidaudit.sdk import (
    CAMERA_CONTENT_MOTION,
    ConfigError,
    PerturbationSpec,
    Sample,
    VideoRef,
    VideoWriter,
    apply_perturbation,
    check_choice,
    dataset_dir,
    run_jobs,
    synth3d,
    video_ref,
)
from vidaudit.suites.stress.camera_motion.options import DIRECTIONS, LETTER_OF
from vidaudit.suites.stress.camera_motion.prompts import QUESTION
from vidaudit.suites.stress.camera_motion.scene import render_scene
from vidaudit.suites.stress.camera_motion.stills import source_images, usable_sources
from vidaudit.suites.stress.probe import GenerateOptions, guard_planned, write_dataset
from vidaudit.suites.stress.sources import is_clip

PROBE = "camera_motion"
SYNTHESES = ("2d", "3d")
SETTINGS = ("synthesis", "size", "frame_s")


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
    "paper": Preset(
        "paper",
        320,
        180,
        36,
        ((1.0, 30.0), (2.0, 60.0), (3.0, 15.0), (8.0, 24.0), (10.0, 30.0), (15.0, 40.0)),
        (10.0, 50.0, 100.0, 150.0, 200.0),
        (
            (1.2, "linear"),
            (1.5, "exponential"),
            (2.0, "linear"),
            (2.0, "exponential"),
            (2.5, "linear"),
            (3.0, "linear"),
            (3.0, "exponential"),
        ),
    ),
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


def camera_spec(
    motion: str, width: int, height: int, duration_s: float, fps: float, frac: float, zoom_max: float, zoom_curve: str
) -> PerturbationSpec:
    """A ``camera_2d`` spec whose pan/tilt speed is ``frac`` of the frame's width/height per second."""
    speed = frac * (width if motion.startswith("pan") else height)
    return spec_2d(motion, Point(duration_s, fps, speed, speed, zoom_max, zoom_curve))


def spec_2d(motion: str, pt: Point) -> PerturbationSpec:
    return PerturbationSpec(
        name="camera_2d",
        params={
            "motion": motion,
            "speed_px_s": round(pt.speed(motion), 6),
            "zoom_max": pt.zoom_max,
            "zoom_curve": pt.zoom_curve,
            "duration_s": pt.duration_s,
            "fps": pt.fps,
        },
    )


def spec_3d(motion: str, pt: Point, width: int, height: int):

    return synth3d.Camera3DSpec(
        motion=motion,  # type: ignore[arg-type]
        width=width,
        height=height,
        duration_s=pt.duration_s,
        fps=pt.fps,
        speed_px_s=pt.speed(motion),
        zoom_max=pt.zoom_max,
        zoom_curve=pt.zoom_curve,  # type: ignore[arg-type]
    )


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


# --------------------------------------------------------------------------- the plan


def plan_samples(
    preset: Preset,
    scenes: int | None = None,
    syntheses: tuple[str, ...] = ("2d",),
    width: int | None = None,
    height: int | None = None,
    sources: list[Path] | None = None,
) -> list[dict[str, Any]]:
    """Every sample to render: scene x synthesis x motion, with its sweep point and ids."""
    w, h = width or preset.width, height or preset.height
    n = len(sources) if sources is not None else preset.scenes if scenes is None else scenes
    if n < 1:
        raise ConfigError(f"--seeds must be at least 1, got {n}")
    if sources is not None and "3d" in syntheses:
        raise ConfigError(
            "--source images are moved in 2D only (Algorithm 1); drop --set synthesis=3d|both, or "
            "drop --source to render 3D sprite scenes"
        )
    rows = []
    for scene in range(n):
        pt = sweep_point(preset, scene, w, h)
        for synth in syntheses:
            for motion in DIRECTIONS:
                sid = f"stress-{PROBE}-{motion}-s{scene}" if synth == "2d" else f"stress-{PROBE}-3d-{motion}-s{scene}"
                params: dict[str, Any] = {
                    "probe": PROBE,
                    "motion": motion,
                    "synthesis": synth,
                    "scene": scene,
                    "preset": preset.name,
                    "option": LETTER_OF[motion],
                    "duration_s": pt.duration_s,
                    "fps": pt.fps,
                    "speed_px_s": pt.speed(motion),
                    "zoom_max": pt.zoom_max,
                    "zoom_curve": pt.zoom_curve,
                    "width": w,
                    "height": h,
                }
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

    return {
        "content_motion": CAMERA_CONTENT_MOTION[spec.motion],
        "final_yaw_deg": round(math.degrees(yaw), 6),
        "final_pitch_deg": round(math.degrees(pitch), 6),
        "final_camera_z": round(p[2], 6),
    }


def render_job(
    synthesis: str, scene: int, spec: Any, still: str | None, out: str, rel: str
) -> tuple[dict[str, Any], VideoRef]:
    """One video (a pure function of its arguments): the still moved by ``spec`` (2d, seeded by the scene),
    or scene ``scene``'s 3D world filmed by ``spec``; returns the measured params and the written file."""

    if synthesis == "2d":
        if still is None:
            raise ValueError("a 2d camera_motion job needs the path of its still")
        res = apply_perturbation(still, spec, Path(out) / rel, seed=int(scene))
        m = res.meta.map
        extra = {
            "content_motion": res.meta.info["content_motion"],
            "final_dx": m["dx"][-1],
            "final_dy": m["dy"][-1],
            "final_zoom": m["zoom"][-1],
        }
    else:
        extra = _render_3d(synth3d.make_world(scene), spec, Path(out) / rel)
    return extra, video_ref(out, rel)


def generate(out: Path, options: GenerateOptions, on_progress: Callable[[int, int], None] | None = None) -> Path:
    """Write the stills (here: each feeds six videos), then one ``render_job`` per video (see ``core.jobs``); the
    options' seeds are the number of procedural scenes."""
    check_choice("preset", options.preset, PRESETS)
    pre = PRESETS[options.preset]
    st = parse_settings(options.settings)
    w, h = st.size or (pre.width, pre.height)
    source, scenes = options.source, options.seeds
    log = options.source_log()
    listed = source_images(source, log) if source is not None else None
    if listed is not None and scenes is not None:
        raise ConfigError("--seeds sets the number of procedural scenes; with --source every image is a scene")
    if st.frame_s is not None and not any(is_clip(p) for p in listed or ()):
        raise ConfigError("--set frame_s picks a frame of a --source clip; the source holds none")
    if listed is not None and "3d" in st.syntheses:
        plan_samples(pre, scenes, st.syntheses, w, h, listed)  # the 2D-only refusal, before any file is read
    used = usable_sources(listed, w, h, st.frame_s, log) if listed is not None else None
    sources = [p for p, _, _ in used] if used is not None else None
    rows = plan_samples(pre, scenes, st.syntheses, w, h, sources)
    read = {i: (img, params) for i, (_, img, params) in enumerate(used)} if used is not None else {}
    stills = {i: img for i, (img, _) in read.items()}
    for r in rows:
        if r["scene"] in read:
            r["params"].update(read[r["scene"]][1])
    out = dataset_dir(out)
    guard_planned(out, [(r["sample_id"], r["params"], r["params"]["motion"]) for r in rows], force=options.force)
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
            jobs.append(
                (
                    r["params"]["synthesis"],
                    int(r["scene"]),
                    r["spec"],
                    str(still) if still else None,
                    str(out),
                    f"videos/{r['sample_id']}.mp4",
                )
            )
    done = run_jobs(render_job, jobs, workers=options.workers, pool=options.pool, on_progress=on_progress)
    samples = [
        Sample(
            sample_id=r["sample_id"],
            suite="stress",
            params={**r["params"], **extra},
            question=QUESTION,
            answer=r["params"]["motion"],
            video=ref,
        )
        for r, (extra, ref) in zip(rows, done, strict=True)
    ]
    return write_dataset(
        out,
        samples,
        PROBE,
        preset=pre.name,
        width=w,
        height=h,
        syntheses=list(st.syntheses),
        timings=[list(t) for t in pre.timings],
        speeds=list(pre.speeds),
        speeds_per_side=pre.speeds_per_side,
        zooms=[list(z) for z in pre.zooms],
        source=str(source) if source is not None else None,
        directions=list(DIRECTIONS),
        source_log=None if source is None else log,
    )
