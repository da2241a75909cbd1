"""The lane-change answer space: two labels, lettered A (lane change, the positive class) and B."""

from __future__ import annotations

LABELS: tuple[str, ...] = ("lane_change", "no_change")
LETTERS: tuple[str, ...] = ("A", "B")
LETTER_OF: dict[str, str] = dict(zip(LABELS, LETTERS, strict=True))
LABEL_OF: dict[str, str] = dict(zip(LETTERS, LABELS, strict=True))
POSITIVE = "lane_change"
CHANCE = 0.5

QUESTION = "Does the vehicle change lanes in this clip?"  # Reveal A.6, verbatim
OPTION_TEXT: dict[str, str] = {
    "lane_change": "Yes, the vehicle changes lanes",
    "no_change": "No, the vehicle stays in its lane",
}
#: words a constant answer may use for each label
ALIASES: dict[str, str] = {
    "lane_change": "lane_change",
    "change": "lane_change",
    "yes": "lane_change",
    "a": "lane_change",
    "no_change": "no_change",
    "no": "no_change",
    "stay": "no_change",
    "b": "no_change",
}

#: Reveal A.4 / §5.1: models reach 14-31% F1 (mostly false negatives); humans 100% on 50 balanced clips
PAPER_F1_RANGE = (14.0, 31.0)
HUMAN_REPORTED = 100.0


def prompt() -> str:
    block = "\n".join(f"{LETTER_OF[k]}. {OPTION_TEXT[k]}" for k in LABELS)
    return (
        f"{QUESTION}\n{block}\n"
        "Answer with the letter of exactly one option inside \\boxed{}, for example \\boxed{A}."
    )


def answer_text(label: str) -> str:
    return f"The answer is {OPTION_TEXT[label]}: \\boxed{{{LETTER_OF[label]}}}"
