"""The count parser and box readers of ``vidaudit.score.answers`` as they were at a4d1acc: the oracle of
``tests/score/test_answers_fast_paths.py``.

Issue 24's fourth round gave ``parse_count``, ``box_bounds`` and ``boxed_spans`` fast paths for the usual
responses (one ``\\boxed{N}``, or no backslash at all) and built ``Parsed`` without its frozen ``__init__``;
their results must not change for any text. This is the code before that change, verbatim except that
``Parsed`` and ``NOT_PARSED`` are the module's own (so results compare with ``==`` and ``type``) and the
names it shares with the module (``NUMBER_WORDS``, ``MAX_BOX_CHARS``) are imported. The refusals added later
(a hedged or negated box, a "final answer" number that is part of another figure: ``_BOX_REFUSED`` and
``_final_refused``; a correction after the count read and a last box that writes a number it does not give:
``_corrected_after``, ``_numeric_refused_box``) are rules, not fast paths: they are imported and applied where
the module applies them.
Imported by that test only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from vidaudit.score.answers import (
    _BOX_REFUSED,
    MAX_BOX_CHARS,
    NOT_PARSED,
    NUMBER_WORDS,
    Parsed,
    _corrected_after,
    _final_refused,
    _numeric_refused_box,
)

_WORD_ALT = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
# "4" or "4.0", never the "4" of "4.5"; atomic: every shorter reading fails the look-ahead anyway, and
# trying them made a long digit run quadratic
_INT = r"(?>[0-9]+(?:\.0+)?)(?![0-9.]*[0-9])"


_BOXED_OPEN = re.compile(r"\\(?:boxed|fbox)\s*+\{")
_BRACE = re.compile(r"\\[{}]|[{}]")  # an escaped brace is one token, not a brace
_LATEX_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf|mbox|operatorname)\s*+\{([^{}]*)\}")


@lru_cache(maxsize=4)  # the count parser and the timestamp extractor both read a response's boxes
def box_bounds(text: str) -> tuple[tuple[int, int, int], ...]:
    """Every ``\\boxed{...}`` with balanced braces as (start, content_start, end), in order of start.

    Nested boxes are all listed; unclosed ones are skipped. Braces are matched in one pass with a
    stack (escaped ``\\{`` and ``\\}`` are not braces); only integers are kept, so time and memory
    are linear in the text whatever its nesting.
    """
    opens = [(m.start(), m.end()) for m in _BOXED_OPEN.finditer(text)]  # each box's start and its "{" + 1
    if not opens:
        return ()
    # A brace's partner depends only on the text after it, so scanning starts at the first box, and
    # only at braces (a regex walks the rest of the text in C).
    close_of: dict[int, int] = {}  # every matched "{" -> its "}": at most one entry per brace
    stack: list[int] = []
    for m in _BRACE.finditer(text, opens[0][1] - 1):
        tok = m.group()
        if tok == "{":
            stack.append(m.start())
        elif tok == "}" and stack:
            close_of[stack.pop()] = m.start()
    return tuple((start, cs, close_of[cs - 1] + 1) for start, cs in opens if cs - 1 in close_of)


def boxed_spans(text: str) -> list[tuple[int, int, str]]:
    """The outermost ``\\boxed{...}`` with balanced braces as (start, end, content); unclosed ones are skipped.

    Outermost boxes never overlap, so their contents together are at most the text: linear in memory
    (listing every nested box's content was quadratic). Boxes inside them are found by :func:`box_bounds`;
    the union of the spans is the same.
    """
    out: list[tuple[int, int, str]] = []
    last_end = -1
    for start, content_start, end in box_bounds(text):
        if start >= last_end:
            out.append((start, end, text[content_start : end - 1]))
            last_end = end
    return out


def _readable_boxes(text: str) -> Iterator[tuple[int, int, str]]:
    """Every box short enough to be an answer (see ``MAX_BOX_CHARS``), last one first, with its content.

    A generator: one content string at a time, so memory stays O(MAX_BOX_CHARS) beyond the bounds.
    """
    for start, cs, end in reversed(box_bounds(text)):
        if end - 1 - cs <= MAX_BOX_CHARS:
            yield start, end, text[cs : end - 1]


def _unwrap_latex(content: str) -> str:
    prev = None
    while prev != content:
        prev, content = content, _LATEX_WRAP.sub(r"\1", content)
    return content.replace("$", " ").replace("\\", " ")


# --------------------------------------------------------------------------- counts

_INT_RE = re.compile(rf"(?<![0-9.\-])({_INT})")
_WORD_RE = re.compile(rf"\b({_WORD_ALT})\b", re.IGNORECASE)
_FINAL_RE = re.compile(
    r"\bfinal\s++(?:answer|count|total|tally)\b[^0-9a-zA-Z\n]{0,12}?(?:\s*+(?:is|was|=|:|of)\s*+)?[\s*_`$\\(\[{:]*+"
    rf"({_INT}|{_WORD_ALT})\b",
    re.IGNORECASE,
)
_BARE_RE = re.compile(rf"^[\s*_`$(\[]*+({_INT}|{_WORD_ALT})[\s*_`$)\].!]*+$", re.IGNORECASE)


def _read_count(s: str) -> int | None:
    s = s.strip()
    if s.lower() in NUMBER_WORDS:
        return NUMBER_WORDS[s.lower()]
    try:
        f = float(s)
    except ValueError:
        return None
    return int(f) if f.is_integer() and f >= 0 else None


def _count_in_box(content: str) -> int | None:
    """A box holds a count when it contains exactly one integer (or one number word) and nothing numeric else."""
    if len(content) <= 15 and content.isascii() and content.isdigit():
        return int(content)  # the usual \\boxed{4}: what the general path reads (15 digits are exact as a float)
    return _count_in_any_box(content)


def _count_in_any_box(content: str) -> int | None:
    """:func:`_count_in_box` for any content (LaTeX wrappers, words, several numbers)."""
    plain = _unwrap_latex(content)
    if re.search(r"[0-9]", plain):
        ints = _INT_RE.findall(plain)
        if len(ints) != 1 or len(re.findall(r"[0-9]+(?:\.[0-9]+)?", plain)) != 1 or re.search(r"-\s*[0-9]", plain):
            return None
        return None if _BOX_REFUSED.search(plain) else _read_count(ints[0])
    words = _WORD_RE.findall(plain)
    return NUMBER_WORDS[words[0].lower()] if len(words) == 1 and not _BOX_REFUSED.search(plain) else None


def parse_count(text: str | None) -> Parsed:
    """The final count: last readable ``\\boxed{}``, then "final answer: N", then a bare answer.

    Methods: ``boxed`` (nested braces such as ``\\boxed{\\text{4}}`` work), ``final_answer``
    ("final answer is 4", "Final count: four"), ``bare`` (the whole response is a number),
    ``word`` (the whole response is a number word up to twenty), else ``unparseable``. Spans cover
    the construct read (the whole ``\\boxed{...}``, or the number after "final answer").
    """
    if not isinstance(text, str) or not text:
        return NOT_PARSED
    for start, end, content in _readable_boxes(text):
        v = _count_in_box(content)
        if v is not None:
            return NOT_PARSED if _corrected_after(text, end, v) else Parsed(v, "boxed", (start, end))
        if _numeric_refused_box(content):
            return NOT_PARSED
    finals = list(_FINAL_RE.finditer(text))
    if finals:
        m = finals[-1]
        v = _read_count(m.group(1))
        if v is not None and not _final_refused(text, m) and not _corrected_after(text, m.end(1), v):
            return Parsed(v, "final_answer", (m.start(1), m.end(1)))
    bare = _BARE_RE.match(text)
    if bare:
        v = _read_count(bare.group(1))
        if v is not None:
            return Parsed(v, "word" if bare.group(1).lower() in NUMBER_WORDS else "bare", (bare.start(1), bare.end(1)))
    return NOT_PARSED
