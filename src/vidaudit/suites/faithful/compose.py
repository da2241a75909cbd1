"""The composer: order-dependent, count and identity targets, their atomic sub-questions and a minimal
negative for each.

Target pairs are dealt over ``FORM_SLOTS`` (order said, order implied, count, identity; see ``compose``
and docs/faithful.md). Every sub-question is on its target's chain (H.8): it names only the chain's
participants (a count: the agents it counts). Count targets are composed in ``compose_count``, identity targets in
``compose_identity`` (described at its ``identity_options``).
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

from vidaudit.suites.faithful.compose_base import SubPlan, agents_of, event_kind, never, paired_target, sub_questions
from vidaudit.suites.faithful.compose_count import count_options, count_pair
from vidaudit.suites.faithful.compose_identity import identity_pair, look_of, select_identities
from vidaudit.suites.faithful.questions import (
    NO,
    PROBE_TYPES,
    YES,
    Before,
    Claim,
    Exists,
    Pattern,
    Perturbation,
    Phrasing,
    Same,
    SubQuestion,
    Target,
    claim_holds,
)
from vidaudit.suites.faithful.world import Fact, WorldRecord

MIN_ORDER_GAP_S = 0.5
#: an anchor event serves at most this many triples
MAX_ANCHOR_USES = 2


@dataclass(frozen=True)
class Triple:
    x: Fact
    b: Fact
    y: Fact


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
        by_kind.setdefault(event_kind(f), []).append(f)
    out = []
    for kind, group in sorted(by_kind.items(), key=lambda kv: str(kv[0])):
        shared = frozenset(x for x in (kind[2],) if x)
        for x in group:
            for y in group:
                if x.subject == y.subject or not y.t - x.t >= 2 * MIN_ORDER_GAP_S or not _independent(x, y, shared):
                    continue
                for b in facts:
                    if b.id in (x.id, y.id) or not (x.t + MIN_ORDER_GAP_S <= b.t <= y.t - MIN_ORDER_GAP_S):
                        continue
                    if _independent(b, x) and _independent(b, y):
                        out.append(Triple(x, b, y))
    return out


def _probe_options(world: WorldRecord, t: Triple) -> list[tuple[Pattern, list[str]]]:
    """The "No" single-fact probes on the chain only (H.8: every sub-question is one the target turns on): a
    participant of the chain credited with a chain event it never does -- the anchor's agents doing what the
    candidates do ("Does player #24 shoot?"), and the candidates (or their common object) doing the anchor's
    action. Empty when every such swap happens somewhere in the world (the triple is then not used)."""
    zs = [
        (z, [t.x.id, t.y.id, t.b.id])
        for z in never(world, t.x, {t.x.subject, t.y.subject})
        if z.subject in t.b.participants
    ]
    ws = []
    for w in never(world, t.b, set(t.b.participants)):
        if w.subject in (t.x.subject, t.y.subject) or (w.subject == t.x.object and w.subject in agents_of(world)):
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


def _subs(
    world: WorldRecord,
    target_id: str,
    t: Triple,
    queried: Fact,
    other: Fact,
    probe: tuple[Pattern, list[str]],
    yes_pair: bool,
) -> list[SubQuestion]:
    px, py, pb = Pattern.of(t.x), Pattern.of(t.y), Pattern.of(t.b)
    plans = [
        SubPlan(Exists(pattern=pb), YES, [t.b.id], "single_fact"),
        SubPlan(Exists(pattern=probe[0]), NO, probe[1], "single_fact"),
        SubPlan(
            Before(a=px, b=py) if yes_pair else Before(a=py, b=px),
            YES if yes_pair else NO,
            [t.x.id, t.y.id],
            "ordering",
        ),
    ]
    # 4: the anchor against the candidate the target does not ask about, "after" phrasing, polarity opposite to 3
    po = Pattern.of(other)
    other_after_anchor = other.t > t.b.t
    want_yes = not yes_pair
    if want_yes == other_after_anchor:  # "Does <other> after B?"
        plans.append(SubPlan(Before(a=pb, b=po), YES if want_yes else NO, [t.b.id, other.id], "ordering", True))
    else:  # "Does B after <other>?"
        plans.append(SubPlan(Before(a=po, b=pb), YES if want_yes else NO, [other.id, t.b.id], "ordering", True))
    return sub_questions(world, target_id, plans)


def scope(target: Target, world: WorldRecord) -> list[str]:
    """The entities a target turns on (H.8; the gold set of retrieval, D.6): the participants of its chain
    facts; for a count every agent (each agent's doing or not doing the event changes the count); for an
    identity also every agent its descriptions may denote (the agents of the look it names, every agent for "the
    agent that ..."): who did the event is the question."""
    if target.question_form == "count":
        return sorted(agents_of(world))
    out = {p for f in target.chain for p in world.fact(f).participants}
    if isinstance(target.form, Same):
        for r in (target.form.a, target.form.b):
            out |= {e for e in agents_of(world) if r.colour is None or look_of(world, e) == (r.colour, r.shape)}
    return sorted(out)


#: the target forms, dealt round-robin over a video's pairs from a random start (so each form gets Yes and No
#: targets in equal numbers and the forms differ by at most one pair per video): the order of two events, a
#: count, an identity. Order pairs alternate, from a random start, between the order said ("before": explicit)
#: and implied ("Has X already ... when ...?": implicit)
FORMS: tuple[str, ...] = ("order", "count", "identity")
PHRASINGS: tuple[Phrasing, ...] = ("explicit", "implicit")
#: every (form, phrasing) the balance reports
FORM_SLOTS: tuple[tuple[str, Phrasing | None], ...] = (
    ("order", "explicit"),
    ("order", "implicit"),
    ("count", None),
    ("identity", None),
)


def compose(world: WorldRecord, max_targets: int, rng: np.random.Generator) -> tuple[list[Target], list[SubQuestion]]:
    """Targets (a positive and its negative per pair, at most ``max_targets`` in all) and their sub-questions:
    the pairs' forms dealt from ``FORM_SLOTS`` from a random start; a count slot takes a count option (those
    where a doer repeats the event first: where identity linking matters), an identity slot an identity option
    (look-alikes first), else either becomes an explicit order pair."""
    n_pairs = max(1, max_targets // 2)
    start, p_start = int(rng.integers(len(FORMS))), int(rng.integers(len(PHRASINGS)))
    forms = [FORMS[(start + i) % len(FORMS)] for i in range(n_pairs)]
    slots = [
        (f, PHRASINGS[(p_start + forms[:i].count("order")) % len(PHRASINGS)] if f == "order" else None)
        for i, f in enumerate(forms)
    ]
    opts = count_options(world)
    order = [int(i) for i in rng.permutation(len(opts))]
    opts = [opts[i] for i in sorted(order, key=lambda i: (not opts[i].repeated, order.index(i)))]
    n_count = min(len(opts), sum(f == "count" for f, _ in slots))
    ids = select_identities(world, sum(f == "identity" for f, _ in slots), rng)
    order_slots = [(f, p) for f, p in slots if f == "order"]
    order_slots += [("order", "explicit")] * (n_pairs - n_count - len(ids) - len(order_slots))  # unfilled slots
    triples = select_triples(world, len(order_slots), rng)
    targets: list[Target] = []
    subs: list[SubQuestion] = []
    k = 0
    for opt in opts[:n_count]:
        pair = count_pair(world, opt, (f"t{k + 1:02d}", f"t{k + 2:02d}"), rng)
        targets += pair[0]
        subs += pair[1]
        k += 2
    for iopt in ids:
        pair = identity_pair(world, iopt, (f"t{k + 1:02d}", f"t{k + 2:02d}"))
        targets += pair[0]
        subs += pair[1]
        k += 2
    for t, (_, phrasing) in zip(triples, order_slots, strict=False):
        probe = _attribution_probe(world, t, rng)
        if probe is None:
            continue
        px, py, pb = Pattern.of(t.x), Pattern.of(t.y), Pattern.of(t.b)
        pos_id, neg_id = f"t{k + 1:02d}", f"t{k + 2:02d}"
        replacement = Claim(
            t=t.x.t, subject=t.y.subject, kind=t.x.kind, predicate=t.x.predicate, object=t.x.object, value=t.x.value
        )
        if claim_holds(replacement, world):
            raise AssertionError("composer bug: the replacement claim holds in the world")
        k += 2
        pos_form, neg_form = Before(a=px, b=pb), Before(a=py, b=pb)
        yes_pair = bool(rng.integers(2))
        pos_subs = _subs(world, pos_id, t, t.x, t.y, probe, yes_pair)
        neg_subs = _subs(world, neg_id, t, t.y, t.x, _attribution_probe(world, t, rng) or probe, not yes_pair)
        chain = [t.x.id, t.b.id, t.y.id]
        negative = Perturbation(fact_id=t.x.id, replacement=replacement)
        for tid, form, expected, ordering, asserted, mine, perturbed in (
            (pos_id, pos_form, YES, (t.x.id, t.b.id), [Claim.of(t.x), Claim.of(t.b)], pos_subs, None),
            (neg_id, neg_form, NO, (t.b.id, t.y.id), [replacement, Claim.of(t.b)], neg_subs, negative),
        ):
            targets.append(
                paired_target(
                    world,
                    tid,
                    form,
                    expected,
                    chain,
                    asserted,
                    mine,
                    "order",
                    (pos_id, neg_id),
                    perturbed,
                    ordering_pair=ordering,
                    phrasing=phrasing,
                )
            )
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
        return {"n": n, "yes": n_yes, "no": n_no, "other": n - n_yes - n_no, "yes_share": n_yes / n if n else None}

    out = {"target": block([t.answer for t in targets]), "sub": block([s.answer for s in subs])}
    for p in PROBE_TYPES:
        out[f"sub_{p}"] = block([s.answer for s in subs if s.probe_type == p])
    for form, phrasing in FORM_SLOTS:
        key = f"target_{form}" + (f"_{phrasing}" if phrasing else "")
        out[key] = block(
            [t.answer for t in targets if t.question_form == form and (phrasing is None or t.phrasing == phrasing)]
        )
    return out
