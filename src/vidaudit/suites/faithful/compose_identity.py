"""Identity targets: "Is <A's sighting before its gap> the same agent as <its sighting after>?" and the negative
naming another agent's sighting, look-alikes first (see ``IdentityOption`` and docs/faithful.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vidaudit.suites.faithful.compose_base import SubPlan, agents_of, never, paired_target, sub_questions
from vidaudit.suites.faithful.questions import (
    NO,
    YES,
    Claim,
    EventKind,
    Exists,
    Pattern,
    Perturbation,
    Ref,
    Same,
    SubQuestion,
    Target,
    claim_holds,
)
from vidaudit.suites.faithful.world import TIME_EPS, Fact, WorldRecord


@dataclass(frozen=True)
class IdentityOption:
    """Two sightings of one agent A across one of its gaps, and a sighting of another agent B.

    ``a``: a fact of A at or before the gap's start; ``b``: a fact of A at or after its end (the gap is an
    occlusion, or an exit until re-entry); ``c``: a fact of B. ``look``: the colour and shape A and B share
    when B is A's look-alike (the refs then say "the red circle that ..."; the number is what tells them
    apart), None when the refs say "the agent that ...". Each of the three refs describes exactly one fact of
    the world, so "Is <ref a> the same agent as <ref b>?" is Yes and "... as <ref c>?" is No. ``a`` and ``b``
    are never a going-behind and coming-out (or a leaving and entering) pair: their answer would be in the words.
    Nor does an attribution probe ask whether an agent does something to itself (``attribution``)."""

    a: Fact
    b: Fact
    c: Fact
    gap: str
    look: tuple[str, str] | None

    def ref(self, f: Fact) -> Ref:
        colour, shape = self.look or (None, None)
        return Ref(event=EventKind.of(f), colour=colour, shape=shape)


def look_of(world: WorldRecord, agent: str) -> tuple[str, str]:
    at = world.entity(agent).attributes
    return (str(at.get("colour")), str(at.get("shape")))


def identity_options(world: WorldRecord) -> list[IdentityOption]:
    """Every identity option of the world (see ``IdentityOption``), look-alike ones first, then in fact order.

    A is an agent with a gap that ends (occlusion or exit and re-entry: its identity link is what the target
    turns on). With a look-alike B (same colour and shape; registered), the refs name the shared look and B's
    fact is ``c``; without (or besides), the refs name no look and ``c`` is any other agent's fact. A ref is
    usable when it describes exactly one fact of the world (so its subject is determined by the record)."""
    agents = set(agents_of(world))
    out: list[IdentityOption] = []
    for g in sorted(world.gaps, key=lambda g: (g.t_start, g.id)):
        if g.t_end is None or g.entity not in agents:
            continue
        a_id = g.entity
        mine = world.trajectory(a_id)
        before = [f for f in mine if f.t <= g.t_start + TIME_EPS]
        after = [f for f in mine if f.t >= g.t_end - TIME_EPS]
        twins = [e for e in sorted(agents) if e != a_id and look_of(world, e) == look_of(world, a_id)]
        modes: list[tuple[tuple[str, str] | None, list[str]]] = []
        if twins:
            modes.append((look_of(world, a_id), twins))
        modes.append((None, sorted(agents - {a_id})))
        for look, others in modes:

            def usable(f: Fact, look: tuple[str, str] | None = look) -> bool:
                colour, shape = look or (None, None)
                return Ref(event=EventKind.of(f), colour=colour, shape=shape).denotes(world) == [f]

            cs = [f for f in world.facts if f.subject in others and usable(f)]
            for fa in (f for f in before if usable(f)):
                for fb in (f for f in after if usable(f) and f.id != fa.id and not _partners(fa, f)):
                    out += [IdentityOption(fa, fb, fc, g.id, look) for fc in cs]
    return out


def attribution(world: WorldRecord, opt: IdentityOption, f: Fact, subject: str) -> Exists | None:
    """The No probe "Does <subject> <f's event>?" of an identity pair, or, when ``f``'s event is done to
    ``subject`` itself ("Does the pink square marked 7 pass the ball to the pink square marked 7?": No from the
    words alone), the same event by another agent of the chain that never does it (the first by id); None when
    the chain has none (the option is then not used)."""
    if f.object != subject:
        return Exists(pattern=EventKind.of(f).by(subject))
    chain = {x for g in (opt.a, opt.b, opt.c) for x in (g.subject, g.object)}
    others = set(agents_of(world)) - chain
    alt = never(world, f, exclude={opt.a.subject, opt.c.subject, *others})
    return Exists(pattern=min(alt, key=lambda p: p.subject)) if alt else None


def _probes(world: WorldRecord, opt: IdentityOption) -> tuple[Exists, Exists, Exists] | None:
    """The pair's three attribution probes: B does a, A does c, B does b (None when one has no agent to ask)."""
    a, b, c = opt.a, opt.b, opt.c
    b_does_a = attribution(world, opt, a, c.subject)
    a_does_c = attribution(world, opt, c, a.subject)
    b_does_b = attribution(world, opt, b, c.subject)
    if b_does_a is None or a_does_c is None or b_does_b is None:
        return None
    return b_does_a, a_does_c, b_does_b


