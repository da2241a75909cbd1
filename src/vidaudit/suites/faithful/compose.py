"""The composer: order-dependent, count and identity targets, their atomic sub-questions and a minimal
negative for each.

Target pairs are dealt over ``FORM_SLOTS`` (order said, order implied, count, identity; see ``compose``
and docs/faithful.md). Every sub-question is on its target's chain (H.8): it names only the chain's
participants (a count: the agents it counts). Identity targets are described at ``identity_options``.
The order targets:

It works on the symbolic record only (like the paper's generator, it never sees pixels). The unit
is a *triple* of facts, each matching its pattern exactly once in the world:

- ``X`` and ``Y``: the same kind of event done by two different agents (both light up, both receive
  the ball, both go behind the same large agent, ...), ``t_X < t_Y``;
- ``B``: an anchor event between them, ``t_X < t_B < t_Y``, at least ``MIN_ORDER_GAP_S`` from each.

The three are causally independent (different episodes, no shared participant but the object
``X`` and ``Y`` share), so both orders stay consistent with the events themselves and no prior
favours either: only the observed order answers. Each triple gives two targets:

- positive: "Does X <do p> before B?" -> Yes; ordering pair (X, B);
- negative: "Does Y <do p> before B?" -> No; ordering pair (B, Y). It is the positive with exactly
  one asserted fact replaced: "X does p at t_X" becomes "Y does p at t_X", recorded false at that
  time (Y does p, but only at t_Y, after B). The answer still turns on an order.

Each target gets four sub-questions probing every fact of its chain ``[X, B, Y]``:

1. single fact, Yes: "Does B?";
2. single fact, No, on the chain: the attribution probe "Does Z <do p>?" for a participant Z of the
   anchor that never does p (else "Does W <do B's action>?" for a candidate W that never does that);
3. ordering, the two candidates: "Does X <do p> before Y does?" (Yes) or the reverse (No);
4. ordering, the anchor and the candidate the target does not ask about, phrased with "after",
   with the polarity opposite to 3.

So every target has two Yes and two No sub-questions (one of each per probe type) and each
triple one Yes and one No target: the balance is exact at both levels and within each probe
type. Every answer is the value of the item's form on the world (asserted here), never written
by hand.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from vidaudit.suites.faithful.phrasing import NUMBER_WORDS, text_of
from vidaudit.suites.faithful.questions import (
    NO,
    PROBE_TYPES,
    YES,
    Before,
    Claim,
    Count,
    EventKind,
    Exists,
    Pattern,
    Perturbation,
    Ref,
    Same,
    SubQuestion,
    Target,
    answer_of,
    claim_holds,
)
from vidaudit.suites.faithful.world import TIME_EPS, Fact, WorldRecord

MIN_ORDER_GAP_S = 0.5
#: an anchor event serves at most this many triples
MAX_ANCHOR_USES = 2


@dataclass(frozen=True)
class Triple:
    x: Fact
    b: Fact
    y: Fact


def _event_kind(f: Fact) -> tuple:
    return (f.kind, f.predicate, f.object, f.value)


def _independent(f: Fact, g: Fact, shared_ok: frozenset[str] = frozenset()) -> bool:
    if f.episode is not None and f.episode == g.episode:
        return False
    return (f.participants & g.participants) <= shared_ok


def unique_facts(world: WorldRecord) -> list[Fact]:
    """Facts whose pattern occurs once in the world: a question about them names one event."""
    counts = Counter(f.signature for f in world.facts)
    return [f for f in world.facts if counts[f.signature] == 1]


def candidate_triples(world: WorldRecord) -> list[Triple]:
    facts = unique_facts(world)
    by_kind: dict[tuple, list[Fact]] = {}
    for f in facts:
        by_kind.setdefault(_event_kind(f), []).append(f)
    out = []
    for kind, group in sorted(by_kind.items(), key=lambda kv: str(kv[0])):
        shared = frozenset(x for x in (kind[2],) if x)
        for x in group:
            for y in group:
                if x.subject == y.subject or not y.t - x.t >= 2 * MIN_ORDER_GAP_S \
                        or not _independent(x, y, shared):
                    continue
                for b in facts:
                    if b.id in (x.id, y.id) or not (x.t + MIN_ORDER_GAP_S <= b.t <= y.t - MIN_ORDER_GAP_S):
                        continue
                    if _independent(b, x) and _independent(b, y):
                        out.append(Triple(x, b, y))
    return out


def _agents(world: WorldRecord) -> list[str]:
    return [e.id for e in world.entities if e.category == "agent"]


def _never(world: WorldRecord, pattern_of: Fact, exclude: set[str]) -> list[Pattern]:
    """Patterns "Z does what ``pattern_of`` says" for agents Z that never do it (and are not excluded)."""
    kind = _event_kind(pattern_of)
    doers = {f.subject for f in world.facts if _event_kind(f) == kind}
    return [Pattern(subject=z, kind=pattern_of.kind, predicate=pattern_of.predicate, object=pattern_of.object,
                    value=pattern_of.value)
            for z in _agents(world) if z not in doers and z not in exclude and z != pattern_of.object]


def _probe_options(world: WorldRecord, t: Triple) -> list[tuple[Pattern, list[str]]]:
    """The "No" single-fact probes on the chain only (H.8: every sub-question is one the target turns on): a
    participant of the chain credited with a chain event it never does -- the anchor's agents doing what the
    candidates do ("Does player #24 shoot?"), and the candidates (or their common object) doing the anchor's
    action. Empty when every such swap happens somewhere in the world (the triple is then not used)."""
    zs = [(z, [t.x.id, t.y.id, t.b.id]) for z in _never(world, t.x, {t.x.subject, t.y.subject})
          if z.subject in t.b.participants]
    ws = []
    for w in _never(world, t.b, set(t.b.participants)):
        if w.subject in (t.x.subject, t.y.subject) or (w.subject == t.x.object and w.subject in _agents(world)):
            ws.append((w, [t.b.id, t.y.id if w.subject == t.y.subject else t.x.id]))
    return zs or ws


def _attribution_probe(world: WorldRecord, t: Triple, rng: np.random.Generator) -> tuple[Pattern, list[str]] | None:
    """One of ``_probe_options`` drawn at random (the anchor's agents first), None when there is none."""
    opts = _probe_options(world, t)
    return opts[int(rng.integers(len(opts)))] if opts else None


def select_triples(world: WorldRecord, n_pairs: int, rng: np.random.Generator) -> list[Triple]:
    """Up to ``n_pairs`` triples, drawn at random, each candidate pair (X, Y) once, each anchor at most twice,
    and no target question twice (two triples sharing an anchor and a candidate would ask the same one)."""
    cands = [t for t in candidate_triples(world) if _probe_options(world, t)]
    chosen: list[Triple] = []
    pairs: set[tuple[str, str]] = set()
    asked: set[tuple[str, str]] = set()
    anchors: Counter[str] = Counter()
    for i in rng.permutation(len(cands)):
        t = cands[int(i)]
        questions = {(t.x.id, t.b.id), (t.y.id, t.b.id)}
        if (t.x.id, t.y.id) in pairs or anchors[t.b.id] >= MAX_ANCHOR_USES or questions & asked:
            continue
        chosen.append(t)
        pairs.add((t.x.id, t.y.id))
        asked |= questions
        anchors[t.b.id] += 1
        if len(chosen) == n_pairs:
            break
    return sorted(chosen, key=lambda t: (t.x.t, t.b.t, t.y.t))


def _check(form: Exists | Before | Count | Same, world: WorldRecord, expected: str, what: str) -> str:
    got = answer_of(form, world)
    if got != expected:
        raise AssertionError(f"composer bug: {what} evaluates to {got}, meant {expected}")
    return got


def _count_subs(world: WorldRecord, target_id: str, x: Fact, y: Fact, chain: list[str], nevers: list[Pattern]
                ) -> list[SubQuestion]:
    """A count depends on every doer doing the event and every other agent not doing it: two doers (X and Y,
    Yes) and two agents that never do it (No), all single-fact."""
    items = [(Exists(pattern=Pattern.of(x)), YES, [x.id]), (Exists(pattern=Pattern.of(y)), YES, [y.id]),
             *((Exists(pattern=z), NO, list(chain)) for z in nevers)]
    out = []
    for j, (form, expected, fact_ids) in enumerate(items, 1):
        text = text_of(form, world)
        out.append(SubQuestion(sub_id=f"{target_id}-s{j}", target_id=target_id, text=text,
                               answer=_check(form, world, expected, text), probe_type="single_fact",
                               fact_ids=fact_ids, form=form))
    return out


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
        if f.subject in _agents(world):
            kinds.setdefault(EventKind.of(f), []).append(f)
    out = []
    for event, facts in sorted(kinds.items(), key=lambda kv: kv[1][0].id):
        per = Counter(f.subject for f in facts)
        singles = [f for f in facts if per[f.subject] == 1]
        if len(per) < 2 or len(per) >= len(NUMBER_WORDS) or not singles:
            continue
        if len(_never(world, facts[0], set(per))) < 2:
            continue
        x = singles[0]
        y = next(f for f in facts if f.subject != x.subject)
        replacement = Claim(t=x.t, subject=y.subject, kind=x.kind, predicate=x.predicate, object=x.object, value=x.value)
        if claim_holds(replacement, world):
            continue
        out.append(CountOption(event, tuple(f.id for f in facts), x, y, max(per.values()) > 1))
    return out


def _count_pair(world: WorldRecord, opt: CountOption, ids: tuple[str, str],
                rng: np.random.Generator) -> tuple[list[Target], list[SubQuestion]]:
    """"Do exactly k agents <do p>?" (Yes, k = the agents that do) and its negative: X's event credited to Y at
    t_X, so k - 1 agents ("Do exactly k - 1 agents <do p>?", No)."""
    x, y = opt.x, opt.y
    doers = {world.fact(f).subject for f in opt.chain}
    nevers = _never(world, x, doers)
    replacement = Claim(t=x.t, subject=y.subject, kind=x.kind, predicate=x.predicate, object=x.object, value=x.value)
    chain = list(opt.chain)
    asserted = [Claim.of(world.fact(f)) for f in chain]
    out_t, out_s = [], []
    for tid, n, expected, polarity in ((ids[0], len(doers), YES, "positive"), (ids[1], len(doers) - 1, NO, "negative")):
        form = Count(event=opt.event, n=n)
        pick = rng.permutation(len(nevers))[:2]
        subs = _count_subs(world, tid, x, y, chain, [nevers[int(i)] for i in pick])
        text = text_of(form, world)
        neg = polarity == "negative"
        out_t.append(Target(target_id=tid, video_id=world.video_id, text=text,
                            answer=_check(form, world, expected, text), chain=chain, temporally_constrained=False,
                            ordering_pair=None, polarity=polarity, negative_of=ids[0] if neg else None,
                            perturbed=Perturbation(fact_id=x.id, replacement=replacement) if neg else None,
                            asserted=[replacement if c.t == x.t and c.subject == x.subject else c
                                      for c in asserted] if neg else asserted,
                            form=form, sub_ids=[s.sub_id for s in subs], question_form="count"))
        out_s += subs
    return out_t, out_s


# --------------------------------------------------------------------------- identity


@dataclass(frozen=True)
class IdentityOption:
    """Two sightings of one agent A across one of its gaps, and a sighting of another agent B.

    ``a``: a fact of A at or before the gap's start; ``b``: a fact of A at or after its end (the gap is an
    occlusion, or an exit until re-entry); ``c``: a fact of B. ``look``: the colour and shape A and B share
    when B is A's look-alike (the refs then say "the red circle that ..."; the number is what tells them
    apart), None when the refs say "the agent that ...". Each of the three refs describes exactly one fact of
    the world, so "Is <ref a> the same agent as <ref b>?" is Yes and "... as <ref c>?" is No. ``a`` and ``b``
    are never a going-behind and coming-out (or a leaving and entering) pair: their answer would be in the words."""
    a: Fact
    b: Fact
    c: Fact
    gap: str
    look: tuple[str, str] | None

    def ref(self, f: Fact) -> Ref:
        colour, shape = self.look or (None, None)
        return Ref(event=EventKind.of(f), colour=colour, shape=shape)


def _look(world: WorldRecord, agent: str) -> tuple[str, str]:
    at = world.entity(agent).attributes
    return (str(at.get("colour")), str(at.get("shape")))


def identity_options(world: WorldRecord) -> list[IdentityOption]:
    """Every identity option of the world (see ``IdentityOption``), look-alike ones first, then in fact order.

    A is an agent with a gap that ends (occlusion or exit and re-entry: its identity link is what the target
    turns on). With a look-alike B (same colour and shape; registered), the refs name the shared look and B's
    fact is ``c``; without (or besides), the refs name no look and ``c`` is any other agent's fact. A ref is
    usable when it describes exactly one fact of the world (so its subject is determined by the record)."""
    agents = set(_agents(world))
    out: list[IdentityOption] = []
    for g in sorted(world.gaps, key=lambda g: (g.t_start, g.id)):
        if g.t_end is None or g.entity not in agents:
            continue
        a_id = g.entity
        mine = world.trajectory(a_id)
        before = [f for f in mine if f.t <= g.t_start + TIME_EPS]
        after = [f for f in mine if f.t >= g.t_end - TIME_EPS]
        twins = [e for e in sorted(agents) if e != a_id and _look(world, e) == _look(world, a_id)]
        modes: list[tuple[tuple[str, str] | None, list[str]]] = []
        if twins:
            modes.append((_look(world, a_id), twins))
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


def _partners(f: Fact, g: Fact) -> bool:
    """Two events that always come as a pair by one agent in these worlds (going behind an agent and coming out
    from behind it, leaving the scene and entering it): "is the one that went behind X the one that came out?"
    would be Yes from the words alone, so such a pair is never the positive's."""
    return (f.predicate, g.predicate) in (("goes_behind", "emerges_from"), ("exits", "enters")) \
        and f.object == g.object


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
        if len(chosen) == n or keys & used:
            continue
        chosen.append(o)
        used |= keys
    return chosen


def _identity_pair(world: WorldRecord, opt: IdentityOption, ids: tuple[str, str]
                   ) -> tuple[list[Target], list[SubQuestion]]:
    """"Is <A's sighting before the gap> the same agent as <A's sighting after it>?" (Yes) and its negative
    "... as <B's sighting>?" (No): B's fact at its time credited to A, the one false claim. Both have chain
    [a, b, c] and four sub-questions (2 Yes, 2 No) probing every chain fact:

    positive: "Does A <b>?" (Yes), "Does B <a>?" (No), "Does B <c>?" (Yes), and the identity probe
    "Is <ref b> the same agent as <ref c>?" (No: after the gap, the look-alikes are told apart);
    negative: "Does A <a>?" (Yes), "Does A <c>?" (No: the false claim itself), "Does B <b>?" (No), and the
    identity probe "Is <ref a> the same agent as <ref b>?" (Yes: the positive, as the paper's negative has its
    positive's fact among its sub-questions)."""
    a, b, c = opt.a, opt.b, opt.c
    who_a, who_b = a.subject, c.subject
    ra, rb, rc = opt.ref(a), opt.ref(b), opt.ref(c)
    chain = [a.id, b.id, c.id]
    replacement = Claim(t=c.t, subject=who_a, kind=c.kind, predicate=c.predicate, object=c.object, value=c.value)
    if claim_holds(replacement, world):
        raise AssertionError("composer bug: the identity negative's replacement claim holds in the world")

    def swap(f: Fact, subject: str) -> Exists:
        return Exists(pattern=EventKind.of(f).by(subject))
    plans: tuple[tuple[str, Same, str, list[tuple[Exists | Same, str, list[str], str]]], ...] = (
        (ids[0], Same(a=ra, b=rb), YES,
         [(Exists(pattern=Pattern.of(b)), YES, [b.id], "single_fact"), (swap(a, who_b), NO, [a.id], "single_fact"),
          (Exists(pattern=Pattern.of(c)), YES, [c.id], "single_fact"), (Same(a=rb, b=rc), NO, [b.id, c.id], "identity")]),
        (ids[1], Same(a=ra, b=rc), NO,
         [(Exists(pattern=Pattern.of(a)), YES, [a.id], "single_fact"), (swap(c, who_a), NO, [c.id], "single_fact"),
          (swap(b, who_b), NO, [b.id], "single_fact"), (Same(a=ra, b=rb), YES, [a.id, b.id], "identity")]))
    targets, subs = [], []
    for tid, form, expected, items in plans:
        neg = expected == NO
        mine = []
        for j, (sform, sexp, fact_ids, probe) in enumerate(items, 1):
            text = text_of(sform, world)
            mine.append(SubQuestion(sub_id=f"{tid}-s{j}", target_id=tid, text=text, answer=_check(sform, world, sexp, text),
                                    probe_type=probe, fact_ids=fact_ids, form=sform))
        text = text_of(form, world)
        targets.append(Target(target_id=tid, video_id=world.video_id, text=text, answer=_check(form, world, expected, text),
                              chain=chain, temporally_constrained=False, ordering_pair=None,
                              polarity="negative" if neg else "positive", negative_of=ids[0] if neg else None,
                              perturbed=Perturbation(fact_id=c.id, replacement=replacement) if neg else None,
                              asserted=[Claim.of(a), replacement if neg else Claim.of(b)], form=form,
                              sub_ids=[x.sub_id for x in mine], question_form="identity"))
        subs += mine
    return targets, subs


def _subs(world: WorldRecord, target_id: str, t: Triple, queried: Fact, other: Fact, probe: tuple[Pattern, list[str]],
          yes_pair: bool) -> list[SubQuestion]:
    px, py, pb = Pattern.of(t.x), Pattern.of(t.y), Pattern.of(t.b)
    items: list[tuple[Exists | Before, bool, str, list[str], str]] = [
        (Exists(pattern=pb), False, YES, [t.b.id], "single_fact"),
        (Exists(pattern=probe[0]), False, NO, probe[1], "single_fact"),
        (Before(a=px, b=py) if yes_pair else Before(a=py, b=px), False, YES if yes_pair else NO, [t.x.id, t.y.id],
         "ordering"),
    ]
    # 4: the anchor against the candidate the target does not ask about, "after" phrasing, polarity opposite to 3
    po = Pattern.of(other)
    other_after_anchor = other.t > t.b.t
    want_yes = not yes_pair
    if want_yes == other_after_anchor:     # "Does <other> after B?"
        items.append((Before(a=pb, b=po), True, YES if want_yes else NO, [t.b.id, other.id], "ordering"))
    else:                                  # "Does B after <other>?"
        items.append((Before(a=po, b=pb), True, YES if want_yes else NO, [other.id, t.b.id], "ordering"))
    subs = []
    for j, (form, after, expected, fact_ids, probe_type) in enumerate(items, 1):
        text = text_of(form, world, after=after)
        subs.append(SubQuestion(sub_id=f"{target_id}-s{j}", target_id=target_id, text=text,
                                answer=_check(form, world, expected, text), probe_type=probe_type,
                                fact_ids=fact_ids, form=form))
    return subs


def scope(target: Target, world: WorldRecord) -> list[str]:
    """The entities a target turns on (H.8; the gold set of retrieval, D.6): the participants of its chain
    facts; for a count every agent (each agent's doing or not doing the event changes the count); for an
    identity also every agent its descriptions may denote (the agents of the look it names, every agent for "the
    agent that ..."): who did the event is the question."""
    if target.question_form == "count":
        return sorted(_agents(world))
    out = {p for f in target.chain for p in world.fact(f).participants}
    if isinstance(target.form, Same):
        for r in (target.form.a, target.form.b):
            out |= {e for e in _agents(world) if r.colour is None or _look(world, e) == (r.colour, r.shape)}
    return sorted(out)


#: the target forms, dealt round-robin over a video's pairs from a random start (so each form gets Yes and No
#: targets in equal numbers and the forms differ by at most one pair per video): the order of two events, a
#: count, an identity. Order pairs alternate, from a random start, between the order said ("before": explicit)
#: and implied ("Has X already ... when ...?": implicit)
FORMS: tuple[str, ...] = ("order", "count", "identity")
PHRASINGS: tuple[str, ...] = ("explicit", "implicit")
#: every (form, phrasing) the balance reports
FORM_SLOTS: tuple[tuple[str, str | None], ...] = (("order", "explicit"), ("order", "implicit"), ("count", None),
                                                  ("identity", None))


def compose(world: WorldRecord, max_targets: int, rng: np.random.Generator) -> tuple[list[Target], list[SubQuestion]]:
    """Targets (a positive and its negative per pair, at most ``max_targets`` in all) and their sub-questions:
    the pairs' forms dealt from ``FORM_SLOTS`` from a random start; a count slot takes a count option (those
    where a doer repeats the event first: where identity linking matters), an identity slot an identity option
    (look-alikes first), else either becomes an explicit order pair."""
    n_pairs = max(1, max_targets // 2)
    start, p_start = int(rng.integers(len(FORMS))), int(rng.integers(len(PHRASINGS)))
    forms = [FORMS[(start + i) % len(FORMS)] for i in range(n_pairs)]
    slots = [(f, PHRASINGS[(p_start + forms[:i].count("order")) % len(PHRASINGS)] if f == "order" else None)
             for i, f in enumerate(forms)]
    opts = count_options(world)
    order = [int(i) for i in rng.permutation(len(opts))]
    opts = [opts[i] for i in sorted(order, key=lambda i: (not opts[i].repeated, order.index(i)))]
    n_count = min(len(opts), sum(f == "count" for f, _ in slots))
    ids = select_identities(world, sum(f == "identity" for f, _ in slots), rng)
    order_slots = [(f, p) for f, p in slots if f == "order"]
    order_slots += [("order", "explicit")] * (n_pairs - n_count - len(ids) - len(order_slots))   # unfilled slots
    triples = select_triples(world, len(order_slots), rng)
    targets: list[Target] = []
    subs: list[SubQuestion] = []
    k = 0
    for opt in opts[:n_count]:
        pair = _count_pair(world, opt, (f"t{k + 1:02d}", f"t{k + 2:02d}"), rng)
        targets += pair[0]
        subs += pair[1]
        k += 2
    for iopt in ids:
        pair = _identity_pair(world, iopt, (f"t{k + 1:02d}", f"t{k + 2:02d}"))
        targets += pair[0]
        subs += pair[1]
        k += 2
    for t, (_, phrasing) in zip(triples, order_slots, strict=False):
        probe = _attribution_probe(world, t, rng)
        if probe is None:
            continue
        px, py, pb = Pattern.of(t.x), Pattern.of(t.y), Pattern.of(t.b)
        pos_id, neg_id = f"t{k + 1:02d}", f"t{k + 2:02d}"
        replacement = Claim(t=t.x.t, subject=t.y.subject, kind=t.x.kind, predicate=t.x.predicate, object=t.x.object,
                            value=t.x.value)
        if claim_holds(replacement, world):
            raise AssertionError("composer bug: the replacement claim holds in the world")
        implicit = phrasing == "implicit"
        k += 2
        pos_form, neg_form = Before(a=px, b=pb), Before(a=py, b=pb)
        yes_pair = bool(rng.integers(2))
        pos_subs = _subs(world, pos_id, t, t.x, t.y, probe, yes_pair)
        neg_subs = _subs(world, neg_id, t, t.y, t.x, _attribution_probe(world, t, rng) or probe, not yes_pair)
        chain = [t.x.id, t.b.id, t.y.id]
        pos_text, neg_text = text_of(pos_form, world, implicit=implicit), text_of(neg_form, world, implicit=implicit)
        targets.append(Target(target_id=pos_id, video_id=world.video_id, text=pos_text,
                              answer=_check(pos_form, world, YES, pos_text), chain=chain, temporally_constrained=True,
                              ordering_pair=(t.x.id, t.b.id), polarity="positive",
                              asserted=[Claim.of(t.x), Claim.of(t.b)], form=pos_form,
                              sub_ids=[s.sub_id for s in pos_subs], question_form="order", phrasing=phrasing))
        targets.append(Target(target_id=neg_id, video_id=world.video_id, text=neg_text,
                              answer=_check(neg_form, world, NO, neg_text), chain=chain, temporally_constrained=True,
                              ordering_pair=(t.b.id, t.y.id), polarity="negative", negative_of=pos_id,
                              perturbed=Perturbation(fact_id=t.x.id, replacement=replacement),
                              asserted=[replacement, Claim.of(t.b)], form=neg_form,
                              sub_ids=[s.sub_id for s in neg_subs], question_form="order", phrasing=phrasing))
        subs += pos_subs + neg_subs
    texts = {tg.target_id: tg.text for tg in targets}
    if len(set(texts.values())) != len(texts):
        raise AssertionError("composer bug: a target question is asked twice")
    for s in subs:
        if s.text == texts[s.target_id]:
            raise AssertionError(f"composer bug: {s.sub_id} repeats its target")
    return targets, subs


def balance(targets: list[Target], subs: list[SubQuestion]) -> dict:
    """Yes/No counts and the Yes share per level and per probe type."""
    def block(answers: list[str]) -> dict:
        n_yes, n_no = answers.count(YES), answers.count(NO)
        n = len(answers)
        return {"n": n, "yes": n_yes, "no": n_no, "other": n - n_yes - n_no,
                "yes_share": n_yes / n if n else None}
    out = {"target": block([t.answer for t in targets]), "sub": block([s.answer for s in subs])}
    for p in PROBE_TYPES:
        out[f"sub_{p}"] = block([s.answer for s in subs if s.probe_type == p])
    for form, phrasing in FORM_SLOTS:
        key = f"target_{form}" + (f"_{phrasing}" if phrasing else "")
        out[key] = block([t.answer for t in targets if t.question_form == form and (phrasing is None
                                                                                    or t.phrasing == phrasing)])
    return out
