"""Prompt templates, verbatim from the paper (appendix C.2-C.5), and the input-mode preambles."""

from __future__ import annotations

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import Condition, Presentation

_TRACE = ("Observe the video carefully and provide a step-by-step reasoning trace tracking every event, its "
          "timestamp (in seconds), and the running count. Format your response as follows: 1. Step-by-Step "
          "Event Ledger (timestamp, event type, running count) 2. Final Answer inside \\boxed{} (e.g. \\boxed{4})")

#: name -> (system instruction or None, user template with {question})
TEMPLATES: dict[str, tuple[str | None, str]] = {
    "direct": (None, "Question: {question} Observe the video carefully. Provide your final answer formatted inside "
                     "\\boxed{{}} (e.g. \\boxed{{4}})."),
    "structured_trace": (None, "Question: {question} " + _TRACE.replace("{}", "{{}}").replace("{4}", "{{4}}")),
    "multi_turn_verification": (None, "Question: {question} First, carefully list every detected event with its "
                                      "approximate timestamp and current count. Second, audit your event list to "
                                      "verify whether any events were missed, merged, or double-counted. Finally, "
                                      "state your verified final answer inside \\boxed{{}} (e.g. \\boxed{{4}})."),
    "thinking": (None, "Question: {question} Use deep step-by-step video analysis. Thoroughly analyze the temporal "
                       "video sequence frame-by-frame, count all target visual events, and output your final count "
                       "inside \\boxed{{}} (e.g. \\boxed{{4}})."),
    "role_prompting": ("You are an expert video analytics systems auditor specializing in fine-grained temporal "
                       "event verification.",
                       "Question: {question} Apply rigorous visual event auditing. Log all timestamped visual "
                       "transitions and state your final answer inside \\boxed{{}} (e.g. \\boxed{{4}})."),
}

FRAME_PREAMBLE = "[INPUT MODE: Supplied Frame Grid at {fps:g} FPS]"
KEYFRAME_PREAMBLE = "[ORACLE EVIDENCE AVAILABLE: Key event windows extracted at t_i \u00b1 {offset:g}s]"


def render_prompt(condition: Condition, question: str) -> tuple[str | None, str]:
    """(system, user text) for a condition; frame and keyframe inputs get the paper's preamble."""
    if condition.prompt not in TEMPLATES:
        raise ConfigError(f"unknown prompt {condition.prompt!r}; choose from {', '.join(TEMPLATES)}")
    system, template = TEMPLATES[condition.prompt]
    text = template.format(question=question)
    if condition.presentation is Presentation.FRAMES:
        text = FRAME_PREAMBLE.format(fps=condition.fps) + " " + text
    elif condition.presentation is Presentation.KEYFRAMES:
        text = KEYFRAME_PREAMBLE.format(offset=condition.keyframe_offset_s) + " " + text
    return system, text
