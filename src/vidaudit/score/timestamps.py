"""Reported events from free text: explicit timestamps only (Low-Frequency Trap, appendix C.15).

A number becomes a reported event only when it is written as a time: ``m:ss(.f)``, a number
with a seconds unit (``3.5s``, ``4 sec``, ``2.0 seconds``) or a number after a temporal cue
(``at``, ``from``, ``between``, ``t=``, ``time:``, ``@``). Ordinals ("Event 3"), counts
("count: 4") and boxed answers never create events, so trace metrics measure only evidence the
model wrote down. A range ("1.5-2.0s", "from 3s to 4s", "0:03-0:04") is one event at its start.
Mentions within ``merge_s`` (0.1 s) of an earlier kept mention are merged into it; times
outside ``[0, duration + slack]`` are dropped. Both are counted, never hidden.

Labels (the state or wall a ledger line names) are read with patterns the suite supplies, so
that this module stays generic: each pattern's first group is the label.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vidaudit.score.answers import boxed_spans

MERGE_S = 0.1
SLACK_S = 1.0

_NUM = r"[0-9]+(?:\.[0-9]+)?"
_UNIT = r"(?:seconds|second|secs|sec|s)\b"
_ATOM = re.compile(
    r"(?=[0-9])(?<![0-9.:])(?:(?:(?P<h>[0-9]{1,2}):(?=[0-5][0-9]:))?(?P<m>[0-9]{1,3}):(?P<ss>[0-5][0-9](?:\.[0-9]+)?)(?![0-9]|:[0-9])"
    rf"|(?P<num>{_NUM})(?![0-9.]*[0-9])(?:\s?(?P<unit>{_UNIT}))?)"
)
# Contexts that end right before a number are matched on the reversed text with ``match`` at one
# position (cheap), instead of scanning every position of the text for a ``$``-anchored pattern.
_CUE_WORDS = ("at", "from", "between", "around", "approximately", "approx.", "approx", "about")
_NEG_WORDS = ("every", "each", "per", "for", "lasting", "lasts", "duration", "interval", "period", "spacing", "gap",
              "count", "total", "tally", "number")
_NEG_FILLERS = ("is", ":", "=", "at", "about", "approximately", "around", "~")


def _rev_alt(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(w[::-1]) for w in sorted(words, key=len, reverse=True))


# reversed form of: (?:WORD\s*|t\s*=\s*|time(?:stamp)?\s*[:=]?\s*|@\s*|~\s*)(?:~\s*)?  ending at the number
_CUE_REV = re.compile(
    r"(?:\s*~)?\s*(?:(?:" + _rev_alt(_CUE_WORDS) + r")(?![a-z0-9_])|=\s*t(?![a-z0-9_])"
    r"|[:=]?\s*(?:pmats)?emit(?![a-z0-9_])|@|~)", re.IGNORECASE)
# reversed form of: NEGWORD(?:\s+of)?\s*(?:FILLER\s*)*  ending at the number
_NEG_REV = re.compile(
    r"(?:\s*(?:" + _rev_alt(_NEG_FILLERS) + r"))*\s*(?:fo\s+)?(?:" + _rev_alt(_NEG_WORDS) + r")(?![a-z0-9_])",
    re.IGNORECASE)
_BETWEEN_BEFORE = re.compile(r"\bbetween\s*(?=[0-9])", re.IGNORECASE)
_NOT_A_TIME_AFTER = re.compile(r"\s*(?:apart|long|later|earlier|in\s+length|intervals?|each|per)\b", re.IGNORECASE)
_ORDINAL_BEFORE = re.compile(r"(?:\b(?:event|step|contact|blink|transition|no|number|frame|#)\.?\s*#?\s*)(?=[0-9])",
                             re.IGNORECASE)
_RANGE_WORDS = frozenset({"-", "–", "—", "to", "until", "till"})
_NO_SPACE_HYPHEN = re.compile(r"^(?:-|–|—)$")


@dataclass(frozen=True)
class ReportedEvent:
    """One reported event: its time in seconds, the span of the timestamp, and an optional label."""

    t: float
    span: tuple[int, int]
    label: str | None = None


@dataclass(frozen=True)
class TimestampReport:
    """The events a response reports, in the order written, and what was discarded to get them."""

    events: tuple[ReportedEvent, ...] = ()
    n_dropped: int = 0
    n_merged: int = 0
    dropped: tuple[float, ...] = field(default=(), repr=False)

    @property
    def times(self) -> list[float]:
        return [e.t for e in self.events]

    @property
    def labels(self) -> list[str | None]:
        return [e.label for e in self.events]

    def to_dict(self) -> dict[str, Any]:
        return {"events": [{"t": e.t, "span": list(e.span), "label": e.label} for e in self.events],
                "n_dropped": self.n_dropped, "n_merged": self.n_merged}


@dataclass
class _Atom:
    start: int
    end: int
    value: float
    explicit: bool  # m:ss or carries a unit: a time on its own
    is_int: bool


def _ends_at(pattern: re.Pattern[str], text: str, pos: int) -> bool:
    """Whether a context of ``pattern`` ends exactly at ``pos`` (for the rare range checks)."""
    return any(m.end() == pos for m in pattern.finditer(text, max(0, pos - 24), pos + 1))


def _atoms(text: str) -> list[_Atom]:
    out = []
    for m in _ATOM.finditer(text):
        if m.group("m") is not None:
            hours = int(m.group("h")) if m.group("h") is not None else 0
            out.append(_Atom(m.start(), m.end(), hours * 3600 + int(m.group("m")) * 60 + float(m.group("ss")), True,
                             False))
        else:
            num = m.group("num")
            out.append(_Atom(m.start(), m.end(), float(num), m.group("unit") is not None, "." not in num))
    return out


def _masked(text: str) -> list[tuple[int, int]]:
    """Regions that never hold reported events: boxed final answers."""
    return [(s, e) for s, e, _ in boxed_spans(text)]


def _line_bounds(text: str, pos: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, (len(text) if end < 0 else end)


def _label(text: str, start: int, end: int, prev_end: int, next_start: int,
           patterns: Sequence[re.Pattern[str]]) -> str | None:
    """The label on the timestamp's line: after it (up to the next timestamp), else before it.

    Patterns are tried in priority order (e.g. "A -> C" before "state A"), the first match wins.
    """
    ls, le = _line_bounds(text, start)
    after = text[end:min(le, next_start)]
    before = text[max(ls, prev_end):start]
    for segment in (after, before):
        for p in patterns:
            m = p.search(segment)
            if m:
                groups = [g for g in m.groups() if g is not None]
                return groups[0] if groups else m.group(0)
    return None


def extract_timestamps(text: str | None, duration_s: float, *, label_patterns: Sequence[re.Pattern[str]] = (),
                       merge_s: float = MERGE_S, slack_s: float = SLACK_S) -> TimestampReport:
    """Reported events of ``text`` (see the module docstring); never raises on any text."""
    if not isinstance(text, str) or not text:
        return TimestampReport()
    masked = _masked(text)
    atoms = _atoms(text)
    if masked:
        atoms = [a for a in atoms if not any(s <= a.start < e for s, e in masked)]
    chosen: list[_Atom] = []
    if not atoms:
        return TimestampReport()
    rev = text[::-1]
    size = len(text)
    i = 0
    while i < len(atoms):
        a = atoms[i]
        cued = (not a.explicit) and _CUE_REV.match(rev, size - a.start) is not None  # units need no cue
        nxt = atoms[i + 1] if i + 1 < len(atoms) else None
        sep = text[a.end:nxt.start] if nxt is not None and nxt.start - a.end <= 12 else ""
        is_range = False
        if sep and a.value <= nxt.value:  # type: ignore[union-attr]
            core = sep.strip().rstrip("~").strip().lower()
            if core in _RANGE_WORDS:
                # "1.5-2.0s" / "from 3s to 4s"; a bare start with spaced hyphen ("Event 1 - 3.0s") is an ordinal
                bare_start = not (a.explicit or cued)
                is_range = (a.explicit or cued or nxt.explicit) and not (  # type: ignore[union-attr]
                    bare_start and (not _NO_SPACE_HYPHEN.match(sep) or _ends_at(_ORDINAL_BEFORE, text, a.start)))
            elif core == "and" and _ends_at(_BETWEEN_BEFORE, text, a.start):
                is_range = True
        if is_range or a.explicit or cued:
            negative = _NEG_REV.match(rev, size - a.start) is not None or bool(_NOT_A_TIME_AFTER.match(text, a.end))
            if not negative:
                chosen.append(a)
        i += 2 if is_range else 1
    events: list[ReportedEvent] = []
    dropped: list[float] = []
    n_merged = 0
    limit = float(duration_s) + slack_s
    for k, a in enumerate(chosen):
        if not (0.0 <= a.value <= limit):
            dropped.append(a.value)
            continue
        if any(abs(a.value - e.t) <= merge_s + 1e-9 for e in events):
            n_merged += 1
            continue
        prev_end = chosen[k - 1].end if k else 0
        next_start = chosen[k + 1].start if k + 1 < len(chosen) else len(text)
        label = _label(text, a.start, a.end, prev_end, next_start, label_patterns) if label_patterns else None
        events.append(ReportedEvent(a.value, (a.start, a.end), label))
    return TimestampReport(tuple(events), len(dropped), n_merged, tuple(dropped))
