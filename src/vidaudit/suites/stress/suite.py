"""The stress suite behind the ``Suite`` protocol (part 1: the ``camera_motion`` probe)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.types import Condition, Sample
from vidaudit.report.model import SuiteReport, ViewerTrial
from vidaudit.score.records import ScoreRecord, TrialScore
from vidaudit.suites.base import ObservedFrame, Prompt, Suite
from vidaudit.suites.stress.options import DIRECTION_OF, DIRECTIONS, LETTER_OF, LETTERS
from vidaudit.suites.stress.viewer import STRESS_VIEWER

PROBES: dict[str, str] = {
    "camera_motion": "6-way camera motion (zoom in/out, pan left/right, tilt up/down) on 2D-moved stills; chance 1/6",
}


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


class StressSuite(Suite):
    name = "stress"
    description = "Reveal stress probes (part 1: camera motion, 6-way, chance 1/6) with exact synthetic ground truth."
    paper = "003_26ec3fd4175dfa64"
    default_prompt = "mcq"
    probes = PROBES
    viewer = STRESS_VIEWER

    def add_commands(self, generate) -> None:
        from vidaudit.suites.stress.cli import register

        register(generate)

    def check_samples(self, samples: Sequence[Sample], source: str) -> None:
        bad = []
        for s in samples:
            p = s.params
            if p.get("probe") not in PROBES:
                bad.append(f"{s.sample_id}: unknown probe {p.get('probe')!r}")
            elif p.get("motion") not in DIRECTIONS or s.answer != p.get("motion"):
                bad.append(f"{s.sample_id}: answer {s.answer!r} is not its motion {p.get('motion')!r}")
        if bad:
            raise DataError(f"{source}: {len(bad)} stress samples cannot be trusted: " + "; ".join(bad[:5]))

    # ------------------------------------------------------------------ prompts

    def prompt_names(self) -> Sequence[str]:
        from vidaudit.suites.stress.prompts import PROMPT_NAMES

        return list(PROMPT_NAMES)

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        from vidaudit.suites.stress.prompts import camera_motion_prompt

        return Prompt(None, camera_motion_prompt())

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        return {"probe": sample.params.get("probe")}

    # ------------------------------------------------------------------ scoring

    def record_params(self, sample: Sample) -> dict[str, Any]:
        p = sample.params
        return {k: p[k] for k in ("probe", "motion", "synthesis", "scene", "preset", "speed_px_s", "zoom_max",
                                  "zoom_curve") if k in p}

    def score(self, sample: Sample, text: str | None, status: str, *,
              frame_times: Sequence[float] | None = None) -> TrialScore:
        from vidaudit.suites.stress.scoring import score_trial

        return score_trial(sample, text, status)

    def aggregate(self, records: Sequence[ScoreRecord], samples: Mapping[str, Sample]) -> SuiteReport:
        from vidaudit.suites.stress.report import stress_report

        return stress_report(records)

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        from vidaudit.suites.stress.viewer import viewer_trial

        return viewer_trial(record, sample, raw_text)

    # ------------------------------------------------------------------ baselines

    def oracle_answer(self, sample: Sample) -> str:
        return answer_text(str(sample.answer))

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        if option:
            raise ConfigError("chance for stress takes no option (it draws uniformly over the six motions)")
        return answer_text(DIRECTIONS[int(rng.integers(0, len(DIRECTIONS)))])

    def constant_answer(self, sample: Sample, value: str) -> str:
        return answer_text(_direction(value))

    def observe(self, frames: Sequence[ObservedFrame], metadata: Mapping[str, Any]) -> str:
        from vidaudit.video.motion import classify_motion

        ordered = sorted(frames, key=lambda f: (f[1], f[0]))
        direction, _ = classify_motion([f for _, _, f in ordered])
        return answer_text(direction)


SUITE = StressSuite()
