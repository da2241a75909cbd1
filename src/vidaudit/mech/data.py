"""Probe data: the clips of a vidaudit dataset dir, their derived conditions, and their requests.

A probe's ``--data`` is any directory written by ``vidaudit generate`` (``manifest.jsonl``). Each sample's
video is a clip; its ``group`` (what a split must keep on one side) is ``params.scene`` when present (the
stress camera clips), else the sample id (a clip and its reversal are one pair). Conditions a probe needs
are made with ``vidaudit.video.perturb`` ops and content-cached under ``OUT/cache/perturb``: ``reverse``
(temporal direction), ``blank`` and ``noise_video`` (KL). The frames sent are ``frames#K`` of the clip
(``sampling.uniform_count``) as one native video part, so every condition of a clip sends the same grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidaudit.core.errors import DataError
from vidaudit.core.types import GenerationSettings, PerturbationSpec, Request, TextPart, VideoPart

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


def load_clips(data: str | Path, *, limit: int | None = None) -> list[Clip]:
    """The dataset's clips (every sample's video), or a DataError naming what is missing."""
    from vidaudit.core.hashing import sha256_file
    from vidaudit.core.manifest import load_samples

    data = Path(data)
    samples = load_samples(data)
    if not samples:
        raise DataError(f"{data} holds no samples; make probe data with e.g. "
                        "`vidaudit generate stress --probe camera_motion --out DIR`")
    clips = []
    for s in samples[:limit]:
        path = data / s.video.path
        if not path.is_file():
            raise DataError(f"{s.sample_id}: video {path} is missing; regenerate the dataset")
        clips.append(Clip(s.sample_id, path, s.video.sha256 or sha256_file(path), s.video.fps, s.video.n_frames,
                          s.video.duration_s, str(s.params.get("scene", s.sample_id)), dict(s.params)))
    return clips


def derived(clip: Clip, op: str, cache_dir: Path, **params: Any) -> Clip:
    """``clip`` under a perturbation op (cached by content); same size, rate and frame count."""
    from vidaudit.video.perturb import cached

    res = cached(clip.path, clip.sha256, PerturbationSpec(name=op, params=params), 0, cache_dir)
    if res.meta.n_frames != clip.n_frames:
        raise DataError(f"{clip.clip_id}: {op} changed the frame count ({clip.n_frames} -> {res.meta.n_frames})")
    return Clip(f"{clip.clip_id}~{op}", res.video, res.meta.sha256, clip.fps, clip.n_frames, clip.duration_s,
                clip.group, clip.params)


def request(clip: Clip, prompt: str, frames: int = DEFAULT_FRAMES, *, repeat_first: bool = False,
            trial_id: str | None = None) -> Request:
    """The request a ``native`` trial of ``frames#K`` sends (``repeat_first``: the first frame in every slot)."""
    from vidaudit.video.sampling import uniform_count

    sel = uniform_count(clip.n_frames, clip.fps, frames)
    if len(sel) != frames:
        raise DataError(f"{clip.clip_id} has {clip.n_frames} frames, fewer than the {frames} a probe sends; "
                        "use a smaller --frames")
    indices = (sel.indices[0],) * frames if repeat_first else sel.indices
    times = (sel.times[0],) * frames if repeat_first else sel.times
    part = VideoPart(path=str(clip.path), sha256=clip.sha256, fps=frames / clip.duration_s,
                     duration_s=clip.duration_s, n_frames=clip.n_frames, source_fps=clip.fps,
                     frame_indices=tuple(indices), timestamps=tuple(times))
    return Request(trial_id=trial_id or clip.clip_id, parts=(part, TextPart(prompt)),
                   settings=GenerationSettings(temperature=0.0, max_tokens=1))
