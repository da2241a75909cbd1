"""Count targets: "Do exactly k agents <do p>?" and its minimal negative (one doer's event credited to another), with
sub-questions on every doer and on two agents that never do it (see ``compose`` and docs/faithful.md)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from vidaudit.suites.faithful.compose_base import SubPlan, agents_of, never, paired_target, sub_questions
from vidaudit.suites.faithful.phrasing import NUMBER_WORDS
from vidaudit.suites.faithful.questions import (
    NO,
    YES,
    Claim,
    Count,
    EventKind,
    Exists,
    Pattern,
    Perturbation,
    SubQuestion,
    Target,
    claim_holds,
)
from vidaudit.suites.faithful.world import Fact, WorldRecord


def _count_subs(
    world: WorldRecord, target_id: str, x: Fact, y: Fact, chain: list[str], nevers: list[Pattern]
) -> list[SubQuestion]:
    """A count depends on every doer doing the event and every other agent not doing it: two doers (X and Y,
    Yes) and two agents that never do it (No), all single-fact."""
    plans = [
        SubPlan(Exists(pattern=Pattern.of(x)), YES, [x.id], "single_fact"),
        SubPlan(Exists(pattern=Pattern.of(y)), YES, [y.id], "single_fact"),
        *(SubPlan(Exists(pattern=z), NO, list(chain), "single_fact") for z in nevers),
    ]
    return sub_questions(world, target_id, plans)


@dataclass(frozen=True)
class CountOption:
    """An event kind a count question can ask about: its facts, a doer X that does it once and another doer Y
    (the negative credits X's event to Y), and whether some doer does it more than once (then only linked
    identities count it right: two sightings of one agent are one agent)."""

    event: EventKind
    chain: tuple[str, ...]
    x: Fact
    y: Fact
    repeated: bool


def count_options(world: WorldRecord) -> list[CountOption]:
    """Event kinds done by at least two agents, not by at least two others, one doer doing it exactly once."""
    kinds: dict[EventKind, list[Fact]] = {}
    for f in sorted(world.facts, key=lambda f: (f.t, f.id)):
        if f.subject in agents_of(world):
            kinds.setdefault(EventKind.of(f), []).append(f)
    out = []
    for event, facts in sorted(kinds.items(), key=lambda kv: kv[1][0].id):
        per = Counter(f.subject for f in facts)
        singles = [f for f in facts if per[f.subject] == 1]
        if len(per) < 2 or len(per) >= len(NUMBER_WORDS) or not singles:
            continue
        if len(never(world, facts[0], set(per))) < 2:
            continue
        x = singles[0]
        y = next(f for f in facts if f.subject != x.subject)
        replacement = Claim(
            t=x.t, subject=y.subject, kind=x.kind, predicate=x.predicate, object=x.object, value=x.value
        )
        if claim_holds(replacement, world):
            continue
        out.append(CountOption(event, tuple(f.id for f in facts), x, y, max(per.values()) > 1))
    return out


def count_pair(
    world: WorldRecord, opt: CountOption, ids: tuple[str, str], rng: np.random.Generator
) -> tuple[list[Target], list[SubQuestion]]:
    """ "Do exactly k agents <do p>?" (Yes, k = the agents that do) and its negative: X's event credited to Y at
    t_X, so k - 1 agents ("Do exactly k - 1 agents <do p>?", No)."""
    x, y = opt.x, opt.y
    doers = {world.fact(f).subject for f in opt.chain}
    nevers = never(world, x, doers)
    replacement = Claim(t=x.t, subject=y.subject, kind=x.kind, predicate=x.predicate, object=x.object, value=x.value)
    chain = list(opt.chain)
    asserted = [Claim.of(world.fact(f)) for f in chain]
    out_t, out_s = [], []
    for tid, n, expected, polarity in ((ids[0], len(doers), YES, "positive"), (ids[1], len(doers) - 1, NO, "negative")):
        form = Count(event=opt.event, n=n)
        pick = rng.permutation(len(nevers))[:2]
        subs = _count_subs(world, tid, x, y, chain, [nevers[int(i)] for i in pick])
        neg = polarity == "negative"
        claims = [replacement if c.t == x.t and c.subject == x.subject else c for c in asserted] if neg else asserted
        perturbed = Perturbation(fact_id=x.id, replacement=replacement) if neg else None
        out_t.append(paired_target(world, tid, form, expected, chain, claims, subs, "count", ids, perturbed))
        out_s += subs
    return out_t, out_s
