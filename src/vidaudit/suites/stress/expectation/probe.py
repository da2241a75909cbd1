"""The ``expectation`` probe behind the ``Probe`` interface: temporal expectation bias (Reveal §3.6, 5.5, E)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vidaudit.sdk import Condition, ConfigError, Prompt, Sample, SuiteCapabilities
from vidaudit.suites.stress.common import LETTERS
from vidaudit.suites.stress.datasets import clips_from_source
from vidaudit.suites.stress.expectation import answers
from vidaudit.suites.stress.expectation import prompts as P
from vidaudit.suites.stress.expectation.generate import ANOMALIES, JUDGED_TASKS, TASKS, generate
from vidaudit.suites.stress.expectation.report import expectation_report
from vidaudit.suites.stress.expectation.scoring import score_trial
from vidaudit.suites.stress.expectation.viewer import viewer_trial as viewer_trial_of
from vidaudit.suites.stress.probe import GenerateOptions, Probe, ProbeBaselines


class ExpectationBaselines(ProbeBaselines):
    """The expectation probe's baseline answers."""

    oracle_answer = staticmethod(answers.oracle_answer)
    chance_answer = staticmethod(answers.chance_answer)
    constant_answer = staticmethod(answers.constant_answer)


class ExpectationProbe(Probe):
    name = "expectation"
    description = (
        "temporal expectation bias: anomaly detection (Spatial / Temporal / Overall, judged), temporal "
        "gap (4-way MCQ and judged summary), reversed clips (forward/reverse and judged description)"
    )
    settings = ("dataset",)
    presets = ("smoke", "paper")
    record_keys = (
        "probe",
        "task",
        "family",
        "procedure",
        "source_name",
        "direction",
        "anomaly",
        "anomaly_kind",
        "preset",
    )
    judge_version = P.JUDGE_VERSION
    capabilities = SuiteCapabilities(judges=True)
    baselines = ExpectationBaselines()

    def build(self, out: Path, options: GenerateOptions) -> Path:
        log = options.source_log()
        clips = None
        if options.source is not None:
            clips = clips_from_source(Path(options.source), options.settings.get("dataset"), log)
        elif "dataset" in options.settings:
            raise ConfigError("--set dataset=NAME names the format of --source DIR; pass --source")
        return options.run_generator(self.name, generate, out, clips=clips, log=log)

    def describe_samples(self, samples: Sequence[Sample]) -> str:
        """The generic line, and what a user's clips lacked: without labelled steps there is no gap task."""
        text = super().describe_samples(samples)
        if samples and not any(s.params.get("task") in ("gap_mcq", "gap_summary") for s in samples):
            text += (
                "; no temporal-gap task: the clips have no labelled steps (the gap task needs DIR/steps.csv, "
                "docs/stress.md)"
            )
        return text

    domains = {"task": TASKS}

    def check_truth(self, sample: Sample) -> str | None:
        p = sample.params
        task = p["task"]
        if task in ("direction", "gap_mcq"):
            opts = p.get("options")
            if not isinstance(opts, list) or sample.answer not in LETTERS[: len(opts)]:
                return f"answer {sample.answer!r} is not one of the lettered options"
        if task in ("gap_mcq", "gap_summary") and (
            not p.get("missing_action") or p["missing_action"] in (p.get("shown") or [])
        ):
            return "the removed step is missing or still listed as visible"
        if task == "gap_mcq" and (p.get("option_kinds") or [None])[LETTERS.index(sample.answer)] != "visible":
            return "the keyed option is not the visible sequence"
        if task == "anomaly" and (p.get("anomaly") not in ANOMALIES or not p.get("descriptor")):
            return f"unknown anomaly {p.get('anomaly')!r} or no ground-truth descriptor"
        if task in ("direction", "describe") and p.get("direction") not in ("forward", "reverse"):
            return f"direction {p.get('direction')!r} is neither forward nor reverse"
        return None

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        p = sample.params
        task = p["task"]
        if task == "direction":
            return Prompt(None, P.direction_prompt())
        if task == "describe":
            return Prompt(None, P.describe_prompt())
        if task == "gap_mcq":
            return Prompt(None, P.gap_mcq_prompt(p["options"]))
        if task == "gap_summary":
            return Prompt(None, P.GAP_SUMMARY_PROMPT)
        return Prompt(None, P.anomaly_prompt(p["anomaly"]))

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        p = sample.params
        return {"task": p.get("task"), "procedure": p.get("procedure"), "options": p.get("options")}

    def judge_prompt(self, sample: Sample, answer: str) -> Prompt | None:
        p = sample.params
        task = p.get("task")
        if task not in JUDGED_TASKS or not isinstance(answer, str) or not answer.strip():
            return None
        if task == "gap_summary":
            return Prompt(None, P.gap_judge_prompt(p["visible_summary"], p["missing_action"], answer))
        if task == "describe":
            return Prompt(
                None, P.direction_judge_prompt(p["shown"], p["canonical"], p["direction"] == "reverse", answer)
            )
        return Prompt(None, P.anomaly_judge_prompt(p["anomaly"], p["descriptor"], answer))

    score = staticmethod(score_trial)
    aggregate = staticmethod(expectation_report)
    viewer_trial = staticmethod(viewer_trial_of)


PROBE = ExpectationProbe()
