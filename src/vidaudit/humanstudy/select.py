"""Which items a study shows, and in what order: stratified over (probe, condition), seeded.

The unit of selection is a clip, or a pair (the masked and raw items of one cross-frame question, which
share ``params.study_pair``): a pair is drawn whole and counts once toward ``--sample K``. Units are
grouped into strata by (probe, condition) (a pair's condition is ``paired``); each stratum is shuffled
with its own generator (seeded by the sha256 of the study seed and the stratum), and units are then
taken round-robin over the strata in sorted order until K are taken: equal allocation, where a stratum
that runs out leaves its share to the others. The page order is a second seeded shuffle of the chosen
units, so clips of one answer never come in a run; within a pair the masked item is always shown first.
``select_by_rules`` draws by the samples' own params instead (``--stratify``, ``--subset``: ``subsets.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import sha256_json
from vidaudit.humanstudy.items import StudyItem
from vidaudit.humanstudy.subsets import Drawn, Rule, draw

Unit = list[StudyItem]


def _rng(seed: int, *key: object) -> np.random.Generator:
    return np.random.default_rng(int(sha256_json(["human-study-select", seed, *key])[:16], 16))


def units_of(items: Sequence[StudyItem]) -> list[Unit]:
    """Items grouped into units: one per pair (phases in order), one per unpaired item."""
    pairs: dict[str, Unit] = {}
    units: list[Unit] = []
    for it in items:
        if it.pair is None:
            units.append([it])
        elif it.pair in pairs:
            pairs[it.pair].append(it)
        else:
            pairs[it.pair] = [it]
            units.append(pairs[it.pair])
    for unit in pairs.values():
        unit.sort(key=lambda i: i.phase or 0)
        phases = [i.phase for i in unit]
        if phases != [1, 2]:
            raise ConfigError(f"study pair {unit[0].pair!r} has phases {phases}; a pair is one masked "
                              "(params.study_phase 1) and one raw (2) sample")
    return units


def stratum(unit: Unit) -> tuple[str, str]:
    return (unit[0].probe, "paired" if unit[0].pair is not None else unit[0].condition)


def select(items: Sequence[StudyItem], k: int | None, seed: int) -> list[StudyItem]:
    """The chosen items in page order (see the module docstring); ``k`` None keeps every unit."""
    units = units_of(items)
    if k is not None and k < 1:
        raise ConfigError(f"--sample must be at least 1, got {k}")
    strata: dict[tuple[str, str], list[Unit]] = {}
    for u in units:
        strata.setdefault(stratum(u), []).append(u)
    queues = []
    for key in sorted(strata):
        us = strata[key]
        order = _rng(seed, *key).permutation(len(us))
        queues.append([us[i] for i in order])
    chosen: list[Unit] = []
    limit = len(units) if k is None else min(k, len(units))
    while len(chosen) < limit:
        for q in queues:
            if q and len(chosen) < limit:
                chosen.append(q.pop(0))
    return page_order(chosen, seed)


def page_order(chosen: Sequence[Unit], seed: int) -> list[StudyItem]:
    """A seeded shuffle of the chosen units; a masked/raw pair stays together (masked first), the items of any
    other unit (a sycophancy pair: a false claim and its true control) are shuffled apart, so one never
    announces the other."""
    shown: list[Unit] = []
    for u in chosen:
        shown.extend([u] if u[0].pair is not None else [[it] for it in u])
    order = _rng(seed, "page-order").permutation(len(shown))
    return [it for i in order for it in shown[i]]


def select_by_rules(items: Sequence[StudyItem], rules: Sequence[Rule], params: Mapping[str, Mapping[str, Any]],
                    seed: int, *, allow_shortfall: bool = False, label: str = "--stratify"
                    ) -> tuple[list[StudyItem], Drawn]:
    """The items a stratified draw (``subsets.draw``) chooses, in page order, and the draw's counts and lines."""
    drawn = draw(rules, units_of(items), params, seed, allow_shortfall=allow_shortfall, label=label)
    return page_order(drawn.units, seed), drawn
