"""The LLM-summarise aggregator ablation (``aggregator=summarise``): one backbone call, the stage
``summarise``, merges the valid chunk observations into trajectories instead of the deterministic
aggregator A.

The request holds the chunk observations only (as E returned them, validated; never the question),
so it is identical across a video's questions and stored once per video. The reply must be the
trajectory memory the answerer reads -- ``{"trajectories": [{"id", "category", "attributes", "seen",
"states"}]}``, states as ``[t, kind, predicate, value, object trajectory id or null]`` -- and is
validated against that schema (``TrajectoryMemory``): a reply that is not is *invalid*, an outcome
(the answerer is told, the header counts it), never an empty memory. It is read within the same caps
as an extract answer (``schema.AnswerCaps``), its counts scaled by the chunks it merges: past one it is
``AnswerTooLarge`` and the trial errors.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from vidaudit.suites.faithful.framework.schema import (
    AnswerCaps,
    Attributes,
    ChunkExtraction,
    InvalidExtraction,
    OpenChunkExtraction,
    OpenValue,
    load_answer,
)

SUMMARISE_VERSION = 1
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TrajectoryJSON(_Strict):
    id: str = Field(min_length=1)
    category: Literal["agent", "item"]
    attributes: Attributes
    seen: list[tuple[float, float]] = Field(min_length=1)
    states: list[tuple[float, Literal["attribute", "action", "relation"], str, str | None, str | None]] = Field(
        default_factory=list
    )

    @model_validator(mode="after")
    def _ordered(self) -> TrajectoryJSON:
        for a, b in self.seen:
            if a > b:
                raise ValueError(f"seen interval [{a}, {b}] is reversed")
        return self


class OpenTrajectoryJSON(TrajectoryJSON):
    """A trajectory in the open vocabulary (``schema=open``): a free-text category and attributes."""

    category: str = Field(min_length=1, max_length=80)  # type: ignore[assignment]
    attributes: dict[str, OpenValue] = Field(default_factory=dict)  # type: ignore[assignment]


class TrajectoryMemory(_Strict):
    trajectories: list[TrajectoryJSON]


class OpenTrajectoryMemory(_Strict):
    trajectories: list[OpenTrajectoryJSON]


def parse_trajectories(
    text: str, duration_s: float, schema: str = "synthetic", caps: AnswerCaps | None = None, chunks: int = 1
) -> list[dict]:
    """The validated trajectories of a summarise reply (in ``schema``'s vocabulary), as the aggregator's
    ``as_json`` dicts, ``InvalidExtraction`` naming what is wrong, or ``AnswerTooLarge`` past ``caps``
    (their counts times ``chunks``, the chunks merged)."""
    caps = caps or AnswerCaps()
    m = _FENCE.search(text or "")
    raw = m.group(1) if m else (text or "")
    what = "the summarise reply"
    try:
        data = load_answer(raw, caps, what, "trajectories", "trajectories", scale=max(1, chunks))
    except json.JSONDecodeError as e:
        raise InvalidExtraction(f"not JSON ({e.msg} at char {e.pos})") from None
    try:
        mem = (OpenTrajectoryMemory if schema == "open" else TrajectoryMemory).model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        raise InvalidExtraction(f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    ids = [t.id for t in mem.trajectories]
    if len(set(ids)) != len(ids):
        raise InvalidExtraction("trajectory ids are not unique")
    for t in mem.trajectories:
        for s in t.states:
            if not -0.05 <= s[0] <= duration_s + 0.05:
                raise InvalidExtraction(f"{t.id}: state at {s[0]} outside the video [0, {duration_s:g}]")
            if s[4] is not None and s[4] not in ids:
                raise InvalidExtraction(f"{t.id}: relation {s[2]!r} to unknown trajectory {s[4]!r}")
    return [
        {
            "id": t.id,
            "category": t.category,
            "attributes": dict(t.attributes) if isinstance(t.attributes, dict) else t.attributes.model_dump(),
            "seen": [list(x) for x in t.seen],
            "states": [list(x) for x in sorted(t.states, key=lambda s: s[0])],
        }
        for t in mem.trajectories
    ]


def prompt(
    chunks: list[tuple[int, float, float, ChunkExtraction | OpenChunkExtraction]], schema: str = "synthetic"
) -> str:
    """The summarise request: every valid chunk's observations, one JSON line per chunk (``schema`` open: the
    reply's category and attributes are free text, as the observations')."""
    form = (
        '"category": "a short noun", "attributes": {"name": "value", ...}'
        if schema == "open"
        else '"category": "agent" or "item", "attributes": {"colour": ..., "shape": ..., "size": ..., "number": ...}'
    )
    lines = [
        json.dumps(
            {"chunk": m, "t": [round(t0, 2), round(t1, 2)], "objects": ex.model_dump()["objects"]},
            separators=(",", ":"),
        )
        for m, t0, t1, ex in chunks
    ]
    return (
        f"[summarise v{SUMMARISE_VERSION}] These are the objects observed in consecutive chunks of one video "
        "(one JSON object per chunk; ids are local to a chunk):\n" + "\n".join(lines) + "\n\n"
        "Merge the observations of the same physical object across chunks into one trajectory. Link two "
        "observations only when their attributes agree and they are close in time and position; never put two "
        "objects of one chunk in one trajectory; keep an object you cannot link as its own trajectory. Reply "
        'with JSON only: {"trajectories": [{"id": "T1", ' + form + ', "seen": [[first_s, last_s], ...], '
        '"states": [[t, "attribute" | "action" | "relation", predicate, value or null, '
        "other trajectory id or null], ...]}]} with absolute video seconds."
    )
