"""The composer: exact balance, negatives one fact away from their positives, order-dependence, and every
answer equal to the value of the item's form on the world."""

from __future__ import annotations

import pytest

from vidaudit.suites.faithful.build import build_scene
from vidaudit.suites.faithful.compose import MIN_ORDER_GAP_S, balance
from vidaudit.suites.faithful.questions import Before, answer_of, claim_holds, order_dependent
from vidaudit.suites.faithful.scene import SceneSpec

SEEDS = range(6)


@pytest.fixture(scope="module")
def built():
    out = []
    for seed in SEEDS:
        spec = SceneSpec(video_id=f"w{seed}", seed=seed, agents=5, events=9, occlusions=1, lookalikes=1,
                         duration_s=14.0, width=192, height=144, max_targets=8)
        out.append(build_scene(spec))
    return out


def test_balance_is_exact_at_both_levels_and_per_probe_type(built) -> None:
    for b in built:
        bal = balance(b.targets, b.subs)
        assert bal["target"]["yes"] == bal["target"]["no"] > 0
        assert bal["sub"]["yes"] == bal["sub"]["no"]
        assert bal["sub_single_fact"]["yes"] == bal["sub_single_fact"]["no"] > 0
        assert bal["sub_ordering"]["yes"] == bal["sub_ordering"]["no"] > 0
        for t in b.targets:  # and within every target: two Yes, two No
            answers = sorted(s.answer for s in b.subs if s.target_id == t.target_id)
            assert answers == ["No", "No", "Yes", "Yes"]


def test_every_answer_is_its_form_evaluated_on_the_world(built) -> None:
    for b in built:
        w = b.sim.world
        for item in [*b.targets, *b.subs]:
            assert item.form is not None and answer_of(item.form, w) == item.answer


def test_each_negative_replaces_exactly_one_fact_by_a_false_one(built) -> None:
    for b in built:
        w = b.sim.world
        by_id = {t.target_id: t for t in b.targets}
        negatives = [t for t in b.targets if t.polarity == "negative"]
        assert len(negatives) == len(b.targets) // 2
        for n in negatives:
            p = by_id[n.negative_of]
            assert p.polarity == "positive" and p.answer == "Yes" and n.answer == "No"
            assert n.perturbed is not None and n.perturbed.fact_id in p.chain
            pos, neg = set(map(_key, p.asserted)), set(map(_key, n.asserted))
            assert len(pos - neg) == 1 and len(neg - pos) == 1
            (removed,), (added,) = pos - neg, neg - pos
            assert removed == _key(w.fact(n.perturbed.fact_id)) and added == _key(n.perturbed.replacement)
            assert added[0] == removed[0]                       # the same time
            assert all(claim_holds(c, w) for c in p.asserted)   # the positive asserts recorded facts only
            assert not claim_holds(n.perturbed.replacement, w)  # recorded false at that time


def _key(c) -> tuple:
    return (c.t, c.subject, c.kind, c.predicate, c.object, c.value)


def test_targets_and_ordering_probes_turn_on_the_order_of_two_events(built) -> None:
    for b in built:
        w = b.sim.world
        for t in b.targets:
            assert t.temporally_constrained and t.ordering_pair is not None
            assert isinstance(t.form, Before) and order_dependent(t.form, t.ordering_pair, w)
            a, c = (w.fact(x) for x in t.ordering_pair)
            assert c.t - a.t >= MIN_ORDER_GAP_S - 1e-9
            # both orders plausible: the two candidates do the same kind of thing, each exactly once
            x, anchor, y = (w.fact(f) for f in t.chain)
            assert (x.kind, x.predicate, x.object, x.value) == (y.kind, y.predicate, y.object, y.value)
            assert x.subject != y.subject and x.t < anchor.t < y.t
            assert not (anchor.participants & (x.participants | y.participants))
        for s in b.subs:
            if s.probe_type == "ordering":
                assert order_dependent(s.form, tuple(s.fact_ids), w)


def test_sub_questions_probe_every_chain_fact_and_never_repeat_their_target(built) -> None:
    for b in built:
        for t in b.targets:
            mine = [s for s in b.subs if s.target_id == t.target_id]
            assert [s.sub_id for s in mine] == t.sub_ids
            assert set(t.chain) <= {f for s in mine for f in s.fact_ids}
            assert all(s.text != t.text for s in mine)
        texts = [t.text for t in b.targets]
        assert len(set(texts)) == len(texts)  # no duplicated target


def test_lookalikes_are_named_by_their_numbers(built) -> None:
    for b in built:
        names = [e.name for e in b.sim.world.entities if e.category == "agent"]
        assert len(set(names)) == len(names) and all("marked" in n for n in names)
