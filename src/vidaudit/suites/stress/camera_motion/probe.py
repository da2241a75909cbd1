"""The ``camera_motion`` probe behind the ``Probe`` interface: 6-way camera motion on moved stills."""

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
    classify_motion,
    progress_bar,
)
from vidaudit.suites.stress.camera_motion.generate import SETTINGS, generate
from vidaudit.suites.stress.camera_motion.options import DIRECTION_OF, DIRECTIONS, LETTER_OF, LETTERS
from vidaudit.suites.stress.camera_motion.prompts import camera_motion_prompt
from vidaudit.suites.stress.camera_motion.report import camera_report
from vidaudit.suites.stress.camera_motion.scoring import score_trial
from vidaudit.suites.stress.camera_motion.viewer import viewer_trial as viewer_trial_of
from vidaudit.suites.stress.common import HumanCeiling
from vidaudit.suites.stress.probe import GenerateOptions, Probe, ProbeBaselines


def answer_text(direction: str) -> str:
    return f"The camera motion is {direction.replace('_', ' ')}: \\boxed{{{LETTER_OF[direction]}}}"


def _direction(value: str) -> str:
    v = value.strip()
    if v.upper() in DIRECTION_OF:
        return DIRECTION_OF[v.upper()]
    if v.lower() in DIRECTIONS:
        return v.lower()
    raise ConfigError(f"constant answer must be one of {', '.join(DIRECTIONS)} or a letter "
                      f"{', '.join(LETTERS)}; got {value!r}")


class CameraMotionBaselines(ProbeBaselines):
    """The camera_motion probe's baseline answers."""

    def oracle_answer(self, sample: Sample) -> str:
        return answer_text(str(sample.answer))

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        if option:
            raise ConfigError("chance for camera_motion takes no option (it draws uniformly over the six motions)")
        return answer_text(DIRECTIONS[int(rng.integers(0, len(DIRECTIONS)))])

    def constant_answer(self, sample: Sample, value: str) -> str:
        return answer_text(_direction(value))

    def observe(self, frames: Sequence[ObservedFrame], metadata: Mapping[str, Any]) -> str:
        ordered = sorted(frames, key=lambda f: (f[1], f[0]))
        direction, _ = classify_motion([f for _, _, f in ordered])
        return answer_text(direction)


class CameraMotionProbe(Probe):
    name = "camera_motion"
    description = "6-way camera motion (zoom in/out, pan left/right, tilt up/down) on moved stills; chance 1/6"
    presets = ("smoke", "paper")
    record_keys = ("probe", "motion", "synthesis", "scene", "preset", "duration_s", "fps", "speed_px_s", "zoom_max",
                   "zoom_curve")
    baselines = CameraMotionBaselines()

    def generate(self, out: Path, options: GenerateOptions) -> Path:
        options.check_settings(SETTINGS, self.name)
        with progress_bar("camera_motion videos") as update:
            return generate(out, options.preset, options.seeds, force=options.force, settings=options.settings,
                            source=options.source, on_progress=update, workers=options.workers, pool=options.pool,
                            log=options.source_log())

    def check_sample(self, sample: Sample) -> str | None:
        motion = sample.params.get("motion")
        if motion not in DIRECTIONS or sample.answer != motion:
            return f"answer {sample.answer!r} is not its motion {motion!r}"
        return None

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        return Prompt(None, camera_motion_prompt())

    def score(self, trial: ScoreInput) -> TrialScore:
        return score_trial(trial.sample, trial.text, trial.status)

    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        return camera_report(inputs.records, HumanCeiling.of(self.name, inputs.human))

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        return viewer_trial_of(record, sample, raw_text)


PROBE = CameraMotionProbe()
