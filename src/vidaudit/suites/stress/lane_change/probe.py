"""The ``lane_change`` probe behind the ``Probe`` interface: binary lane-change detection on a user's clips."""

from __future__ import annotations

from pathlib import Path

from vidaudit.sdk import Condition, ConfigError, Prompt, Sample, ScoreRecord, ViewerTrial, progress_bar
from vidaudit.suites.stress.lane_change.loader import generate
from vidaudit.suites.stress.lane_change.options import ALIASES, LABELS, prompt
from vidaudit.suites.stress.lane_change.options import answer_text as label_text
from vidaudit.suites.stress.lane_change.report import lane_report
from vidaudit.suites.stress.lane_change.scoring import score_trial
from vidaudit.suites.stress.probe import ChoiceBaselines, GenerateOptions, Probe
from vidaudit.suites.stress.viewer import probe_trial


class LaneChangeBaselines(ChoiceBaselines):
    """The lane_change probe's baseline answers."""

    choices = LABELS
    chance_rule = "a fair coin between the two answers"
    answer_text = staticmethod(label_text)

    def constant_answer(self, sample: Sample, value: str) -> str:
        label = ALIASES.get(value.strip().lower())
        if label is None:
            raise ConfigError(
                f"constant answer for lane_change must be one of {', '.join(sorted(ALIASES))}; got {value!r}"
            )
        return self.answer_text(label)


class LaneChangeProbe(Probe):
    name = "lane_change"
    description = "binary lane change (F1, lane change positive) on a user's annotated driving clips (--source)"
    presets = ("smoke",)
    record_keys = ("probe", "label", "clip", "start_s", "end_s")
    baselines = LaneChangeBaselines()

    def build(self, out: Path, options: GenerateOptions) -> Path:
        if options.source is None:
            raise ConfigError(
                "lane_change reads a user's clips: pass --source DIR holding annotations.csv "
                "(clip,label[,start_s,end_s]; see docs/stress.md)"
            )
        if options.seeds is not None:
            raise ConfigError("lane_change takes no --seeds: every row of annotations.csv is one sample")
        with progress_bar("lane_change clips") as update:
            return generate(
                out,
                options.source,
                force=options.force,
                on_progress=update,
                workers=options.workers,
                pool=options.pool,
                log=options.source_log(),
            )

    domains = {"label": LABELS}

    def check_truth(self, sample: Sample) -> str | None:
        label = sample.params["label"]
        if sample.answer != label:
            return f"answer {sample.answer!r} is not its label {label!r}"
        return None

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        return Prompt(None, prompt())

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        p = sample.params
        seg = "whole clip" if p.get("start_s") is None else f"{p.get('start_s')}-{p.get('end_s')} s"
        return probe_trial(
            self.name,
            record,
            sample,
            raw_text,
            kind=p.get("label"),
            predicted=record.metrics.get("predicted_label"),
            facts=[("clip", str(p.get("clip"))), ("segment", seg)],
            grid_point=[p.get("label")],
        )

    score = staticmethod(score_trial)
    aggregate = staticmethod(lane_report)


PROBE = LaneChangeProbe()
