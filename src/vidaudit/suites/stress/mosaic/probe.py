"""The ``mosaic`` probe behind the ``Probe`` interface (Reveal B.3 / 6.1.3, the Sequential Mosaic)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vidaudit.sdk import Condition, ConfigError, Prompt, Sample
from vidaudit.suites.stress.common import LETTERS, mcq_answer_text, require_every_frame
from vidaudit.suites.stress.mosaic.generate import generate
from vidaudit.suites.stress.mosaic.observer import observe as observer
from vidaudit.suites.stress.mosaic.report import mosaic_report
from vidaudit.suites.stress.mosaic.scene import WORDS
from vidaudit.suites.stress.mosaic.scoring import score_trial
from vidaudit.suites.stress.mosaic.tasks import ARRANGEMENTS, STIMULI
from vidaudit.suites.stress.probe import ProbeBaselines, RenderingProbe
from vidaudit.suites.stress.viewer import ParamsTrial

PROBE_NAME = "mosaic"


def _answer(sample: Sample, value: str) -> str:
    if sample.params["stimulus"] == "text":
        return f"\\boxed{{{value.upper()}}}"
    options = sample.params["options"]
    return mcq_answer_text(value, options[LETTERS.index(value)])


class MosaicBaselines(ProbeBaselines):
    """The mosaic probe's baseline answers."""

    def oracle_answer(self, sample: Sample) -> str:
        return _answer(sample, str(sample.answer))

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        self.refuse_option(option, "words: uniform over the generator's words; objects: uniform over A-D")
        if sample.params["stimulus"] == "text":
            return _answer(sample, WORDS[int(rng.integers(len(WORDS)))])
        return _answer(sample, LETTERS[int(rng.integers(4))])

    def constant_answer(self, sample: Sample, value: str) -> str:
        v = value.strip()
        if sample.params["stimulus"] == "objects":
            if v.upper() not in LETTERS[:4]:
                raise ConfigError(f"constant answer for mosaic objects must be a letter A-D; got {value!r}")
            return _answer(sample, v.upper())
        if not v.isalpha():
            raise ConfigError(f"constant answer for mosaic text must be one word of letters; got {value!r}")
        return _answer(sample, v)

    observe = staticmethod(observer)


class MosaicProbe(RenderingProbe):
    name = PROBE_NAME
    description = (
        "Sequential Mosaic: 4 quadrants one per frame (temporal) vs one image (spatial), cross-boundary "
        "text and two-shape scenes, with recency errors"
    )
    presets = ("smoke", "paper")
    prompts = ("mcq",)
    record_keys = ("probe", "stimulus", "arrangement", "seed", "preset", "last_quadrant")
    renders = "stills"
    generator = staticmethod(generate)
    baselines = MosaicBaselines()

    domains = {"stimulus": STIMULI, "arrangement": ARRANGEMENTS}

    def check_truth(self, sample: Sample) -> str | None:
        p = sample.params
        want = 4 if p["arrangement"] == "temporal" else 1
        if sample.video.n_frames != want:
            return f"a {p['arrangement']} mosaic has {want} frame(s), this video {sample.video.n_frames}"
        if p["stimulus"] == "text" and sample.answer != p.get("word"):
            return f"answer {sample.answer!r} is not its word {p.get('word')!r}"
        if p["stimulus"] == "objects" and p.get("option_kinds", {}).get(sample.answer) != "correct":
            return f"answer {sample.answer!r} is not its correct option"
        return None

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        require_every_frame(sample, condition, self.name)
        return Prompt(None, sample.question)

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        p = sample.params
        meta = {"stimulus": p["stimulus"], "arrangement": p["arrangement"], "width": p["width"], "height": p["height"]}
        if p["stimulus"] == "text":
            meta |= {"text_scale": p["text_scale"], "text_thickness": p["text_thickness"]}
        else:
            meta["options"] = list(p["options"])  # as printed in the prompt
        return meta

    viewer_trial = staticmethod(
        ParamsTrial(
            PROBE_NAME,
            kind="stimulus",
            predicted="predicted",
            facts={"arrangement": "arrangement", "quadrant order": "order"},
            metric_facts={"recency error": "recency_error"},
            grid=("stimulus", "arrangement"),
        )
    )

    score = staticmethod(score_trial)
    aggregate = staticmethod(mosaic_report)


PROBE = MosaicProbe()
