"""The D.5 questions, their four options and the answer key (the visually correct one, y_LP, distractors).

The paper's templates (reveal-prompts.md, D.5) lost their line breaks in extraction; the layout here is
the question on one line, one option per line ("A. ..."), and the instruction on the last line, pinned
by ``tests/suites/stress/test_stress_shortcuts.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vidaudit.sdk import ConfigError
from vidaudit.suites.stress.common import place_at

QUESTIONS = ("first", "last", "sequence")
CONDITIONS = ("reordered", "blank", "unrelated")
ABSTAIN = "None of the above / Cannot determine from the video"
LETTERS = ("A", "B", "C", "D")

_STEM = {
    "first": "Look at the video and say what is the FIRST action performed in this video?",
    "last": "Look at the video and say what is the LAST action performed in this video?",
    "sequence": "Look at the video and answer which of the following represents the correct temporal order of "
    "actions as shown in the video?",
}
INSTRUCTION = "Answer with just the letter."
SEQUENCE_JOIN = ", then "


def prompt_text(question: str, options: Sequence[str]) -> str:
    if question not in _STEM:
        raise ConfigError(f"unknown shortcut question {question!r}; choose from {', '.join(QUESTIONS)}")
    if len(options) != len(LETTERS):
        raise ConfigError(f"a shortcut question has exactly {len(LETTERS)} options, got {len(options)}")
    lines = [_STEM[question], *(f"{LETTERS[i]}. {o}" for i, o in enumerate(options)), INSTRUCTION]
    return "\n".join(lines)


def sequence_text(steps: Sequence[str]) -> str:
    return SEQUENCE_JOIN.join(steps)


@dataclass(frozen=True)
class Key:
    """Four options and which of them is which; ``lp`` is None when y_LP is not among them."""

    options: tuple[str, ...]
    correct: str  # letter
    lp: str | None  # letter of the language-prior answer y_LP
    abstain: str | None  # letter of the abstention option (blank and unrelated only)


def _other_orders(
    steps: Sequence[str], avoid: list[tuple[str, ...]], k: int, rng: np.random.Generator
) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    tries = 0
    while len(out) < k:
        tries += 1
        if tries > 10_000:
            raise ConfigError(f"cannot draw {k} distinct distractor orders of {len(steps)} steps")
        perm = tuple(steps[i] for i in rng.permutation(len(steps)))
        if perm not in avoid and perm not in out:
            out.append(perm)
    return out


def build_key(
    question: str,
    condition: str,
    canonical: Sequence[str],
    shown: Sequence[str] | None,
    rng: np.random.Generator,
    slot: int | None = None,
) -> Key:
    """The options for one question under one condition; ``shown`` is the order the video shows (None: none).

    Reordered: the visually correct answer, y_LP (from the canonical order) and two distractors; the
    generator guarantees they differ. Blank / unrelated: y_LP, two distractors and the abstention option,
    which is correct (D.5: "one of the four choices"). ``slot`` puts the correct option at that position (the
    generator passes the item's index mod 4, so the answers are balanced over the letters); the others are
    placed by ``rng`` (all four are, without a slot).
    """
    if condition not in CONDITIONS:
        raise ConfigError(f"unknown shortcut condition {condition!r}; choose from {', '.join(CONDITIONS)}")
    canonical = list(canonical)
    if question == "sequence":
        lp = sequence_text(canonical)
        true = sequence_text(shown) if shown is not None else None
        used = [tuple(canonical)] + ([tuple(shown)] if shown is not None else [])
        distract = [sequence_text(o) for o in _other_orders(canonical, used, 2, rng)]
    else:
        pick = 0 if question == "first" else -1
        lp = canonical[pick]
        true = shown[pick] if shown is not None else None
        pool = [s for s in canonical if s not in (lp, true)]
        distract = [pool[i] for i in rng.choice(len(pool), size=2, replace=False)]
    if condition == "reordered":
        if true is None or true == lp:
            raise ConfigError(f"a reordered {question} item needs a shown answer that differs from y_LP")
        opts = [true, lp, *distract]
    else:
        opts = [lp, *distract, ABSTAIN]
        true = ABSTAIN
    if slot is None:
        options = tuple(opts[i] for i in rng.permutation(len(opts)))
    else:
        options = tuple(place_at(true, [o for o in opts if o != true], slot, rng))
    letter = {o: LETTERS[i] for i, o in enumerate(options)}
    return Key(
        options=options,
        correct=letter[true],
        lp=letter[lp],
        abstain=letter.get(ABSTAIN) if condition != "reordered" else None,
    )
