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

An answer is also read within caps (``AnswerCaps``; spec options ``max_depth``, ``max_objects``,
``max_records``): JSON nested deeper than ``max_depth`` (which ``json.loads`` would otherwise answer with a
``RecursionError`` past a thousand levels), more than ``max_objects`` objects, or more than ``max_records``
objects and states together is ``AnswerTooLarge``, counted before anything is validated. That is not an
outcome of the model's extraction but a limit of what the framework will process (the aggregator's work
grows with the square of the objects of nearby chunks: one chunk of 20,000 objects took minutes), so the
framework errors the trial with it (``too_large``, not retried) and the run goes on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

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
    "synthetic": ChunkExtraction,
    "open": OpenChunkExtraction,
}


def attributes_of(obj: ChunkObject | OpenChunkObject) -> dict[str, object]:
    """An observation's attributes as a dict, whichever schema it follows."""
    return dict(obj.attributes) if isinstance(obj.attributes, dict) else obj.attributes.model_dump()


class InvalidExtraction(ValueError):
    """An extractor's output that does not follow the schema (the reason is the message)."""


class AnswerTooLarge(ValueError):
    """A model's answer over one of the ``AnswerCaps``; ``option`` names the cap (a spec option)."""

    def __init__(self, message: str, option: str) -> None:
        super().__init__(message)
        self.option = option


#: no answer of the schema nests deeper than 5 levels (objects, an object, its position, first, x)
DEFAULT_MAX_DEPTH = 32
#: the synthetic worlds have a dozen objects, a crowded real scene a few dozen in one chunk
DEFAULT_MAX_OBJECTS = 64
#: objects and their states in one chunk's answer (64 objects with 15 states each)
DEFAULT_MAX_RECORDS = 1024


@dataclass(frozen=True)
class AnswerCaps:
    """What one model answer the framework parses may hold (spec options of the same names)."""

    max_depth: int = DEFAULT_MAX_DEPTH
    max_objects: int = DEFAULT_MAX_OBJECTS
    max_records: int = DEFAULT_MAX_RECORDS


def _deeper_than(value: Any, max_depth: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``max_depth`` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict | list):
            if depth > max_depth:
                return True
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
    return False


def load_answer(raw: str, caps: AnswerCaps, what: str, key: str, noun: str, scale: int = 1) -> Any:
    """``json.loads(raw)`` within ``caps``: ``AnswerTooLarge`` when it nests deeper than ``max_depth`` or its list
    ``key`` holds too many entries (``check_counts``; counted first, which is cheap), ``JSONDecodeError`` when
    it is not JSON."""
    too_deep = AnswerTooLarge(f"{what} nests JSON deeper than max_depth={caps.max_depth} levels", "max_depth")
    try:
        data = json.loads(raw)
    except RecursionError:
        raise too_deep from None
    if isinstance(data, dict):
        check_counts(data.get(key), caps, what, noun, scale)
    if _deeper_than(data, caps.max_depth):
        raise too_deep
    return data


def check_counts(items: object, caps: AnswerCaps, what: str, noun: str, scale: int = 1) -> None:
    """``AnswerTooLarge`` when the list ``items`` holds more than ``scale * max_objects`` entries, or they and
    their ``states`` more than ``scale * max_records`` (``scale``: the chunks a summarise reply covers)."""
    if not isinstance(items, list):
        return  # not the schema: validation says so
    per = "" if scale == 1 else f" x {scale} chunks"
    if len(items) > scale * caps.max_objects:
        raise AnswerTooLarge(f"{what} lists more than max_objects={caps.max_objects}{per} {noun}", "max_objects")
    records = len(items) + sum(
        len(x["states"]) for x in items if isinstance(x, dict) and isinstance(x.get("states"), list)
    )
    if records > scale * caps.max_records:
        raise AnswerTooLarge(
            f"{what} holds more than max_records={caps.max_records}{per} {noun} and states", "max_records"
        )


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_chunk(
    text: str, t_start: float, t_end: float, schema: str = "synthetic", caps: AnswerCaps | None = None
) -> ChunkExtraction | OpenChunkExtraction:
    """The validated extraction of chunk [t_start, t_end) under ``schema`` (``SCHEMAS``), ``InvalidExtraction``
    naming what is wrong, or ``AnswerTooLarge`` naming the cap it passes (``caps``, default ``AnswerCaps()``)."""
    caps = caps or AnswerCaps()
    m = _FENCE.search(text)
    raw = m.group(1) if m else text
    what = "an extract answer"
    try:
        data = load_answer(raw, caps, what, "objects", "objects")
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
            raise InvalidExtraction(
                f"{o.id}: first_seen/last_seen {o.first_seen}..{o.last_seen} outside the chunk [{t_start:g}, {t_end:g})"
            )
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
    'seconds. State kinds: attribute (predicate "state", value "lit" or "dark", once when first seen and '
    'at every change), action ("enters", "exits"), relation to another listed object ("passes_to", '
    '"receives", "collides_with", "goes_behind", "emerges_from"). Use the same id for an object '
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
    'are seen: attribute (a property that changes, with its value, e.g. predicate "door", value "open"), '
    'action (what it does, e.g. "jumps", "enters"), relation to another listed object (e.g. "passes_to", '
    '"blocks"). Positions are the object\'s centre in normalised frame coordinates (0..1, y down). Use '
    "absolute video seconds and the same id for an object throughout the chunk, also when it is briefly hidden."
)


def extraction_prompt(schema: str) -> tuple[str, object]:
    """(prompt template, version) of a schema's extraction stage."""
    return (OPEN_SCHEMA_PROMPT, OPEN_SCHEMA_VERSION) if schema == "open" else (SCHEMA_PROMPT, SCHEMA_VERSION)
