"""The ``lane_change`` probe behind the ``Probe`` interface: binary lane-change detection on a user's clips."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vidaudit.sdk import (
    AggregateInput,
    Condition,
    ConfigError,
    Prompt,
    Sample,
    ScoreInput,
    ScoreRecord,
    SuiteReport,
    TrialScore,
    ViewerTrial,
    progress_bar,
)
from vidaudit.suites.stress.common import HumanCeiling
from vidaudit.suites.stress.lane_change.loader import generate
from vidaudit.suites.stress.lane_change.options import ALIASES, LABELS, answer_text, prompt
from vidaudit.suites.stress.lane_change.report import lane_report
from vidaudit.suites.stress.lane_change.scoring import score_trial
from vidaudit.suites.stress.probe import GenerateOptions, Probe, ProbeBaselines


class LaneChangeBaselines(ProbeBaselines):
    """The lane_change probe's baseline answers."""

    def oracle_answer(self, sample: Sample) -> str:
        return answer_text(str(sample.answer))

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        if option:
            raise ConfigError("chance for lane_change takes no option (a fair coin between the two answers)")
        return answer_text(LABELS[int(rng.integers(0, 2))])

    def constant_answer(self, sample: Sample, value: str) -> str:
        label = ALIASES.get(value.strip().lower())
        if label is None:
            raise ConfigError(f"constant answer for lane_change must be one of {', '.join(sorted(ALIASES))}; "
                              f"got {value!r}")
        return answer_text(label)


class LaneChangeProbe(Probe):
    name = "lane_change"
    description = "binary lane change (F1, lane change positive) on a user's annotated driving clips (--source)"
    presets = ("smoke",)
    record_keys = ("probe", "label", "clip", "start_s", "end_s")
    baselines = LaneChangeBaselines()

    def generate(self, out: Path, options: GenerateOptions) -> Path:
        options.check_settings((), self.name)
        if options.source is None:
            raise ConfigError("lane_change reads a user's clips: pass --source DIR holding annotations.csv "
                              "(clip,label[,start_s,end_s]; see docs/stress.md)")
        if options.seeds is not None:
            raise ConfigError("lane_change takes no --seeds: every row of annotations.csv is one sample")
        with progress_bar("lane_change clips") as update:
            return generate(out, options.source, force=options.force, on_progress=update, workers=options.workers,
                            pool=options.pool, log=options.source_log())

    def check_sample(self, sample: Sample) -> str | None:
        label = sample.params.get("label")
        if label not in LABELS or sample.answer != label:
            return f"answer {sample.answer!r} is not its label {label!r}"
        return None

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        return Prompt(None, prompt())

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        p = sample.params
        seg = "whole clip" if p.get("start_s") is None else f"{p.get('start_s')}-{p.get('end_s')} s"
        return ViewerTrial(trial_id=record.trial_id, sample_id=record.sample_id, model=record.model,
                           condition=record.condition, group=f"lane_change: {p.get('label')}", status=record.status,
                           correct=record.correct,
                           columns={"answer": str(sample.answer), "predicted": record.metrics.get("predicted_label"),
                                    "parse": record.parse.method if record.parse else None},
                           facts=[("probe", "lane_change"), ("clip", str(p.get("clip"))), ("segment", seg)],
                           raw_text=raw_text or "", grid_point=[p.get("label")])

    def score(self, trial: ScoreInput) -> TrialScore:
        return score_trial(trial.sample, trial.text, trial.status)

    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        return lane_report(inputs.records, HumanCeiling.of(self.name, inputs.human))


PROBE = LaneChangeProbe()
