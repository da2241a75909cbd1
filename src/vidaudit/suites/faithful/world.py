"""The world record: a typed, versioned account of what one video shows (STRAND §4.1, H.13).

One ``WorldRecord`` per video. It registers entities (canonical id, category, persistent
attributes), lists timestamped *observed* facts of three kinds (attribute, action, relation),
the key timestamps, each entity's observation intervals, the explicit gaps between them
(occlusion, exit until re-entry) and the identity links that bind an entity across a gap with the
evidence that supports them. ``source_video_id`` is the cluster key of every statistic.

The same type serves a simulator's exact record (``vidaudit generate faithful``) and, later, a
record predicted by an extractor/aggregator: questions carry logical forms (``questions.py``) that
evaluate against any record, and facts are matched by (entity, kind, predicate, object, time).

Rules checked on construction (a record that breaks one does not load):

- ids are unique; every fact's subject (and a relation's object) is a registered entity;
- attribute facts carry a ``value``, relations an ``object``, actions neither;
- facts are observed: at its time the subject (and a relation's object) is inside one of its
  observation intervals (closed: a disappearance is logged at the first frame without the entity);
- an entity is registered only if re-identifiable (observed at two times at least
  ``REID_MIN_SEPARATION_S`` apart) and dynamic (subject or object of at least one fact);
- between two observation intervals of an entity lies exactly one gap, and a gap that ends (the
  entity is seen again) has an identity link with non-empty evidence: without evidence the two
  segments must be two entities;
- ``key_timestamps`` holds every fact time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

WORLD_SCHEMA_VERSION: Final = 1
#: an entity is re-identifiable when it is observed at two times at least this far apart
REID_MIN_SEPARATION_S = 1.0
#: times closer than this are the same instant (float noise from frame / fps)
TIME_EPS = 1e-6

FactKind = Literal["attribute", "action", "relation"]
GapKind = Literal["occlusion", "exit"]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Entity(_Strict):
    """A registered entity: ``id`` is canonical and visually grounded (e.g. ``red_circle_3``)."""

    id: str = Field(min_length=1)
    category: str
    #: persistent properties (colour, shape, number, size, ...)
    attributes: dict[str, str | int] = Field(default_factory=dict)
    #: how questions name it ("the red circle marked 3")
    name: str


class Fact(_Strict):
    """One observed fact ``(t, subject, kind, predicate, object?)`` with its value for attributes."""

    id: str = Field(min_length=1)
    t: float = Field(ge=0.0)
    #: index of the first frame that shows it (None when the record has no frames, e.g. annotated)
    frame: int | None = None
    subject: str
    kind: FactKind
    predicate: str = Field(min_length=1)
    object: str | None = None
    value: str | None = None
    #: the scripted episode that produced it (simulated worlds): facts of one episode are causally tied
    episode: str | None = None

    @model_validator(mode="after")
    def _check(self) -> Fact:
        if self.kind == "relation" and not self.object:
            raise ValueError(f"fact {self.id}: a relation needs an object entity")
        if self.kind != "relation" and self.object is not None:
            raise ValueError(f"fact {self.id}: only a relation has an object")
        if self.kind == "attribute" and self.value is None:
            raise ValueError(f"fact {self.id}: an attribute fact needs a value")
        if self.kind != "attribute" and self.value is not None:
            raise ValueError(f"fact {self.id}: only an attribute fact has a value")
        return self

    @property
    def signature(self) -> tuple[str, str, str, str | None, str | None]:
        """What the fact says, without its time: (subject, kind, predicate, object, value)."""
        return (self.subject, self.kind, self.predicate, self.object, self.value)

    @property
    def participants(self) -> frozenset[str]:
        return frozenset(x for x in (self.subject, self.object) if x)


class Observation(_Strict):
    """An interval during which ``entity`` is observed (closed at both ends)."""

    entity: str
    t_start: float = Field(ge=0.0)
    t_end: float

    @model_validator(mode="after")
    def _check(self) -> Observation:
        if self.t_end < self.t_start:
            raise ValueError(f"observation of {self.entity}: t_end {self.t_end} before t_start {self.t_start}")
        return self


class Gap(_Strict):
    """An explicit interval without observation: ``occlusion`` (behind ``cause``) or ``exit`` (out of frame)."""

    id: str
    entity: str
    kind: GapKind
    t_start: float
    #: None when the entity is not seen again
    t_end: float | None = None
    #: the occluder's entity id for an occlusion
    cause: str | None = None


class IdentityLink(_Strict):
    """The entity seen before and after ``gap`` is the same one, because of ``evidence``.

    ``evidence`` names the persistent attributes visible on both sides that single the entity out
    among all entities (e.g. ``["number"]`` for two look-alikes that differ only in their number).
    """

    entity: str
    gap: str
    t_before: float
    t_after: float
    evidence: list[str] = Field(min_length=1)


class WorldRecord(_Strict):
    """Everything one video shows, as facts (see the module docstring for the rules)."""

    schema_version: Literal[1] = WORLD_SCHEMA_VERSION
    video_id: str
    source_video_id: str
    duration_s: float = Field(gt=0.0)
    fps: float | None = None
    domain: str
    entities: list[Entity]
    facts: list[Fact]
    key_timestamps: list[float] = Field(default_factory=list)
    observations: list[Observation] = Field(default_factory=list)
    gaps: list[Gap] = Field(default_factory=list)
    identity_links: list[IdentityLink] = Field(default_factory=list)
    #: how the record was made (simulator version and seed, annotator, extractor, ...)
    provenance: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> WorldRecord:
        problems = record_problems(self)
        if problems:
            raise ValueError("; ".join(problems[:8]) + (f" (+{len(problems) - 8} more)" if len(problems) > 8 else ""))
        return self

    # ------------------------------------------------------------------ look-ups

    def entity(self, entity_id: str) -> Entity:
        for e in self.entities:
            if e.id == entity_id:
                return e
        raise KeyError(entity_id)

    def fact(self, fact_id: str) -> Fact:
        for f in self.facts:
            if f.id == fact_id:
                return f
        raise KeyError(fact_id)

    def trajectory(self, entity_id: str) -> list[Fact]:
        """S_o: the facts whose subject is ``entity_id``, in time order."""
        return sorted((f for f in self.facts if f.subject == entity_id), key=lambda f: (f.t, f.id))

    def observed_at(self, entity_id: str, t: float) -> bool:
        return any(o.entity == entity_id and o.t_start - TIME_EPS <= t <= o.t_end + TIME_EPS for o in self.observations)

    def with_facts(self, facts: Iterable[Fact]) -> WorldRecord:
        """A copy with other facts (unchecked: for counterfactual evaluation, e.g. swapped times)."""
        return self.model_construct(**{**dict(self), "facts": list(facts)})


def source_video_of(params: Mapping[str, Any], video_key: str) -> str:
    """The cluster key of an item (a sample's or a score record's ``params``): its ``source_video_id``, else its
    video (``video_key``, the ``group_id``). Every faithful statistic, and ``Suite.source_of``, counts these."""
    return str(params.get("source_video_id") or video_key)


def _intervals(record: WorldRecord) -> dict[str, list[Observation]]:
    out: dict[str, list[Observation]] = {}
    for o in record.observations:
        out.setdefault(o.entity, []).append(o)
    for obs in out.values():
        obs.sort(key=lambda o: o.t_start)
    return out


def record_problems(record: WorldRecord) -> list[str]:
    """Every rule of the module docstring that ``record`` breaks (empty: a valid record), one rule family at a
    time in a fixed order, so the first problems a refused record names are always the same."""
    known = {e.id for e in record.entities}
    intervals = _intervals(record)
    return [
        *_id_problems(record),
        *_observation_problems(record, known),
        *_fact_problems(record, known),
        *_registration_problems(record, intervals),
        *_gap_problems(record, known),
        *_gap_cover_problems(record, intervals),
        *_link_problems(record, known),
        *_timestamp_problems(record),
    ]


def _id_problems(record: WorldRecord) -> list[str]:
    """Entities and facts are named by unique ids (every other rule looks them up by id)."""
    problems: list[str] = []
    ids = [e.id for e in record.entities]
    if len(set(ids)) != len(ids):
        problems.append("entity ids are not unique")
    fids = [f.id for f in record.facts]
    if len(set(fids)) != len(fids):
        problems.append("fact ids are not unique")
    return problems


def _observation_problems(record: WorldRecord, known: set[str]) -> list[str]:
    """An observation interval is of a registered entity and inside the video."""
    problems: list[str] = []
    for o in record.observations:
        if o.entity not in known:
            problems.append(f"observation of unregistered entity {o.entity!r}")
        if o.t_end > record.duration_s + TIME_EPS:
            problems.append(f"observation of {o.entity} ends at {o.t_end} after the video ({record.duration_s} s)")
    return problems


def _fact_problems(record: WorldRecord, known: set[str]) -> list[str]:
    """A fact names registered entities, happens inside the video and, where the record has observations, only
    while each of its participants is observed (observed facts only)."""
    problems: list[str] = []
    for f in record.facts:
        for role, who in (("subject", f.subject), ("object", f.object)):
            if who is not None and who not in known:
                problems.append(f"fact {f.id}: {role} {who!r} is not a registered entity")
        if f.t > record.duration_s + TIME_EPS:
            problems.append(f"fact {f.id} at {f.t} s is after the video's end ({record.duration_s} s)")
        if record.observations:
            for who in sorted(f.participants):  # sorted: the same message order in every process (a set's is not)
                if who in known and not record.observed_at(who, f.t):
                    problems.append(f"fact {f.id} at {f.t:.3f} s: {who} is not observed then (observed facts only)")
    return problems


def _registration_problems(record: WorldRecord, intervals: dict[str, list[Observation]]) -> list[str]:
    """Registration: an entity is dynamic (takes part in a fact) and re-identifiable (observed over at least
    ``REID_MIN_SEPARATION_S``)."""
    problems: list[str] = []
    in_facts = {p for f in record.facts for p in f.participants}
    for e in record.entities:
        if e.id not in in_facts:
            problems.append(f"entity {e.id} takes part in no fact (register dynamic entities only)")
        obs = intervals.get(e.id, [])
        if record.observations and obs:
            span = max(o.t_end for o in obs) - min(o.t_start for o in obs)
            if span + TIME_EPS < REID_MIN_SEPARATION_S:
                problems.append(
                    f"entity {e.id} is observed over {span:.2f} s only: not re-identifiable at two "
                    f"times {REID_MIN_SEPARATION_S:g} s apart"
                )
        elif record.observations:
            problems.append(f"entity {e.id} has no observation interval")
    return problems


def _gap_problems(record: WorldRecord, known: set[str]) -> list[str]:
    """Each gap is well formed: a unique id, registered entity and cause, an occluder for an occlusion, and an
    end (when it ends) after its start."""
    problems: list[str] = []
    gap_ids = [g.id for g in record.gaps]
    if len(set(gap_ids)) != len(gap_ids):
        problems.append("gap ids are not unique")
    for g in record.gaps:
        if g.entity not in known:
            problems.append(f"gap {g.id} of unregistered entity {g.entity!r}")
        if g.cause is not None and g.cause not in known:
            problems.append(f"gap {g.id}: cause {g.cause!r} is not a registered entity")
        if g.kind == "occlusion" and g.cause is None:
            problems.append(f"gap {g.id}: an occlusion names its occluder (cause)")
        if g.t_end is not None and g.t_end < g.t_start:
            problems.append(f"gap {g.id} ends before it starts")
    return problems


def _gap_cover_problems(record: WorldRecord, intervals: dict[str, list[Observation]]) -> list[str]:
    """Every unobserved interval between two of an entity's observations is explained by exactly one gap."""
    problems: list[str] = []
    gaps_by_entity: dict[str, list[Gap]] = {}
    for g in record.gaps:
        gaps_by_entity.setdefault(g.entity, []).append(g)
    for entity, obs in intervals.items():
        for a, b in zip(obs, obs[1:], strict=False):
            inside = [
                g
                for g in gaps_by_entity.get(entity, [])
                if abs(g.t_start - a.t_end) <= TIME_EPS and g.t_end is not None and abs(g.t_end - b.t_start) <= TIME_EPS
            ]
            if len(inside) != 1:
                problems.append(
                    f"{entity}: the unobserved interval {a.t_end:.3f}-{b.t_start:.3f} s needs exactly "
                    f"one gap, found {len(inside)}"
                )
    return problems


