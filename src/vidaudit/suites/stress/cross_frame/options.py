"""The cross-frame answer space, the paper's numbers and the mask configurations (Table 10) with their specs."""

from __future__ import annotations

import re
from typing import Any

from vidaudit.sdk import PerturbationSpec
from vidaudit.suites.stress.common import LETTERS

ABSTAIN = "Cannot determine from the video"  # Reveal B.4, verbatim
N_OPTIONS = 5
CHANCE_FORCED = 1.0 / N_OPTIONS
CHANCE_ABSTAIN = 1.0 / (N_OPTIONS + 1)

#: the main-text default of Algorithm 3
DEFAULT_MASK: dict[str, Any] = {"S": 128, "v": 24, "k": 4, "orientation": "vertical"}
#: Reveal Table 10 (B.2), n = 25: (config, S, v, orientation, k, human %, mean occluded acc. of 3 open models %)
TABLE10: tuple[tuple[int, int, int, str, int, float, float], ...] = (
    (1, 64, 24, "vertical", 4, 100, 4),
    (2, 128, 12, "vertical", 4, 96, 8),
    (3, 128, 24, "horizontal", 4, 20, 0),
    (4, 128, 24, "vertical", 2, 100, 12),
    (5, 128, 24, "vertical", 8, 100, 6),
    (6, 128, 48, "vertical", 4, 96, 10),
    (7, 256, 24, "vertical", 4, 80, 5),
)

#: Reveal Fig. 8 / Table 13 on NExT-QA-T (percent): model -> (raw, occ, TBSR w/ abstention, TBSR w/o)
PAPER_T: dict[str, tuple[float | None, float | None, float | None, float | None]] = {
    "Gemini 2.5 Pro": (74, 8, 11, 51),
    "GPT-5-nano": (57, 19, 35, 61),
    "Qwen2.5-VL-7B": (None, None, 8, 9),
}
#: humans (B.6.2; shown in the paper table, never as the ceiling column, which is "not measured")
PAPER_HUMANS: dict[str, tuple[float, float, float]] = {"T": (95, 92, 97), "S": (94, 86, 92)}
PAPER_MATCH: tuple[tuple[str, str], ...] = (
    (r"gemini-2\.5-pro", "Gemini 2.5 Pro"),
    (r"gpt-5-nano", "GPT-5-nano"),
    (r"qwen2\.5.*\b7b", "Qwen2.5-VL-7B"),
)


def letters(abstention: bool) -> tuple[str, ...]:
    return LETTERS[: N_OPTIONS + (1 if abstention else 0)]


def paper_name(model_label: str) -> str | None:
    low = model_label.lower()
    return next((name for pat, name in PAPER_MATCH if re.search(pat, low)), None)


def mask_key(params: dict[str, Any]) -> tuple[int, int, str, int]:
    p = {**DEFAULT_MASK, **params}
    return int(p["S"]), int(p["v"]), str(p["orientation"]), int(p["k"])


def table10_row(params: dict[str, Any]) -> tuple[int, int, int, str, int, float, float] | None:
    key = mask_key(params)
    return next((r for r in TABLE10 if (r[1], r[2], r[3], r[4]) == key), None)


def mask_spec(mask: dict[str, Any]) -> PerturbationSpec:
    return PerturbationSpec(name="strip_mask", params=dict(mask))
