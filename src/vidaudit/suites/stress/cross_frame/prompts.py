"""The cross-frame question (Reveal prints no wrapper; ours is pinned by
tests/suites/stress/test_stress_cross_frame.py).

The same text is sent for the raw and the masked video (nothing tells the model about the strips); with
abstention the sixth option, F, is Reveal's "Cannot determine from the video".
"""

from __future__ import annotations

from collections.abc import Sequence

from vidaudit.suites.stress.common import boxed_instruction, options_block

PROMPT_NAMES = ("mcq",)


def cross_frame_prompt(question: str, options: Sequence[str]) -> str:
    return f"{question}\n{options_block(options)}\n{boxed_instruction()}"
