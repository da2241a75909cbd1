"""The state schema every extractor (a VLM or the offline one) must return for one chunk, and its validation.

One chunk's output is a JSON object::

    {"objects": [{"id": "o1", "category": "agent" | "item",
                  "attributes": {"colour": str, "shape": str | null, "size": "small" | "large" | null,
                                 "number": int | null},
                  "first_seen": seconds, "last_seen": seconds,
                  "position": {"first": [x, y], "last": [x, y]},      # normalised frame coordinates, 0..1
                  "states": [{"t": seconds, "kind": "attribute" | "action" | "relation",
                              "predicate": str, "value": str | null, "object": local id | null}]}]}

That is the synthetic worlds' schema (``schema=synthetic``, the default). ``schema=open`` is STRAND's
open vocabulary (``OpenChunkObject``): a free-text category, free-text attributes, free predicates and
values, an optional position. States follow the world record's three kinds (H.13 ii): an ``attribute`` carries a ``value``
(``state`` = ``lit`` / ``dark``), an ``action`` neither value nor object, a ``relation`` the local id
of another object of the same chunk. Times are absolute video seconds inside the chunk. The coarse
``position`` is vidaudit's addition (the paper's linker uses "spatial proximity" but records have
no boxes). Output that is not this (not JSON, a wrong field, a time outside the chunk, a relation to
an unknown id) is *invalid*: ``parse_chunk`` raises ``InvalidExtraction`` with the reason, and the
framework records the chunk as invalid -- an outcome shown to the answerer and counted, never an
empty list.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

TIME_TOL_S = 0.05
SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Attributes(_Strict):
    colour: str
    shape: str | None = None
    size: Literal["small", "large"] | None = None
    number: int | None = None


class Position(_Strict):
    first: tuple[float, float]
    last: tuple[float, float]

    @model_validator(mode="after")
    def _in_frame(self) -> Position:
        for x, y in (self.first, self.last):
            if not (-0.1 <= x <= 1.1 and -0.1 <= y <= 1.1):
                raise ValueError(f"position ({x}, {y}) is not in normalised frame coordinates (0..1)")
        return self


class State(_Strict):
    t: float
    kind: Literal["attribute", "action", "relation"]
    predicate: str = Field(min_length=1)
    value: str | None = None
    object: str | None = None

    @model_validator(mode="after")
    def _fields(self) -> State:
        if self.kind == "attribute" and self.value is None:
            raise ValueError(f"attribute state {self.predicate!r} at {self.t} has no value")
        if self.kind == "relation" and self.object is None:
            raise ValueError(f"relation {self.predicate!r} at {self.t} names no object")
        if self.kind == "action" and (self.value is not None or self.object is not None):
            raise ValueError(f"action {self.predicate!r} at {self.t} carries a value or an object")
        return self


class ChunkObject(_Strict):
    id: str = Field(min_length=1)
    category: Literal["agent", "item"]
    attributes: Attributes
    first_seen: float
    last_seen: float
    position: Position
    states: list[State] = Field(default_factory=list)


class ChunkExtraction(_Strict):
    objects: list[ChunkObject] = Field(default_factory=list)


#: an open-vocabulary attribute value: free text, a number, or unknown
OpenValue = str | int | float | bool | None


class OpenChunkObject(_Strict):
    """An object as STRAND's world records have it: an open-vocabulary category ("person", "car", "dog"),
    free-text attributes ({"clothing": "white jersey", "number": 24}), states of the three kinds with free
    predicates and values; the coarse position is optional."""

    id: str = Field(min_length=1)
    category: str = Field(min_length=1, max_length=80)
    attributes: dict[str, OpenValue] = Field(default_factory=dict)
    first_seen: float
    last_seen: float
    position: Position | None = None
    states: list[State] = Field(default_factory=list)


class OpenChunkExtraction(_Strict):
    objects: list[OpenChunkObject] = Field(default_factory=list)


#: the schemas a dataset can declare: the synthetic worlds' (one instance: agents and items, colour / shape /
#: size / number, the simulator's events) and the open vocabulary of real videos
SCHEMAS: dict[str, type[ChunkExtraction | OpenChunkExtraction]] = {
    "synthetic": ChunkExtraction, "open": OpenChunkExtraction}


def attributes_of(obj: ChunkObject | OpenChunkObject) -> dict[str, object]:
    """An observation's attributes as a dict, whichever schema it follows."""
    return dict(obj.attributes) if isinstance(obj.attributes, dict) else obj.attributes.model_dump()


