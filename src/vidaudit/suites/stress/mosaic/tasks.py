"""The mosaic probe's questions, options, answer formats, recency errors and the paper's numbers.

The paper prints only the example "What two animals are present?"; ours are pinned by
tests/suites/stress/test_stress_mosaic.py.
"""

from __future__ import annotations

import re

from vidaudit.sdk import rng_from
from vidaudit.suites.stress.common import LETTERS, boxed_instruction, options_block
from vidaudit.suites.stress.mosaic.scene import SHAPES, WORDS

STIMULI = ("text", "objects")
ARRANGEMENTS = ("temporal", "spatial", "spatial_tiled")
OPTION_KINDS = ("correct", "recency", "primacy", "neither")
CHANCE = {"text": 1 / len(WORDS), "objects": 1 / len(OPTION_KINDS)}

TEXT_QUESTION = (
    "A single English word is written across the picture. What word is written? Answer with the word "
    "in capital letters inside \\boxed{}, for example \\boxed{HELLO}."
)
OBJECTS_QUESTION = "Which two shapes are present?"

#: Reveal Table 12 (out of 100, temporal / spatial 2x2): model -> (temporal, spatial)
PAPER_TABLE12: dict[str, tuple[float, float]] = {
    "Gemini 2.5 Pro": (40.0, 76.0),
    "Qwen2.5-VL-32B": (6.0, 54.0),
    "Qwen2.5-VL-7B": (4.0, 48.0),
    "LLaVA-7B": (2.0, 49.0),
}
HUMAN_TABLE12 = (84.0, 96.0)
PAPER_MATCH: tuple[tuple[str, str], ...] = (
    (r"gemini-2\.5-pro", "Gemini 2.5 Pro"),
    (r"qwen2\.5.*32b", "Qwen2.5-VL-32B"),
    (r"qwen2\.5.*\b7b", "Qwen2.5-VL-7B"),
    (r"llava", "LLaVA-7B"),
)


def paper_name(model_label: str) -> str | None:
    low = model_label.lower()
    return next((name for pat, name in PAPER_MATCH if re.search(pat, low)), None)


def pair_text(a: str, b: str) -> str:
    x, y = sorted((a, b))
    return f"a {x} and a {y}"


def object_options(seed: int, earlier: str, last: str) -> tuple[list[str], dict[str, str], str]:
    """(option texts A-D, option kind by letter, the correct letter). The kinds: correct {earlier, last};
    recency {other, last} (keeps what the last frame shows); primacy {earlier, other'}; neither. The
    correct letter is ``LETTERS[seed % 4]`` (balanced over seeds); the others are placed by the seed."""
    rng = rng_from("stress", "mosaic", "options", int(seed))
    others = [s for s in SHAPES if s not in (earlier, last)]
    z1, z2 = (others[int(i)] for i in rng.choice(len(others), 2, replace=False))
    texts = {
        "correct": pair_text(earlier, last),
        "recency": pair_text(z1, last),
        "primacy": pair_text(earlier, z2),
        "neither": pair_text(z1, z2),
    }
    rest = [k for k in OPTION_KINDS if k != "correct"]
    rest = [rest[int(i)] for i in rng.permutation(3)]
    slots = ["correct" if i == seed % 4 else rest.pop() for i in range(4)]
    letters = LETTERS[:4]
    return [texts[k] for k in slots], dict(zip(letters, slots, strict=True)), letters[seed % 4]


def objects_prompt(options: list[str]) -> str:
    return f"{OBJECTS_QUESTION}\n{options_block(options)}\n{boxed_instruction()}"


def text_recency(word: str, columns: list[tuple[int, int]], last_quadrant: int, width: int) -> str:
    """What the last frame shows of the word: its letters whose pen-advance centre lies on the side (left
    for quadrants 0 and 2, right for 1 and 3) of the quadrant shown last."""
    right = last_quadrant in (1, 3)
    return "".join(ch for ch, (a, b) in zip(word, columns, strict=True) if ((a + b) / 2 >= width / 2) == right)
