"""The ``cross_frame`` probe behind the ``Probe`` interface: NExT-QA-format MCQ, raw and strip-masked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from vidaudit.sdk import (
    Condition,
    ConfigError,
    PerturbationSpec,
    Prompt,
    Sample,
    console,
    read_dataset_info,
)
from vidaudit.suites.stress.common import mcq_answer_text
from vidaudit.suites.stress.cross_frame.generate import COVERAGE_WARNING, SETTINGS, generate
from vidaudit.suites.stress.cross_frame.observer import observe as observer
from vidaudit.suites.stress.cross_frame.prompts import cross_frame_prompt
from vidaudit.suites.stress.cross_frame.report import cross_frame_report
from vidaudit.suites.stress.cross_frame.scoring import score_trial
from vidaudit.suites.stress.cross_frame.viewer import viewer_trial as viewer_trial_of
from vidaudit.suites.stress.probe import GenerateOptions, Probe, ProbeBaselines


class CrossFrameBaselines(ProbeBaselines):
    """The cross_frame probe's baseline answers."""

    def oracle_answer(self, sample: Sample) -> str:
        return mcq_answer_text(str(sample.answer), str(sample.params["answer_text"]))

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        self.refuse_option(option, "it draws uniformly over the sample's options")
        lets, opts = sample.params["letters"], sample.params["options"]
        i = int(rng.integers(0, len(lets)))
        return mcq_answer_text(lets[i], opts[i])

    def constant_answer(self, sample: Sample, value: str) -> str:
        lets, opts = list(sample.params["letters"]), list(sample.params["options"])
        v = value.strip().upper()
        if v == "ABSTAIN":
            if not sample.params.get("abstention"):
                return "Cannot determine from the video."  # no such option here: unparsed, so wrong
            v = lets[-1]
        if v not in lets:
            raise ConfigError(
                f"constant answer for cross_frame is a letter {', '.join(lets)} or 'abstain'; got {value!r}"
            )
        return mcq_answer_text(v, opts[lets.index(v)])

    observe = staticmethod(observer)


class CrossFrameProbe(Probe):
    name = "cross_frame"
    description = (
        "strip-masked multiple-choice video QA (NExT-QA format or built-in synthetic clips), with and "
        "without abstention; Raw, Occ and TBSR; chance 1/5 and 1/6"
    )
    settings = SETTINGS
    presets = ("smoke", "paper", "table10")
    generator = staticmethod(generate)
    record_keys = (
        "probe",
        "item",
        "split",
        "type",
        "abstention",
        "source",
        "template",
        "preset",
        "sampling",
        "coverage",
    )
    baselines = CrossFrameBaselines()

    def build(self, out: Path, options: GenerateOptions) -> Path:
        manifest = super().build(out, options)
        if options.settings.get("sampling", "").strip().lower() == "paper":
            console.print(f"warning: {COVERAGE_WARNING}")
            for cond, c in read_dataset_info(Path(manifest).parent).get("coverage", {}).items():
                console.print(
                    f"  {cond}: {100 * c['mean_strips_shown']:.1f}% of strips shown on average; "
                    f"{c['n_missing_strips']} of {c['n_samples']} samples miss some"
                )
        return manifest

    domains = {"split": ("T", "S")}

    def check_truth(self, sample: Sample) -> str | None:
        p = sample.params
        opts, lets = p.get("options") or [], p.get("letters") or []
        if len(opts) != len(lets) or len(opts) != (6 if p.get("abstention") else 5):
            return f"{len(opts)} options / {len(lets)} letters do not fit abstention={p.get('abstention')}"
        if sample.answer not in lets or opts[lets.index(sample.answer)] != p.get("answer_text"):
            return f"answer {sample.answer!r} is not the option {p.get('answer_text')!r}"
        return None

    def perturbation_problem(self, sample: Sample, spec: PerturbationSpec) -> str | None:
        if spec.name == "strip_mask":
            return None  # strips are redistributed over time, never removed (coverage is checked per trial)
        return (
            f"probe cross_frame defines its answers under strip_mask only; {spec.name} may remove what the "
            "question asks about"
        )

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        return Prompt(None, cross_frame_prompt(sample.question, sample.params["options"]))

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        p = sample.params
        return {
            "source": p.get("source"),
            "template": p.get("template"),
            "template_args": p.get("template_args") or {},
            "options": list(p.get("options") or []),
        }

    score = staticmethod(score_trial)
    aggregate = staticmethod(cross_frame_report)
    viewer_trial = staticmethod(viewer_trial_of)


PROBE = CrossFrameProbe()
