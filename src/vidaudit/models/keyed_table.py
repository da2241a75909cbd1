"""What the price table (``pricing``) and the family parameter table (``params``) share: entries keyed
``provider:name``, read from YAML and validated one by one, and looked up by a model's spec.

A key with ``*`` is a pattern (``fnmatch``); a spec takes its exact key's entry, else that of the longest pattern
it matches. Each table keeps its own file shape (its section's name) and its own words in its errors.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ModelSpec

E = TypeVar("E", bound=BaseModel)


def match(entries: Mapping[str, E], spec: ModelSpec) -> tuple[str, E] | None:
    """``(key, entry)`` for ``spec``: its exact ``provider:name`` key, else the longest pattern it matches; None
    when neither is there."""
    key = f"{spec.provider}:{spec.name}"
    if key in entries:
        return key, entries[key]
    patterns = [k for k in entries if "*" in k and fnmatch.fnmatchcase(key, k)]
    if not patterns:
        return None
    best = max(patterns, key=len)
    return best, entries[best]


def parse_entries(
    raw: Any,
    where: str,
    section: str,
    entry: type[E],
    *,
    needs: str,
    bad_key: Callable[[Any], str],
    bad_entry: Callable[[str, str, str], str],
) -> dict[str, E]:
    """The entries of a table file's ``section`` (``raw``: the parsed YAML of ``where``), each validated as
    ``entry``. Refused with a one-line ConfigError starting ``where: ``: ``needs`` when the section is not a
    mapping, ``bad_key(key)`` for a key that is not ``provider:name``, ``bad_entry(key, field, problem)`` for an
    entry that does not validate (its first problem)."""
    if not isinstance(raw, dict) or not isinstance(raw.get(section), dict):
        raise ConfigError(f"{where}: {needs}")
    out: dict[str, E] = {}
    for key, value in raw[section].items():
        if not isinstance(key, str) or ":" not in key:
            raise ConfigError(f"{where}: {bad_key(key)}")
        try:
            out[key] = entry.model_validate(value)
        except ValidationError as e:
            first = e.errors()[0]
            raise ConfigError(f"{where}: {bad_entry(key, '.'.join(map(str, first['loc'])), first['msg'])}") from None
    return out
