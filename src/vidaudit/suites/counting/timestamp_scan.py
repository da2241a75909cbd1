"""The one-pass scan of a whole text for candidate times (the fast path of
:func:`~vidaudit.suites.counting.timestamps.extract_timestamps`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from itertools import accumulate, compress, count
from typing import NamedTuple, TypeVar

from vidaudit.suites.counting.timestamp_lexicon import (
    ATOM,
    BARE,
    CLOCK_KIND,
    CONTEXT_CHARS,
    CUE_REV,
    LIST_SEP,
    NEG_REV,
    NOT_A_TIME_AFTER,
    RANGE_WORDS,
    UNIT_KIND,
    clock_seconds,
    listed_times,
    opens_range,
    sep_core,
)

# The text split once around every number (``_SPLIT``: the matches of ``ATOM``, kept whole) is a list of
# gaps and numbers. Whether a cue or a "not a time" context ends right before number k depends only on the
# gap before it: the piece the rules read is ``(last character of number k-1 + gap)[-CONTEXT_CHARS:]``, and
# that last character (a digit, or a unit's last letter, followed by a non-word character) is only ever
# seen as a word character, so "0" stands for a digit and "a" for a unit's letter (the rules read the two alike,
# but for the minutes rule, "1 min 30 s": a number before "min", which "5s min" is not). Whether number k can open a range depends only on the gap
# after it (at most 12 characters whose word is a range word or "and"). So each distinct gap is read once
# (``_GAP_CODES``), and Python visits only the numbers a rule can make a time: an explicit one, a cued one,
# or one followed by a range word; every other number is never a time and bounds contexts only.
_SPLIT = re.compile(
    "(" + ATOM.pattern.replace("(?P<clock>", "(?:").replace("(?P<num>", "(?:").replace("(?P<unit>", "(?:") + ")"
)
_DIGITS_DOT = "0123456789."
_CUED_BIT, _RANGE_BIT, _NEG_BIT, _AFTER_BIT, _LIST_BIT = 1, 2, 4, 8, 16
_GAP_MAX, _GAP_KEY_MAX = 8192, 256
FRAME_WORD = re.compile("frame", re.IGNORECASE)


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
    as if a number followed it, i.e. not for the text's tail), it separates a list (``_LIST_BIT``). ``before``:
    what stands for the previous number's last character (see above)."""

    def __init__(self, before: str) -> None:
        super().__init__()
        self.before = before

    def _read(self, gap: str) -> int:
        rev = (self.before + gap)[-CONTEXT_CHARS:][::-1]
        code = (
            (_CUED_BIT if CUE_REV.match(rev) is not None else 0)
            | (_NEG_BIT if NEG_REV.match(rev) is not None else 0)
            | (_AFTER_BIT if NOT_A_TIME_AFTER.match(gap + "0") is not None else 0)
        )
        if gap and len(gap) <= 12:
            core = sep_core(gap)
            if core in RANGE_WORDS or core == "and":
                code |= _RANGE_BIT
        if LIST_SEP.fullmatch(gap):
            code |= _LIST_BIT
        return code


class _Values(_Memo[float]):
    """A number's text -> :func:`atom_value` of it (times recur across responses)."""

    def _read(self, s: str) -> float:
        if ":" in s:
            return clock_seconds(s)
        return float(s[: len(s) - len(s.lstrip(_DIGITS_DOT))])


class _Explicit(_Memo[bool]):
    """A number's text -> whether it is explicit (a clock or a unit: something besides digits and dots)."""

    def _read(self, s: str) -> bool:
        return bool(s.strip(_DIGITS_DOT))


class _EndCodes(_Memo[int]):
    """The text's head (before its first number) -> ``_CUED_BIT`` when a cue ends it, and its tail (after the
    last number) -> ``_AFTER_BIT`` when a "not a time" word opens it: read as they are (no number beyond them).
    Responses repeat their heads and tails."""

    def _read(self, end: str) -> int:
        return (_CUED_BIT if CUE_REV.match(end[-CONTEXT_CHARS:][::-1]) is not None else 0) | (
            _AFTER_BIT if NOT_A_TIME_AFTER.match(end) is not None else 0
        )


