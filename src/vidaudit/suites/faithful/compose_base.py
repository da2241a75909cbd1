"""What the composer's three kinds of target share: the agents of a world, the patterns an agent never does, and
the check that every composed answer is the value of its form on the world (a composer bug fails loudly)."""

from __future__ import annotations

from vidaudit.suites.faithful.phrasing import text_of
from vidaudit.suites.faithful.questions import (
    Before,
    Claim,
    Count,
    Exists,
    Pattern,
    Perturbation,
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


def untimed_target(
    world: WorldRecord,
    tid: str,
    form: Count | Same,
    expected: str,
    chain: list[str],
    asserted: list[Claim],
    subs: list[SubQuestion],
    question_form: str,
    ids: tuple[str, str],
    perturbed: Perturbation | None,
) -> Target:
    """A count or identity target (no temporal constraint) asked with ``subs``: its text and checked answer from
    ``form``; the pair ``ids``' negative (``negative_of`` the first) where it has a ``perturbed`` fact."""
    text = text_of(form, world)
    neg = perturbed is not None
    return Target(
        target_id=tid,
        video_id=world.video_id,
        text=text,
        answer=checked(form, world, expected, text),
        chain=chain,
        temporally_constrained=False,
        ordering_pair=None,
        polarity="negative" if neg else "positive",
        negative_of=ids[0] if neg else None,
        perturbed=perturbed,
        asserted=asserted,
        form=form,
        sub_ids=[s.sub_id for s in subs],
        question_form=question_form,
    )
