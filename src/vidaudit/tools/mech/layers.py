"""Which LLM layers a probe reads when none are named: the paper's 3, 9, 18, 26 of 28, scaled to the model."""

from __future__ import annotations

from vidaudit.core.errors import ConfigError

PAPER_LAYERS, PAPER_DEPTH = (3, 9, 18, 26), 28


def default_layers(n_layers: int) -> tuple[int, ...]:
    """The paper's layers on a 28-layer model; on another depth the same fractions, rounded, deduplicated."""
    if n_layers == PAPER_DEPTH:
        return PAPER_LAYERS
    return tuple(sorted({min(n_layers - 1, round(layer * n_layers / PAPER_DEPTH)) for layer in PAPER_LAYERS}))


def parse_layers(text: str | None, n_layers: int) -> tuple[int, ...]:
    if not text:
        return default_layers(n_layers)
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"--layers: {text!r} is not a comma-separated list of integers") from None
