"""The camera-motion question (Reveal prints none; ours is pinned by tests/suites/stress/test_stress_unit.py)."""

from __future__ import annotations

from vidaudit.suites.stress.camera_motion.options import DIRECTIONS, LETTER_OF, OPTION_TEXT

PROMPT_NAMES = ("mcq",)

QUESTION = "The camera performs exactly one motion during this video. Which camera motion is it?"


def options_block() -> str:
    return "\n".join(f"{LETTER_OF[d]}. {OPTION_TEXT[d]}" for d in DIRECTIONS)


def camera_motion_prompt() -> str:
    return (
        f"{QUESTION}\n{options_block()}\n"
        "Answer with the letter of exactly one option inside \\boxed{}, for example \\boxed{A}."
    )
