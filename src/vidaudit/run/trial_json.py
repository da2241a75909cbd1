"""A trial's identity, written fast and byte for byte: the canonical JSON of a (model, condition)'s trials as one
constant text with each trial's strings spliced in (``TrialJson``, checked on each group's first trial), the
hashes of selections and prompts, the trial ids a full walk keeps for the next (``Kept``), and ``Trial`` objects
built without pydantic's per-call set-up (``trial_of``, checked against ``model_construct``)."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping
from dataclasses import fields
from json.encoder import encode_basestring as _encode_str
from typing import Any

from vidaudit.core.contract.suite import Prompt
from vidaudit.core.hashing import canonical_json, sha256_json, sha256_text
from vidaudit.core.types import Trial, unvalidated
from vidaudit.video.sampling import FrameSelection

#: ``selection_sha256`` by selection object (kept, so its id is not reused): a plan's trials share their selections
#: (``at_fps`` and the stream's memos hand out one object), and a cache by value hashed a whole selection's frame
#: tuples on every look-up
_SELECTION_SHA: dict[int, tuple[FrameSelection, str]] = {}
SELECTION_SHA_MEMO = 4096


def selection_sha256(selection: FrameSelection) -> str:
    got = _SELECTION_SHA.get(id(selection))
    if got is not None and got[0] is selection:
        return got[1]
    sha = sha256_json({"indices": list(selection.indices), "times": list(selection.times), "rule": selection.rule})
    if len(_SELECTION_SHA) >= SELECTION_SHA_MEMO:
        _SELECTION_SHA.clear()
    _SELECTION_SHA[id(selection)] = (selection, sha)
    return sha


def json_str(v: str | None) -> str:
    """``canonical_json`` of a string or None, without the encoder's per-call set-up."""
    return "null" if v is None else _encode_str(v)


def prompt_sha256(prompt: Prompt) -> str:
    """``sha256_json({"system": ..., "text": ...})``, written out: the same bytes without the dict encoder."""
    return sha256_text('{"system":' + json_str(prompt.system) + ',"text":' + json_str(prompt.text) + "}")


class TrialJson:
    """The canonical JSON of a (model, condition)'s trials as its constant text with the per-trial strings
    spliced in: ``canonical_json(data)`` byte for byte (checked on the group's first trial, else not used).
    ``dumps``: another JSON writer to splice for (the audit log's, ``line_json``), ``text`` being its output."""

    def __init__(self, data: dict[str, Any], text: str, dumps: Callable[[Any], str] = canonical_json) -> None:
        marks = {k: f"\u0001{k}\u0001" for k in PER_TRIAL}
        probe = dumps({**data, **marks})
        self.parts: list[str] = []
        self.keys: list[str] = []
        rest = probe
        for k in sorted(PER_TRIAL, key=lambda k: probe.index(_encode_str(marks[k]))):
            head, _, rest = rest.partition(_encode_str(marks[k]))
            self.parts.append(head)
            self.keys.append(k)
        self.parts.append(rest)
        self._format: str | None = None  # the parts as a format string, the per-trial strings its fields
        self.ok = all(isinstance(data[k], str | None) for k in PER_TRIAL) and self(data) == text

    def __call__(self, fields: Mapping[str, Any]) -> str:
        return self.fill(self.encoded(fields))

    def encoded(self, fields: Mapping[str, Any]) -> list[str]:
        """The per-trial strings as JSON, in the order ``fill`` takes them (the same for every splicer of a
        sorted-key writer: ``_walk`` fills the trial's JSON and its log JSON from one list)."""
        return ["null" if (v := fields[k]) is None else _encode_str(v) for k in self.keys]

    def fill(self, encoded: list[str]) -> str:
        if self._format is None:
            self._format = "{}".join(p.replace("{", "{{").replace("}", "}}") for p in self.parts)
        return self._format.format(*encoded)


#: ``prompt_sha256`` covers every field of a ``Prompt``: equal hashes, equal prompts
PROMPT_IS_ITS_SHA = tuple(f.name for f in fields(Prompt)) == ("system", "text")

#: the Trial fields that differ between the trials of one (model, condition): the rest is dumped once
PER_TRIAL = frozenset({"sample_id", "video_sha256", "prompt_sha256", "input_sha256"})


#: a model's trial ids from a full walk (32 bytes each, in plan order) and each one's sample index
Kept = tuple[bytes, "array[int]"]


def trial_text(
    spliced: TrialJson | None, logged: TrialJson | None, template: dict[str, Any], fields: dict[str, Any]
) -> tuple[str, str | None]:
    """A trial's canonical JSON and (``logged`` given) its log JSON, spliced from one encoding of its strings."""
    if spliced is None or not spliced.ok:
        return canonical_json({**template, **fields}), None
    encoded = spliced.encoded(fields)
    return spliced.fill(encoded), (logged.fill(encoded) if logged is not None else None)


def carries(ids: Kept, k: int, i: int, trial_id: str | None = None) -> bool:
    """Whether the walk's ``k``-th trial, of sample ``i`` (and id ``trial_id``, when hashed), is the recorded one."""
    return (
        k < len(ids[1])
        and ids[1][k] == i
        and (trial_id is None or ids[0][32 * k : 32 * k + 32] == bytes.fromhex(trial_id))
    )


def record_id(keep: tuple[bytearray, array[int]], trial_id: str, i: int) -> None:
    keep[0].extend(bytes.fromhex(trial_id))
    keep[1].append(i)


TRIAL_FIELDS = tuple(Trial.model_fields)
_TRIAL_FIELD_SET = frozenset(TRIAL_FIELDS)


def trial_of(values: dict[str, Any]) -> Trial:
    """``Trial.model_construct(**values)`` for values that set every field, without its per-call set-up (a
    plan builds one per trial; ``_walk`` checks the first of each group against ``model_construct``)."""
    return new_trial({k: values[k] for k in TRIAL_FIELDS})


def new_trial(values: dict[str, Any]) -> Trial:
    """A ``Trial`` of ``values`` (every field, in field order), unvalidated (``core.types.unvalidated``)."""
    return unvalidated(Trial, values, _TRIAL_FIELD_SET)
