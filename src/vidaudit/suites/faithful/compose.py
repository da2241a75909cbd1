"""The composer: order-dependent targets, their atomic sub-questions and a minimal negative for each.

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
2. single fact, No: the attribution probe "Does Z <do p>?" for an agent Z that never does (else
   "Does W <do B's action>?" for an agent W that never does that);
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

from vidaudit.suites.faithful.phrasing import text_of
from vidaudit.suites.faithful.questions import (
    NO,
    YES,
    Before,
    Claim,
    Exists,
    Pattern,
    Perturbation,
    SubQuestion,
    Target,
    answer_of,
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


def _attribution_probe(world: WorldRecord, t: Triple, rng: np.random.Generator) -> tuple[Pattern, list[str]] | None:
    zs = _never(world, t.x, {t.x.subject, t.y.subject})
    if zs:
        return zs[int(rng.integers(len(zs)))], [t.x.id, t.y.id]
    ws = _never(world, t.b, set(t.b.participants))
    if ws:
        return ws[int(rng.integers(len(ws)))], [t.b.id]
    return None


def select_triples(world: WorldRecord, n_pairs: int, rng: np.random.Generator) -> list[Triple]:
    """Up to ``n_pairs`` triples, drawn at random, each candidate pair (X, Y) once, each anchor at most twice,
    and no target question twice (two triples sharing an anchor and a candidate would ask the same one)."""
    cands = candidate_triples(world)
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


def _check(form: Exists | Before, world: WorldRecord, expected: str, what: str) -> str:
    got = answer_of(form, world)
    if got != expected:
        raise AssertionError(f"composer bug: {what} evaluates to {got}, meant {expected}")
    return got


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


def compose(world: WorldRecord, max_targets: int, rng: np.random.Generator) -> tuple[list[Target], list[SubQuestion]]:
    """Targets (a positive and its negative per triple, at most ``max_targets`` in all) and their sub-questions."""
    targets: list[Target] = []
    subs: list[SubQuestion] = []
    k = 0
    for t in select_triples(world, max(1, max_targets // 2), rng):
        probe = _attribution_probe(world, t, rng)
        if probe is None:
            continue
        px, py, pb = Pattern.of(t.x), Pattern.of(t.y), Pattern.of(t.b)
        pos_id, neg_id = f"t{k + 1:02d}", f"t{k + 2:02d}"
        k += 2
        replacement = Claim(t=t.x.t, subject=t.y.subject, kind=t.x.kind, predicate=t.x.predicate, object=t.x.object,
                            value=t.x.value)
        if claim_holds(replacement, world):
            raise AssertionError("composer bug: the replacement claim holds in the world")
        pos_form, neg_form = Before(a=px, b=pb), Before(a=py, b=pb)
        yes_pair = bool(rng.integers(2))
        pos_subs = _subs(world, pos_id, t, t.x, t.y, probe, yes_pair)
        neg_subs = _subs(world, neg_id, t, t.y, t.x, _attribution_probe(world, t, rng) or probe, not yes_pair)
        chain = [t.x.id, t.b.id, t.y.id]
        pos_text, neg_text = text_of(pos_form, world), text_of(neg_form, world)
        targets.append(Target(target_id=pos_id, video_id=world.video_id, text=pos_text,
                              answer=_check(pos_form, world, YES, pos_text), chain=chain, temporally_constrained=True,
                              ordering_pair=(t.x.id, t.b.id), polarity="positive",
                              asserted=[Claim.of(t.x), Claim.of(t.b)], form=pos_form,
                              sub_ids=[s.sub_id for s in pos_subs]))
        targets.append(Target(target_id=neg_id, video_id=world.video_id, text=neg_text,
                              answer=_check(neg_form, world, NO, neg_text), chain=chain, temporally_constrained=True,
                              ordering_pair=(t.b.id, t.y.id), polarity="negative", negative_of=pos_id,
                              perturbed=Perturbation(fact_id=t.x.id, replacement=replacement),
                              asserted=[replacement, Claim.of(t.b)], form=neg_form,
                              sub_ids=[s.sub_id for s in neg_subs]))
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
    for p in ("single_fact", "ordering"):
        out[f"sub_{p}"] = block([s.answer for s in subs if s.probe_type == p])
    return out
