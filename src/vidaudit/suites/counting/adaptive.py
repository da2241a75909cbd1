"""The adaptive design of the counting suite: the full grid's operating boundaries with fewer trials.

``vidaudit run counting --design adaptive [--rule point|wilson]``. The boundaries
(``vidaudit.suites.counting.boundaries``) depend on each cell only through "does it meet the rule", and on an
axis only up to its first failing cell (the contiguous-prefix rule). Two savings follow, and both are
exact: on the same trial outcomes the run's boundaries are those of the full grid.

1. **Curtailment per cell.** A cell of n seeds meets the rule in the full grid iff
   ``meets(k, n)`` for its final number k of correct seeds; ``meets`` rises with k. With s
   successes and f failures known, the cell is decided *pass* once ``meets(s, n)`` (k >= s) and
   *fail* once not ``meets(n - f, n)`` (k <= n - f). For the point rule with 10 seeds: 8 successes,
   or 3 failures. Seeds run in seed order, in batches of the fewest further trials that could
   decide the cell, so a cell stops exactly at the shortest seed prefix that decides it, whatever
   the batching (and across an interrupted, resumed run). The stored cell gives the report the same
   verdict: for the point rule s/(s+f) >= s/n >= tau on a pass and s/(s+f) < tau on a fail (f >
   (1 - tau) n); for Wilson's lower bound, which falls with each failure and rises with each
   success, lower(s, s+f) >= lower(s, n) on a pass and lower(s, s+f) <= lower(n - f, n) on a fail.
2. **Pruning.** A cell matters to the count boundary N*(F) only if every smaller tested positive N
   at that F passes, and to the frequency boundary F*(N) only if every lower tested F at that N
   passes. A cell is *active* when one of its two prefixes has only passing cells; only active,
   undecided cells get trials. Every cell up to and including an axis's first failure is then
   decided, and the cells that are never run lie beyond a failure on both of their axes, where
   ``prefix_boundary`` never looks (it skips untested cells and stops at the first failure). The
   first cell of every axis (N = the lowest positive count, or F = the lowest frequency) is always
   active, so every axis of the full grid appears in the report.

The N = 0 controls enter no boundary and are not run. A trial that ends without an ok attempt
(after ``--max-attempts``) counts as a failure, as it does in the report. The design minimises
trials, not waves: a wave holds the next batch of every active undecided cell of every model and
condition.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vidaudit.sdk import ConfigError
from vidaudit.suites.counting.boundaries import TAU, prefix_boundary

#: the names ``--rule`` accepts, mapped to the rule names of ``vidaudit.suites.counting.boundaries``
RULE_NAMES = {"point": "point", "wilson": "wilson_lower", "wilson_lower": "wilson_lower"}
PASS, FAIL, OPEN = "pass", "fail", "open"


@functools.lru_cache(maxsize=65536)
def meets(k: int, n: int, rule: str, tau: float = TAU) -> bool:
    """Whether k correct of n meets ``rule``: asked of ``prefix_boundary`` itself, so there is one definition."""
    return prefix_boundary({1: (k, n)}, tau=tau, rule=rule).value == 1


def cell_state(s: int, f: int, n: int, rule: str, tau: float = TAU) -> str:
    """PASS, FAIL or OPEN for a cell of ``n`` seeds with ``s`` successes and ``f`` failures known."""
    if meets(s, n, rule, tau):
        return PASS
    if not meets(n - f, n, rule, tau):
        return FAIL
    return OPEN


def trials_to_decide(s: int, f: int, n: int, rule: str, tau: float = TAU) -> int:
    """The fewest further trials after which an OPEN cell could be decided (either way)."""
    need_pass = next(j for j in range(1, n - s - f + 1) if meets(s + j, n, rule, tau))
    need_fail = next(j for j in range(1, n - s - f + 1) if not meets(n - f - j, n, rule, tau))
    return min(need_pass, need_fail)


def min_seeds(rule: str, tau: float = TAU, limit: int = 10_000) -> int:
    """The fewest seeds with which a cell can meet ``rule`` at all (all correct)."""
    return next(n for n in range(1, limit) if meets(n, n, rule, tau))


@dataclass
class Cell:
    """One (model, condition, domain, N, F) cell: its trial ids in seed order."""

    surface: tuple[str, str, str]
    n_events: int
    frequency_hz: float
    trials: list[str] = field(default_factory=list)


def _params(p: Any) -> tuple[str, int, float | None, int]:
    prm = p.sample.params
    return (
        str(prm.get("domain")),
        int(prm.get("n_events", p.sample.answer)),
        prm.get("frequency_hz"),
        int(prm.get("seed", 0)),
    )


class AdaptiveDesign:
    """Decides, from the outcomes known so far, the next wave of trials (see the module docstring).

    ``planned`` are the full grid's planned trials (``.id``, ``.trial``, ``.sample``); ``next_wave``
    takes {trial id: correct} for every trial with a final outcome and returns trial ids (empty: done).
    Stateless between calls: a resumed run recomputes everything from the store.
    """

    name = "adaptive"

    def __init__(self, planned: Sequence[Any], rule: str = "point", tau: float = TAU) -> None:
        if rule not in RULE_NAMES:
            raise ConfigError(f"unknown --rule {rule!r} for the adaptive design; choose point or wilson")
        self.rule = RULE_NAMES[rule]
        self.tau = tau
        cells: dict[tuple, Cell] = {}
        order: dict[str, tuple[int, str]] = {}
        self.controls = 0
        for p in planned:
            domain, n, f, seed = _params(p)
            if f is None:
                raise ConfigError(
                    f"sample {p.sample.sample_id} has no frequency (a real video?); the adaptive "
                    "design needs grid samples (vidaudit generate counting); use the full design"
                )
            if n <= 0:
                self.controls += 1  # N = 0 enters no boundary
                continue
            surface = (p.trial.model.label, p.trial.condition.id, domain)
            key = (*surface, n, round(float(f), 6))
            cell = cells.setdefault(key, Cell(surface, n, float(f)))
            cell.trials.append(p.id)
            order[p.id] = (seed, p.sample.sample_id)
        for cell in cells.values():
            cell.trials.sort(key=order.__getitem__)
        self.cells = cells
        self.full_trials = len(planned)
        if cells:
            need = min_seeds(self.rule, tau)
            short = [c for c in cells.values() if len(c.trials) < need]
            if short:
                c = short[0]
                raise ConfigError(
                    f"with {len(c.trials)} seed(s) per cell (e.g. {c.surface[2]} N={c.n_events} "
                    f"F={c.frequency_hz:g}) no cell can meet the {self.rule} rule at tau = {tau:g}, so the "
                    f"boundaries are decided without a trial; the {rule} design needs at least {need} seeds per "
                    f"cell (vidaudit generate counting --seeds {need} ...), or use --rule point"
                )
        # the axes: per surface, count axes {F: [N...]} and frequency axes {N: [F...]}
        self._count_axes: dict[tuple, list[tuple]] = defaultdict(list)
        self._freq_axes: dict[tuple, list[tuple]] = defaultdict(list)
        for key in sorted(cells, key=lambda k: (k[:3], k[3], k[4])):
            self._count_axes[(*key[:3], key[4])].append(key)
        for key in sorted(cells, key=lambda k: (k[:3], k[4], k[3])):
            self._freq_axes[(*key[:3], key[3])].append(key)

    # ------------------------------------------------------------------ state

    def states(self, outcomes: Mapping[str, bool]) -> dict[tuple, str]:
        """Every cell's PASS / FAIL / OPEN from the outcomes known."""
        out = {}
        for key, cell in self.cells.items():
            known = [outcomes[t] for t in cell.trials if t in outcomes]
            s = sum(known)
            out[key] = cell_state(s, len(known) - s, len(cell.trials), self.rule, self.tau)
        return out

    def active(self, states: Mapping[tuple, str]) -> set[tuple]:
        """Cells whose count prefix or frequency prefix has only passing cells before them."""
        out: set[tuple] = set()
        for axes in (self._count_axes, self._freq_axes):
            for keys in axes.values():
                for key in keys:
                    out.add(key)
                    if states[key] != PASS:
                        break
        return out

    def next_wave(self, outcomes: Mapping[str, bool]) -> list[str]:
        """The next batch of every active, undecided cell (empty when every boundary is decided)."""
        states = self.states(outcomes)
        wave: list[str] = []
        for key in sorted(self.active(states)):
            if states[key] != OPEN:
                continue
            cell = self.cells[key]
            known = [outcomes[t] for t in cell.trials if t in outcomes]
            s = sum(known)
            m = trials_to_decide(s, len(known) - s, len(cell.trials), self.rule, self.tau)
            wave += [t for t in cell.trials if t not in outcomes][:m]
        return wave

    def info(self) -> dict[str, Any]:
        """What the design is, for run.json and the report."""
        other = "Wilson-rule" if self.rule == "point" else "point-rule"
        return {
            "name": self.name,
            "rule": self.rule,
            "tau": self.tau,
            "full_grid_trials": self.full_trials,
            "cells": len(self.cells),
            "controls_not_run": self.controls,
            "note": (
                f"Its {self.rule}-rule boundaries are those of the full grid on the same trial outcomes. "
                "Cells stop as soon as they are decided, so cell accuracies, EM, per-N and trace metrics "
                f"are over the trials run and are not the full grid's; neither are the {other} "
                "boundaries. The N = 0 controls were not run."
            ),
        }
