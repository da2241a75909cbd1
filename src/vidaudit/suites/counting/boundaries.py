"""Operating boundaries on a capability surface (Low-Frequency Trap, eq. 5-6, B.3, B.5).

Along one axis (positive counts at a fixed frequency, or frequencies at a fixed count) the
boundary is the largest tested value whose whole prefix of tested values meets the reliability
target tau = 0.80. A later isolated success does not extend it (the contiguous-prefix rule).
When the first tested value already fails, the boundary is ``"<" + that value`` (e.g. ``"<1"``,
``"<0.5"``). Two rules are returned side by side:

- ``point``: the cell's observed accuracy k/n meets tau (the paper: at least 8 of 10 correct);
- ``wilson_lower``: the cell's Wilson 95% lower bound meets tau, a stricter rule that accounts
  for the few seeds per cell (with 10 seeds no cell can meet it, which is the point).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vidaudit.sdk import ConfigError, wilson_lower

TAU = 0.80
RULES = ("point", "wilson_lower")


def format_value(x: float) -> str:
    """A grid value as a JSON key: 1 -> "1", 0.5 -> "0.5", 1.0 (a frequency) keeps "1.0"."""
    if isinstance(x, bool):
        raise ConfigError(f"grid value must be a number, got {x!r}")
    if isinstance(x, int):
        return str(x)
    s = f"{float(x):.1f}"
    return s if float(s) == float(x) else repr(float(x))


@dataclass(frozen=True)
class Boundary:
    """``value`` is the boundary (a tested value), ``"<lowest"``, or None when nothing was tested."""

    value: float | int | str | None
    rule: str
    tau: float

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "rule": self.rule, "tau": self.tau}


def _meets(rule: str, tau: float) -> Callable[[int, int], bool]:
    if rule == "point":
        return lambda k, n: k >= tau * n - 1e-9
    if rule == "wilson_lower":
        return lambda k, n: wilson_lower(k, n) >= tau - 1e-12
    raise ConfigError(f"unknown boundary rule {rule!r}; choose from {', '.join(RULES)}")


def prefix_boundary(cells: Mapping[float, tuple[int, int]], *, tau: float = TAU, rule: str = "point") -> Boundary:
    """Boundary over increasing keys of ``cells`` ({value: (k_correct, n_trials)}); cells with n = 0 are untested."""
    if not 0.0 < tau <= 1.0:
        raise ConfigError(f"reliability target tau must be in (0, 1], got {tau!r}")
    ok = _meets(rule, tau)
    tested = sorted((x, kn) for x, kn in cells.items() if kn[1] > 0)
    for x, (k, n) in tested:
        if not 0 <= k <= n:
            raise ConfigError(f"cell {x}: {k} correct out of {n} trials is impossible")
    if not tested:
        return Boundary(None, rule, tau)
    best = None
    for x, (k, n) in tested:
        if not ok(k, n):
            break
        best = x
    if best is None:
        return Boundary("<" + format_value(tested[0][0]), rule, tau)
    return Boundary(best, rule, tau)


def count_boundary(cells_by_n: Mapping[int, tuple[int, int]], *, tau: float = TAU, rule: str = "point") -> Boundary:
    """N*(F): over positive counts only (N = 0 has no frequency and is excluded)."""
    return prefix_boundary({n: kn for n, kn in cells_by_n.items() if n > 0}, tau=tau, rule=rule)


def frequency_boundary(
    cells_by_f: Mapping[float, tuple[int, int]], *, tau: float = TAU, rule: str = "point"
) -> Boundary:
    """F*(N): over increasing tested frequencies at a fixed positive count."""
    return prefix_boundary(cells_by_f, tau=tau, rule=rule)
