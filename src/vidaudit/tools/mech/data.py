"""Probe data: the clips of a vidaudit dataset dir, their derived conditions, and their requests.

A probe's ``--data`` is any directory written by ``vidaudit generate`` (``manifest.jsonl``). Each sample's
video is a clip; its ``group`` (what a split must keep on one side) is its scene (``scene_key``): ``params.scene``
when present (the stress camera clips), the params other than ``arrangement`` for a sample that has one (the
wireframe stimuli: one scene's control, adversarial and interleaved videos), else the sample id (a clip and its
reversal are one pair). ``arrangement_pairs`` pairs two arrangements of each scene (the ``cka`` probe). Conditions a probe needs
are made with ``vidaudit.video.perturb`` ops and content-cached under ``OUT/cache/perturb``: ``reverse``
(temporal direction), ``blank`` and ``noise_video`` (KL). The frames sent are ``frames#K`` of the clip
(``sampling.uniform_count``) as one native video part, so every condition of a clip sends the same grid.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidaudit.core.errors import DataError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.manifest import external_videos_allowed, load_samples
from vidaudit.core.timeline import Timeline
from vidaudit.core.types import GenerationSettings, PerturbationSpec, Request, TextPart, VideoPart
from vidaudit.video.facts import resolve_video
from vidaudit.video.perturb.cache import cached
from vidaudit.video.sampling import uniform_count

DEFAULT_FRAMES = 8


@dataclass(frozen=True)
class Clip:
    clip_id: str
    path: Path
    sha256: str
    fps: float
    n_frames: int
    duration_s: float
    group: str
    params: dict[str, Any]
    clock: Timeline | None = None  # the player's clock of a sample's video (None: constant rate from 0)


def load_clips(data: str | Path, *, limit: int | None = None) -> list[Clip]:
    """The dataset's clips (every sample's video), or a DataError naming what is missing."""
    data = Path(data)
    samples = load_samples(data)
    external = external_videos_allowed(data)
    if not samples:
        raise DataError(
            f"{data} holds no samples; make probe data with e.g. "
            "`vidaudit generate stress --probe camera_motion --out DIR`"
        )
    clips = []
    for s in samples[:limit]:
        path = resolve_video(data, s.video.path, allow_external=external, who=s.sample_id)  # never a path out
        if not path.is_file():
            raise DataError(f"{s.sample_id}: video {path} is missing; regenerate the dataset")
        clips.append(
            Clip(
                s.sample_id,
                path,
                s.video.sha256 or sha256_file(path),
                s.video.fps,
                s.video.n_frames,
                s.video.duration_s,
                scene_key(s.sample_id, s.params),
                dict(s.params),
                s.video.timeline,
            )
        )
    return clips


def scene_key(sample_id: str, params: dict[str, Any]) -> str:
    """What identifies a sample's scene: ``params.scene``; else, for a sample with an ``arrangement``, every
    other param (the generator's task, width, seed and layout); else the sample id."""
    if "scene" in params:
        return str(params["scene"])
    if "arrangement" in params:
        rest = {k: v for k, v in params.items() if k != "arrangement"}
        return "scene:" + json.dumps(rest, sort_keys=True, separators=(",", ":"), default=str)
    return sample_id


def arrangement_pairs(
    clips: list[Clip], first: str = "control", second: str = "adversarial"
) -> tuple[list[tuple[Clip, Clip]], list[str]]:
    """(pairs of the ``first`` and ``second`` arrangement of one scene, in data order; the ids of clips of
    either arrangement whose scene lacks the other). No pair at all, or a scene with two clips of one
    arrangement, is a DataError naming what is missing."""
    make = "make them with `vidaudit generate stress --probe wireframe --out DIR`"
    if not any("arrangement" in c.params for c in clips):
        raise DataError(
            f"no sample carries params.arrangement, so there are no {first}/{second} pairs of one scene; {make}"
        )
    by_scene: dict[str, dict[str, Clip]] = {}
    for c in clips:
        arr = c.params.get("arrangement")
        if arr not in (first, second):
            continue
        slot = by_scene.setdefault(c.group, {})
        if arr in slot:
            raise DataError(
                f"{slot[arr].clip_id} and {c.clip_id} are both the {arr} arrangement of one scene; "
                "a scene needs exactly one of each (regenerate the dataset)"
            )
        slot[arr] = c
    pairs = [(d[first], d[second]) for d in by_scene.values() if first in d and second in d]
    unpaired = [c.clip_id for d in by_scene.values() if len(d) == 1 for c in d.values()]
    if not pairs:
        seen = sorted({str(c.params.get("arrangement")) for c in clips})
        detail = (
            f"unpaired: {', '.join(unpaired[:5])}{' ...' if len(unpaired) > 5 else ''}"
            if unpaired
            else f"arrangements present: {', '.join(seen)}"
        )
        raise DataError(
            f"no scene has both a {first} and an {second} sample ({detail}); {make}, and with --limit "
            "keep both arrangements of a scene"
        )
    return pairs, unpaired


def derived(clip: Clip, op: str, cache_dir: Path, **params: Any) -> Clip:
    """``clip`` under a perturbation op (cached by content); same size, rate and frame count."""
    res = cached(clip.path, clip.sha256, PerturbationSpec(name=op, params=params), 0, cache_dir)
    if res.meta.n_frames != clip.n_frames:
        raise DataError(f"{clip.clip_id}: {op} changed the frame count ({clip.n_frames} -> {res.meta.n_frames})")
    return Clip(
        f"{clip.clip_id}~{op}",
        res.video,
        res.meta.sha256,
        clip.fps,
        clip.n_frames,
        clip.duration_s,
        clip.group,
        clip.params,
    )


def request(
    clip: Clip, prompt: str, frames: int = DEFAULT_FRAMES, *, repeat_first: bool = False, trial_id: str | None = None
) -> Request:
    """The request a ``native`` trial of ``frames#K`` sends (``repeat_first``: the first frame in every slot)."""
    sel = uniform_count(clip.clock or Timeline.constant(clip.n_frames, clip.fps), frames)
    if len(sel) != frames:
        raise DataError(
            f"{clip.clip_id} has {clip.n_frames} frames, fewer than the {frames} a probe sends; use a smaller --frames"
        )
    indices = (sel.indices[0],) * frames if repeat_first else sel.indices
    times = (sel.times[0],) * frames if repeat_first else sel.times
    part = VideoPart(
        path=str(clip.path),
        sha256=clip.sha256,
        fps=frames / clip.duration_s,
        duration_s=clip.duration_s,
        n_frames=clip.n_frames,
        source_fps=clip.fps,
        frame_indices=tuple(indices),
        timestamps=tuple(times),
    )
    return Request(
        trial_id=trial_id or clip.clip_id,
        parts=(part, TextPart(prompt)),
        settings=GenerationSettings(temperature=0.0, max_tokens=1),
    )
