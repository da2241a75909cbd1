"""Targets and sub-questions, with logical forms that evaluate against any world record.

A question's answer is not written by hand: it is the value of its ``form`` on the world record
(``evaluate``), so a composed item is executable ground truth, and the same form can later be
evaluated on a record an extractor predicted. Four forms exist:

- ``exists(p)``: some fact matches pattern ``p`` ("Does the red circle marked 3 light up?");
- ``before(a, b)``: some fact matching ``a`` happens strictly before some fact matching ``b``.
  The composer only uses patterns that match exactly one fact of the world, so "before" is the
  order of two events, unambiguous;
- ``count(e, n)``: exactly n distinct entities do event e ("Do exactly two agents light up?");
- ``same(a, b)``: one entity does the event ``a`` describes and the one ``b`` describes (identity: "Is the
  red circle that goes behind the blue hexagon marked 5 the same agent as the red circle that lights up?").
  A ``Ref`` describes an agent by an event it does and, for look-alikes, by the look they share (colour
  and shape, never the number that tells them apart); the composer only uses refs that describe exactly
  one fact of the world, so the answer is whether those two facts have one subject.

``Target`` holds the paper's fields (§4.2, H.9): its chain of fact ids, ``temporally_constrained``,
the ordering pair (the two facts whose order decides the answer, earlier first), polarity, and for
a negative the positive it perturbs and the single fact it replaces (``Perturbation``: that fact and
the claim, recorded false at that time, that takes its place). ``asserted`` lists what the question
claims happened; a negative's list differs from its positive's in exactly that one claim.
Imported items (the STRAND release) have no facts or forms: those fields are None or empty.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from vidaudit.suites.faithful.world import TIME_EPS, Fact, FactKind, WorldRecord

YES, NO = "Yes", "No"
ProbeType = Literal["single_fact", "ordering", "identity"]
#: single_fact and ordering are the paper's split (§6.2); identity (two sightings, one agent?) is vidaudit's
PROBE_TYPES: tuple[str, ...] = ("single_fact", "ordering", "identity")
Polarity = Literal["positive", "negative"]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Pattern(_Strict):
    """What a fact says, without its time; matches facts with the same fields."""

    subject: str
    kind: FactKind
    predicate: str
    object: str | None = None
    value: str | None = None

    @classmethod
    def of(cls, fact: Fact) -> Pattern:
        return cls(subject=fact.subject, kind=fact.kind, predicate=fact.predicate, object=fact.object, value=fact.value)

    def matches(self, fact: Fact) -> bool:
        return (fact.subject, fact.kind, fact.predicate, fact.object, fact.value) == (
            self.subject,
            self.kind,
            self.predicate,
            self.object,
            self.value,
        )


class Claim(Pattern):
    """A pattern asserted at a time: what a question says happened then."""

    t: float | None = None

    @classmethod
    def of(cls, fact: Fact) -> Claim:
        return cls(t=fact.t, **Pattern.of(fact).model_dump())

    def pattern(self) -> Pattern:
        return Pattern(**self.model_dump(exclude={"t"}))


class Exists(_Strict):
    op: Literal["exists"] = "exists"
    pattern: Pattern


class Before(_Strict):
    op: Literal["before"] = "before"
    a: Pattern
    b: Pattern


class EventKind(_Strict):
    """What a fact says without its subject and time ("lights up", "passes the ball to X")."""

    kind: FactKind
    predicate: str
    object: str | None = None
    value: str | None = None

    @classmethod
    def of(cls, fact: Fact | Pattern) -> EventKind:
        return cls(kind=fact.kind, predicate=fact.predicate, object=fact.object, value=fact.value)

    def matches(self, fact: Fact) -> bool:
        return (fact.kind, fact.predicate, fact.object, fact.value) == (
            self.kind,
            self.predicate,
            self.object,
            self.value,
        )

    def by(self, subject: str) -> Pattern:
        return Pattern(subject=subject, kind=self.kind, predicate=self.predicate, object=self.object, value=self.value)


class Count(_Strict):
    """``count(e, n)``: exactly ``n`` distinct entities do ``e`` ("Do exactly two agents light up?")."""

    op: Literal["count"] = "count"
    event: EventKind
    n: int = Field(ge=0)


class Ref(_Strict):
    """An agent described by an event it does, not by its name: "the agent that leaves the scene", or with the
    look of a look-alike pair ("the red circle that lights up": colour and shape, never the number)."""

    event: EventKind
    colour: str | None = None
    shape: str | None = None

    def denotes(self, world: WorldRecord) -> list[Fact]:
        """The facts this describes: the event, done by an agent with the look (when one is given)."""
        agents = {e.id: e for e in world.entities if e.category == "agent"}
        return [
            f
            for f in world.facts
            if f.subject in agents
            and self.event.matches(f)
            and all(
                v is None or agents[f.subject].attributes.get(k) == v
                for k, v in (("colour", self.colour), ("shape", self.shape))
            )
        ]


class Same(_Strict):
    """``same(a, b)``: one agent does both events (identity across a gap: "is it the same agent?")."""

    op: Literal["same"] = "same"
    a: Ref
    b: Ref


AnyForm = Exists | Before | Count | Same
Form = Annotated[AnyForm, Field(discriminator="op")]
#: the target forms vidaudit composes (compose.py; the paper names no list of forms): the order of two events,
#: a count, the identity of two sightings. Sub-questions are single facts (existence, attribution), orders
#: and identities (``ProbeType``)
QuestionForm = Literal["order", "count", "identity"]
Phrasing = Literal["explicit", "implicit"]


class Perturbation(_Strict):
    """The one change from a positive to its negative: ``fact_id`` replaced by ``replacement``."""

    fact_id: str
    replacement: Claim


class Target(_Strict):
    target_id: str
    video_id: str
    text: str
    #: "Yes" or "No" (an imported answer that failed validation is kept verbatim, see ``valid``)
    answer: str
    chain: list[str] = Field(default_factory=list)
    temporally_constrained: bool | None = None
    ordering_pair: tuple[str, str] | None = None
    polarity: Polarity | None = None
    negative_of: str | None = None
    perturbed: Perturbation | None = None
    asserted: list[Claim] = Field(default_factory=list)
    form: Form | None = None
    sub_ids: list[str] = Field(default_factory=list)
    #: which of the paper's forms the question is, and for an order question whether it says "before"/"after"
    #: (explicit) or implies the order ("Has X already ... when Y ...?"); None for imported items
    question_form: QuestionForm | None = None
    phrasing: Phrasing | None = None

    @property
    def valid(self) -> bool:
        return self.answer in (YES, NO)


class SubQuestion(_Strict):
    sub_id: str
    target_id: str
    text: str
    answer: str
    probe_type: ProbeType | None = None
    fact_ids: list[str] = Field(default_factory=list)
    form: Form | None = None

    @property
    def valid(self) -> bool:
        return self.answer in (YES, NO)


# --------------------------------------------------------------------------- evaluation


def matching(pattern: Pattern, facts: list[Fact]) -> list[Fact]:
    return [f for f in facts if pattern.matches(f)]


def evaluate(form: AnyForm, world: WorldRecord) -> bool:
    """The truth of ``form`` on ``world`` (see the module docstring)."""
    facts = list(world.facts)
    if isinstance(form, Exists):
        return bool(matching(form.pattern, facts))
    if isinstance(form, Count):
        return len({f.subject for f in facts if form.event.matches(f)}) == form.n
    if isinstance(form, Same):
        return bool({f.subject for f in form.a.denotes(world)} & {f.subject for f in form.b.denotes(world)})
    a, b = matching(form.a, facts), matching(form.b, facts)
    return any(fa.t < fb.t - TIME_EPS for fa in a for fb in b)


def answer_of(form: AnyForm, world: WorldRecord) -> str:
    return YES if evaluate(form, world) else NO


def swap_times(world: WorldRecord, fact_a: str, fact_b: str) -> WorldRecord:
    """The world with the times of two facts exchanged (the counterfactual order)."""
    fa, fb = world.fact(fact_a), world.fact(fact_b)
    swapped = []
    for f in world.facts:
        if f.id == fa.id:
            f = f.model_copy(update={"t": fb.t, "frame": fb.frame})
        elif f.id == fb.id:
            f = f.model_copy(update={"t": fa.t, "frame": fa.frame})
        swapped.append(f)
    return world.with_facts(swapped)


def order_dependent(form: AnyForm, pair: tuple[str, str], world: WorldRecord) -> bool:
    """Whether the answer flips when the two facts of ``pair`` trade places in time."""
    return evaluate(form, world) != evaluate(form, swap_times(world, *pair))


def claim_holds(claim: Claim, world: WorldRecord) -> bool:
    """Whether a fact matching ``claim`` is recorded at the claim's time."""
    return any(claim.pattern().matches(f) and (claim.t is None or abs(f.t - claim.t) <= TIME_EPS) for f in world.facts)
