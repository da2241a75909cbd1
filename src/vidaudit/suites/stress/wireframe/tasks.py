"""The wireframe probe's tasks, their questions, answer formats, chance rates and the paper's numbers.

The paper prints none of the B.7.6 questions; ours are pinned by tests/suites/stress/test_stress_wireframe.py.
"""

from __future__ import annotations

from math import comb

from vidaudit.suites.stress.common import boxed_instruction
from vidaudit.suites.stress.wireframe.scene import COUNTS, NODES, QUERY

TASKS = ("connectivity", "window", "spatial", "counting")
SIDE_OPTIONS = (("A", "left"), ("B", "right"))

CHANCE: dict[str, float] = {
    "connectivity": 1 / comb(len(NODES) - 1, 2),
    "window": 1 / comb(len(NODES) - 1, 2),
    "spatial": 1 / len(SIDE_OPTIONS),
    "counting": 1 / len(COUNTS),
}

_INTRO = (
    "The video shows a drawing of six round nodes labelled A, B, C, D, E and F; some pairs of nodes are "
    "joined by lines."
)


def question(task: str, query: tuple[str, str] | None = None) -> str:
    if task in ("connectivity", "window"):
        return (
            f"{_INTRO} Node {QUERY} is joined by a line to exactly two other nodes. Which two? Answer with "
            "their two letters inside \\boxed{}, for example \\boxed{A, C}."
        )
    if task == "spatial":
        x, y = query or ("?", "?")
        return (
            f"{_INTRO} Is node {x} to the left or to the right of node {y}?\nA. left\nB. right\n" + boxed_instruction()
        )
    if task == "counting":
        return (
            "The video shows a number of filled dark circles. How many circles are there? Answer with the "
            "number inside \\boxed{}, for example \\boxed{2}."
        )
    raise ValueError(f"unknown wireframe task {task!r}")


def answer_text(task: str, answer: str) -> str:
    """The baselines' answer format (what a model that knew the answer would write)."""
    if task == "spatial":
        letter = dict((v, k) for k, v in SIDE_OPTIONS)[answer]
        return f"The answer is {answer}: \\boxed{{{letter}}}"
    return f"\\boxed{{{answer}}}"


#: Reveal Table 18 (Qwen2.5-VL-7B, 5 runs at temperature 0): correct runs out of 5 per arrangement
PAPER_TABLE18: dict[str, dict[str, int]] = {
    "connectivity": {"control": 5, "adversarial": 0, "interleaved": 0},
    "spatial": {"control": 5, "adversarial": 5, "interleaved": 5},
    "counting": {"control": 5, "adversarial": 5, "interleaved": 0},
}
#: Reveal Table 19: the nodes Qwen2.5-VL-7B reported connected to B (truth D, F) per width
PAPER_TABLE19: dict[int, dict[str, str]] = {
    1: {"control": "D, F", "adversarial": "C, D", "interleaved": "C, D, E"},
    2: {"control": "D, F", "adversarial": "C, D", "interleaved": "C, D, E"},
    3: {"control": "D, F", "adversarial": "C, D", "interleaved": "C, D"},
    5: {"control": "D, F", "adversarial": "C, D", "interleaved": "C, D, E"},
    10: {"control": "D, F", "adversarial": "C, D", "interleaved": "C, D"},
}
PAPER_MODEL = "Qwen2.5-VL-7B"
