"""The ``shortcuts`` probe behind the ``Probe`` interface: language-prior shortcuts (Reveal §3.5, D)."""

from __future__ import annotations

from typing import Any

from vidaudit.sdk import Condition, Prompt, Sample
from vidaudit.suites.stress.probe import ChoiceBaselines, Probe
from vidaudit.suites.stress.shortcuts.generate import generate
from vidaudit.suites.stress.shortcuts.questions import CONDITIONS, LETTERS, QUESTIONS, prompt_text
from vidaudit.suites.stress.shortcuts.reader import answer_from_frames
from vidaudit.suites.stress.shortcuts.report import shortcuts_report
from vidaudit.suites.stress.shortcuts.scoring import score_trial
from vidaudit.suites.stress.shortcuts.viewer import viewer_trial as viewer_trial_of


class ShortcutsBaselines(ChoiceBaselines):
    """The shortcuts probe's baseline answers."""

    choices = LETTERS
    constant_rule = "a shortcuts answer is a letter A-D"
    chance_rule = "it draws uniformly over the four options"

    observe = staticmethod(answer_from_frames)


class ShortcutsProbe(Probe):
    name = "shortcuts"
    description = (
        "language shortcuts: First / Last / Sequence on reordered, blank and unrelated procedure videos; "
        "accuracy with the Cumulative Language Prior; chance 1/4"
    )
    settings = ("dataset", "blank_s")
    presets = ("smoke", "paper")
    generator = staticmethod(generate)
    record_keys = (
        "probe",
        "source",
        "source_name",
        "procedure",
        "video_condition",
        "question_kind",
        "blank_s",
        "preset",
    )
    baselines = ShortcutsBaselines()

    domains = {"video_condition": CONDITIONS, "question_kind": QUESTIONS}

    def check_truth(self, sample: Sample) -> str | None:
        p = sample.params
        opts = p.get("options")
        if not isinstance(opts, list) or len(opts) != len(LETTERS) or sample.answer not in LETTERS:
            return f"answer {sample.answer!r} is not one of four lettered options"
        if p.get("option_lp") == sample.answer:
            return "the language-prior answer is the correct one; the item cannot tell them apart"
        return None

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        p = sample.params
        return Prompt(None, prompt_text(str(p["question_kind"]), p["options"]))

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        p = sample.params
        return {
            "source": p.get("source"),
            "procedure": p.get("procedure"),
            "options": p.get("options"),
            "question_kind": p.get("question_kind"),
        }

    score = staticmethod(score_trial)
    aggregate = staticmethod(shortcuts_report)
    viewer_trial = staticmethod(viewer_trial_of)


PROBE = ShortcutsProbe()
