"""Stratified draws over the samples' own params (``--stratify``), and the papers' named subsets (``--subset``).

A ``Rule`` draws units of one probe's items (or of every item): units are grouped into strata by the values
of ``stratify`` keys (a sample's ``params`` key, or ``probe`` / ``condition``), and either ``total`` units are
spread evenly over the strata (sizes differ by at most one; which strata get the extra unit is drawn by the
seed) or every stratum gets ``per_stratum``. Items sharing ``params[unit]`` are one unit (a sycophancy pair:
the false claim and its true control), drawn whole, as the cross-frame masked/raw pairs are.

Never a silent imbalance: a stratum with fewer units than its share is a one-line ``DataError`` naming every
short stratum (have / need) and the two ways out, unless ``allow_shortfall``: then the short stratum gives all
it has, nothing is moved to the others (the spread stays as even as the pool allows), and each shortfall is
a line of the result (printed by the CLI, kept in the study manifest).

Named subsets are data, read from the paper (``SUBSETS``); the draw itself knows no suite.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.hashing import sha256_json
from vidaudit.tools.humanstudy.items import StudyItem

Unit = list[StudyItem]
#: the keys that are the item's own, not a params key
ITEM_KEYS = ("probe", "condition")


@dataclass(frozen=True)
class Rule:
    """How one probe's units (``probe`` None: every item's) are drawn; see the module docstring."""

    stratify: tuple[str, ...]
    total: int | None = None
    per_stratum: int | None = None
    probe: str | None = None
    unit: str | None = None
    #: the strata the rule asks for, in order (a missing one is a shortfall; units of any other are left out)
    strata: tuple[tuple[str, ...], ...] | None = None
    #: (params key, value) pairs an item must match to be drawn at all (the others are left out, counted)
    where: tuple[tuple[str, str], ...] = ()
    #: how the drawn items are shown: None as generated; "masked" under the source's strip_mask condition
    present: str | None = None
    why: str = ""

    def __post_init__(self) -> None:
        if not self.stratify:
            raise ConfigError("--stratify needs at least one key (a params key, or probe / condition)")
        if (self.total is None) == (self.per_stratum is None):
            raise ConfigError(
                "a stratified draw needs exactly one of --sample K (spread evenly over the strata) and --per-stratum N"
            )
        n = self.total if self.total is not None else self.per_stratum
        if n is not None and n < 1:
            raise ConfigError(f"--sample / --per-stratum must be at least 1, got {n}")

    def describe(self) -> str:
        who = f"{self.probe}: " if self.probe else ""
        size = f"{self.total} unit(s) spread evenly" if self.total is not None else f"{self.per_stratum} per stratum"
        unit = f", a unit = the items sharing params.{self.unit}" if self.unit else ""
        where = "".join(f", {k}={v} only" for k, v in self.where)
        shown = f", shown {self.present}" if self.present else ""
        return f"{who}{size} over {', '.join(self.stratify)}{where}{unit}{shown}"


@dataclass(frozen=True)
class Subset:
    """A paper's named subset: one rule per probe it studies."""

    name: str
    rules: tuple[Rule, ...]
    source: str


_MOTIONS = ("zoom_in", "zoom_out", "pan_left", "pan_right", "tilt_up", "tilt_down")
SUBSETS: dict[str, Subset] = {
    "reveal-paper": Subset(
        "reveal-paper",
        (
            Rule(
                ("category",),
                per_stratum=100,
                probe="sycophancy",
                unit="pair_id",
                strata=(("TR",), ("FGA",), ("SR",), ("OA",)),
                why="C.2: 400 pairs stratified 100 per category (a pair here: the false claim and its true control)",
            ),
            Rule(
                ("motion",),
                total=50,
                probe="camera_motion",
                strata=tuple((m,) for m in _MOTIONS),
                why="A.6: 50 clips, uniform over the six motions",
            ),
            Rule(
                ("label",),
                total=50,
                probe="lane_change",
                strata=(("lane_change",), ("no_change",)),
                why="A.6: 50 clips, balanced",
            ),
            Rule(
                ("split",),
                total=25,
                probe="cross_frame",
                where=(("abstention", "True"),),
                strata=(("T",), ("S",)),
                present="masked",
                why="B.6.1: 25 occluded video-QA pairs drawn uniformly from NExT-QA's temporal and spatial categories, "
                "with a 'Cannot answer' option",
            ),
            Rule(
                ("family",),
                total=100,
                probe="expectation",
                where=(("family", "gap"),),
                unit="source_name",
                strata=(("gap",),),
                why="§4.4 / E.5: 100 gapped videos, each asked the MCQ and the summary",
            ),
        ),
        "Reveal (paper 003) §3.8 / §4.4 / A.6 / B.6.1 / C.2 / E.5; /work/shared/papers/reveal-checklist.md §0",
    ),
}


@dataclass
class Drawn:
    """The units drawn, how many per stratum, and every line the user must read (shortfalls, items left out)."""

    units: list[Unit] = field(default_factory=list)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # rule -> stratum -> drawn
    shortfall: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def _rng(seed: int, *key: object) -> np.random.Generator:
    return np.random.default_rng(int(sha256_json(["human-study-subset", seed, *key])[:16], 16))


def _value(item: StudyItem, params: Mapping[str, Any], key: str) -> str:
    if key in ITEM_KEYS:
        return str(getattr(item, key))
    if key not in params:
        known = ", ".join(sorted(params)) or "none"
        raise DataError(
            f"--stratify {key}: sample {item.sample_id} (probe {item.probe}) has no params.{key}; its params: {known}"
        )
    return str(params[key])


