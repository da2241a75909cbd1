"""The plan: samples x conditions x models -> trials, and how each trial's request is built.

Frame selection is resolved here, once per trial, and travels inside the request (so the store
logs the indices and timestamps actually sent); adapters never resample.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.types import (Condition, ImagePart, ModelSpec, Part, Presentation, Request, Sample, TextPart,
                                 Trial, VideoPart)
from vidaudit.models.base import Capabilities
from vidaudit.suites.counting.prompts import TEMPLATES, render_prompt
from vidaudit.video.frame_cache import FrameCache
from vidaudit.video.sampling import FrameSelection, around_events, at_fps, every_frame

_COND = re.compile(r"^(native|frames|keyframes)(?:@(\d+(?:\.\d+)?))?$")


def parse_condition(text: str, prompt: str = "structured_trace", timestamps: bool = True) -> Condition:
    """``native``, ``native@K``, ``frames@K`` or ``keyframes`` (+ prompt and the timestamps flag)."""
    m = _COND.match(text.strip())
    if not m:
        raise ConfigError(f"cannot read condition {text!r}; write native, native@K, frames@K or keyframes")
    if prompt not in TEMPLATES:
        raise ConfigError(f"unknown prompt {prompt!r}; choose from {', '.join(TEMPLATES)}")
    kind, fps = m.group(1), m.group(2)
    try:
        return Condition(presentation=Presentation(kind), fps=float(fps) if fps else None, prompt=prompt,
                         timestamps=timestamps)
    except ValueError as e:
        raise ConfigError(f"condition {text!r}: {e}") from e


@dataclass(frozen=True)
class PlannedTrial:
    trial: Trial
    sample: Sample

    @property
    def id(self) -> str:
        return self.trial.id


def plan(samples: Sequence[Sample], conditions: Sequence[Condition], models: Sequence[ModelSpec]) -> list[PlannedTrial]:
    out = [PlannedTrial(Trial(sample_id=s.sample_id, video_sha256=s.video.sha256, condition=c, model=m), s)
           for m in models for c in conditions for s in samples]
    ids = [p.id for p in out]
    if len(set(ids)) != len(ids):
        raise ConfigError("the plan repeats a trial: a model or condition is listed twice")
    return out


def native_fps(condition: Condition, caps: Capabilities) -> float | None:
    """The sampling rate a native-video trial asks of the backend (None: every frame)."""
    return condition.fps if condition.fps is not None else caps.default_native_fps


def select_frames(sample: Sample, condition: Condition, caps: Capabilities) -> FrameSelection:
    v = sample.video
    if condition.presentation is Presentation.FRAMES:
        return at_fps(v.n_frames, v.fps, condition.fps or 1.0)
    if condition.presentation is Presentation.KEYFRAMES:
        return around_events(sample.trace.times, [e.frame for e in sample.trace.events], v.n_frames, v.fps,
                             condition.keyframe_offset_s)
    fps = native_fps(condition, caps)
    return every_frame(v.n_frames, v.fps) if fps is None else at_fps(v.n_frames, v.fps, fps)


def check_servable(planned: Sequence[PlannedTrial], caps_by_model: Mapping[str, Capabilities]) -> None:
    """Refuse, before any call, a condition a model cannot serve (native video, image count)."""
    seen: set[tuple[str, str]] = set()
    problems = []
    for p in planned:
        label, cond = p.trial.model.label, p.trial.condition
        caps = caps_by_model[label]
        if cond.presentation is Presentation.NATIVE:
            if (label, cond.id) not in seen and not caps.native_video:
                problems.append(f"{label} cannot take native video (condition {cond.id}); use frames@K instead")
        else:
            n = len(select_frames(p.sample, cond, caps))
            if n == 0:
                problems.append(f"{p.sample.sample_id} under {cond.id} would send zero frames")
            elif caps.max_images is not None and n > caps.max_images:
                problems.append(f"{label} takes at most {caps.max_images} images per request but {cond.id} sends "
                                f"{n} for {p.sample.sample_id}; lower K or use native video")
        seen.add((label, cond.id))
    if problems:
        uniq = list(dict.fromkeys(problems))
        raise ConfigError("the plan has trials these models cannot serve:\n  " + "\n  ".join(uniq[:10]))


def check_videos(samples: Sequence[Sample], data_dir: Path) -> None:
    """Every video exists and has the manifest's sha256 (before any paid call)."""
    for s in samples:
        path = data_dir / s.video.path
        if not path.is_file():
            raise DataError(f"video for {s.sample_id} is missing: {path}; regenerate the data "
                            f"(vidaudit generate ... --skip-existing)")
        if s.video.sha256 is None:
            raise DataError(f"{s.sample_id} has no video sha256 (a dry-run manifest?); generate the videos first")
        if sha256_file(path) != s.video.sha256:
            raise DataError(f"{path} does not match the manifest's sha256 for {s.sample_id}: the file changed; "
                            "regenerate it or point --data at the matching manifest")


class RequestBuilder:
    """Builds the request of a trial: frames decoded exactly, each preceded by its timestamp."""

    def __init__(self, data_dir: Path, caps_by_model: Mapping[str, Capabilities], cache: FrameCache | None = None):
        self.data_dir = Path(data_dir)
        self.caps = caps_by_model
        self.cache = cache or FrameCache()

    def __call__(self, p: PlannedTrial) -> Request:
        s, cond = p.sample, p.trial.condition
        caps = self.caps[p.trial.model.label]
        system, prompt = render_prompt(cond, s.question)
        sel = select_frames(s, cond, caps)
        if len(sel) == 0:
            raise ConfigError(f"{s.sample_id} under {cond.id} would send zero frames")
        path = self.data_dir / s.video.path
        parts: list[Part] = []
        if cond.presentation is Presentation.NATIVE:
            fps = native_fps(cond, caps)
            parts.append(VideoPart(path=str(path), sha256=s.video.sha256, fps=fps or s.video.fps,
                                   duration_s=s.video.duration_s, n_frames=s.video.n_frames,
                                   source_fps=s.video.fps, frame_indices=sel.indices, timestamps=sel.times))
        else:
            images = self.cache.get(path, s.video.sha256, sel.indices)
            for idx, t, img in zip(sel.indices, sel.times, images, strict=True):
                if cond.timestamps:
                    parts.append(TextPart(f"t={t:.2f}s"))
                parts.append(ImagePart(image=img, frame_index=idx, t=t))
        parts.append(TextPart(prompt))
        meta = {"suite": s.suite, "sample_id": s.sample_id, "domain": s.params.get("domain"),
                "duration_s": s.video.duration_s, "condition": cond.id, "sampling": sel.rule}
        return Request(trial_id=p.id, parts=tuple(parts), system=system, settings=p.trial.model.settings,
                       metadata=meta)
