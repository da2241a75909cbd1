"""The ``sycophancy`` probe behind the ``Probe`` interface: AGREE/DISAGREE with a false claim and its true control."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from vidaudit.sdk import Condition, ConfigError, Prompt, Sample
from vidaudit.suites.stress.probe import ChoiceBaselines, GenerateOptions, Probe
from vidaudit.suites.stress.sycophancy.categories import AGREE, CATEGORIES, DISAGREE, OPTIONS
from vidaudit.suites.stress.sycophancy.generate import generate
from vidaudit.suites.stress.sycophancy.prompts import PROMPT_NAMES, eval_prompt
from vidaudit.suites.stress.sycophancy.report import sycophancy_report
from vidaudit.suites.stress.sycophancy.scoring import score_trial
from vidaudit.suites.stress.sycophancy.viewer import viewer_trial as viewer_trial_of

SETTINGS = ("demos", "per_category")


def settings_of(options: GenerateOptions) -> tuple[tuple[str, ...] | None, int]:
    s = options.settings
    demos = None
    if "demos" in s:
        demos = tuple(d.strip() for d in s["demos"].split(",") if d.strip())
    try:
        per = int(s.get("per_category", "2"))
    except ValueError:
        raise ConfigError(f"--set per_category takes a whole number, got {s['per_category']!r}") from None
    return demos, per


class SycophancyBaselines(ChoiceBaselines):
    """The sycophancy probe's baseline answers."""

    choices = OPTIONS
    constant_rule = "a constant sycophancy answer is AGREE or DISAGREE"
    chance_rule = "it answers AGREE or DISAGREE with equal odds"

    def observe(self, frames: Sequence[Any], metadata: Mapping[str, Any]) -> str:
        raise ConfigError(
            "probe sycophancy has no pixel observer: checking a free-text claim against pixels needs "
            "a reader per claim type, which vidaudit does not have"
        )


class SycophancyProbe(Probe):
    name = "sycophancy"
    description = (
        "AGREE/DISAGREE with a false [Modified] claim and its true [Original] control (TR, FGA, SR, OA, "
        "COUNT); rejection, acceptance, balanced accuracy; chance 1/2"
    )
    settings = SETTINGS
    presets = ("smoke", "paper")
    prompts = PROMPT_NAMES
    record_keys = ("probe", "category", "claim_is_true", "pair_id", "source")
    baselines = SycophancyBaselines()

    def build(self, out: Path, options: GenerateOptions) -> Path:
        options.refuse_pool(
            self.name,
            "renders no video of its own (it copies its sources' videos; render a "
            "counting or faithful --source on Ray first)",
        )
        demos, per = settings_of(options)
        console = Console(stderr=True, highlight=False)
        return generate(
            out,
            preset=options.preset,
            source=options.source,
            demos=demos,
            per_category=per,
            force=options.force,
            say=lambda m: console.print(m, markup=False),
        )

    domains = {"category": CATEGORIES}

    def check_truth(self, sample: Sample) -> str | None:
        p = sample.params
        truth = p.get("claim_is_true")
        if truth not in (True, False):
            return f"claim_is_true is {truth!r}, not true or false"
        want = AGREE if truth else DISAGREE
        if sample.answer != want:
            return f"answer {sample.answer!r} is not {want} for a {'true' if truth else 'false'} claim"
        if p.get("statement") != (p.get("original") if truth else p.get("modified")):
            return "statement is not the pair's " + ("original" if truth else "modified")
        if p.get("original") == p.get("modified"):
            return "original == modified"
        return None

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        name = condition.prompt if condition is not None else "mcq"
        return Prompt(None, eval_prompt(str(sample.params["statement"]), name))

    score = staticmethod(score_trial)
    aggregate = staticmethod(sycophancy_report)
    viewer_trial = staticmethod(viewer_trial_of)


PROBE = SycophancyProbe()
