"""The answer format the built-in models share with VLMs: a timestamped ledger and ``\\boxed{N}``."""

from __future__ import annotations

from collections.abc import Sequence

_EVENT_WORDS = {"bounce_ball": "wall contact", "blinking": "blink", "state_machine": "state transition"}


def ledger_text(domain: str | None, events: Sequence[tuple[float, str | None]], count: int | None = None) -> str:
    """``events``: (time s, label or None); the final count defaults to the number of events."""
    word = _EVENT_WORDS.get(domain or "", "event")
    lines = ["1. Step-by-Step Event Ledger:"]
    if not events:
        lines.append("- no events observed")
    for i, (t, label) in enumerate(events, 1):
        detail = ""
        if label:
            detail = (
                f" ({label} wall)"
                if domain == "bounce_ball"
                else f" (-> state {label})"
                if domain == "state_machine"
                else ""
            )
        lines.append(f"- t={t:.2f}s: {word}{detail}, running count {i}")
    n = len(events) if count is None else count
    lines.append(f"2. Final Answer: \\boxed{{{n}}}")
    return "\n".join(lines)