_GAP_CODES = _GapCodes("0")  # after a number that ends with a digit (and for the text's head)
_GAP_CODES_AFTER_UNIT = _GapCodes("a")  # after one that ends with a unit's letter ("5s")
_ENDS = _EndCodes()
_VALUES = _Values()
_EXPLICIT = _Explicit()
#: code -> the bits that make a number a candidate (a cue before it, a range word after it)
_CANDIDATE_BITS = tuple(c & (_CUED_BIT | _RANGE_BIT) for c in range(32))


def _atom_kind(s: str) -> int:
    return CLOCK_KIND if ":" in s else UNIT_KIND if s[-1] > "9" else BARE


def _candidates(codes: list[int], explicit: list[bool], n: int, cue0: bool) -> list[int]:
    """The numbers that may be times, in order: explicit ones (a clock or a unit), cued ones, range starts."""
    found: list[int] = list(compress(count(), explicit))
    more: list[int] = []  # the candidates that are not explicit (a ledger's times usually are: nothing to merge)
    for j in compress(count(), map(_CANDIDATE_BITS.__getitem__, codes)):
        if 0 < j < n:
            c = codes[j]
            if c & _CUED_BIT and not explicit[j]:
                more.append(j)
            if c & _RANGE_BIT and not explicit[j - 1]:
                more.append(j - 1)
    if cue0 and not explicit[0]:  # no number before the first: its context is the text's head, as it is
        more.append(0)
    return sorted(set(found).union(more)) if more else found


def _hidden(pos: list[int], masked: Sequence[tuple[int, int]]) -> set[int]:
    """The numbers that start inside one of the ``masked`` spans."""
    hidden: set[int] = set()
    if masked:
        starts = pos[0::2]
        for m_start, m_end in masked:
            hidden.update(range(bisect.bisect_left(starts, m_start), bisect.bisect_left(starts, m_end)))
    return hidden


def _negative_before(text: str, pos: list[int], hidden: set[int], k: int) -> bool:
    """Whether number k reads as negative where the number before it is masked (or there is none): the context
    the rules see runs back to the last number outside the masks, if any."""
    start = pos[2 * k]
    p = k - 1
    while p >= 0 and p in hidden:
        p -= 1
    lo = pos[2 * p + 1] - 1 if p >= 0 and pos[2 * p + 1] - 1 > start - CONTEXT_CHARS else start - CONTEXT_CHARS
    return NEG_REV.match(text[lo if lo > 0 else 0 : start][::-1]) is not None


class _Scan(NamedTuple):
    """What :func:`scan_times` reads off a text, once, for :func:`_choose` and :func:`_unusual`: the gaps between
    the numbers and the numbers (``_SPLIT``'s parts), where each number starts and ends (``pos[2k]``,
    ``pos[2k + 1]``), each gap's code, the numbers inside a masked span, and whether the text's head cues the first
    number."""

    text: str
    gaps: list[str]
    atoms: list[str]
    pos: list[int]
    codes: list[int]
    hidden: set[int]
    cue0: bool


def _unusual(scan: _Scan, k: int, chosen: list[tuple[int, int, float, int | None]]) -> bool:
    """Candidate k where its context is not just the gaps around it (the first number, a range word after it, or a
    masked number before it): the time it gives, if any, appended to ``chosen``; whether it opens a range with the
    next number."""
    text, gaps, atoms, pos, codes, hidden, cue0 = scan
    values = _VALUES
    c, after = codes[k], codes[k + 1]
    s = atoms[k]
    start, end = pos[2 * k], pos[2 * k + 1]
    kind = _atom_kind(s)
    cue = not kind and bool(cue0 if k == 0 else c & _CUED_BIT)
    is_range = False
    if after & _RANGE_BIT and k + 1 not in hidden:
        nxt = atoms[k + 1]
        sep = gaps[k + 1]
        nstart = pos[2 * k + 2]
        is_range = values[s] <= values[nxt] and opens_range(
            text,
            (start, end, kind, cue, end),
            (nstart, pos[2 * k + 3], _atom_kind(nxt), False, nstart),
            sep,
            sep_core(sep),
        )
    if is_range or kind or cue:
        negative = bool(c & _NEG_BIT) if k and k - 1 not in hidden else _negative_before(text, pos, hidden, k)
        if not (negative or after & _AFTER_BIT):
            chosen.append((start, end, values[s], None))
    return is_range