class InvalidExtraction(ValueError):
    """An extractor's output that does not follow the schema (the reason is the message)."""


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_chunk(text: str, t_start: float, t_end: float, schema: str = "synthetic"
                ) -> ChunkExtraction | OpenChunkExtraction:
    """The validated extraction of chunk [t_start, t_end) under ``schema`` (``SCHEMAS``), or
    ``InvalidExtraction`` naming what is wrong."""
    m = _FENCE.search(text)
    raw = m.group(1) if m else text
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise InvalidExtraction(f"not JSON ({e.msg} at char {e.pos})") from None
    try:
        chunk = SCHEMAS[schema].model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidExtraction(f"{where}: {first['msg']}") from None
    ids = [o.id for o in chunk.objects]
    if len(set(ids)) != len(ids):
        raise InvalidExtraction("object ids are not unique")
    lo, hi = t_start - TIME_TOL_S, t_end + TIME_TOL_S
    for o in chunk.objects:
        if not (lo <= o.first_seen <= o.last_seen <= hi):
            raise InvalidExtraction(f"{o.id}: first_seen/last_seen {o.first_seen}..{o.last_seen} outside the chunk "
                                    f"[{t_start:g}, {t_end:g})")
        for s in o.states:
            if not lo <= s.t <= hi:
                raise InvalidExtraction(f"{o.id}: state at {s.t} outside the chunk [{t_start:g}, {t_end:g})")
            if s.object is not None and s.object not in ids:
                raise InvalidExtraction(f"{o.id}: relation {s.predicate!r} to unknown object {s.object!r}")
    return chunk


SCHEMA_PROMPT = (
    "You see {n} frames of one video chunk from {t0:.2f} s to {t1:.2f} s, each preceded by its timestamp. "
    "List every object that moves or changes, with what you observe about it, as JSON only, in this form:\n"
    '{{"objects": [{{"id": "o1", "category": "agent" or "item", "attributes": {{"colour": "...", '
    '"shape": "..." or null, "size": "small" or "large" or null, "number": integer or null}}, '
    '"first_seen": seconds, "last_seen": seconds, "position": {{"first": [x, y], "last": [x, y]}}, '
    '"states": [{{"t": seconds, "kind": "attribute" | "action" | "relation", "predicate": "...", '
    '"value": "..." or null, "object": "o2" or null}}]}}]}}\n'
    "Positions are the object's centre in normalised frame coordinates (0..1, y down). Use absolute video "
    "seconds. State kinds: attribute (predicate \"state\", value \"lit\" or \"dark\", once when first seen and "
    "at every change), action (\"enters\", \"exits\"), relation to another listed object (\"passes_to\", "
    "\"receives\", \"collides_with\", \"goes_behind\", \"emerges_from\"). Use the same id for an object "
    "throughout the chunk, also when it is briefly hidden."
)


OPEN_SCHEMA_VERSION = "open-1"
OPEN_SCHEMA_PROMPT = (
    "You see {n} frames of one video chunk from {t0:.2f} s to {t1:.2f} s, each preceded by its timestamp. "
    "List every object that moves, changes or interacts (people, animals, vehicles, things), as JSON only, in "
    "this form:\n"
    '{{"objects": [{{"id": "o1", "category": "a short noun", "attributes": {{"name": "value", ...}}, '
    '"first_seen": seconds, "last_seen": seconds, "position": {{"first": [x, y], "last": [x, y]}}, '
    '"states": [{{"t": seconds, "kind": "attribute" | "action" | "relation", "predicate": "...", '
    '"value": "..." or null, "object": "o2" or null}}]}}]}}\n'
    "Attributes are the persistent properties that tell this object apart from the others (colours, clothing, "
    "a number or text it carries, its kind); write what you see, in a few words each. States, at the time they "
    "are seen: attribute (a property that changes, with its value, e.g. predicate \"door\", value \"open\"), "
    "action (what it does, e.g. \"jumps\", \"enters\"), relation to another listed object (e.g. \"passes_to\", "
    "\"blocks\"). Positions are the object's centre in normalised frame coordinates (0..1, y down). Use "
    "absolute video seconds and the same id for an object throughout the chunk, also when it is briefly hidden."
)


def extraction_prompt(schema: str) -> tuple[str, object]:
    """(prompt template, version) of a schema's extraction stage."""
    return (OPEN_SCHEMA_PROMPT, OPEN_SCHEMA_VERSION) if schema == "open" else (SCHEMA_PROMPT, SCHEMA_VERSION)
