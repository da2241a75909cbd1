"""What the composer's three kinds of target share: the agents of a world, the patterns an agent never does, the
check that every composed answer is the value of its form on the world (a composer bug fails loudly), and the one
builder of sub-questions and of a target of a positive/negative pair."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from vidaudit.suites.faithful.phrasing import text_of
from vidaudit.suites.faithful.questions import (
    Before,
    Claim,
    Count,
    Exists,
    Pattern,
    Perturbation,
    Phrasing,
    ProbeType,
    QuestionForm,
    Same,
    SubQuestion,
    Target,
    answer_of,
)
from vidaudit.suites.faithful.world import Fact, WorldRecord


def event_kind(f: Fact) -> tuple:
    return (f.kind, f.predicate, f.object, f.value)


def agents_of(world: WorldRecord) -> list[str]:
    return [e.id for e in world.entities if e.category == "agent"]


def never(world: WorldRecord, pattern_of: Fact, exclude: set[str]) -> list[Pattern]:
    """Patterns "Z does what ``pattern_of`` says" for agents Z that never do it (and are not excluded)."""
    kind = event_kind(pattern_of)
    doers = {f.subject for f in world.facts if event_kind(f) == kind}
    return [
        Pattern(
            subject=z,
            kind=pattern_of.kind,
            predicate=pattern_of.predicate,
            object=pattern_of.object,
            value=pattern_of.value,
        )
        for z in agents_of(world)
        if z not in doers and z not in exclude and z != pattern_of.object
    ]


def checked(form: Exists | Before | Count | Same, world: WorldRecord, expected: str, what: str) -> str:
    """The value of ``form`` on ``world``, which must be ``expected`` (``what``: the text, for the message)."""
    got = answer_of(form, world)
    if got != expected:
        raise AssertionError(f"composer bug: {what} evaluates to {got}, meant {expected}")
    return got


class SubPlan(NamedTuple):
    """One planned sub-question: its form, the answer the form must have on the world, the facts it probes, its probe
    type, and for an order whether it is phrased with "after" ("Does <b> after <a>?")."""

    form: Exists | Before | Count | Same
    expected: str
    fact_ids: list[str]
    probe_type: ProbeType
    after: bool = False


def sub_questions(world: WorldRecord, target_id: str, plans: Iterable[SubPlan]) -> list[SubQuestion]:
    """The sub-questions ``<target_id>-s1``, ``-s2``, ... of a target, in plan order: the one builder of all three
    kinds of target, so every sub-question is phrased from its form and its answer checked alike."""
    out = []
    for j, plan in enumerate(plans, 1):
        text = text_of(plan.form, world, after=plan.after)
        out.append(
            SubQuestion(
                sub_id=f"{target_id}-s{j}",
                target_id=target_id,
                text=text,
                answer=checked(plan.form, world, plan.expected, text),
                probe_type=plan.probe_type,
                fact_ids=plan.fact_ids,
                form=plan.form,
            )
        )
    return out


def paired_target(
    world: WorldRecord,
    tid: str,
    form: Before | Count | Same,
    expected: str,
    chain: list[str],
    asserted: list[Claim],
    subs: list[SubQuestion],
    question_form: QuestionForm,
    ids: tuple[str, str],
    perturbed: Perturbation | None,
    *,
    ordering_pair: tuple[str, str] | None = None,
    phrasing: Phrasing | None = None,
) -> Target:
    """One target of a positive/negative pair ``ids`` asked with ``subs``: its text (implied order where
    ``phrasing`` is implicit) and checked answer from ``form``; the negative (``negative_of`` the first of ``ids``)
    is the one with a ``perturbed`` fact. An order target names its ``ordering_pair`` and so is temporally
    constrained; a count or identity target has none."""
    text = text_of(form, world, implicit=phrasing == "implicit")
    neg = perturbed is not None
    return Target(
        target_id=tid,
        video_id=world.video_id,
        text=text,
        answer=checked(form, world, expected, text),
        chain=chain,
        temporally_constrained=ordering_pair is not None,
        ordering_pair=ordering_pair,
        polarity="negative" if neg else "positive",
        negative_of=ids[0] if neg else None,
        perturbed=perturbed,
        asserted=asserted,
        form=form,
        sub_ids=[s.sub_id for s in subs],
        question_form=question_form,
        phrasing=phrasing,
    )
