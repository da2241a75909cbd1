"""Reported events from free text: explicit timestamps only (Low-Frequency Trap, appendix C.15).

A number becomes a reported event only when it is written as a time: ``m:ss(.f)``, a number
with a seconds unit (``3.5s``, ``4 sec``, ``2.0 seconds``) or a number after a temporal cue
(``at``, ``from``, ``between``, ``t=``, ``time:``, ``@``). Ordinals ("Event 3"), counts
("count: 4") and boxed answers never create events, so trace metrics measure only evidence the
model wrote down. A range ("1.5-2.0s", "from 3s to 4s", "0:03-0:04") is one event at its start.
Mentions within ``merge_s`` (0.1 s) of an earlier kept mention are merged into it; times
outside ``[0, duration + slack]`` are dropped. Both are counted, never hidden.

Frame mentions (C.15 lists "frame" among the temporal cues). ``frame K`` (also ``Frame #K``,
``frame no. K``, ``frames K-L``) with an integer K is a time only when the caller passes
``frame_times``, the presentation times of the frames actually sent, in the order sent: it maps to
``frame_times[K - 1]`` (models number the frames they see from 1). K = 0 or K beyond the frames
sent is dropped and counted in ``n_frame_out_of_range``; mapped mentions are counted in
``n_frame_mentions`` (before merging). A frame mention written next to an explicit time on the
same line ("Frame 12 (t = 6.0 s)", "at 6.0s, frame 12": at most 16 characters apart with no
other number between) names that same moment: the explicit time is kept and the frame number is
not a second event. A range of frames ("frames 12-14", "frame 12 to frame 14") is one event at
its first frame. Without ``frame_times`` a frame number is never a time (as for any ordinal).

Labels (the state or wall a ledger line names) are read with patterns the suite supplies, so
that this module stays generic: each pattern's first group is the label.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, compress, count
from typing import Any, TypeVar

from vidaudit.sdk import boxed_spans

MERGE_S = 0.1
SLACK_S = 1.0
#: how far before a number its cue (or a "not a time" word) is looked for: every cue is shorter, and a
#: bounded window keeps the parser linear on hostile text (16 KB of spaces before a number took 112 s)
CONTEXT_CHARS = 64

_NUM = r"[0-9]+(?:\.[0-9]+)?"
_UNIT = r"(?:seconds|second|secs|sec|s)\b"
# Every number the text writes. The pattern opens with a digit class (not a look-ahead) so that ``re``
# skips to the next digit in C; the look-behind after that first digit is the "not inside a number"
# test. ``clock``: m:ss(.f) or h:mm:ss(.f); ``num``: the digits after the first one (the number is the
# first digit plus ``num``); ``unit``: a seconds unit after it. Its matches are exactly those of
# ``(?<![0-9.:])(?:(?:h:)?m:ss|num(?:\s?unit)?)`` with h, m, ss and num as the module docstring reads them.
_ATOM = re.compile(
    r"[0-9](?<![0-9.:][0-9])(?:(?P<clock>(?:[0-9]?:(?=[0-5][0-9]:)[0-9]{1,3}|[0-9]{0,2}):[0-5][0-9](?:\.[0-9]+)?)"
    rf"(?![0-9]|:[0-9])|(?P<num>[0-9]*(?:\.[0-9]+)?)(?![0-9.]*[0-9])(?:\s?(?P<unit>{_UNIT}))?)"
)
_CLOCK, _NUM_END, _UNIT_GROUP = 1, 2, 3  # ``lastindex`` of a clock, a bare number and a number with a unit
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
# reversed form of: \bframes?\s*(?:#\s*|no\.?\s*|number\s*)?  ending at the number
_FRAME_REV = re.compile(r"(?:\s*#|\s*\.?on|\s*rebmun)?\s*s?emarf(?![a-z0-9_])", re.IGNORECASE)
_FRAME_RANGE_TAIL = re.compile(r"\s*(?:frames?\s*#?\s*)$", re.IGNORECASE)
#: a frame mention this close to an explicit time on the same line names the same moment
FRAME_NEAR_TIME_CHARS = 16
_NO_SPACE_HYPHEN = re.compile(r"^(?:-|–|—)$")


@dataclass(frozen=True)
class ReportedEvent:
    """One reported event: its time in seconds, the span of the timestamp, and an optional label.

    ``frame`` is the 1-based frame number when the time was read from a "frame K" mention.
    """

    t: float
    span: tuple[int, int]
    label: str | None = None
    frame: int | None = None


_new_object = object.__new__
_set_attr = object.__setattr__


def _new_event(t: float, span: tuple[int, int], label: str | None, frame: int | None) -> ReportedEvent:
    """``ReportedEvent(t, span, label, frame)``, the same object, without the frozen ``__init__``'s four
    ``object.__setattr__`` calls (an extractor makes one per reported event)."""
    ev = _new_object(ReportedEvent)
    _set_attr(ev, "__dict__", {"t": t, "span": span, "label": label, "frame": frame})
    return ev


@dataclass(frozen=True)
class TimestampReport:
    """The events a response reports, in the order written, and what was discarded to get them.

    ``n_frame_mentions`` counts "frame K" mentions mapped to a time (before merging, so a mapped
    mention merged into an earlier event is counted here and in ``n_merged``);
    ``n_frame_out_of_range`` counts frame numbers with no sent frame (dropped, not in ``n_dropped``).
    """

    events: tuple[ReportedEvent, ...] = ()
    n_dropped: int = 0
    n_merged: int = 0
    dropped: tuple[float, ...] = field(default=(), repr=False)
    n_frame_mentions: int = 0
    n_frame_out_of_range: int = 0

    @property
    def times(self) -> list[float]:
        return [e.t for e in self.events]

    @property
    def labels(self) -> list[str | None]:
        return [e.label for e in self.events]

    def to_dict(self) -> dict[str, Any]:
        return {"events": [{"t": e.t, "span": list(e.span), "label": e.label, "frame": e.frame}
                           for e in self.events],
                "n_dropped": self.n_dropped, "n_merged": self.n_merged,
                "n_frame_mentions": self.n_frame_mentions, "n_frame_out_of_range": self.n_frame_out_of_range}


def _new_report(events: tuple[ReportedEvent, ...], n_dropped: int, n_merged: int, dropped: tuple[float, ...],
                n_frame_mentions: int, n_frame_out_of_range: int) -> TimestampReport:
    """``TimestampReport(...)`` (every field, in order), the same object, without the frozen ``__init__``'s six
    ``object.__setattr__`` calls (one report per scored trial)."""
    report = _new_object(TimestampReport)
    _set_attr(report, "__dict__", {"events": events, "n_dropped": n_dropped, "n_merged": n_merged, "dropped": dropped,
                                   "n_frame_mentions": n_frame_mentions, "n_frame_out_of_range": n_frame_out_of_range})
    return report


# An atom (a number the text writes) is a plain tuple, (start, end, kind, cued, num_end): a number costs
# one tuple, not an object, and its value is read only when a rule needs it (most numbers are ordinals
# and counts, which never do). ``kind``: 0 a bare number, 1 a clock (m:ss), 2 a number with a unit (1 and
# 2 are explicit, a time on their own); ``cued``: a cue ends right before it (bare numbers only);
# ``num_end``: where the number's digits end (before a unit).
_START, _END, _KIND, _CUED, _NUM_END_AT = range(5)
_BARE, _CLOCK_KIND, _UNIT_KIND = 0, 1, 2
_Atom = tuple[int, int, int, bool, int]


def _value(text: str, a: _Atom) -> float:
    """The number an atom writes, in seconds for a clock (the same arithmetic as ever: h*3600 + m*60 + ss)."""
    if a[_KIND] == _CLOCK_KIND:
        return _clock_seconds(text[a[_START]:a[_END]])
    return float(text[a[_START]:a[_NUM_END_AT]])


def _clock_seconds(clock: str) -> float:
    """``[h:]mm:ss[.f]`` in seconds: h*3600 + m*60 + ss."""
    parts = clock.split(":")
    if len(parts) == 3:
        return int(parts[0]) * 3600 + int(parts[1]) * 60 + float(parts[2])
    return 0 + int(parts[0]) * 60 + float(parts[1])


def _is_int(text: str, a: _Atom) -> bool:
    """Whether the atom is a plain integer (a clock never is)."""
    return a[_KIND] != _CLOCK_KIND and "." not in text[a[_START]:a[_NUM_END_AT]]


def _ends_at(pattern: re.Pattern[str], text: str, pos: int) -> bool:
    """Whether a context of ``pattern`` ends exactly at ``pos`` (for the rare range checks)."""
    return any(m.end() == pos for m in pattern.finditer(text, max(0, pos - 24), pos + 1))


#: Whether a cue (``_CUE``) or a "not a time" context (``_NEG``) ends right before a number depends only on
#: the text from the previous number's last character (a digit or a unit's last letter, which no cue or
#: context word can take in, but whose look-around sees it) up to the number, at most CONTEXT_CHARS of it:
#: the same few pieces recur in a ledger ("2\n- Event ", ": "), so each piece is matched once.
_CUE_SEEN: dict[str, bool] = {}
_NEG_SEEN: dict[str, bool] = {}
_SEEN_MAX = 8192


def _context(piece: str, pattern: re.Pattern[str], seen: dict[str, bool]) -> bool:
    """Whether ``pattern`` (a reversed context) matches ``piece`` read backwards from its end."""
    hit = pattern.match(piece[::-1]) is not None
    if len(seen) >= _SEEN_MAX:
        seen.clear()
    seen[piece] = hit
    return hit


def _atoms(text: str, masked: Sequence[tuple[int, int]]) -> list[_Atom]:
    """Every number of ``text`` outside the ``masked`` spans (disjoint, in order), in order, with whether a cue
    ends right before each bare one (an explicit time needs no cue)."""
    out: list[_Atom] = []
    append = out.append
    starts = [s for s, _ in masked]
    first_mask = starts[0] if starts else len(text)
    cue_get = _CUE_SEEN.get
    prev_end = 0  # end of the previous number (masked ones too: any number bounds a context)
    for m in _ATOM.finditer(text):
        start, end = m.span()
        if start >= first_mask and _inside(masked, starts, start):
            prev_end = end
            continue
        kind = m.lastindex
        if kind == _NUM_END:  # a bare number: the common case
            lo = prev_end - 1 if prev_end - 1 > start - CONTEXT_CHARS else start - CONTEXT_CHARS
            piece = text[lo if lo > 0 else 0:start]
            cue = cue_get(piece)
            if cue is None:
                cue = _context(piece, _CUE_REV, _CUE_SEEN)
            append((start, end, _BARE, cue, end))
        elif kind == _CLOCK:
            append((start, end, _CLOCK_KIND, False, end))
        else:
            append((start, end, _UNIT_KIND, False, m.end(_NUM_END)))
        prev_end = end
    return out


def _masked(text: str) -> list[tuple[int, int]]:
    """Regions that never hold reported events: boxed final answers."""
    if "box" not in text:  # every box opens with \boxed or \fbox: most responses skip the brace scan
        return []
    return [(s, e) for s, e, _ in boxed_spans(text)]


def _inside(spans: Sequence[tuple[int, int]], starts: Sequence[int], pos: int) -> bool:
    """Whether ``pos`` lies in one of the disjoint, ordered ``spans`` (``starts`` their starts)."""
    i = bisect.bisect_right(starts, pos) - 1
    return i >= 0 and spans[i][0] <= pos < spans[i][1]


def _first_group(m: re.Match[str]) -> str:
    for g in m.groups():
        if g is not None:
            return g
    return m.group(0)


#: per label-pattern tuple (by identity: a suite passes the same tuple every time; any other sequence may
#: change between calls, so its reads are kept for one call only), what the patterns read in a piece of a
#: line (None: nothing). Ledger lines repeat their wording ("-> B, running count 3"), so most pieces were
#: seen before; only short pieces are kept, and the cache is emptied when full, so its memory stays bounded.
_LABEL_CACHE: dict[int, tuple[Sequence[re.Pattern[str]], dict[str, str | None]]] = {}
_LABEL_CACHE_MAX = 4096
_LABEL_PIECE_MAX = 200


def _read_label(piece: str, patterns: Sequence[re.Pattern[str]], cache: dict[str, str | None]) -> str | None:
    """The first group of the first pattern (in priority order) that matches ``piece``, else None."""
    hit = cache.get(piece, cache)  # the cache itself: "not seen"
    if hit is not cache:
        return hit  # type: ignore[return-value]
    label = None
    for p in patterns:
        m = p.search(piece)
        if m:
            label = _first_group(m)
            break
    if len(piece) <= _LABEL_PIECE_MAX:
        if len(cache) >= _LABEL_CACHE_MAX:
            cache.clear()
        cache[piece] = label
    return label


def _label(text: str, start: int, end: int, prev_end: int, next_start: int,
           patterns: Sequence[re.Pattern[str]], cache: dict[str, str | None]) -> str | None:
    """The label on the timestamp's line: after it (up to the next timestamp), else before it.

    Patterns are tried in priority order (e.g. "A -> C" before "state A"), the first match wins.
    """
    le = text.find("\n", start)
    label = _read_label(text[end:next_start if le < 0 or next_start < le else le], patterns, cache)
    if label is not None:
        return label
    return _read_label(text[max(text.rfind("\n", 0, start) + 1, prev_end):start], patterns, cache)


def _frame_time(k: int, frame_times: Sequence[float]) -> float | None:
    """The time of the k-th frame sent (1-based), or None when no such frame was sent."""
    return float(frame_times[k - 1]) if 1 <= k <= len(frame_times) else None


#: the word between two numbers, per separator (at most 12 characters; the same few recur: ": ", ", ", "-")
_CORES: dict[str, str] = {}
_CORES_MAX = 4096


def _sep_core(sep: str) -> str:
    """The word between two numbers: the separator stripped of spaces and "~", lower-case."""
    core = _CORES.get(sep)
    if core is None:
        if len(_CORES) >= _CORES_MAX:
            _CORES.clear()
        core = _CORES[sep] = sep.strip().rstrip("~").strip().lower()
    return core


def _is_range(text: str, a: _Atom, nxt: _Atom, sep: str, core: str) -> bool:
    """Whether ``a`` and ``nxt``, ``sep`` apart, are one range ("1.5-2.0s", "from 3s to 4s", "between 3 and 4 s")."""
    if core in _RANGE_WORDS:
        # "1.5-2.0s" / "from 3s to 4s"; a bare start with spaced hyphen ("Event 1 - 3.0s") is an ordinal
        bare_start = not (a[_KIND] or a[_CUED])
        return bool((a[_KIND] or a[_CUED] or nxt[_KIND]) and not (
            bare_start and (not _NO_SPACE_HYPHEN.match(sep) or _ends_at(_ORDINAL_BEFORE, text, a[_START]))))
    return core == "and" and _ends_at(_BETWEEN_BEFORE, text, a[_START])


def _frame_mention(text: str, atoms: list[_Atom], i: int, sep: str, last_time_atom: int) -> tuple[int, bool]:
    """For a "frame K" mention at ``atoms[i]``: how many atoms it spans and whether it sits beside a time.

    A range "frames K-L" is one event (two atoms); a mention beside an explicit or cued time on the
    same line names that time's moment (see the module docstring).
    """
    a = atoms[i]
    nxt = atoms[i + 1] if i + 1 < len(atoms) else None
    step, end = 1, a[_END]
    if (sep and nxt is not None and _is_int(text, nxt) and not nxt[_KIND]
            and _value(text, nxt) >= _value(text, a)):
        core = _FRAME_RANGE_TAIL.sub("", sep.strip().lower()).strip()
        if core in _RANGE_WORDS:
            step, end = 2, nxt[_END]

    def near(end: int, start: int) -> bool:
        return 0 <= start - end <= FRAME_NEAR_TIME_CHARS and "\n" not in text[end:start]

    after = atoms[i + step] if i + step < len(atoms) else None
    beside = (after is not None and near(end, after[_START]) and bool(after[_KIND] or after[_CUED])) or (
        last_time_atom == i - 1 and last_time_atom >= 0 and near(atoms[i - 1][_END], a[_START]))
    return step, beside


# ----------------------------------------------------------------------------- the one-pass scan
# The text split once around every number (``_SPLIT``: the matches of ``_ATOM``, kept whole) is a list of
# gaps and numbers. Whether a cue or a "not a time" context ends right before number k depends only on the
# gap before it: the piece the rules read is ``(last character of number k-1 + gap)[-CONTEXT_CHARS:]``, and
# that last character (a digit, or a unit's last letter, followed by a non-word character) is only ever
# seen as a word character, so "0" stands for it. Whether number k can open a range depends only on the gap
# after it (at most 12 characters whose word is a range word or "and"). So each distinct gap is read once
# (``_GAP_CODES``), and Python visits only the numbers a rule can make a time: an explicit one, a cued one,
# or one followed by a range word; every other number is never a time and bounds contexts only.
_SPLIT = re.compile("(" + _ATOM.pattern.replace("(?P<clock>", "(?:").replace("(?P<num>", "(?:")
                    .replace("(?P<unit>", "(?:") + ")")
_DIGITS_DOT = "0123456789."
_CUED_BIT, _RANGE_BIT, _NEG_BIT, _AFTER_BIT = 1, 2, 4, 8
_GAP_MAX, _GAP_KEY_MAX = 8192, 256
_FRAME_WORD = re.compile("frame", re.IGNORECASE)


_V = TypeVar("_V")


class _Memo(dict[str, _V]):
    """key -> ``_read(key)``, computed on first sight; bounded: emptied when full, and keys longer than
    ``_GAP_KEY_MAX`` are read, not kept (responses repeat their short pieces, not their long ones)."""

    def _read(self, key: str) -> _V:
        raise NotImplementedError

    def __missing__(self, key: str) -> _V:
        value = self._read(key)
        if len(key) <= _GAP_KEY_MAX:
            if len(self) >= _GAP_MAX:
                self.clear()
            self[key] = value
        return value


class _GapCodes(_Memo[int]):
    """gap -> what the rules read in it, as bits: a cue ends it (``_CUED_BIT``), a "not a time" context ends it
    (``_NEG_BIT``), it separates a range (``_RANGE_BIT``), a "not a time" word opens it (``_AFTER_BIT``, read
    as if a number followed it, i.e. not for the text's tail)."""

    def _read(self, gap: str) -> int:
        rev = ("0" + gap)[-CONTEXT_CHARS:][::-1]
        code = (_CUED_BIT if _CUE_REV.match(rev) is not None else 0) | (
            _NEG_BIT if _NEG_REV.match(rev) is not None else 0) | (
            _AFTER_BIT if _NOT_A_TIME_AFTER.match(gap + "0") is not None else 0)
        if gap and len(gap) <= 12:
            core = _sep_core(gap)
            if core in _RANGE_WORDS or core == "and":
                code |= _RANGE_BIT
        return code


class _Values(_Memo[float]):
    """A number's text -> :func:`_value` of it (times recur across responses)."""

    def _read(self, s: str) -> float:
        if ":" in s:
            return _clock_seconds(s)
        return float(s[:len(s) - len(s.lstrip(_DIGITS_DOT))])


class _Explicit(_Memo[bool]):
    """A number's text -> whether it is explicit (a clock or a unit: something besides digits and dots)."""

    def _read(self, s: str) -> bool:
        return bool(s.strip(_DIGITS_DOT))


class _EndCodes(_Memo[int]):
    """The text's head (before its first number) -> ``_CUED_BIT`` when a cue ends it, and its tail (after the
    last number) -> ``_AFTER_BIT`` when a "not a time" word opens it: read as they are (no number beyond them).
    Responses repeat their heads and tails."""

    def _read(self, end: str) -> int:
        return (_CUED_BIT if _CUE_REV.match(end[-CONTEXT_CHARS:][::-1]) is not None else 0) | (
            _AFTER_BIT if _NOT_A_TIME_AFTER.match(end) is not None else 0)


_GAP_CODES = _GapCodes()
_ENDS = _EndCodes()
_VALUES = _Values()
_EXPLICIT = _Explicit()
#: code -> the bits that make a number a candidate (a cue before it, a range word after it)
_CANDIDATE_BITS = tuple(c & (_CUED_BIT | _RANGE_BIT) for c in range(16))


def _atom_kind(s: str) -> int:
    return _CLOCK_KIND if ":" in s else _UNIT_KIND if s[-1] > "9" else _BARE


def _scan(text: str, masked: Sequence[tuple[int, int]]) -> list[tuple[int, int, float, int | None]] | None:
    """The times ``extract_timestamps`` chooses without frame times, in order, as (start, end, time, None);
    None when the text has no number outside ``masked``. The same rules, read per gap (see above)."""
    parts = _SPLIT.split(text)
    n = len(parts) >> 1
    if not n:
        return None
    gaps = parts[0::2]
    atoms = parts[1::2]
    codes = list(map(_GAP_CODES.__getitem__, gaps))
    # candidates: explicit numbers (a clock or a unit), cued ones, range starts
    explicit = list(map(_EXPLICIT.__getitem__, atoms))
    found: list[int] = list(compress(count(), explicit))
    more: list[int] = []  # the candidates that are not explicit (a ledger's times usually are: nothing to merge)
    for j in compress(count(), map(_CANDIDATE_BITS.__getitem__, codes)):
        if 0 < j < n:
            c = codes[j]
            if c & _CUED_BIT and not explicit[j]:
                more.append(j)
            if c & _RANGE_BIT and not explicit[j - 1]:
                more.append(j - 1)
    head, tail = _ENDS[gaps[0]], _ENDS[gaps[n]]
    cue0 = bool(head & _CUED_BIT)  # no number before the first: its context is the text's head, as it is
    if cue0 and not explicit[0]:
        more.append(0)
    if more:
        found = sorted(set(found).union(more))
    # the tail (after the last number) separates nothing, and nothing follows its "not a time" word
    codes[n] = tail & _AFTER_BIT
    pos = list(accumulate(map(len, parts)))  # pos[2k]: start of number k, pos[2k + 1]: its end
    hidden: set[int] = set()
    if masked:
        starts = pos[0::2]
        for m_start, m_end in masked:
            hidden.update(range(bisect.bisect_left(starts, m_start), bisect.bisect_left(starts, m_end)))
        if len(hidden) == n:
            return None
    chosen: list[tuple[int, int, float, int | None]] = []
    if not found:
        return chosen
    values = _VALUES
    skip = -1
    for k in found:
        if k == skip or k in hidden:
            continue
        c = codes[k]
        after = codes[k + 1]
        if k and not after & _RANGE_BIT and k - 1 not in hidden:  # the usual time: no range, context in the gaps
            if not (c & _NEG_BIT or after & _AFTER_BIT):
                chosen.append((pos[2 * k], pos[2 * k + 1], values[atoms[k]], None))
            continue
        s = atoms[k]
        start, end = pos[2 * k], pos[2 * k + 1]
        kind = _atom_kind(s)
        cue = not kind and bool(cue0 if k == 0 else c & _CUED_BIT)
        is_range = False
        if after & _RANGE_BIT and k + 1 not in hidden:
            nxt = atoms[k + 1]
            sep = gaps[k + 1]
            nstart = pos[2 * k + 2]
            is_range = (values[s] <= values[nxt]
                        and _is_range(text, (start, end, kind, cue, end), (nstart, pos[2 * k + 3], _atom_kind(nxt),
                                                                           False, nstart), sep, _sep_core(sep)))
        if is_range or kind or cue:
            if k and k - 1 not in hidden:
                negative = bool(c & _NEG_BIT)
            else:  # the previous number the rules see is the last one outside the masks, if any
                p = k - 1
                while p >= 0 and p in hidden:
                    p -= 1
                lo = pos[2 * p + 1] - 1 if p >= 0 and pos[2 * p + 1] - 1 > start - CONTEXT_CHARS \
                    else start - CONTEXT_CHARS
                negative = _NEG_REV.match(text[lo if lo > 0 else 0:start][::-1]) is not None
            if not (negative or after & _AFTER_BIT):
                chosen.append((start, end, values[s], None))
        if is_range:
            skip = k + 1
    return chosen


def extract_timestamps(text: str | None, duration_s: float, *, label_patterns: Sequence[re.Pattern[str]] = (),
                       merge_s: float = MERGE_S, slack_s: float = SLACK_S,
                       frame_times: Sequence[float] | None = None) -> TimestampReport:
    """Reported events of ``text`` (see the module docstring); never raises on any text.

    One pass of ``_ATOM`` finds every number; a bare number's cue, and a candidate time's "not a time"
    context, is one anchored match of the reversed piece of text back to the previous number, at most
    CONTEXT_CHARS long (so hostile text stays linear), and a piece already seen is not matched again;
    a number's value, and everything else, is read only for the few numbers that can be times.
    """
    if not isinstance(text, str) or not text:
        return TimestampReport()
    if frame_times is None or _FRAME_WORD.search(text) is None:  # no "frame K" can be read: the one-pass scan
        found = _scan(text, _masked(text))
        if found is None:
            return TimestampReport()
        return _events(text, found, duration_s, label_patterns, merge_s, slack_s, 0, 0)
    atoms = _atoms(text, _masked(text))
    if not atoms:
        return TimestampReport()
    size = len(text)
    rev = text[::-1] if frame_times is not None else ""  # "frame K" is looked for only when frames are known
    neg_get, frame_match = _NEG_SEEN.get, _FRAME_REV.match
    not_after = _NOT_A_TIME_AFTER.match
    chosen: list[tuple[int, int, float, int | None]] = []  # (start, end, time, frame number)
    n_frames_mapped = n_frames_out = 0
    last_time_atom = -1  # index in ``atoms`` of the last explicit or cued time kept
    n_atoms = len(atoms)
    last = n_atoms - 1
    cores_get = _CORES.get
    i = 0
    while i < n_atoms:
        a = atoms[i]
        start, end, kind, cue, _ = a
        if i < last:
            nxt = atoms[i + 1]
            sep = text[end:nxt[0]] if nxt[0] - end <= 12 else ""
        else:
            nxt, sep = None, ""
        if (frame_times is not None and not (kind or cue) and _is_int(text, a)
                and frame_match(rev, size - start) is not None):
            step, beside = _frame_mention(text, atoms, i, sep, last_time_atom)
            if not beside:
                k = int(_value(text, a))
                t = _frame_time(k, frame_times)
                if t is None:
                    n_frames_out += 1
                else:
                    n_frames_mapped += 1
                    chosen.append((start, end, t, k))
            i += step
            continue
        is_range = False
        if sep:
            core = cores_get(sep) or _sep_core(sep)
            is_range = ((core in _RANGE_WORDS or core == "and")
                        and _value(text, a) <= _value(text, nxt)  # type: ignore[arg-type]
                        and _is_range(text, a, nxt, sep, core))  # type: ignore[arg-type]
        if is_range or kind or cue:
            lo = atoms[i - 1][1] - 1 if i and atoms[i - 1][1] - 1 > start - CONTEXT_CHARS else start - CONTEXT_CHARS
            piece = text[lo if lo > 0 else 0:start]
            negative = neg_get(piece)
            if negative is None:
                negative = _context(piece, _NEG_REV, _NEG_SEEN)
            negative = negative or not_after(text, end) is not None
            if not negative:
                chosen.append((start, end, _value(text, a), None))
                last_time_atom = i + 1 if is_range else i
        i += 2 if is_range else 1
    return _events(text, chosen, duration_s, label_patterns, merge_s, slack_s, n_frames_mapped, n_frames_out)


def _events(text: str, chosen: list[tuple[int, int, float, int | None]], duration_s: float,
            label_patterns: Sequence[re.Pattern[str]], merge_s: float, slack_s: float, n_frames_mapped: int,
            n_frames_out: int) -> TimestampReport:
    """The report of the chosen times (start, end, time, frame number): range check, merging, labels."""
    times, labels, kept_at, dropped, n_merged = _keep(text, chosen, duration_s, label_patterns, merge_s, slack_s)
    events = []
    for v, label, k in zip(times, labels, kept_at, strict=True):
        c = chosen[k]
        ev = _new_object(ReportedEvent)
        _set_attr(ev, "__dict__", {"t": v, "span": (c[0], c[1]), "label": label, "frame": c[3]})  # _new_event inline
        events.append(ev)
    return _new_report(tuple(events), len(dropped), n_merged, tuple(dropped), n_frames_mapped, n_frames_out)


def reported(text: str | None, duration_s: float, label_patterns: Sequence[re.Pattern[str]] = (),
             frame_times: Sequence[float] | None = None) -> tuple[list[float], list[str | None], int, int, int, int]:
    """What scoring reads of :func:`extract_timestamps` (default merge and slack): the events' times and labels,
    ``n_dropped``, ``n_merged``, ``n_frame_mentions`` and ``n_frame_out_of_range``, without making the events."""
    if (isinstance(text, str) and text and (frame_times is None or _FRAME_WORD.search(text) is None)):
        found = _scan(text, _masked(text))
        if found is None:
            return [], [], 0, 0, 0, 0
        times, labels, _, dropped, n_merged = _keep(text, found, duration_s, label_patterns, MERGE_S, SLACK_S)
        return times, labels, len(dropped), n_merged, 0, 0
    report = extract_timestamps(text, duration_s, label_patterns=label_patterns, frame_times=frame_times)
    return (report.times, report.labels, report.n_dropped, report.n_merged, report.n_frame_mentions,
            report.n_frame_out_of_range)


def _keep(text: str, chosen: list[tuple[int, int, float, int | None]], duration_s: float,
          label_patterns: Sequence[re.Pattern[str]], merge_s: float,
          slack_s: float) -> tuple[list[float], list[str | None], list[int], list[float], int]:
    """Of the chosen times, those kept (in range, not merged into an earlier kept one): their times, labels and
    indices in ``chosen``; then the times dropped (out of range) and the number merged."""
    size = len(text)
    times: list[float] = []
    labels: list[str | None] = []
    kept_at: list[int] = []
    dropped: list[float] = []
    n_merged = 0
    limit = float(duration_s) + slack_s
    merge_gap = merge_s + 1e-9
    kept: list[float] = []  # sorted: only the nearest kept time on each side can be within merge_gap
    cache: dict[str, str | None] = {}
    if label_patterns and type(label_patterns) is tuple:  # a tuple cannot change, so its reads can be kept
        entry = _LABEL_CACHE.get(id(label_patterns))
        if entry is None or entry[0] is not label_patterns:
            if len(_LABEL_CACHE) >= 64:
                _LABEL_CACHE.clear()
            entry = _LABEL_CACHE[id(label_patterns)] = (label_patterns, {})  # held, so its id is not reused
        cache = entry[1]
    cache_get = cache.get
    last = len(chosen) - 1
    for k, (start, end, v, _) in enumerate(chosen):
        if not (0.0 <= v <= limit):
            dropped.append(v)
            continue
        if not kept or v - kept[-1] > merge_gap:  # after every kept time and clear of the last: the usual ledger
            kept.append(v)
        else:
            j = bisect.bisect_left(kept, v)
            if (j < len(kept) and abs(v - kept[j]) <= merge_gap) or (j > 0 and abs(v - kept[j - 1]) <= merge_gap):
                n_merged += 1
                continue
            kept.insert(j, v)
        label = None
        if label_patterns:  # _label inline: the line after the time (up to the next time), else before it
            next_start = chosen[k + 1][0] if k < last else size
            le = text.find("\n", start)
            piece = text[end:next_start if le < 0 or next_start < le else le]
            label = cache_get(piece, cache)
            if label is cache:
                label = _read_label(piece, label_patterns, cache)
            if label is None:
                piece = text[max(text.rfind("\n", 0, start) + 1, chosen[k - 1][1] if k else 0):start]
                label = cache_get(piece, cache)
                if label is cache:
                    label = _read_label(piece, label_patterns, cache)
        times.append(v)
        labels.append(label)  # type: ignore[arg-type]
        kept_at.append(k)
    return times, labels, kept_at, dropped, n_merged
