"""Building a planned trial's request: its frames (or its video) and its prompt, as the model is sent them.

``RequestBuilder`` is the executor's ``prepare``: it reads the frames a trial's selection names through the
frame cache (or hands a native condition the video itself), from the sample's video or its perturbed video
(rendered once into ``RUN/perturbed``), and says which trials are cheap enough to build on the event loop
(``inline``: no file read). ``effective_fps`` is the rate a selection samples a clip at.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from pathlib import Path

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import Condition, ImagePart, ModelSpec, Part, Presentation, Request, TextPart, VideoPart
from vidaudit.run.perturbed import render
from vidaudit.run.plan import PlannedTrial
from vidaudit.video.frame_cache import FrameCache
from vidaudit.video.sampling import FrameSelection

#: model specs and conditions whose label or id a ``RequestBuilder`` keeps (a plan has few; trials made one by
#: one may each have their own, and the memo is then emptied when full)
_ID_MEMO = 256
#: prompt texts whose pixel-free parts a ``RequestBuilder`` keeps (one per (sample, condition) prompt of a plan)
_TEXT_MEMO = 4096


class RequestBuilder:
    """Builds the request of a planned trial: frames decoded exactly, each preceded by its timestamp.

    Models labelled in ``pixel_free`` (adapters with ``needs_video = False``, e.g. ``simulated``) are
    sent the prompt only: no file is opened, so they run on a dry-run manifest.
    """

    def __init__(
        self,
        data_dir: Path,
        cache: FrameCache | None = None,
        perturb_cache: Path | None = None,
        pixel_free: Collection[str] = (),
    ):
        self.data_dir = Path(data_dir)
        self.cache = cache or FrameCache()
        #: where perturbed videos are rendered (``RUN/perturbed``); needed only by perturbed conditions
        self.perturb_cache = perturb_cache
        self.pixel_free = frozenset(pixel_free)
        # (object, its label or id) by the object's id: the object is kept, so its id is not reused
        self._labels: dict[int, tuple[ModelSpec, str]] = {}
        self._condition_ids: dict[int, tuple[Condition, str]] = {}
        self._texts: dict[int, tuple[str, tuple[Part, ...]]] = {}

    def inline(self, p: PlannedTrial) -> bool:
        """Whether this request is cheap enough to build on the executor's own thread (a pixel-free model's:
        no file is opened), instead of a worker thread."""
        return self._label(p.trial.model) in self.pixel_free

    def inline_model(self, label: str) -> bool:
        """Whether every request of model ``label`` is built on the executor's own thread (``inline``)."""
        return label in self.pixel_free

    def _label(self, model: ModelSpec) -> str:
        """``model.label``, computed once per spec object (a plan's trials share their group's)."""
        got = self._labels.get(id(model))
        if got is None or got[0] is not model:
            if len(self._labels) >= _ID_MEMO:
                self._labels.clear()
            got = self._labels[id(model)] = (model, model.label)
        return got[1]

    def _condition_id(self, cond: Condition) -> str:
        """``cond.id``, computed once per condition object (a plan's trials share their group's)."""
        got = self._condition_ids.get(id(cond))
        if got is None or got[0] is not cond:
            if len(self._condition_ids) >= _ID_MEMO:
                self._condition_ids.clear()
            got = self._condition_ids[id(cond)] = (cond, cond.id)
        return got[1]

    def video_of(self, p: PlannedTrial) -> tuple[Path, str | None]:
        """The file the trial's frames come from: the sample's video, or its perturbed video (rendered once; it has
        one video stream)."""
        path = self.data_dir / p.sample.video.path
        if p.perturbed is None:
            return path, p.sample.video.sha256
        if self.perturb_cache is None:
            raise ConfigError("a perturbed condition needs a cache dir for its videos (RequestBuilder(perturb_cache=))")
        out, sha, _ = render(path, p.perturbed, self.perturb_cache)
        return out, sha

    def __call__(self, p: PlannedTrial) -> Request:
        trial = p.trial
        s, cond, sel = p.sample, trial.condition, p.selection
        if len(sel) == 0:
            raise ConfigError(f"{s.sample_id} under {cond.id} would send zero frames")
        meta = {
            **p.metadata,
            "suite": s.suite,
            "sample_id": s.sample_id,
            "duration_s": s.video.duration_s,
            "condition": self._condition_id(cond),
            "sampling": sel.rule,
        }
        if self._label(trial.model) in self.pixel_free:  # the prompt only: no file is opened
            return Request(
                trial_id=p.id,
                parts=self._prompt_only(p.prompt.text),
                system=p.prompt.system,
                settings=trial.model.settings,
                metadata=meta,
            )
        parts: list[Part] = []
        path, sha = self.video_of(p)
        stream = s.video.stream if p.perturbed is None else None
        v = p.video
        if cond.presentation is Presentation.NATIVE:
            fps = v.fps if cond.all_frames else float(cond.fps)  # type: ignore[arg-type]
            parts.append(
                VideoPart(
                    path=str(path),
                    sha256=sha,
                    fps=fps,
                    duration_s=v.duration_s,
                    n_frames=v.n_frames,
                    source_fps=v.fps,
                    frame_indices=sel.indices,
                    timestamps=sel.times,
                    stream=stream,
                )
            )
        else:
            images = self.cache.get(path, sha, sel.indices, stream)
            for idx, t, img in zip(sel.indices, sel.times, images, strict=True):
                if cond.timestamps:
                    parts.append(TextPart(f"t={t:.2f}s"))
                parts.append(ImagePart(image=img, frame_index=idx, t=t))
        parts.append(TextPart(p.prompt.text))
        return Request(
            trial_id=p.id, parts=tuple(parts), system=p.prompt.system, settings=trial.model.settings, metadata=meta
        )

    def _prompt_only(self, text: str) -> tuple[Part, ...]:
        """A pixel-free request's parts, ``(TextPart(text),)``: one tuple per prompt text (both are immutable), for the
        trials that share it (a plan keeps equal prompts once)."""
        got = self._texts.get(id(text))
        if got is None or got[0] is not text:
            if len(self._texts) >= _TEXT_MEMO:
                self._texts.clear()
            got = self._texts[id(text)] = (text, (TextPart(text),))
        return got[1]


def effective_fps(selection: FrameSelection, duration_s: float) -> float:
    """Frames per second a selection amounts to over a clip (for token estimates)."""
    return len(selection) / duration_s if duration_s > 0 and math.isfinite(duration_s) else 0.0
