"""Making the headline figures of a model profile (``vidaudit audit``): an accuracy with its Wilson interval,
a paper's published number. The figure types are part of the contract (``core.contract.profile``)."""

from __future__ import annotations

from vidaudit.core.contract.profile import ProfileFigure
from vidaudit.score.stats import wilson_interval

__all__ = ["accuracy", "published"]


def accuracy(name: str, k: int, n: int, note: str = "", interval: tuple[float, float] | None = None) -> ProfileFigure:
    """k of n correct with its 95% interval (n = 0: no value, never a made-up 0): Wilson's over the n items, or
    ``interval`` where the suite counted it otherwise (items that share a source: the report cell's own)."""
    if n <= 0:
        return ProfileFigure(name=name, k=0, n=0, note=note or "no trial")
    lo, hi = wilson_interval(k, n) if interval is None else interval
    return ProfileFigure(name=name, value=k / n, ci_low=lo, ci_high=hi, k=k, n=n, note=note)


def published(name: str, percent: float | None) -> ProfileFigure:
    """A paper's reported percentage as a share (no interval: the papers print none)."""
    return ProfileFigure(name=name, value=None if percent is None else percent / 100.0, note="published")
