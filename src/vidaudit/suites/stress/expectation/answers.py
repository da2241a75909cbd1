"""The built-in baselines' answers on the expectation probe: the oracle (which a faithful judge passes) and chance.

The oracle answers each MCQ with its key, the gap summary with GT_VISIBLE_SUMMARY itself, the description
with the steps in the order shown (saying so when the clip runs backwards), and the anomaly questions
with the ground-truth descriptor in the required layout. Chance draws uniformly from each task's answer
space: a letter; for the free-text tasks, the procedure's steps in a drawn order (description), a drawn
subset of as many steps as are visible in canonical order (gap summary), or a drawn anomaly kind. The free-text tasks have no chance *rate* (the
paper: "no well-defined chance rate"); the drawn answers only show what a guess scores with the judge.
"""

from __future__ import annotations

import numpy as np

from vidaudit.sdk import ConfigError, Sample
from vidaudit.suites.stress.common import LETTERS, mcq_answer_text
from vidaudit.suites.stress.expectation import prompts as P
from vidaudit.suites.stress.expectation.scoring import MCQ_TASKS

#: how a chance answer names each anomaly kind
ANOMALY_NAMES = {
    "insert_object": "an inserted object that does not belong",
    "colour_shift": "a colour shift",
    "noise": "injected noise",
    "reverse": "a part that plays in reverse",
    "shuffle_frames": "shuffled frames",
    "cut": "an abrupt temporal cut",
    "scene_mix": "frames of a different scene mixed in",
}


def layout(a1: str, a2: str, a3: str) -> str:
    return f"1. {a1}\n2. {a2}\n3. {a3}"


def oracle_answer(sample: Sample) -> str:
    p = sample.params
    task = p["task"]
    if task in MCQ_TASKS:
        letter = str(sample.answer)
        return mcq_answer_text(letter, p["options"][LETTERS.index(letter)])
    if task == "gap_summary":
        return str(p["visible_summary"])
    if task == "describe":
        text = P.visible_summary(p["shown"])
        return text + (
            " It plays in reverse: each step's motion runs backwards." if p["direction"] == "reverse" else ""
        )
    return layout(P.visible_summary(p["shown"]), f"Yes. {p['descriptor']}.", f"{p['descriptor']}.")


def chance_answer(sample: Sample, rng: np.random.Generator, option: str = "") -> str:
    if option:
        raise ConfigError("chance for the expectation probe takes no option (it draws from each task's answers)")
    p = sample.params
    task = p["task"]
    if task in MCQ_TASKS:
        i = int(rng.integers(0, len(p["options"])))
        return mcq_answer_text(LETTERS[i], p["options"][i])
    steps = list(p["canonical"])
    if task == "describe":
        return P.visible_summary([steps[i] for i in rng.permutation(len(steps))])
    if task == "gap_summary":
        k = len(p["shown"])
        return P.visible_summary([steps[i] for i in sorted(rng.choice(len(steps), size=k, replace=False))])
    names = list(ANOMALY_NAMES.values())
    guess = names[int(rng.integers(0, len(names)))]
    return layout(P.visible_summary(steps), f"Yes, there is {guess}.", f"I see {guess}.")


def constant_answer(sample: Sample, value: str) -> str:
    """A letter for the MCQ tasks (as the option's answer text); the text verbatim for the free-text tasks."""
    p = sample.params
    if p["task"] in MCQ_TASKS:
        v = value.strip().upper()
        lets = LETTERS[: len(p["options"])]
        if v not in lets:
            raise ConfigError(f"an expectation {p['task']} answer is a letter {', '.join(lets)}, got {value!r}")
        return mcq_answer_text(v, p["options"][lets.index(v)])
    return value
