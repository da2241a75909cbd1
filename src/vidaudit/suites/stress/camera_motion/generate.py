"""``vidaudit generate stress --probe camera_motion``: procedural stills moved by ``camera_2d``.

Every scene is shown under all six motions, so a dataset is balanced by construction (chance = 1/6).
Pan speed is a quarter of the frame width per second, tilt speed a quarter of the height per second, so
the content moves by less than a frame over the clip (a visible motion that never laps the frame).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2

from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.manifest import guard_replace, write_dataset_info, write_manifest
from vidaudit.core.types import PerturbationSpec, Sample, Trace, VideoRef
from vidaudit.suites.stress.camera_motion.options import DIRECTIONS, LETTER_OF
from vidaudit.suites.stress.camera_motion.prompts import QUESTION
from vidaudit.suites.stress.camera_motion.scene import render_scene
from vidaudit.video.io import probe

PROBE = "camera_motion"


@dataclass(frozen=True)
class Preset:
    name: str
    width: int
    height: int
    duration_s: float
    fps: float
    scenes: int
    #: per scene index: (speed as a fraction of the frame per second, zoom_max, zoom_curve)
    sweep: tuple[tuple[float, float, str], ...]


PRESETS: dict[str, Preset] = {
    "smoke": Preset("smoke", 160, 96, 3.0, 10.0, 2, ((0.25, 1.5, "linear"),)),
    # A.3-like at reduced size: speeds and zoom factors vary with the scene index
    "paper": Preset("paper", 320, 180, 3.0, 15.0, 10,
                    ((0.1, 1.2, "linear"), (0.25, 1.5, "linear"), (0.3, 2.0, "exponential"),
                     (0.15, 3.0, "exponential"))),
}


def camera_spec(motion: str, width: int, height: int, duration_s: float, fps: float, frac: float,
                zoom_max: float, zoom_curve: str) -> PerturbationSpec:
    speed = frac * (width if motion.startswith("pan") else height)
    return PerturbationSpec(name="camera_2d", params={"motion": motion, "speed_px_s": round(speed, 6),
                                                      "zoom_max": zoom_max, "zoom_curve": zoom_curve,
                                                      "duration_s": duration_s, "fps": fps})


def plan_samples(preset: Preset, scenes: int | None = None) -> list[dict[str, Any]]:
    n = preset.scenes if scenes is None else scenes
    if n < 1:
        raise ConfigError(f"--seeds must be at least 1, got {n}")
    rows = []
    for scene in range(n):
        frac, zmax, curve = preset.sweep[scene % len(preset.sweep)]
        for motion in DIRECTIONS:
            spec = camera_spec(motion, preset.width, preset.height, preset.duration_s, preset.fps, frac, zmax, curve)
            sid = f"stress-{PROBE}-{motion}-s{scene}"
            params = {"probe": PROBE, "motion": motion, "synthesis": "2d", "scene": scene, "preset": preset.name,
                      "option": LETTER_OF[motion], "speed_px_s": spec.params["speed_px_s"], "zoom_max": zmax,
                      "zoom_curve": curve, "perturbation": spec.id}
            rows.append({"sample_id": sid, "scene": scene, "spec": spec, "params": params})
    return rows


def generate(out: Path, preset: str = "smoke", scenes: int | None = None, *, force: bool = False) -> Path:
    from vidaudit.video.perturb import apply

    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    pre = PRESETS[preset]
    rows = plan_samples(pre, scenes)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; pass a directory for the dataset")
    placeholder = VideoRef(path="", fps=pre.fps, width=pre.width, height=pre.height, n_frames=0, duration_s=0)
    guard_replace(out, [Sample(sample_id=r["sample_id"], suite="stress", params=r["params"], question=QUESTION,
                               answer=r["params"]["motion"], video=placeholder) for r in rows],
                  force=force, key=lambda s: (s.params, s.answer), command="generate stress")
    (out / "videos").mkdir(parents=True, exist_ok=True)
    (out / "scenes").mkdir(exist_ok=True)
    samples = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            still = out / "scenes" / f"scene-{r['scene']}-{pre.width}x{pre.height}.png"
            if not still.is_file():
                img = render_scene(r["scene"], pre.width, pre.height)
                part = Path(tmp) / still.name
                cv2.imwrite(str(part), cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
                shutil.move(str(part), still)
            rel = f"videos/{r['sample_id']}.mp4"
            res = apply(still, r["spec"], out / rel, seed=int(r["scene"]))
            info = probe(out / rel)
            m = res.meta.map
            trace = Trace(events=[])
            params = {**r["params"], "content_motion": res.meta.info["content_motion"],
                      "final_dx": m["dx"][-1], "final_dy": m["dy"][-1], "final_zoom": m["zoom"][-1]}
            samples.append(Sample(sample_id=r["sample_id"], suite="stress", params=params, question=QUESTION,
                                  answer=r["params"]["motion"], trace=trace,
                                  video=VideoRef(path=rel, sha256=sha256_file(out / rel), fps=info.fps,
                                                 width=info.width, height=info.height, n_frames=info.n_frames,
                                                 duration_s=info.duration_s)))
    manifest = write_manifest(out, samples)
    write_dataset_info(out, {"suite": "stress", "probe": PROBE, "preset": pre.name, "n_samples": len(samples),
                             "width": pre.width, "height": pre.height, "duration_s": pre.duration_s, "fps": pre.fps,
                             "directions": list(DIRECTIONS)})
    return manifest

