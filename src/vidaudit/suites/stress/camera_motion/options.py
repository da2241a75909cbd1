"""The camera-motion answer space: six physical directions, lettered A-F in a fixed order."""

from __future__ import annotations

from vidaudit.suites.stress.common import PAPER_MATCH, paper_name  # noqa: F401  (re-exported)

#: the fixed, documented option order (docs/stress.md); letters A-F in this order
DIRECTIONS: tuple[str, ...] = ("zoom_in", "zoom_out", "pan_left", "pan_right", "tilt_up", "tilt_down")
LETTERS: tuple[str, ...] = ("A", "B", "C", "D", "E", "F")
LETTER_OF: dict[str, str] = dict(zip(DIRECTIONS, LETTERS, strict=True))
DIRECTION_OF: dict[str, str] = dict(zip(LETTERS, DIRECTIONS, strict=True))
CHANCE = 1.0 / len(DIRECTIONS)

#: what each option says (camera motion, then what the content does on screen)
OPTION_TEXT: dict[str, str] = {
    "zoom_in": "Zoom in (the scene grows from the centre of the frame)",
    "zoom_out": "Zoom out (the scene shrinks toward the centre of the frame)",
    "pan_left": "Pan left (the camera turns left, so the scene moves right in the frame)",
    "pan_right": "Pan right (the camera turns right, so the scene moves left in the frame)",
    "tilt_up": "Tilt up (the camera tilts up, so the scene moves down in the frame)",
    "tilt_down": "Tilt down (the camera tilts down, so the scene moves up in the frame)",
}

#: Reveal A.4's reported 6-way accuracy (percent), as listed in reveal-checklist.md section 1
PAPER_REPORTED: dict[str, float] = {
    "Gemini 2.5 Pro": 24.3,
    "Qwen3-VL-235B": 21.3,
    "Gemini 2.5 Flash": 20.3,
    "Qwen2.5-VL-72B": 18.0,
    "Qwen2.5-VL-32B": 16.0,
    "Qwen2.5-VL-7B": 15.3,
    "LLaVA": 14.3,
    "GPT-5-nano": 13.7,
}
HUMAN_REPORTED = 98.0  # Reveal: 50 clips, uniform over the six motions (not measured here)
