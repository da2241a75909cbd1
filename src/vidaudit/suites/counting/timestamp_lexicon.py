"""What a time looks like in a model's text (see :mod:`~vidaudit.suites.counting.timestamps` for the rules): the
pattern of every number the text writes (an atom: a bare number, a clock, a number with a seconds unit), the cues
and "not a time" contexts read backwards from a number (bounded: hostile text stays linear), ranges, frame mentions
and the labels a suite's patterns read, each memoised where the same pieces recur.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

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
ATOM = re.compile(
    r"[0-9](?<![0-9.:][0-9])(?:(?P<clock>(?:[0-9]?:(?=[0-5][0-9]:)[0-9]{1,3}|[0-9]{0,2}):[0-5][0-9](?:\.[0-9]+)?)"
    rf"(?![0-9]|:[0-9])|(?P<num>[0-9]*(?:\.[0-9]+)?)(?![0-9.]*[0-9])(?:\s?(?P<unit>{_UNIT}))?)"
)
_CLOCK, _NUM_END, _UNIT_GROUP = 1, 2, 3  # ``lastindex`` of a clock, a bare number and a number with a unit
# Contexts that end right before a number are matched on the reversed text with ``match`` at one
# position (cheap), instead of scanning every position of the text for a ``$``-anchored pattern.
_CUE_WORDS = ("at", "from", "between", "around", "approximately", "approx.", "approx", "about")
_NEG_WORDS = (
    "every",
    "each",
    "per",
    "for",
    "lasting",
    "lasts",
    "duration",
    "interval",
    "period",
    "spacing",
    "gap",
    "count",
    "total",
    "tally",
    "number",
)
_NEG_FILLERS = ("is", ":", "=", "at", "about", "approximately", "around", "~")
_MINUTES = ("minutes", "minute", "mins", "min", "m")
#: units after a number that are not seconds (matched whole: no letter may follow, so their order does not matter)
_OTHER_UNITS = (*_MINUTES, "milliseconds", "millisecond", "msecs", "msec", "ms", "hours", "hour", "hrs", "hr", "h")


def _rev_alt(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(w[::-1]) for w in sorted(words, key=len, reverse=True))


# reversed form of: (?:WORD\s*|t\s*=\s*|time(?:stamp)?\s*[:=]?\s*|@\s*|~\s*)(?:~\s*)?  ending at the number
CUE_REV = re.compile(
    r"(?:\s*~)?\s*(?:(?:" + _rev_alt(_CUE_WORDS) + r")(?![a-z0-9_])|=\s*t(?![a-z0-9_])"
    r"|[:=]?\s*(?:pmats)?emit(?![a-z0-9_])|@|~)",
    re.IGNORECASE,
)
#: words that negate a cue right after them ("not at 3 s", "never at", "no blink at 3 s", "nothing happens at")
_NEGATED_CUES = ("at", "around", "about", "near")
# reversed form of: NEGWORD(?:\s+of)?\s*(?:FILLER\s*)*  ending at the number
# or of a minutes unit after another number ("1m30s", "1 min 30 s": a time in minutes and seconds, which this
# reader does not add up)
# or of a minus sign glued to the number after a cue or an opening "(", "[", "=", ":" ("at -2 s", "t=-2s": a
# negative time, not 2 s; a dash after a number, "3 -4s", is not a sign)
# or of a comma glued to it after a digit or a letter ("1,5 s": a decimal comma, or "1,024"; the number is not
# the 5; a letter too, since the rules see the previous number's last character, a digit or a unit's letter, alike)
# or of a negated cue ("not at 3 s", "no event at 3 s", "nothing happens at 3 s": the model says there was none)
NEG_REV = re.compile(
    r"(?:\s*(?:" + _rev_alt(_NEG_FILLERS) + r"))*\s*(?:fo\s+)?(?:" + _rev_alt(_NEG_WORDS) + r")(?![a-z0-9_])"
    r"|\s*(?:" + _rev_alt(_MINUTES) + r")\s*[0-9]"
    r"|[-\u2212](?:\s*+[(=:\[]|" + CUE_REV.pattern + r")"
    r"|,[0-9a-z_]"
    r"|\s*(?:" + _rev_alt(_NEGATED_CUES) + r")\s+(?:ton|reven|[a-z]+\s+on|(?:[a-z]+\s+)?gnihton)(?![a-z0-9_])",
    re.IGNORECASE,
)
_BETWEEN_BEFORE = re.compile(r"\bbetween\s*(?=[0-9])", re.IGNORECASE)
#: after a number: it is not a time ("2 s apart"), or it is a time in another unit than seconds ("2 minutes",
#: "2.5 ms": never read as seconds)
#: or it is cut from more of a number glued to it: an invalid clock ("1:75", "12:345": not 1 s nor 12 s) or a
#: decimal comma ("1,5 s": not 1 s)
NOT_A_TIME_AFTER = re.compile(
    r"[:,][0-9]|\s*(?:(?:apart|long|later|earlier|in\s+length|intervals?|each|per)\b|(?:"
    + "|".join(_OTHER_UNITS)
    + r")(?![a-z]))",
    re.IGNORECASE,
)
_ORDINAL_BEFORE = re.compile(
    r"(?:\b(?:event|step|contact|blink|transition|no|number|frame|#)\.?\s*#?\s*)(?=[0-9])", re.IGNORECASE
)
RANGE_WORDS = frozenset({"-", "–", "—", "to", "until", "till"})
# reversed form of: \bframes?\s*(?:#\s*|no\.?\s*|number\s*)?  ending at the number
FRAME_REV = re.compile(r"(?:\s*#|\s*\.?on|\s*rebmun)?\s*s?emarf(?![a-z0-9_])", re.IGNORECASE)
_FRAME_RANGE_TAIL = re.compile(r"\s*(?:frames?\s*#?\s*)$", re.IGNORECASE)
#: a frame mention this close to an explicit time on the same line names the same moment
FRAME_NEAR_TIME_CHARS = 16
_NO_SPACE_HYPHEN = re.compile(r"^(?:-|–|—)$")


# An atom (a number the text writes) is a plain tuple, (start, end, kind, cued, num_end): a number costs
# one tuple, not an object, and its value is read only when a rule needs it (most numbers are ordinals
# and counts, which never do). ``kind``: 0 a bare number, 1 a clock (m:ss), 2 a number with a unit (1 and
# 2 are explicit, a time on their own); ``cued``: a cue ends right before it (bare numbers only);
# ``num_end``: where the number's digits end (before a unit).
_START, _END, _KIND, _CUED, _NUM_END_AT = range(5)
BARE, CLOCK_KIND, UNIT_KIND = 0, 1, 2
_Atom = tuple[int, int, int, bool, int]


def atom_value(text: str, a: _Atom) -> float:
    """The number an atom writes, in seconds for a clock (the same arithmetic as ever: h*3600 + m*60 + ss)."""
    if a[_KIND] == CLOCK_KIND:
        return clock_seconds(text[a[_START] : a[_END]])
    return float(text[a[_START] : a[_NUM_END_AT]])


def clock_seconds(clock: str) -> float:
    """``[h:]mm:ss[.f]`` in seconds: h*3600 + m*60 + ss."""
    parts = clock.split(":")
    if len(parts) == 3:
        return int(parts[0]) * 3600 + int(parts[1]) * 60 + float(parts[2])
    return 0 + int(parts[0]) * 60 + float(parts[1])


def is_int(text: str, a: _Atom) -> bool:
    """Whether the atom is a plain integer (a clock never is)."""
    return a[_KIND] != CLOCK_KIND and "." not in text[a[_START] : a[_NUM_END_AT]]


def _ends_at(pattern: re.Pattern[str], text: str, pos: int) -> bool:
    """Whether a context of ``pattern`` ends exactly at ``pos`` (for the rare range checks)."""
    return any(m.end() == pos for m in pattern.finditer(text, max(0, pos - 24), pos + 1))


#: Whether a cue (``_CUE``) or a "not a time" context (``_NEG``) ends right before a number depends only on
#: the text from the previous number's last character (a digit or a unit's last letter, which no cue or
#: context word can take in, but whose look-around sees it) up to the number, at most CONTEXT_CHARS of it:
#: the same few pieces recur in a ledger ("2\n- Event ", ": "), so each piece is matched once.
_CUE_SEEN: dict[str, bool] = {}
NEG_SEEN: dict[str, bool] = {}
_SEEN_MAX = 8192


def context_before(piece: str, pattern: re.Pattern[str], seen: dict[str, bool]) -> bool:
    """Whether ``pattern`` (a reversed context) matches ``piece`` read backwards from its end."""
    hit = pattern.match(piece[::-1]) is not None
    if len(seen) >= _SEEN_MAX:
        seen.clear()
    seen[piece] = hit
    return hit


#: the separator of a list of times that share one cue and one unit ("at 1, 2 and 3 s"): a comma and a space, "and",
#: or both, on one line (a comma glued to a digit is a decimal comma, see NEG_REV)
LIST_SEP = re.compile(r"(?:,[ \t]++(?:and[ \t]++)?|[ \t]++and[ \t]++)")
_BARE_TEXT = re.compile(r"[0-9.]+")


def listed_times(text: str, spans: Sequence[tuple[int, int]], k: int, hidden: frozenset[int] | set[int]) -> range:
    """The bare numbers inside a list of times opened by the cued bare number ``spans[k]`` ("at 1, 2 and 3 s": the
    2): the list runs over bare numbers joined by ``LIST_SEP`` and ends at a number with a seconds unit that is a
    time ("3 s", not "3 s later"); both ends are times by their own rules, so the cue and the unit cover every number
    between (the caller checks the opener's context). Empty when there is no such list (a number in ``hidden``, masked, breaks it). ``spans``: every number's
    (start, end), in order."""
    j = k + 1
    while j < len(spans) and j not in hidden and LIST_SEP.fullmatch(text, spans[j - 1][1], spans[j][0]):
        start, end = spans[j]
        if _BARE_TEXT.fullmatch(text, start, end) is None:
            if text[end - 1].isalpha() and NOT_A_TIME_AFTER.match(text, end) is None:  # "3 s": a unit, a time
                return range(k + 1, j)
            return range(0)
        j += 1
    return range(0)


def find_atoms(text: str, masked: Sequence[tuple[int, int]]) -> list[_Atom]:
    """Every number of ``text`` outside the ``masked`` spans (disjoint, in order), in order, with whether a cue
    ends right before each bare one (an explicit time needs no cue)."""
    out: list[_Atom] = []
    append = out.append
    starts = [s for s, _ in masked]
    first_mask = starts[0] if starts else len(text)
    cue_get = _CUE_SEEN.get
    prev_end = 0  # end of the previous number (masked ones too: any number bounds a context)
    for m in ATOM.finditer(text):
        start, end = m.span()
        if start >= first_mask and _inside(masked, starts, start):
            prev_end = end
            continue
        kind = m.lastindex
        if kind == _NUM_END:  # a bare number: the common case
            lo = prev_end - 1 if prev_end - 1 > start - CONTEXT_CHARS else start - CONTEXT_CHARS
            piece = text[lo if lo > 0 else 0 : start]
            cue = cue_get(piece)
            if cue is None:
                cue = context_before(piece, CUE_REV, _CUE_SEEN)
            append((start, end, BARE, cue, end))
        elif kind == _CLOCK:
            append((start, end, CLOCK_KIND, False, end))
        else:
            append((start, end, UNIT_KIND, False, m.end(_NUM_END)))
        prev_end = end
    return _with_listed(text, out)


def _with_listed(text: str, atoms: list[_Atom]) -> list[_Atom]:
    """``atoms`` with the bare numbers inside a list of times (:func:`listed_times`) read as cued: only a cued bare
    number that is a time (no "not a time" context before it) and is followed by a list separator opens one."""
    spans = None
    listed_to = 0  # the atoms before it are in a list already read (each is walked once: linear)
    for k, a in enumerate(atoms):
        if (
            k >= listed_to
            and a[_CUED]
            and k + 1 < len(atoms)
            and LIST_SEP.fullmatch(text, a[_END], atoms[k + 1][_START])
        ):
            start = a[_START]
            lo = (
                atoms[k - 1][_END] - 1
                if k and atoms[k - 1][_END] - 1 > start - CONTEXT_CHARS
                else start - CONTEXT_CHARS
            )
            if NEG_REV.match(text[lo if lo > 0 else 0 : start][::-1]) is not None:
                continue
            spans = spans or [(b[_START], b[_END]) for b in atoms]
            for j in listed_times(text, spans, k, frozenset()):
                b = atoms[j]
                atoms[j] = (b[_START], b[_END], b[_KIND], True, b[_NUM_END_AT])
                listed_to = j + 1
    return atoms


def boxed_regions(text: str) -> list[tuple[int, int]]:
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
LABEL_CACHE: dict[int, tuple[Sequence[re.Pattern[str]], dict[str, str | None]]] = {}
_LABEL_CACHE_MAX = 4096
_LABEL_PIECE_MAX = 200


def read_label(piece: str, patterns: Sequence[re.Pattern[str]], cache: dict[str, str | None]) -> str | None:
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


def _label(
    text: str,
    start: int,
    end: int,
    prev_end: int,
    next_start: int,
    patterns: Sequence[re.Pattern[str]],
    cache: dict[str, str | None],
) -> str | None:
    """The label on the timestamp's line: after it (up to the next timestamp), else before it.

    Patterns are tried in priority order (e.g. "A -> C" before "state A"), the first match wins.
    """
    le = text.find("\n", start)
    label = read_label(text[end : next_start if le < 0 or next_start < le else le], patterns, cache)
    if label is not None:
        return label
    return read_label(text[max(text.rfind("\n", 0, start) + 1, prev_end) : start], patterns, cache)


def frame_time(k: int, frame_times: Sequence[float]) -> float | None:
    """The time of the k-th frame sent (1-based), or None when no such frame was sent."""
    return float(frame_times[k - 1]) if 1 <= k <= len(frame_times) else None


#: the word between two numbers, per separator (at most 12 characters; the same few recur: ": ", ", ", "-")
CORES: dict[str, str] = {}
_CORES_MAX = 4096


def sep_core(sep: str) -> str:
    """The word between two numbers: the separator stripped of spaces and "~", lower-case."""
    core = CORES.get(sep)
    if core is None:
        if len(CORES) >= _CORES_MAX:
            CORES.clear()
        core = CORES[sep] = sep.strip().rstrip("~").strip().lower()
    return core


def opens_range(text: str, a: _Atom, nxt: _Atom, sep: str, core: str) -> bool:
    """Whether ``a`` and ``nxt``, ``sep`` apart, are one range ("1.5-2.0s", "from 3s to 4s", "between 3 and 4 s")."""
    if core in RANGE_WORDS:
        # "1.5-2.0s" / "from 3s to 4s"; a bare start with spaced hyphen ("Event 1 - 3.0s") is an ordinal
        bare_start = not (a[_KIND] or a[_CUED])
        return bool(
            (a[_KIND] or a[_CUED] or nxt[_KIND])
            and not (bare_start and (not _NO_SPACE_HYPHEN.match(sep) or _ends_at(_ORDINAL_BEFORE, text, a[_START])))
        )
    return core == "and" and _ends_at(_BETWEEN_BEFORE, text, a[_START])


def frame_mention(text: str, atoms: list[_Atom], i: int, sep: str, last_time_atom: int) -> tuple[int, bool]:
    """For a "frame K" mention at ``atoms[i]``: how many atoms it spans and whether it sits beside a time.

    A range "frames K-L" is one event (two atoms); a mention beside an explicit or cued time on the
    same line names that time's moment (see the module docstring).
    """
    a = atoms[i]
    nxt = atoms[i + 1] if i + 1 < len(atoms) else None
    step, end = 1, a[_END]
    if (
        sep
        and nxt is not None
        and is_int(text, nxt)
        and not nxt[_KIND]
        and atom_value(text, nxt) >= atom_value(text, a)
    ):
        core = _FRAME_RANGE_TAIL.sub("", sep.strip().lower()).strip()
        if core in RANGE_WORDS:
            step, end = 2, nxt[_END]

    def near(end: int, start: int) -> bool:
        return 0 <= start - end <= FRAME_NEAR_TIME_CHARS and "\n" not in text[end:start]

    after = atoms[i + step] if i + step < len(atoms) else None
    beside = (after is not None and near(end, after[_START]) and bool(after[_KIND] or after[_CUED])) or (
        last_time_atom == i - 1 and last_time_atom >= 0 and near(atoms[i - 1][_END], a[_START])
    )
    return step, beside