def _link_problems(record: WorldRecord, known: set[str]) -> list[str]:
    """Identity links name one of their entity's gaps and cite its attributes as evidence; a gap that ends is
    bound by a link (without evidence the two segments are two entities)."""
    problems: list[str] = []
    links = {(lk.entity, lk.gap) for lk in record.identity_links}
    gap_by_id = {g.id: g for g in record.gaps}
    for lk in record.identity_links:
        linked = gap_by_id.get(lk.gap)
        if linked is None or linked.entity != lk.entity:
            problems.append(f"identity link of {lk.entity} names gap {lk.gap!r}, which is not one of its gaps")
        attrs = record.entity(lk.entity).attributes if lk.entity in known else {}
        missing = [a for a in lk.evidence if a not in attrs]
        if missing:
            problems.append(f"identity link of {lk.entity}: evidence {missing} is not among its attributes")
    for g in record.gaps:
        if g.t_end is not None and (g.entity, g.id) not in links:
            problems.append(
                f"gap {g.id} of {g.entity} ends (it is seen again) but no identity link with evidence "
                "binds the two segments; without evidence they are two entities"
            )
    return problems


def _timestamp_problems(record: WorldRecord) -> list[str]:
    """key_timestamps holds every fact's time, and lists each time once, in order."""
    problems: list[str] = []
    times = set(record.key_timestamps)
    missing_t = sorted({f.t for f in record.facts} - times)
    if missing_t:
        problems.append(f"key_timestamps lacks fact times {missing_t[:5]}")
    if list(record.key_timestamps) != sorted(set(record.key_timestamps)):
        problems.append("key_timestamps must be sorted and unique")
    return problems
