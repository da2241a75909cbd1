"""The plan: samples x conditions x models -> trials, and how each trial's request is built.

Everything that decides what a model receives is resolved here, once per trial, and hashed into the
trial id: the condition (a bare ``native`` becomes the backend's explicit rate), the prompt as the
suite renders it, the frames selected, the model spec and the adapter's request-changing options.
The selection then travels inside the request (so the store logs the indices and timestamps actually
sent); adapters never resample.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.hashing import sha256_file, sha256_json
from vidaudit.core.types import (Condition, ImagePart, ModelSpec, Part, Presentation, Request, Sample, TextPart,
                                 Trial, VideoPart)
from vidaudit.models.base import Capabilities, native_fps_problem
from vidaudit.suites.base import Prompt, Suite
from vidaudit.video.frame_cache import FrameCache
from vidaudit.video.sampling import FrameSelection, around_events, at_fps, every_frame, uniform_count

_NUM = r"\d+(?:\.\d+)?"
_COND = re.compile(rf"^(?:native(?:@(?P<nat>all|{_NUM}))?|frames(?:@(?P<fps>{_NUM})|#(?P<count>\d+))"
                   rf"|keyframes(?:\+-(?P<off>{_NUM})s?)?)$")
CONDITION_FORMS = "native, native@K, native@all, frames@K, frames#K, keyframes or keyframes+-Ss"


def parse_condition(text: str, prompt: str = "structured_trace", timestamps: bool = True) -> Condition:
    """A condition from its written form (see ``CONDITION_FORMS``) plus a prompt name and the timestamps flag."""
    m = _COND.match(text.strip())
    if not m:
        raise ConfigError(f"cannot read condition {text!r}; write {CONDITION_FORMS}")
    head = text.strip().split("@")[0].split("#")[0].split("+")[0]
    kw: dict[str, Any] = {"presentation": Presentation(head), "prompt": prompt, "timestamps": timestamps}
    if m.group("nat") == "all":
        kw["all_frames"] = True
    elif m.group("nat"):
        kw["fps"] = float(m.group("nat"))
    if m.group("fps"):
        kw["fps"] = float(m.group("fps"))
    if m.group("count"):
        kw["n_frames"] = int(m.group("count"))
    if m.group("off"):
        kw["keyframe_offset_s"] = float(m.group("off"))
    try:
        return Condition(**kw)
    except ValueError as e:
        raise ConfigError(f"condition {text!r}: {e}") from e


@dataclass(frozen=True)
class PlannedTrial:
    """A trial with everything resolved for it: the sample, the frames to send and the prompt text."""

    trial: Trial
    sample: Sample
    selection: FrameSelection
    prompt: Prompt
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.trial.id


def select_frames(sample: Sample, condition: Condition) -> FrameSelection:
    """The frames a resolved condition shows of a sample."""
    v = sample.video
    p = condition.presentation
    if p is Presentation.FRAMES:
        if condition.n_frames is not None:
            return uniform_count(v.n_frames, v.fps, condition.n_frames)
        return at_fps(v.n_frames, v.fps, condition.fps or 1.0)
    if p is Presentation.KEYFRAMES:
        return around_events(sample.trace.times, [e.frame for e in sample.trace.events], v.n_frames, v.fps,
                             condition.keyframe_offset_s)
    if not condition.resolved:
        raise ConfigError(f"condition {condition.id} is not resolved to a rate; plan() resolves it per model")
    return every_frame(v.n_frames, v.fps) if condition.all_frames else at_fps(v.n_frames, v.fps, condition.fps)


@functools.lru_cache(maxsize=4096)
def selection_sha256(selection: FrameSelection) -> str:
    return sha256_json({"indices": list(selection.indices), "times": list(selection.times), "rule": selection.rule})


def prompt_sha256(prompt: Prompt) -> str:
    return sha256_json({"system": prompt.system, "text": prompt.text})


def plan(samples: Sequence[Sample], conditions: Sequence[Condition], models: Sequence[ModelSpec], *, suite: Suite,
         caps_by_model: Mapping[str, Capabilities],
         options_by_model: Mapping[str, Mapping[str, Any]] | None = None) -> list[PlannedTrial]:
    """Every trial of the design, resolved per model (see the module docstring)."""
    options_by_model = options_by_model or {}
    out: list[PlannedTrial] = []
    seen: dict[str, str] = {}
    for m in models:
        caps = caps_by_model[m.label]
        opts = dict(options_by_model.get(m.label, {}))
        for c in conditions:
            if c.perturbations:
                raise ConfigError(f"condition {c.id} perturbs the video, which this vidaudit cannot do yet; "
                                  "drop the perturbations")
            suite.check_prompt(c.prompt)
            rc = c.resolved_for(caps.default_native_fps)
            key = f"{m.label} {rc.id}"
            if key in seen:
                raise ConfigError(f"conditions {seen[key]} and {c.id} are the same input for {m.label} "
                                  f"(both {rc.id}); list it once")
            seen[key] = c.id
            for s in samples:
                prompt = suite.render_prompt(s, rc)
                sel = select_frames(s, rc)
                trial = Trial(sample_id=s.sample_id, video_sha256=s.video.sha256, condition=rc, model=m,
                              suite=suite.name, prompt_sha256=prompt_sha256(prompt), input_sha256=selection_sha256(sel),
                              adapter_options=opts)
                out.append(PlannedTrial(trial, s, sel, prompt, suite.request_metadata(s)))
    ids = [p.id for p in out]
    if len(set(ids)) != len(ids):
        raise ConfigError("the plan repeats a trial: a model or condition is listed twice")
    return out


def check_servable(planned: Sequence[PlannedTrial], caps_by_model: Mapping[str, Capabilities]) -> None:
    """Refuse, before any call, a condition a model cannot serve (native video, image count, zero frames)."""
    seen: set[tuple[str, str]] = set()
    problems = []
    for p in planned:
        label, cond = p.trial.model.label, p.trial.condition
        caps = caps_by_model[label]
        n = len(p.selection)
        if n == 0:
            problems.append(f"{p.sample.sample_id} under {cond.id} would send zero frames")
        if cond.presentation is Presentation.NATIVE:
            if (label, cond.id) not in seen and not caps.native_video:
                problems.append(f"{label} cannot take native video (condition {cond.id}); use frames@K instead")
            fps = p.sample.video.fps if cond.all_frames else float(cond.fps or 0.0)
            if (label, cond.id) not in seen and (msg := native_fps_problem(caps, fps, label, cond.id)):
                problems.append(msg)
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
    """Builds the request of a planned trial: frames decoded exactly, each preceded by its timestamp.

    Models labelled in ``pixel_free`` (adapters with ``needs_video = False``, e.g. ``simulated``) are
    sent the prompt only: no file is opened, so they run on a dry-run manifest.
    """

    def __init__(self, data_dir: Path, cache: FrameCache | None = None, pixel_free: Collection[str] = ()):
        self.data_dir = Path(data_dir)
        self.cache = cache or FrameCache()
        self.pixel_free = frozenset(pixel_free)

    def __call__(self, p: PlannedTrial) -> Request:
        s, cond, sel = p.sample, p.trial.condition, p.selection
        if len(sel) == 0:
            raise ConfigError(f"{s.sample_id} under {cond.id} would send zero frames")
        path = self.data_dir / s.video.path
        parts: list[Part] = []
        if p.trial.model.label in self.pixel_free:
            pass
        elif cond.presentation is Presentation.NATIVE:
            fps = s.video.fps if cond.all_frames else float(cond.fps)  # type: ignore[arg-type]
            parts.append(VideoPart(path=str(path), sha256=s.video.sha256, fps=fps, duration_s=s.video.duration_s,
                                   n_frames=s.video.n_frames, source_fps=s.video.fps, frame_indices=sel.indices,
                                   timestamps=sel.times))
        else:
            images = self.cache.get(path, s.video.sha256, sel.indices)
            for idx, t, img in zip(sel.indices, sel.times, images, strict=True):
                if cond.timestamps:
                    parts.append(TextPart(f"t={t:.2f}s"))
                parts.append(ImagePart(image=img, frame_index=idx, t=t))
        parts.append(TextPart(p.prompt.text))
        meta = {**p.metadata, "suite": s.suite, "sample_id": s.sample_id, "duration_s": s.video.duration_s,
                "condition": cond.id, "sampling": sel.rule}
        return Request(trial_id=p.id, parts=tuple(parts), system=p.prompt.system, settings=p.trial.model.settings,
                       metadata=meta)


def effective_fps(selection: FrameSelection, duration_s: float) -> float:
    """Frames per second a selection amounts to over a clip (for token estimates)."""
    return len(selection) / duration_s if duration_s > 0 and math.isfinite(duration_s) else 0.0
