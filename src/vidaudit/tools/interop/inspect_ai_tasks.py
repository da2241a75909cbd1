"""inspect_ai tasks for every registered suite: ``inspect eval vidaudit/SUITE -T data=DIR``.

Importing this module (inspect does, through the ``inspect_ai`` entry point ``vidaudit``) registers one
task per suite of ``vidaudit suites``, named ``vidaudit/<suite>``. Task arguments (``-T``):

- ``data`` (required): a dataset directory written by ``vidaudit generate`` (or an importer);
- ``prompt``: one of the suite's prompts (default: the suite's default);
- ``condition``: ``native`` (default: the video file, the provider samples it) or a vidaudit frame
  condition (``frames@K``, ``frames#K``, ``keyframes``), for which the frames are decoded exactly as in
  ``vidaudit run`` and sent as images, each preceded by its ``t=...s`` line unless ``timestamps=false``.

Each inspect ``Sample`` has the vidaudit ``sample_id`` as its id, the prompt exactly as the suite renders
it, and metadata ``{"vidaudit": {format, suite, condition, frame_indices, frame_times}}``. Generation
defaults to vidaudit's (temperature 0, 2048 tokens); ``inspect eval --temperature ...`` overrides it.

The scorer (:func:`vidaudit_scorer`) scores with the suite's own scorer and returns a dict ``Score``:
``correct`` (0/1) and each scalar metric of the suite (NaN where undefined, e.g. trace ratios at
N = 0: inspect leaves NaN out of a key's metrics), with the full vidaudit ``ScoreRecord`` in the
score's metadata. ``correct`` is reduced with ``accuracy`` and ``stderr``, every key with the mean
over samples where it is defined.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

from vidaudit import __version__
from vidaudit.core.errors import ConfigError, VidauditError
from vidaudit.core.manifest import load_samples
from vidaudit.core.registry import get_suite, names
from vidaudit.core.types import ImagePart, ModelSpec, TextPart, Trial
from vidaudit.models.provider_content import data_url, encode_jpeg
from vidaudit.run.conditions import parse_condition
from vidaudit.run.plan import PlannedTrial, select_frames
from vidaudit.run.request_builder import RequestBuilder
from vidaudit.run.trial_json import prompt_sha256, selection_sha256
from vidaudit.score.stage import external_trial_id, record
from vidaudit.tools.interop.common import (
    check_videos,
    inspect_output_status,
    load_data,
    native_condition,
    require,
    scalar_metric_names,
    scalar_metrics,
)

_ia = require("inspect_ai", "the vidaudit inspect_ai tasks")

from inspect_ai import Task, task  # noqa: E402
from inspect_ai.dataset import MemoryDataset  # noqa: E402
from inspect_ai.dataset import Sample as InspectSample  # noqa: E402
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ContentImage, ContentText, ContentVideo, GenerateConfig  # noqa: E402
from inspect_ai.scorer import Metric, SampleScore, Score, Target, accuracy, metric, scorer, stderr  # noqa: E402
from inspect_ai.solver import TaskState, generate  # noqa: E402

#: the per-sample metadata format (read back by ``score-responses --from inspect``)
SAMPLE_FORMAT = 1


@metric
def defined_mean() -> Metric:
    """The mean over samples where the value is a number (a trace ratio is undefined when N = 0)."""

    def compute(scores: list[SampleScore]) -> float:
        vals = [
            float(s.score.value)
            for s in scores
            if isinstance(s.score.value, int | float)
            and not (isinstance(s.score.value, float) and math.isnan(s.score.value))
        ]
        return sum(vals) / len(vals) if vals else math.nan

    return compute


@functools.lru_cache(maxsize=8)
def _samples(manifest: str) -> dict[str, Any]:
    return {s.sample_id: s for s in load_samples(manifest)}


def _condition(suite: Any, condition: str, prompt: str | None, timestamps: bool) -> Any:
    if condition.strip() == "native":
        cond = native_condition(suite, prompt)
        return cond if timestamps else cond.model_copy(update={"timestamps": False})
    name = prompt or suite.default_prompt
    suite.check_prompt(name)
    cond = parse_condition(condition, name, timestamps)
    if cond.presentation.value == "native":
        raise ConfigError(
            f"condition {condition!r}: inspect providers take the video file as it is (condition "
            "native) or frames (frames@K, frames#K, keyframes); a native rate cannot be asked of them"
        )
    return cond


def _content(sample: Any, cond: Any, prompt: Any, data_dir: Path) -> tuple[list[Any], list[int], list[float]]:
    """The user content (video or timestamped frames, then the prompt) and the frames sent."""
    if cond.presentation.value == "native":
        return (
            [ContentVideo(video=str(data_dir / sample.video.path), format="mp4"), ContentText(text=prompt.text)],
            [],
            [],
        )
    sel = select_frames(sample, cond)
    trial = Trial(
        sample_id=sample.sample_id,
        video_sha256=sample.video.sha256,
        condition=cond,
        model=ModelSpec(provider="inspect"),
        suite=sample.suite,
        prompt_sha256=prompt_sha256(prompt),
        input_sha256=selection_sha256(sel),
    )
    req = RequestBuilder(data_dir)(PlannedTrial(trial, sample, sel, prompt))
    content: list[Any] = []
    for part in req.parts:
        if isinstance(part, TextPart):
            content.append(ContentText(text=part.text))
        elif isinstance(part, ImagePart):
            content.append(ContentImage(image=data_url("image/jpeg", encode_jpeg(part.image))))
    return content, list(sel.indices), list(sel.times)


def vidaudit_dataset(
    suite_name: str, data: str | Path, *, prompt: str | None = None, condition: str = "native", timestamps: bool = True
) -> tuple[MemoryDataset, Any, list[str]]:
    """The inspect dataset of a vidaudit dataset, its condition and the suite's scalar metric names."""
    d = load_data(data)
    if d.suite.name != suite_name:
        raise ConfigError(f"{data} holds {d.suite.name} samples; run the task vidaudit/{d.suite.name} on it")
    check_videos(d)
    cond = _condition(d.suite, condition, prompt, timestamps)
    root = d.root.resolve()
    items = []
    for s in d.samples:
        p = d.suite.render_prompt(s, cond)
        content, idx, times = _content(s, cond, p, root)
        messages: list[Any] = [ChatMessageSystem(content=p.system)] if p.system else []
        messages.append(ChatMessageUser(content=content))
        items.append(
            InspectSample(
                id=s.sample_id,
                input=messages,
                target=str(s.answer),
                metadata={
                    "vidaudit": {
                        "format": SAMPLE_FORMAT,
                        "suite": d.suite.name,
                        "sample_id": s.sample_id,
                        "condition": cond.id,
                        "frame_indices": idx or None,
                        "frame_times": times or None,
                    }
                },
            )
        )
    return (
        MemoryDataset(items, name=f"vidaudit-{suite_name}", location=str(root)),
        cond,
        scalar_metric_names(d.suite, d.samples, cond),
    )