def _partners(f: Fact, g: Fact) -> bool:
    """Two events that always come as a pair by one agent in these worlds (going behind an agent and coming out
    from behind it, leaving the scene and entering it): "is the one that went behind X the one that came out?"
    would be Yes from the words alone, so such a pair is never the positive's."""
    return (f.predicate, g.predicate) in (("goes_behind", "emerges_from"), ("exits", "enters")) and f.object == g.object


def select_identities(world: WorldRecord, n: int, rng: np.random.Generator) -> list[IdentityOption]:
    """Up to ``n`` identity options drawn at random, look-alike ones first, each gap and each fact of A at most
    once (so no target question is asked twice)."""
    opts = identity_options(world)
    order = [int(i) for i in rng.permutation(len(opts))]
    chosen: list[IdentityOption] = []
    used: set[str] = set()
    for i in sorted(order, key=lambda i: (opts[i].look is None, order.index(i))):
        o = opts[i]
        keys = {o.gap, o.a.id, o.b.id}
        # an option without attribution probes is passed over here, not dropped from ``opts``: the draw stays
        # the same for every world whose choice it was not
        if len(chosen) == n or keys & used or _probes(world, o) is None:
            continue
        chosen.append(o)
        used |= keys
    return chosen


def identity_pair(
    world: WorldRecord, opt: IdentityOption, ids: tuple[str, str]
) -> tuple[list[Target], list[SubQuestion]]:
    """ "Is <A's sighting before the gap> the same agent as <A's sighting after it>?" (Yes) and its negative
    "... as <B's sighting>?" (No): B's fact at its time credited to A, the one false claim. Both have chain
    [a, b, c] and four sub-questions (2 Yes, 2 No) probing every chain fact:

    positive: "Does A <b>?" (Yes), "Does B <a>?" (No), "Does B <c>?" (Yes), and the identity probe
    "Is <ref b> the same agent as <ref c>?" (No: after the gap, the look-alikes are told apart);
    negative: "Does A <a>?" (Yes), "Does A <c>?" (No: the false claim itself), "Does B <b>?" (No), and the
    identity probe "Is <ref a> the same agent as <ref b>?" (Yes: the positive, as the paper's negative has its
    positive's fact among its sub-questions)."""
    a, b, c = opt.a, opt.b, opt.c
    who_a = a.subject
    ra, rb, rc = opt.ref(a), opt.ref(b), opt.ref(c)
    chain = [a.id, b.id, c.id]
    replacement = Claim(t=c.t, subject=who_a, kind=c.kind, predicate=c.predicate, object=c.object, value=c.value)
    if claim_holds(replacement, world):
        raise AssertionError("composer bug: the identity negative's replacement claim holds in the world")

    probes = _probes(world, opt)
    if probes is None:
        raise AssertionError("composer bug: an identity option without attribution probes was chosen")
    b_does_a, a_does_c, b_does_b = probes

    plans: tuple[tuple[str, Same, str, list[SubPlan]], ...] = (
        (
            ids[0],
            Same(a=ra, b=rb),
            YES,
            [
                SubPlan(Exists(pattern=Pattern.of(b)), YES, [b.id], "single_fact"),
                SubPlan(b_does_a, NO, [a.id], "single_fact"),
                SubPlan(Exists(pattern=Pattern.of(c)), YES, [c.id], "single_fact"),
                SubPlan(Same(a=rb, b=rc), NO, [b.id, c.id], "identity"),
            ],
        ),
        (
            ids[1],
            Same(a=ra, b=rc),
            NO,
            [
                SubPlan(Exists(pattern=Pattern.of(a)), YES, [a.id], "single_fact"),
                SubPlan(a_does_c, NO, [c.id], "single_fact"),
                SubPlan(b_does_b, NO, [b.id], "single_fact"),
                SubPlan(Same(a=ra, b=rb), YES, [a.id, b.id], "identity"),
            ],
        ),
    )
    targets, subs = [], []
    for tid, form, expected, items in plans:
        neg = expected == NO
        mine = sub_questions(world, tid, items)
        claims = [Claim.of(a), replacement if neg else Claim.of(b)]
        perturbed = Perturbation(fact_id=c.id, replacement=replacement) if neg else None
        targets.append(paired_target(world, tid, form, expected, chain, claims, mine, "identity", ids, perturbed))
        subs += mine
    return targets, subs