def scan_times(text: str, masked: Sequence[tuple[int, int]]) -> list[tuple[int, int, float, int | None]] | None:
    """The times ``extract_timestamps`` chooses without frame times, in order, as (start, end, time, None);
    None when the text has no number outside ``masked``. The same rules, read per gap (see above)."""
    parts = _SPLIT.split(text)
    n = len(parts) >> 1
    if not n:
        return None
    gaps = parts[0::2]
    atoms = parts[1::2]
    codes = [
        _GAP_CODES[gap] if k == 0 or atoms[k - 1][-1].isdigit() else _GAP_CODES_AFTER_UNIT[gap]
        for k, gap in enumerate(gaps)
    ]
    explicit = list(map(_EXPLICIT.__getitem__, atoms))
    head, tail = _ENDS[gaps[0]], _ENDS[gaps[n]]
    cue0 = bool(head & _CUED_BIT)  # no number before the first: its context is the text's head, as it is
    found = _candidates(codes, explicit, n, cue0)
    # the tail (after the last number) separates nothing, and nothing follows its "not a time" word
    codes[n] = tail & _AFTER_BIT
    pos = list(accumulate(map(len, parts)))  # pos[2k]: start of number k, pos[2k + 1]: its end
    hidden = _hidden(pos, masked)
    if len(hidden) == n:
        return None
    found = _with_listed(text, codes, explicit, pos, hidden, cue0, found)
    return _choose(_Scan(text, gaps, atoms, pos, codes, hidden, cue0), found)


def _with_listed(
    text: str, codes: list[int], explicit: list[bool], pos: list[int], hidden: set[int], cue0: bool, found: list[int]
) -> list[int]:
    """``found`` with the bare numbers inside a list of times (:func:`listed_times`, "at 1, 2 and 3 s"), whose codes
    are marked cued. Only a cued bare number that is a time and is followed by a list separator can open one (rare:
    most texts skip)."""
    more: list[int] = []
    spans: list[tuple[int, int]] | None = None
    listed_to = 0  # the numbers before it are in a list already read (each is walked once: linear)
    for k in compress(count(), map(_LIST_BIT.__and__, codes[1:])):  # the gap after number k separates a list
        if k < listed_to or explicit[k] or not (cue0 if k == 0 else codes[k] & _CUED_BIT):
            continue
        if k in hidden or (
            codes[k] & _NEG_BIT if k and k - 1 not in hidden else _negative_before(text, pos, hidden, k)
        ):
            continue  # the opener is no time
        spans = spans or list(zip(pos[0:-1:2], pos[1::2], strict=True))
        for j in listed_times(text, spans, k, hidden):
            codes[j] |= _CUED_BIT
            more.append(j)
            listed_to = j + 1
    return sorted(set(found).union(more)) if more else found


def _choose(scan: _Scan, found: list[int]) -> list[tuple[int, int, float, int | None]]:
    """The candidates ``found`` that are times, in order (the second number of a range is not one)."""
    _, _, atoms, pos, codes, hidden, _ = scan  # unpacked once: read per candidate in the loop below
    chosen: list[tuple[int, int, float, int | None]] = []
    values = _VALUES
    skip = -1
    for k in found:
        if k == skip or k in hidden:
            continue
        after = codes[k + 1]
        if k and not after & _RANGE_BIT and k - 1 not in hidden:  # the usual time: no range, context in the gaps
            if not (codes[k] & _NEG_BIT | after & _AFTER_BIT):  # neither a minus before it nor "not a time" after
                chosen.append((pos[2 * k], pos[2 * k + 1], values[atoms[k]], None))
            continue
        if _unusual(scan, k, chosen):
            skip = k + 1  # it opened a range: the next number is its end, not a time of its own
    return chosen
