"""``vidaudit generate stress --probe wireframe``: 4-frame videos of wireframe scenes under the three
B.7 arrangements, with the answers the generator knows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidaudit.sdk import (
    ConfigError,
    Sample,
    VideoRef,
    check_choice,
    dataset_dir,
    rng_from,
    run_jobs,
    video_ref,
    write_video,
)
from vidaudit.suites.stress.probe import GenerateOptions, guard_planned, write_dataset
from vidaudit.suites.stress.wireframe import scene as sc
from vidaudit.suites.stress.wireframe.tasks import TASKS, question

PROBE = "wireframe"
FPS = 2.0
WIDTHS = (1, 2, 3, 5, 10)
FIXED_WIDTH = 3  # the spatial-reasoning scenes' line width


@dataclass(frozen=True)
class Preset:
    name: str
    seeds: int
    window_widths: tuple[int, ...]


PRESETS: dict[str, Preset] = {
    "smoke": Preset("smoke", 1, (FIXED_WIDTH,)),
    # every width for both line tasks; 10 seeds cycle through all ten of B's neighbour pairs
    "paper": Preset("paper", 10, WIDTHS),
}


def build_scene(task: str, seed: int, width: int) -> tuple[sc.Scene, dict[str, Any], str]:
    """(scene, task parameters, answer) of one stimulus."""
    if task == "counting":
        s = sc.counting_scene(seed)
        return s, {"count": len(s.discs)}, str(len(s.discs))
    s = sc.connectivity_scene(seed, width, "window" if task == "window" else "cross")
    if task in ("connectivity", "window"):
        nb = s.neighbours(sc.QUERY)
        return s, {"query": [sc.QUERY], "neighbours": nb}, ", ".join(nb)
    rng = rng_from("stress", "wireframe", "spatial", int(seed))
    left = sorted(k for k, (x, _) in s.nodes.items() if x < s.width / 2)
    right = sorted(k for k, (x, _) in s.nodes.items() if x >= s.width / 2)
    a, b = left[int(rng.integers(len(left)))], right[int(rng.integers(len(right)))]
    x, y = (a, b) if seed % 2 == 0 else (b, a)  # answers alternate left / right with the seed
    return s, {"query": [x, y]}, "left" if s.nodes[x][0] < s.nodes[y][0] else "right"


def plan_rows(preset: Preset, seeds: int | None = None) -> list[dict[str, Any]]:
    k = preset.seeds if seeds is None else seeds
    if k < 1:
        raise ConfigError(f"--seeds must be at least 1, got {k}")
    rows = []
    for task in TASKS:
        # a line scene's seed is offset by its width's index, so B's pair (PAIRS[seed % 10]) differs between
        # widths: one seed per width (smoke) no longer gives every connectivity answer "D, F", and 10 seeds
        # per width (paper) still give each width all ten pairs
        if task == "connectivity":
            cells = [(w, s + WIDTHS.index(w)) for w in WIDTHS for s in range(k)]
        elif task == "window":
            cells = [(w, s + WIDTHS.index(w)) for w in preset.window_widths for s in range(k)]
        elif task == "spatial":
            cells = [(FIXED_WIDTH, s) for s in range(2 * k)]
        else:
            cells = [(0, s) for s in range(k)]
        for width, seed in cells:
            for arr in sc.ARRANGEMENTS:
                sid = f"stress-{PROBE}-{task}-{arr}-w{width}-s{seed}"
                rows.append({"sample_id": sid, "task": task, "arrangement": arr, "width": width, "seed": seed})
    return rows


def render_job(scene: sc.Scene, arrangement: str, out: str, rel: str) -> VideoRef:
    """One video: ``scene`` under ``arrangement`` written to ``out/rel`` (a pure function of its arguments)."""
    write_video(Path(out) / rel, sc.arrange(sc.render(scene), arrangement), FPS, scene.width, scene.height)
    return video_ref(out, rel)


def generate(out: Path, options: GenerateOptions, on_progress: Callable[[int, int], None] | None = None) -> Path:
    check_choice("preset", options.preset, PRESETS)
    pre = PRESETS[options.preset]
    rows = plan_rows(pre, options.seeds)
    out = dataset_dir(out)
    built = []
    for r in rows:
        scene, extra, answer = build_scene(r["task"], r["seed"], r["width"])
        params = {
            "probe": PROBE,
            "task": r["task"],
            "arrangement": r["arrangement"],
            "line_width": r["width"],
            "seed": r["seed"],
            "preset": pre.name,
            "scene_kind": scene.kind,
            "width": scene.width,
            "height": scene.height,
            "n_frames": sc.N_FRAMES,
            **extra,
            "nodes": {k: [round(x, 3), round(y, 3)] for k, (x, y) in scene.nodes.items()},
            "temporal_groups": [[0, 1], [2, 3]],
        }
        built.append((r, scene, params, answer))
    guard_planned(out, [(r["sample_id"], p, a) for r, _, p, a in built], force=options.force)
    (out / "videos").mkdir(parents=True, exist_ok=True)
    refs = run_jobs(
        render_job,
        [(scene, r["arrangement"], str(out), f"videos/{r['sample_id']}.mp4") for r, scene, _, _ in built],
        workers=options.workers,
        pool=options.pool,
        on_progress=on_progress,
    )
    samples = [
        Sample(
            sample_id=r["sample_id"],
            suite="stress",
            params=params,
            question=question(r["task"], tuple(params.get("query", ())) or None),
            answer=answer,
            video=ref,
        )
        for (r, _, params, answer), ref in zip(built, refs, strict=True)
    ]
    return write_dataset(
        out,
        samples,
        PROBE,
        preset=pre.name,
        width=sc.WIDTH,
        height=sc.HEIGHT,
        fps=FPS,
        n_frames=sc.N_FRAMES,
        tasks=list(TASKS),
        arrangements=list(sc.ARRANGEMENTS),
        widths=list(WIDTHS),
    )
