"""The ``camera_motion`` probe behind the ``Probe`` interface: 6-way camera motion on moved stills."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vidaudit.sdk import Condition, ConfigError, ObservedFrame, Prompt, Sample, classify_motion
from vidaudit.suites.stress.camera_motion.generate import SETTINGS, generate
from vidaudit.suites.stress.camera_motion.options import DIRECTION_OF, DIRECTIONS, LETTER_OF, LETTERS
from vidaudit.suites.stress.camera_motion.prompts import camera_motion_prompt
from vidaudit.suites.stress.camera_motion.report import camera_report
from vidaudit.suites.stress.camera_motion.scoring import score_trial
from vidaudit.suites.stress.camera_motion.viewer import viewer_trial as viewer_trial_of
from vidaudit.suites.stress.probe import ChoiceBaselines, Probe


def _direction(value: str) -> str:
    v = value.strip()
    if v.upper() in DIRECTION_OF:
        return DIRECTION_OF[v.upper()]
    if v.lower() in DIRECTIONS:
        return v.lower()
    raise ConfigError(
        f"constant answer must be one of {', '.join(DIRECTIONS)} or a letter {', '.join(LETTERS)}; got {value!r}"
    )


class CameraMotionBaselines(ChoiceBaselines):
    """The camera_motion probe's baseline answers."""

    choices = DIRECTIONS
    chance_rule = "it draws uniformly over the six motions"

    @staticmethod
    def answer_text(choice: str) -> str:
        return f"The camera motion is {choice.replace('_', ' ')}: \\boxed{{{LETTER_OF[choice]}}}"

    def constant_answer(self, sample: Sample, value: str) -> str:
        return self.answer_text(_direction(value))

    def observe(self, frames: Sequence[ObservedFrame], metadata: Mapping[str, Any]) -> str:
        ordered = sorted(frames, key=lambda f: (f[1], f[0]))
        direction, _ = classify_motion([f for _, _, f in ordered])
        return self.answer_text(direction)


class CameraMotionProbe(Probe):
    name = "camera_motion"
    description = "6-way camera motion (zoom in/out, pan left/right, tilt up/down) on moved stills; chance 1/6"
    settings = SETTINGS
    presets = ("smoke", "paper")
    generator = staticmethod(generate)
    record_keys = (
        "probe",
        "motion",
        "synthesis",
        "scene",
        "preset",
        "duration_s",
        "fps",
        "speed_px_s",
        "zoom_max",
        "zoom_curve",
    )
    baselines = CameraMotionBaselines()

    domains = {"motion": DIRECTIONS}

    def check_truth(self, sample: Sample) -> str | None:
        motion = sample.params["motion"]
        if sample.answer != motion:
            return f"answer {sample.answer!r} is not its motion {motion!r}"
        return None

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        return Prompt(None, camera_motion_prompt())

    score = staticmethod(score_trial)
    aggregate = staticmethod(camera_report)
    viewer_trial = staticmethod(viewer_trial_of)


PROBE = CameraMotionProbe()
