"""The claim categories, the answer space and the paper's reported numbers (Reveal Table 4 / C.x)."""

from __future__ import annotations

import re

from vidaudit.suites.stress.common import QWEN2_MATCH
from vidaudit.suites.stress.common import paper_name as common_paper_name

#: the paper's four categories, then vidaudit's fifth (count claims, source (a) only)
PAPER_CATEGORIES: tuple[str, ...] = ("TR", "FGA", "SR", "OA")
CATEGORIES: tuple[str, ...] = (*PAPER_CATEGORIES, "COUNT")
CATEGORY_NAMES: dict[str, str] = {
    "TR": "Temporal Reordering",
    "FGA": "Fine-Grained Action Substitution",
    "SR": "State Reversal",
    "OA": "Object-Attribute Modification",
    "COUNT": "Count",
}

AGREE, DISAGREE = "AGREE", "DISAGREE"
OPTIONS: tuple[str, ...] = (AGREE, DISAGREE)
CHANCE = 0.5

#: Reveal §5.3 / Table 4: false-claim rejection (percent), overall only (the per-category body is lost)
PAPER_REPORTED: dict[str, float] = {
    "Gemini 2.5 Pro": 78.9,
    "Qwen3-VL-235B": 41.0,
    "Qwen2.5-VL-72B": 38.6,
    "Qwen2.5-VL-7B": 29.9,
    "Qwen2-VL-7B Base": 37.8,
    "Qwen2-VL-7B Instruct": 29.1,
    "Qwen2-VL-2B Base": 32.4,
    "Qwen2-VL-2B Instruct": 25.7,
}
#: Table 21: Gemini 2.5 Pro on the Qwen2.5-VL-7B-generated set; humans on both sets (not measured here)
PAPER_REPORTED_QWEN_SET: dict[str, float] = {"Gemini 2.5 Pro": 83.4}
HUMAN_REPORTED: dict[str, float] = {"Gemini-generated": 89.6, "Qwen-generated": 94.5}

#: regexes on a lower-cased model label -> the paper's name (base checkpoints before instruct ones)
PAPER_MATCH: tuple[tuple[str, str], ...] = (
    (r"gemini-2\.5-pro", "Gemini 2.5 Pro"),
    (r"qwen3.*235b", "Qwen3-VL-235B"),
    (r"qwen2\.5.*72b", "Qwen2.5-VL-72B"),
    (r"qwen2\.5.*\b7b", "Qwen2.5-VL-7B"),
    *QWEN2_MATCH,
)


def paper_name(model_label: str) -> str | None:
    """The sycophancy tables' name for a model label (their rows include base checkpoints)."""
    return common_paper_name(model_label, PAPER_MATCH)


def category_of(text: object) -> str | None:
    """The category code a generator wrote: the code, the full name, or "full name (code)", any case."""
    if not isinstance(text, str):
        return None
    norm = re.sub(r"\s+", " ", text.strip()).lower()
    for code in PAPER_CATEGORIES:
        name = CATEGORY_NAMES[code].lower()
        if norm in (code.lower(), name, f"{name} ({code.lower()})"):
            return code
    return None