@scorer(metrics={"*": [defined_mean()], "correct": [accuracy(), stderr()]})
def vidaudit_scorer(suite: str, manifest: str, metric_names: list[str]) -> Any:
    """Score each response with the suite's own scorer (see the module docstring)."""
    s = get_suite(suite)

    async def score(state: TaskState, target: Target) -> Score:
        meta = (state.metadata or {}).get("vidaudit") or {}
        sample = _samples(manifest)[str(state.sample_id)]
        output = state.output
        status = inspect_output_status(output)
        text = output.completion if output is not None else ""
        condition = str(meta.get("condition") or "external")
        model = str(state.model)
        rec = record(
            s,
            sample,
            trial_id=external_trial_id(sample.sample_id, model, condition),
            model=model,
            role="model",
            condition=condition,
            status=status,
            text=text,
            frame_times=meta.get("frame_times") or None,
        )
        values = scalar_metrics(rec.metrics)
        value: dict[str, Any] = {"correct": 1.0 if rec.correct else 0.0}
        # undefined (None) as NaN: inspect counts NaN as "not scored" for that key, where its epoch reducer would
        # turn None into 0
        value.update({m: math.nan if values.get(m) is None else values.get(m) for m in metric_names})
        answer = None if rec.parse is None or rec.parse.value is None else str(rec.parse.value)
        explanation = f"status {status}" if rec.parse is None else f"parsed by {rec.parse.method}"
        return Score(
            value=value,
            answer=answer,
            explanation=explanation,
            metadata={"vidaudit_record": rec.model_dump(mode="json")},
        )

    return score


def vidaudit_task(
    suite: str, data: str | Path, *, prompt: str | None = None, condition: str = "native", timestamps: bool = True
) -> Task:
    """The inspect_ai Task of a vidaudit suite over a dataset (see the module docstring)."""
    dataset, cond, names = vidaudit_dataset(suite, data, prompt=prompt, condition=condition, timestamps=timestamps)
    manifest = str(Path(dataset.location or data) / "manifest.jsonl")
    return Task(
        dataset=dataset,
        solver=generate(),
        scorer=vidaudit_scorer(suite, manifest, names),
        name=f"vidaudit/{suite}",
        config=GenerateConfig(temperature=0.0, max_tokens=2048),
        version=SAMPLE_FORMAT,
        metadata={
            "vidaudit": {
                "suite": suite,
                "condition": cond.id,
                "data": dataset.location,
                "vidaudit_version": __version__,
            }
        },
    )


def _register(suite_name: str) -> Any:
    def factory(data: str, prompt: str | None = None, condition: str = "native", timestamps: bool = True) -> Task:
        return vidaudit_task(suite_name, data, prompt=prompt, condition=condition, timestamps=timestamps)

    factory.__name__ = factory.__qualname__ = suite_name
    factory.__doc__ = f"The vidaudit suite {suite_name} (data=DIR, prompt, condition, timestamps)."
    return task(name=suite_name)(factory)


def register_tasks() -> dict[str, Any]:
    """One inspect task per registered suite (a suite that fails to load is skipped, not fatal)."""
    out = {}
    for name in names("suites"):
        try:
            get_suite(name)
        except (VidauditError, ImportError, AttributeError):
            continue
        out[name] = _register(name)
    return out


TASKS = register_tasks()
