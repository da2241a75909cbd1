"""The ``wireframe`` probe behind the ``Probe`` interface (Reveal B.7 behavioural tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidaudit.sdk import (
    AggregateInput,
    Condition,
    ConfigError,
    ObservedFrame,
    Prompt,
    Sample,
    ScoreInput,
    ScoreRecord,
    SuiteReport,
    TrialScore,
    ViewerTrial,
    progress_bar,
)
from vidaudit.suites.stress.common import HumanCeiling, require_every_frame
from vidaudit.suites.stress.probe import GenerateOptions, Probe, ProbeBaselines
from vidaudit.suites.stress.wireframe.generate import generate
from vidaudit.suites.stress.wireframe.observer import observe
from vidaudit.suites.stress.wireframe.report import wireframe_report
from vidaudit.suites.stress.wireframe.scene import ARRANGEMENTS, COUNTS, NODES, QUERY
from vidaudit.suites.stress.wireframe.scoring import score_trial
from vidaudit.suites.stress.wireframe.tasks import SIDE_OPTIONS, TASKS, answer_text, question

PROBE_NAME = "wireframe"


class WireframeBaselines(ProbeBaselines):
    """The wireframe probe's baseline answers."""

    def oracle_answer(self, sample: Sample) -> str:
        return answer_text(sample.params["task"], str(sample.answer))

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        if option:
            raise ConfigError("chance for wireframe takes no option (it draws uniformly over the task's answers)")
        task = sample.params["task"]
        if task in ("connectivity", "window"):
            others = [x for x in NODES if x != QUERY]
            pick = sorted(others[int(i)] for i in rng.choice(len(others), 2, replace=False))
            return answer_text(task, ", ".join(pick))
        if task == "spatial":
            return answer_text(task, SIDE_OPTIONS[int(rng.integers(len(SIDE_OPTIONS)))][1])
        return answer_text(task, str(COUNTS[int(rng.integers(len(COUNTS)))]))

    def constant_answer(self, sample: Sample, value: str) -> str:
        task = sample.params["task"]
        v = value.strip()
        if task == "spatial":
            side = {"A": "left", "B": "right"}.get(v.upper(), v.lower())
            if side not in ("left", "right"):
                raise ConfigError(f"constant answer for wireframe spatial must be left, right, A or B; got {value!r}")
            return answer_text(task, side)
        return answer_text(task, v)

    def observe(self, frames: Sequence[ObservedFrame], metadata: Mapping[str, Any]) -> str:
        return observe(frames, metadata)


class WireframeProbe(Probe):
    name = PROBE_NAME
    description = ("B.7 line connectivity at 448x448 in 4 frames (control / adversarial temporal groups / "
                   "interleaved), widths 1-10 px, with the x=112 window contrast, spatial and counting tasks")
    presets = ("smoke", "paper")
    prompts = ("mcq",)
    record_keys = ("probe", "task", "arrangement", "line_width", "seed", "preset", "scene_kind")
    baselines = WireframeBaselines()

    def generate(self, out: Path, options: GenerateOptions) -> Path:
        options.check_settings((), self.name)
        if options.source is not None:
            raise ConfigError("wireframe renders its own scenes; --source is not read by it")
        with progress_bar("wireframe videos") as update:
            return generate(out, options.preset, options.seeds, force=options.force, workers=options.workers,
                            pool=options.pool, on_progress=update)

    def check_sample(self, sample: Sample) -> str | None:
        p = sample.params
        if p.get("task") not in TASKS or p.get("arrangement") not in ARRANGEMENTS:
            return f"unknown task {p.get('task')!r} or arrangement {p.get('arrangement')!r}"
        if sample.video.n_frames != 4:
            return f"a wireframe video has 4 frames, this one {sample.video.n_frames}"
        if p["task"] in ("connectivity", "window") and sample.answer != ", ".join(p.get("neighbours", [])):
            return f"answer {sample.answer!r} is not its neighbours {p.get('neighbours')}"
        return None

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        require_every_frame(sample, condition, self.name)
        q = sample.params.get("query")
        return Prompt(None, question(sample.params["task"], tuple(q) if q else None))

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        p = sample.params
        return {"task": p["task"], "arrangement": p["arrangement"], "width": p["width"], "height": p["height"],
                "query": p.get("query")}

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        p = sample.params
        return ViewerTrial(trial_id=record.trial_id, sample_id=record.sample_id, model=record.model,
                           condition=record.condition, group=f"wireframe: {p.get('task')}", status=record.status,
                           correct=record.correct,
                           columns={"answer": str(sample.answer), "predicted": record.metrics.get("predicted"),
                                    "parse": record.parse.method if record.parse else None},
                           facts=[("probe", PROBE_NAME), ("arrangement", str(p.get("arrangement"))),
                                  ("line width px", str(p.get("line_width"))), ("scene", str(p.get("scene_kind")))],
                           raw_text=raw_text or "", grid_point=[p.get("task"), p.get("arrangement")])

    def score(self, trial: ScoreInput) -> TrialScore:
        return score_trial(trial.sample, trial.text, trial.status)

    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        return wireframe_report(inputs.records, HumanCeiling.of(self.name, inputs.human))


PROBE = WireframeProbe()