def group_units(units: Sequence[Unit], params: Mapping[str, Mapping[str, Any]], key: str | None) -> list[Unit]:
    """Units merged by ``params[key]`` (each item's sample must carry it); ``key`` None keeps them."""
    if key is None:
        return list(units)
    merged: dict[str, Unit] = {}
    out: list[Unit] = []
    for u in units:
        p = params[u[0].sample_id]
        if key not in p:
            raise DataError(
                f"--unit {key}: sample {u[0].sample_id} has no params.{key}; every item of a unit must name it"
            )
        k = str(p[key])
        if k in merged:
            merged[k].extend(u)
        else:
            merged[k] = list(u)
            out.append(merged[k])
    return out


def _stratum(unit: Unit, params: Mapping[str, Mapping[str, Any]], keys: tuple[str, ...]) -> tuple[str, ...]:
    vals = {tuple(_value(i, params[i.sample_id], k) for k in keys) for i in unit}
    if len(vals) != 1:
        raise DataError(
            f"--stratify {','.join(keys)}: the items of one unit ({', '.join(i.sample_id for i in unit)}) "
            f"fall in different strata {sorted(vals)}; stratify by a key they share"
        )
    return vals.pop()


def _name(keys: tuple[str, ...], stratum: tuple[str, ...]) -> str:
    return ", ".join(f"{k}={v}" for k, v in zip(keys, stratum, strict=True))


def _shares(rule: Rule, strata: list[tuple[str, ...]], seed: int) -> dict[tuple[str, ...], int]:
    """Units wanted per stratum: ``per_stratum`` each, or ``total`` spread evenly (the remainder to drawn strata)."""
    if rule.per_stratum is not None:
        return {s: rule.per_stratum for s in strata}
    assert rule.total is not None
    base, extra = divmod(rule.total, len(strata))
    lucky = {strata[int(i)] for i in _rng(seed, rule.probe, "extra").permutation(len(strata))[:extra]}
    return {s: base + (s in lucky) for s in strata}


@dataclass(frozen=True)
class Stratified:
    """One stratified draw as asked: its rules over the samples' params, the seed, and whether a short stratum
    may give what it has (``allow_shortfall``); ``label`` is the option that asked, for the messages."""

    rules: Sequence[Rule]
    params: Mapping[str, Mapping[str, Any]]
    seed: int
    allow_shortfall: bool = False
    label: str = "--stratify"


def draw(units: Sequence[Unit], how: Stratified) -> Drawn:
    """Apply every rule to its probe's units (see the module docstring); units no rule takes are left out."""
    rules, params, seed, label = how.rules, how.params, how.seed, how.label
    out = Drawn()
    short: list[str] = []
    taken: set[int] = set()
    for rule in rules:
        mine = [u for i, u in enumerate(units) if i not in taken and (rule.probe is None or u[0].probe == rule.probe)]
        taken |= {i for i, u in enumerate(units) if rule.probe is None or u[0].probe == rule.probe}
        if not mine and rule.probe is not None:
            out.left_out.append(f"{rule.probe}: no item in this source; its rule ({rule.describe()}) draws nothing")
            continue
        if rule.where:
            keep = [u for u in mine if all(_value(i, params[i.sample_id], k) == v for i in u for k, v in rule.where)]
            if len(keep) < len(mine):
                out.left_out.append(
                    f"{rule.probe or 'all'}: {len(mine) - len(keep)} unit(s) left out (not "
                    f"{', '.join(f'{k}={v}' for k, v in rule.where)})"
                )
            mine = keep
        mine = group_units(mine, params, rule.unit)
        by: dict[tuple[str, ...], list[Unit]] = {}
        for u in mine:
            by.setdefault(_stratum(u, params, rule.stratify), []).append(u)
        strata = list(rule.strata) if rule.strata is not None else sorted(by)
        if not strata:
            continue
        for s in sorted(set(by) - set(strata)):
            out.left_out.append(
                f"{rule.probe or 'all'}: {len(by[s])} unit(s) of {_name(rule.stratify, s)} left out "
                f"(not a stratum of {rule.describe()})"
            )
        counts = out.counts.setdefault(rule.describe(), {})
        for s, need in _shares(rule, strata, seed).items():
            pool = by.get(s, [])
            order = _rng(seed, rule.probe, *s).permutation(len(pool))
            got = [pool[int(i)] for i in order[:need]]
            if len(got) < need:
                short.append(f"{rule.probe or 'all'} {_name(rule.stratify, s)}: {len(got)} of {need}")
            counts[_name(rule.stratify, s)] = len(got)
            out.units.extend(got)
    rest = [u for i, u in enumerate(units) if i not in taken]
    if rest:
        probes = sorted({u[0].probe for u in rest})
        out.left_out.append(f"{len(rest)} unit(s) of probe(s) {', '.join(probes)} left out (no rule draws them)")
    if short and not how.allow_shortfall:
        raise DataError(
            f"{label}: too few units for the draw asked ({'; '.join(short)}); generate more samples, "
            "or pass --allow-shortfall to take what there is (each shortfall is printed)"
        )
    out.shortfall = [f"shortfall: {s}" for s in short]
    if not out.units:
        raise DataError(f"{label}: no unit matches the draw ({'; '.join(r.describe() for r in rules)})")
    return out


def subset(name: str) -> Subset:
    if name not in SUBSETS:
        raise ConfigError(f"unknown --subset {name!r}; choose from {', '.join(SUBSETS)}")
    return SUBSETS[name]
