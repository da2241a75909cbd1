"""The faithful suite's prompts. The paper's own prompts (its Appendix F) are missing from the text, so
these are vidaudit's, versioned by their text (a prompt's sha256 is in every trial id).

Every target and sub-question is asked on its own, with the video, in a yes/no answer format:

- ``yes_no`` (default): a short explanation allowed, then a final line ``Answer: Yes`` or ``Answer: No``;
- ``direct``: a single word, Yes or No;
- ``legend``: ``yes_no`` after a one-paragraph legend of the synthetic scenes (what a ring, a hidden
  shape or the ball mean). Synthetic data only: an imported real video gets a ConfigError.

Frames sent as images get one line saying that they are in time order (and carry their timestamps
when the condition sends them), since many questions turn on the order of two events.
"""

from __future__ import annotations

from vidaudit.sdk import Condition, ConfigError, Presentation, Sample

ANSWER_FORMAT = (
    "Answer with Yes or No. You may explain briefly first; end your reply with a final line of the "
    'form "Answer: Yes" or "Answer: No".'
)
DIRECT_FORMAT = "Reply with exactly one word: Yes or No."
LEGEND = (
    "The video shows flat coloured shapes, each marked with a number, on a dark background. A white ring "
    "around a shape means it is lit. Shapes can pass a small grey ball to each other, bump into each other, "
    "move behind a larger shape (hidden from view), and leave or enter the scene. Two shapes may share a "
    "colour and form and differ only in their number."
)

TEMPLATES: dict[str, str] = {
    "yes_no": "Question: {question}\n" + ANSWER_FORMAT,
    "direct": "Question: {question}\n" + DIRECT_FORMAT,
    "legend": LEGEND + "\n\nQuestion: {question}\n" + ANSWER_FORMAT,
}
PROMPT_NAMES: tuple[str, ...] = tuple(TEMPLATES)
SYNTHETIC_ONLY = frozenset({"legend"})
DEFAULT_PROMPT = "yes_no"


def _preamble(condition: Condition) -> str:
    if condition.presentation is Presentation.NATIVE:
        return ""
    stamps = ", each preceded by its timestamp" if condition.timestamps else ""
    return f"The images above are frames of one video in time order{stamps}.\n"


def render_prompt(sample: Sample, condition: Condition) -> tuple[str | None, str]:
    """(system, user text) for ``sample`` under ``condition``."""
    name = condition.prompt
    if name not in TEMPLATES:
        raise ConfigError(f"unknown prompt {name!r} for the faithful suite; choose from {', '.join(PROMPT_NAMES)}")
    if name in SYNTHETIC_ONLY and sample.params.get("source") != "synthetic":
        raise ConfigError(
            f"prompt {name!r} describes the synthetic scenes; sample {sample.sample_id} is "
            f"{sample.params.get('source') or 'not synthetic'}: use yes_no or direct"
        )
    return None, _preamble(condition) + TEMPLATES[name].format(question=sample.question)
