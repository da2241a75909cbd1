"""Reading a judge's verdict: one JSON object with a named field, or nothing.

A verdict is read only from a JSON object (bare, or in a fenced ```json block) that holds the named
field with a value of the expected kind; prose, a missing field or a value of the wrong kind is
*unparseable*, which a suite counts and shows and never scores as a pass. When the text holds several
such objects that disagree, the verdict is unparseable too (the judge contradicted itself).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_MAX_TEXT = 200_000


@dataclass(frozen=True)
class Verdict:
    """``ok``: a value was read; ``value`` is it; ``why`` says what was wrong otherwise."""

    ok: bool
    value: Any = None
    why: str = ""
    explanation: str | None = None


def _objects(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object decodable at an opening brace (fenced blocks first), in order."""
    dec = json.JSONDecoder()
    chunks = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    seen: set[str] = set()
    for chunk in chunks:
        i = chunk.find("{")
        while i != -1:
            try:
                obj, end = dec.raw_decode(chunk, i)
            except (ValueError, RecursionError):
                i = chunk.find("{", i + 1)
                continue
            if isinstance(obj, dict):
                key = json.dumps(obj, sort_keys=True, default=str)
                if key not in seen:
                    seen.add(key)
                    yield obj
            i = chunk.find("{", max(end, i + 1))


def _bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    return None


def _score(v: Any, allowed: Sequence[float]) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        return None
    try:
        x = float(v)
    except ValueError:
        return None
    if not math.isfinite(x):
        return None
    for a in allowed:
        if abs(x - a) < 1e-9:
            return float(a)
    return None


def read_verdict(
    text: str | None, field: str, *, kind: str = "bool", allowed: Sequence[float] = (0.0, 0.5, 1.0)
) -> Verdict:
    """The judge's ``field`` from its JSON: ``kind`` "bool" (true/false) or "score" (one of ``allowed``)."""
    if not isinstance(text, str) or not text.strip():
        return Verdict(False, why="empty verdict")
    if kind not in ("bool", "score"):
        raise ValueError(f"kind must be 'bool' or 'score', got {kind!r}")
    text = text[:_MAX_TEXT]
    values: list[Any] = []
    explanation = None
    bad = None
    for obj in _objects(text):
        if field not in obj:
            continue
        v = _bool(obj[field]) if kind == "bool" else _score(obj[field], allowed)
        if v is None:
            bad = f"{field} = {obj[field]!r} is not {'true or false' if kind == 'bool' else allowed}"
            continue
        values.append(v)
        if explanation is None and isinstance(obj.get("explanation"), str):
            explanation = obj["explanation"]
    if not values:
        return Verdict(False, why=bad or f"no JSON object with {field!r}")
    if len(set(values)) > 1:
        return Verdict(False, why=f"the judge gave {field} both ways: {values}")
    return Verdict(True, values[0], explanation=explanation)
