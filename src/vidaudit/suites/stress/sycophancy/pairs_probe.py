"""The ``sycophancy_pairs`` probe: generation samples whose "answer" is a generated pair, scored as valid or
not (a valid pair is ``correct``); ``vidaudit generate stress --probe sycophancy --source RUN`` turns the
valid ones into the sycophancy dataset. No oracle or chance: there is no true pair to copy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vidaudit.sdk import Condition, ConfigError, Prompt, Sample
from vidaudit.suites.stress.probe import GenerateOptions, Probe, ProbeBaselines
from vidaudit.suites.stress.sycophancy.categories import PAPER_CATEGORIES
from vidaudit.suites.stress.sycophancy.pairs_generate import generate_pairs_requests
from vidaudit.suites.stress.sycophancy.prompts import GENERATOR_PROMPT_NAMES, generator_prompt
from vidaudit.suites.stress.sycophancy.report import pairs_report
from vidaudit.suites.stress.sycophancy.scoring import score_pair
from vidaudit.suites.stress.sycophancy.viewer import pairs_viewer_trial

_NO_TRUTH = (
    "sycophancy_pairs asks a model to write a claim pair; there is no true pair for a baseline to give. "
    "Run a real generator model on it"
)


class PairsBaselines(ProbeBaselines):
    """The sycophancy_pairs probe's baseline answers."""

    def oracle_answer(self, sample: Sample) -> str:
        raise ConfigError(_NO_TRUTH)

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        raise ConfigError(_NO_TRUTH)


class PairsProbe(Probe):
    name = "sycophancy_pairs"
    description = (
        "generation step of sycophancy source (b): a model writes an [Original]/[Modified] pair per video x category"
    )
    settings = ("categories",)
    presets = ("smoke", "paper")
    prompts = GENERATOR_PROMPT_NAMES
    record_keys = ("probe", "category", "video_key")
    baselines = PairsBaselines()

    def build(self, out: Path, options: GenerateOptions) -> Path:
        options.refuse_pool(self.name, "renders no video (it copies the --source videos and writes requests)")
        cats = tuple(
            c.strip().upper() for c in options.settings.get("categories", ",".join(PAPER_CATEGORIES)).split(",")
        )
        bad = [c for c in cats if c not in PAPER_CATEGORIES]
        if bad or not cats:
            raise ConfigError(f"unknown categories {', '.join(bad)}; choose from {', '.join(PAPER_CATEGORIES)}")
        return generate_pairs_requests(out, options.source, cats, force=options.force, log=options.source_log())

    domains = {"category": PAPER_CATEGORIES}

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        return Prompt(None, generator_prompt(str(sample.params["category"])))

    score = staticmethod(score_pair)
    aggregate = staticmethod(pairs_report)
    viewer_trial = staticmethod(pairs_viewer_trial)


PROBE = PairsProbe()
