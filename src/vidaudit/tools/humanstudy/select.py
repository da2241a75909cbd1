"""Which items a study shows, and in what order: stratified over (probe, condition), seeded.

The unit of selection is a clip, or a pair (the masked and raw items of one cross-frame question, which
share ``params.study_pair``): a pair is drawn whole and counts once toward ``--sample K``. Units are
grouped into strata by (probe, condition) (a pair's condition is ``paired``); each stratum is shuffled
with its own generator (seeded by the sha256 of the study seed and the stratum), and units are then
taken round-robin over the strata in sorted order until K are taken: equal allocation, where a stratum
that runs out leaves its share to the others. The page order is a second seeded shuffle of the chosen
units, so clips of one answer never come in a run; within a pair the masked item is always shown first;
a sycophancy claim and its control (one unit, or two items sharing ``params.pair_id``) never sit side by
side (``page_order``).
``select_by_rules`` draws by the samples' own params instead (``--stratify``, ``--subset``: ``subsets.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import sha256_json
from vidaudit.tools.humanstudy.items import StudyItem
from vidaudit.tools.humanstudy.subsets import Drawn, Stratified, draw

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
            raise ConfigError(
                f"study pair {unit[0].pair!r} has phases {phases}; a pair is one masked "
                "(params.study_phase 1) and one raw (2) sample"
            )
    return units


def stratum(unit: Unit) -> tuple[str, str]:
    return (unit[0].probe, "paired" if unit[0].pair is not None else unit[0].condition)


def select(
    items: Sequence[StudyItem], k: int | None, seed: int, apart: Mapping[str, str] | None = None
) -> list[StudyItem]:
    """The chosen items in page order (see the module docstring); ``k`` None keeps every unit. ``apart``: item
    id -> a key whose items never sit side by side (``page_order``)."""
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
    return page_order(chosen, seed, apart)


def page_order(chosen: Sequence[Unit], seed: int, apart: Mapping[str, str] | None = None) -> list[StudyItem]:
    """The chosen units in a seeded order where items that would announce each other never sit side by side.

    A masked/raw pair stays together (masked first). The items of any other unit (a ``--unit`` draw, e.g. a
    sycophancy false claim and its true control) are split into blocks of one, as are the items sharing an
    ``apart`` key (item id -> key: the default draw passes the samples' ``params.pair_id``); blocks of one unit
    or key are kept apart (``arrange_apart``). See ``page_order_clashes`` for a page where that cannot be done."""
    return [it for block in _blocks_in_order(chosen, seed, apart)[0] for it in block]


def page_order_clashes(chosen: Sequence[Unit], seed: int, apart: Mapping[str, str] | None = None) -> int:
    """How many neighbouring items of ``page_order`` belong together: 0 unless one unit (or key) holds more than
    half the page's blocks, when no order can keep them all apart."""
    return _blocks_in_order(chosen, seed, apart)[1]


def _blocks_in_order(chosen: Sequence[Unit], seed: int, apart: Mapping[str, str] | None) -> tuple[list[Unit], int]:
    blocks: list[tuple[str | None, Unit]] = []
    for n, u in enumerate(chosen):
        if u[0].pair is not None:
            blocks.append((None, u))
        elif len(u) > 1:
            blocks.extend((f"unit:{n}", [it]) for it in u)
        else:
            key = (apart or {}).get(u[0].item_id)
            blocks.append((None if key is None else f"key:{key}", u))
    return arrange_apart(blocks, _rng(seed, "page-order"))


def arrange_apart(blocks: Sequence[tuple[str | None, Unit]], rng: np.random.Generator) -> tuple[list[Unit], int]:
    """The blocks in a random order (``rng``) with no two neighbours of one group (group None: a group of its
    own), and the number of neighbouring pairs that share a group (0 whenever that is possible: no group holds
    more than half the blocks, rounded up).

    Greedy over a shuffled order: each place takes the first remaining block whose group differs from the one
    before and after which the rest can still be arranged (R blocks left, the one before of group L: no group
    holds more than ceil(R / 2) of them, and L no more than floor(R / 2)); when none can (one group holds too
    many), a block of the largest other group, so the clashes are the fewest possible."""
    order = [blocks[int(i)] for i in rng.permutation(len(blocks))]
    groups = [g if g is not None else f"own:{i}" for i, (g, _) in enumerate(order)]
    left: dict[str, int] = {}
    for g in groups:
        left[g] = left.get(g, 0) + 1
    remaining = list(range(len(order)))
    out: list[Unit] = []
    last: str | None = None
    clashes = 0

    def can_follow(g: str, r: int) -> bool:
        """After placing a block of ``g``, can the other ``r`` blocks still be arranged apart?"""
        top = max((c - (h == g) for h, c in left.items()), default=0)
        return top <= (r + 1) // 2 and left[g] - 1 <= r // 2

    while remaining:
        r = len(remaining) - 1
        pick = next((j for j, i in enumerate(remaining) if groups[i] != last and can_follow(groups[i], r)), None)
        if pick is None:  # no order keeps them all apart: spend the largest group first, where allowed
            most = max((c, g) for g, c in left.items() if g != last)[1] if set(left) - {last} else None
            pick = next((j for j, i in enumerate(remaining) if groups[i] == most), 0)
        i = remaining.pop(pick)
        clashes += groups[i] == last
        out.append(order[i][1])
        last = groups[i]
        left[last] -= 1
        if not left[last]:
            del left[last]
    return out, clashes


def select_by_rules(items: Sequence[StudyItem], how: Stratified) -> tuple[list[StudyItem], Drawn]:
    """The items a stratified draw (``subsets.draw``) chooses, in page order, and the draw's counts and lines."""
    drawn = draw(units_of(items), how)
    seed, apart = how.seed, apart_keys(items, how.params)
    clashes = page_order_clashes(drawn.units, seed, apart)
    if clashes:
        drawn.left_out.append(
            f"page order: {clashes} pair(s) of items of one unit sit side by side (a unit holds "
            "more than half the page; no order keeps them apart)"
        )
    return page_order(drawn.units, seed, apart), drawn


def apart_keys(items: Sequence[StudyItem], params: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Item id -> its sample's ``params.pair_id`` (a sycophancy claim and its control), for items that have one."""
    return {
        it.item_id: str(params[it.sample_id]["pair_id"])
        for it in items
        if params.get(it.sample_id, {}).get("pair_id") is not None
    }
