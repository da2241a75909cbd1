"""Strict final-answer parsers: counts, yes/no and multiple-choice options.

Every parser returns a :class:`Parsed` with the value, the method that read it and the span of
text it read, so that a report can show *why* an answer was read as it was. Parsers only look
in answer positions (a ``\\boxed{}``, an explicit "answer:" form, or the whole response); they
never take the last matching word anywhere in the text, and they never raise on any string.

Model output is untrusted, so every parser is linear in time and memory for any input: braces are
matched in one pass, a box is read only when its content is at most ``MAX_BOX_CHARS`` long (no
answer needs more, and so nested boxes never copy the text once per level), and every repeated
pattern is possessive or atomic so that a long run of digits or spaces is scanned once.

Most responses have no backslash (so no box) or one ``\\boxed{N}``; those shapes are decided first with
``str`` scans and one anchored pattern, in C, and give exactly what the general reading gives
(``tests/score/test_answers_fast_paths.py`` compares them with the code before, ``tests/answers_reference.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

UNPARSEABLE = "unparseable"

NUMBER_WORDS: dict[str, int] = {
    "zero": 0,
    "none": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
}
_WORD_ALT = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
# "4" or "4.0", never the "4" of "4.5"; atomic: every shorter reading fails the look-ahead anyway, and
# trying them made a long digit run quadratic
_INT = r"(?>[0-9]+(?:\.0+)?)(?![0-9.]*[0-9])"


@dataclass(frozen=True)
class Parsed:
    """A parsed answer: ``value`` is None exactly when ``method`` is ``"unparseable"``."""

    value: Any
    method: str
    span: tuple[int, int] | None

    @property
    def ok(self) -> bool:
        return self.method != UNPARSEABLE

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "method": self.method, "span": list(self.span) if self.span else None}


NOT_PARSED = Parsed(None, UNPARSEABLE, None)

_new_object = object.__new__


def _parsed(value: Any, method: str, span: tuple[int, int] | None) -> Parsed:
    """``Parsed(value, method, span)`` without the frozen ``__init__``'s three ``object.__setattr__`` calls:
    the same object (fields in order, equal, same repr), made once per parsed count."""
    p = _new_object(Parsed)
    d = p.__dict__
    d["value"] = value
    d["method"] = method
    d["span"] = span
    return p


# --------------------------------------------------------------------------- \boxed{...}

_BOXED_OPEN = re.compile(r"\\(?:boxed|fbox)\s*+\{")
_BRACE = re.compile(r"\\[{}]|[{}]")  # an escaped brace is one token, not a brace
_LATEX_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf|mbox|operatorname)\s*+\{([^{}]*)\}")

#: A box is read as an answer only when its content is at most this long. A final answer is a word or
#: a number, perhaps in a sentence; a longer box (in practice, boxes nested in boxes) is masked for the
#: timestamp parser but not read, so that nesting N boxes costs O(N), not O(N^2) copied characters.
MAX_BOX_CHARS = 1000


@lru_cache(maxsize=4)  # the count parser and the timestamp extractor both read a response's boxes
def box_bounds(text: str) -> tuple[tuple[int, int, int], ...]:
    """Every ``\\boxed{...}`` with balanced braces as (start, content_start, end), in order of start.

    Nested boxes are all listed; unclosed ones are skipped. Braces are matched in one pass with a
    stack (escaped ``\\{`` and ``\\}`` are not braces); only integers are kept, so time and memory
    are linear in the text whatever its nesting.
    """
    start = text.find("\\")
    if start < 0:  # every box opens with a backslash
        return ()
    end = _lone_box_end(text, start)
    if end > 0:
        return ((start, start + 7, end),)
    opens = [(m.start(), m.end()) for m in _BOXED_OPEN.finditer(text, start)]  # each box's start and its "{" + 1
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
    last, first, close = _last_box
    if last is text:  # parse_count just read this text's one box
        return [(first, close + 1, text[first + 7 : close])]
    out: list[tuple[int, int, str]] = []
    last_end = -1
    for start, content_start, end in box_bounds(text):
        if start >= last_end:
            out.append((start, end, text[content_start : end - 1]))
            last_end = end
    return out


#: the text whose one box (start, index of its "}") parse_count's fast path read last: the timestamp
#: extractor's boxed_spans on the same text, the next call when a response is scored, reads it from here
_last_box: tuple[str | None, int, int] = (None, 0, 0)


def _lone_box_end(text: str, start: int) -> int:
    """The end of ``\\boxed{...}`` at ``start`` when that is the text's only backslash and the first "}" after
    it closes it with no "{" between: then it is the one box :func:`box_bounds` lists. Else 0 (read the
    boxes the general way). ``start`` is the text's first backslash. A few scans in C."""
    if not text.startswith("boxed{", start + 1) or text.find("\\", start + 7) >= 0:
        return 0
    close = text.find("}", start + 7)
    if close < 0 or text.find("{", start + 7, close) >= 0:
        return 0
    return close + 1


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

# A number read as a count must be the whole count the model gave, not part of another figure: these are refused.
#: in a box: a negation, comparison or hedge ("not 5", "\\geq 5", "at least 5", "about 5", "5+", "5 or more")
#: or a magnitude word ("one hundred")
_BOX_REFUSED = re.compile(
    r"\b(?:not|neq|ne|geq|leq|ge|le|gt|lt|approx|sim|about|around|approximately|roughly|nearly|almost|least|most"
    r"|more|fewer|less|over|under|maybe|probably|possibly|hundred|thousand|million|billion|dozens?)\b|~(?=\s*[0-9])|[<>+\u00b1\u2212\u2248\u2260\u2264\u2265]",
    re.IGNORECASE,
)
#: between "final answer" and the number: a sign glued to it ("-3") or a comparison ("<5", "~5", "\u2265 5")
_FINAL_BEFORE_REFUSED = re.compile(r"-$|[<>~\u00b1\u2212\u2248\u2260\u2264\u2265]")
#: right after the number, on its line: more of a number ("1,024", "5, 6", "twenty-one", "one hundred", "12:30", "5%",
#: "5+"), or another number joined to it ("5-6", "5/6", "2 + 3 = 5", "5 or 6", "5 to 6", "1 000")
_FINAL_AFTER_REFUSED = re.compile(
    r"[*_`$)\]]*+(?:,[ \t]*+[0-9]|-(?:" + _WORD_ALT + r")\b|[ \t]*+(?:[-\u2013\u2014/:+\u00d7*=][ \t]*+[0-9]|[%+]"
    r"|(?:hundred|thousand|million|billion|dozens?)\b)|[ \t]++(?:(?:to|or|and|plus|minus|times|x)[ \t]++[*_`$(\[]*+)?"
    r"(?:[0-9]|(?:" + _WORD_ALT + r")\b))",
    re.IGNORECASE,
)


def _final_refused(text: str, m: re.Match[str]) -> bool:
    """Whether the number a "final answer" match read is only part of what the model wrote (see above)."""
    return bool(_FINAL_BEFORE_REFUSED.search(text, m.start(), m.start(1)) or _FINAL_AFTER_REFUSED.match(text, m.end(1)))


#: after the count read, a correction or hedge word with another count right after it ("Final answer: 5... wait, 6",
#: "Final answer: 4 (possibly 5)", "Actually, it's 6"): the model gave two counts, so neither is read. A number with
#: a time unit or more of a number after it ("probably 2 s apart", "maybe 1.5") is not a count.
_CORRECTION_RE = re.compile(
    r"\b(?:wait|actually|correction|corrected|sorry|i\s++mean|rather|possibly|perhaps|maybe|probably|no,|oops)"
    r"(?![\w])[\s,.:;!?\-\u2013\u2014(]*+(?:(?:it'?s|it\s++is|make\s++(?:it|that)|that'?s|the\s++(?:count|answer|total)"
    r"\s++is|should\s++be|is)\s++)?[*_`$(\[]*+"
    rf"({_INT}|{_WORD_ALT})\b(?![ \t]*+(?:[.,:][0-9]|(?:s|secs?|seconds?|ms|min|mins|minutes?|h|hours?|%)\b))",
    re.IGNORECASE,
)


def _corrected_after(text: str, pos: int, value: int) -> bool:
    """Whether a correction or hedge after ``pos`` (the end of the count read) gives another count (see above)."""
    for m in _CORRECTION_RE.finditer(text, pos):
        v = _read_count(m.group(1))
        if v is not None and v != value:
            return True
    return False


def _numeric_refused_box(content: str) -> bool:
    """Whether a box that holds no readable count still writes a number ("at least 6", "5-6", "\\neq 5"): then it
    is the model's last boxed answer, refused, and an earlier box is not read in its place. A box with no number
    ("N", a placeholder) is passed over as before."""
    plain = _unwrap_latex(content)
    return re.search(r"[0-9]", plain) is not None or _WORD_RE.search(plain) is not None


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


#: the usual count box, matched at the text's first backslash: "\boxed{N}" (N 1-15 ASCII digits, exact as a
#: float) and no backslash after it, so no other box
_USUAL_BOX = re.compile(r"\\boxed\{([0-9]{1,15})\}[^\\]*+\Z")


def parse_count(text: str | None) -> Parsed:
    """The final count: last readable ``\\boxed{}``, then "final answer: N", then a bare answer.

    Methods: ``boxed`` (nested braces such as ``\\boxed{\\text{4}}`` work), ``final_answer``
    ("final answer is 4", "Final count: four"), ``bare`` (the whole response is a number),
    ``word`` (the whole response is a number word up to twenty), else ``unparseable``. Spans cover
    the construct read (the whole ``\\boxed{...}``, or the number after "final answer"). A number that is only
    part of the answer ("\\boxed{not 5}", "final answer: 5-6", "1,024") is not read (``_BOX_REFUSED``,
    ``_final_refused``); nor is a count followed by a correction to another ("Final answer: 5... wait, 6":
    ``_corrected_after``), nor an earlier box when the last box that writes a number gives no count
    (``_numeric_refused_box``).
    """
    global _last_box
    if not isinstance(text, str) or not text:
        return NOT_PARSED
    start = text.find("\\")
    if start >= 0:  # without a backslash there is no box
        # the usual shape, decided in C: the text's only backslash opens \boxed{ and 1-15 ASCII digits
        # closed by "}" follow (what _count_in_box reads as int(content)); anything else reads every box
        usual = _USUAL_BOX.match(text, start)
        if usual is not None:
            close = usual.end(1)
            _last_box = (text, start, close)
            n = int(usual.group(1))
            return NOT_PARSED if _corrected_after(text, close + 1, n) else _parsed(n, "boxed", (start, close + 1))
        for start, end, content in _readable_boxes(text):
            v = _count_in_box(content)
            if v is not None:
                return NOT_PARSED if _corrected_after(text, end, v) else _parsed(v, "boxed", (start, end))
            if _numeric_refused_box(content):
                return NOT_PARSED
    finals = list(_FINAL_RE.finditer(text))
    if finals:
        m = finals[-1]
        v = _read_count(m.group(1))
        if v is not None and not _final_refused(text, m) and not _corrected_after(text, m.end(1), v):
            return _parsed(v, "final_answer", (m.start(1), m.end(1)))
    bare = _BARE_RE.match(text)
    if bare:
        v = _read_count(bare.group(1))
        if v is not None:
            return _parsed(v, "word" if bare.group(1).lower() in NUMBER_WORDS else "bare", (bare.start(1), bare.end(1)))
    return NOT_PARSED


# --------------------------------------------------------------------------- yes / no

_YES = {"yes": True, "no": False, "true": True, "false": False}
_ANSWER_CUE = r"\b(?:final\s++answer|answer|verdict)\s*+(?:is|:|=)\s*+"
# "yes or no" and "yes and no" are not answers, quoted or marked up ('"Yes" or "No"', "**Yes**/**No**": the
# options echoed); nor is the "No" of "No-one", nor a "no" that opens a hedge ("No idea", "Answer: no way to
# tell", "No doubt, yes", "no clear answer"): read as the answer No, a model that declines to answer scored
# every No-gold item right
_YN_NOT_ANSWER = (
    r"-\w"
    r"|[*_`\"')\]]*+\s*+(?:or|and|/|&)\s*+[*_`\"'(\[]*+(?:yes|no)\b"
    r"|(?<=[nN][oO])[ \t]++(?:idea|clue|doubt|comment|way[ \t]++to|one[ \t]++(?:knows|can)"
    r"|(?:(?:clear|definite|definitive|certain|direct)[ \t]++)?answer)\b"
)
_YN_ANSWER_RE = re.compile(_ANSWER_CUE + r"[\s*_`\"'(\[]*+(yes|no)\b", re.IGNORECASE)
_YN_LEAD_RE = re.compile(r"^[\s*_`\"'(\[]*+(yes|no)\b(?!" + _YN_NOT_ANSWER + ")", re.IGNORECASE)
_YN_OR_RE = re.compile(_YN_NOT_ANSWER, re.IGNORECASE)
# what joins two answer forms into the format echoed ('end with "Answer: Yes" or "Answer: No"'): neither is an answer
_YN_JOIN_RE = re.compile(
    r"[*_`\"')\]]*+\s*+(?:or|and|/|&)\s*+[*_`\"'(\[]*+(?:" + _ANSWER_CUE + r"[\s*_`\"'(\[]*+)?",
    re.IGNORECASE,
)


def parse_yes_no(text: str | None) -> Parsed:
    """Yes/no from an answer position only: last ``\\boxed{yes}``, last "answer: no", or a leading yes/no.

    A "yes" or "no" elsewhere in the prose is not an answer ("no doubt", "yes-man"), "yes or no"
    (quoted or not) is never read as either, and a "no" that opens a hedge ("No idea.", "Answer: no way
    to tell") is no answer.
    """
    if not isinstance(text, str) or not text:
        return NOT_PARSED
    for start, end, content in _readable_boxes(text):
        word = re.sub(r"[^a-z]", "", _unwrap_latex(content).lower())
        if word in _YES:
            return Parsed(_YES[word], "boxed", (start, end))
    found = list(_YN_ANSWER_RE.finditer(text))
    joined = {
        i
        for j in range(1, len(found))
        if _YN_JOIN_RE.fullmatch(text, found[j - 1].end(1), found[j].start(1))
        for i in (j - 1, j)
    }
    answers = [m for i, m in enumerate(found) if i not in joined and not _YN_OR_RE.match(text, m.end(1))]
    if answers:
        m = answers[-1]
        return Parsed(_YES[m.group(1).lower()], "answer", (m.start(1), m.end(1)))
    lead = _YN_LEAD_RE.match(text)
    if lead:
        return Parsed(_YES[lead.group(1).lower()], "leading", (lead.start(1), lead.end(1)))
    return NOT_PARSED


# --------------------------------------------------------------------------- agree / disagree

_AGREE_WORD = r"(?:dis)?agree"
_AG_ANSWER_RE = re.compile(_ANSWER_CUE + r"[\s*_`\"'(\[]*+(" + _AGREE_WORD + r")\b", re.IGNORECASE)
_AG_LEAD_RE = re.compile(
    r"^[\s*_`\"'(\[]*+(?:i\s++)?(" + _AGREE_WORD + r")\b(?!\s*+(?:or|and|/|&)\s*+(?:dis)?agree\b)", re.IGNORECASE
)
_AG_OR_RE = re.compile(r"\s*+(?:or|and|/|&)\s*+(?:dis)?agree\b", re.IGNORECASE)


def parse_agree(text: str | None) -> Parsed:
    """AGREE (True) / DISAGREE (False) from an answer position only (the C.4 sycophancy answer).

    Read, in order: a ``\\boxed{AGREE}``; the last "answer: DISAGREE"; a leading AGREE / DISAGREE,
    optionally after "I" ("I disagree."). Anything else -- "I do not agree", "Not sure", "AGREE or
    DISAGREE?" -- is unparseable: a word inside a sentence never decides the answer.
    """
    if not isinstance(text, str) or not text:
        return NOT_PARSED
    for start, end, content in _readable_boxes(text):
        word = re.sub(r"[^a-z]", "", _unwrap_latex(content).lower())
        if word in ("agree", "disagree"):
            return Parsed(word == "agree", "boxed", (start, end))
    answers = [m for m in _AG_ANSWER_RE.finditer(text) if not _AG_OR_RE.match(text, m.end(1))]
    if answers:
        m = answers[-1]
        return Parsed(m.group(1).lower() == "agree", "answer", (m.start(1), m.end(1)))
    lead = _AG_LEAD_RE.match(text)
    if lead:
        return Parsed(lead.group(1).lower() == "agree", "leading", (lead.start(1), lead.end(1)))
    return NOT_PARSED


# --------------------------------------------------------------------------- options

#: English one-letter words that are also option letters: "A man is walking", "I think B". Such a letter followed
#: by a lower-case word is that word, not the option (see :func:`parse_option`), unless the word is one that follows
#: a letter answer ("A because ...", "A is correct", "A or C").
_WORD_LETTERS = frozenset({"A", "I"})
_AFTER_A_LETTER = re.compile(
    r"[ \t]++(?!(?:because|since|as|is|was|seems|appears|looks|fits|matches|would|should|must|best|or|and|vs)\b)"
    r"[a-z]"
)


def _as_word(text: str, m: re.Match[str], g: int) -> bool:
    """Whether the bare letter read by group ``g`` of ``m`` is the article "A" (or the pronoun "I") starting a
    phrase: "Answer: A man is walking the dog" is free text, not option A."""
    return g == 2 and m.group(g) in _WORD_LETTERS and _AFTER_A_LETTER.match(m.string, m.end(g)) is not None


def _label_re(alt: str) -> re.Pattern[str]:
    """An option label as a model echoes a list of options: "(B)", "B)", "B:" or "B." then a space or the end,
    an upper-case letter on its own (not the end of a word); group 1: the shape's punctuation, group 2: the letter."""
    return re.compile(r"(?<![\w(])(?:\((?=(?:" + alt + r")\))|)(" + alt + r")([).:])(?=\s|$)")


def _echoes_options(text: str, lead: re.Match[str], alt: str) -> bool:
    """Whether the leading letter opens an echoed list of options: another option label of the same shape
    ("A: red. B: blue", "A) red B) blue", "(A) red (B) blue") follows it. The list is the question read back,
    not the answer, so its first letter is never read."""
    label = _label_re(alt)
    first = label.match(text, lead.start())  # the leading label itself, as a label (None: "B" alone, "(B)" at end)
    if first is None:
        return False
    shape = (text[first.start()] == "(", first.group(2))
    for m in label.finditer(text, first.end()):
        if m.group(1) != first.group(1) and (text[m.start()] == "(", m.group(2)) == shape:
            return True
    return False


def parse_option(text: str | None, options: Sequence[str] = ("A", "B", "C", "D")) -> Parsed:
    """A multiple-choice letter from an answer position: ``\\boxed{B}``, "answer: (B)", or a leading "B." / "(B)".

    Letters are matched as whole tokens (the article "a" is never option A unless it is
    boxed, parenthesised or after "answer:"). Two different letters joined there ("A or C", "(B) and (D)",
    "B/C") are no answer. A capital "A" (or "I") followed by a lower-case word is that English word, never the
    option: "Answer: A man is walking the dog" is no answer ("A because ...", "A is correct", "A or C" are read as
    letters). A response that opens by echoing the option list ("A: red. B: blue. C: green.", "A) red B) blue")
    is not read as its first letter: only an explicit answer after it ("The answer is B", a box) is. Returns
    the option as given in ``options``.
    """
    if not isinstance(text, str) or not text or not options:
        return NOT_PARSED
    by_key = {str(o).strip().upper(): str(o) for o in options if str(o).strip()}
    if not by_key:
        return NOT_PARSED
    alt = "|".join(re.escape(k) for k in sorted(by_key, key=len, reverse=True))
    for start, end, content in _readable_boxes(text):
        token = re.sub(r"[\s().:\[\]]", "", _unwrap_latex(content)).upper()
        if token in by_key:
            return Parsed(by_key[token], "boxed", (start, end))
    ans_re = re.compile(
        _ANSWER_CUE + r"(?:option\s++)?[\s*_`\"']*+(?:\(\s*+(" + alt + r")\s*+\)|(?-i:(" + alt + r"))(?![\w]))",
        re.IGNORECASE,
    )
    # a second option joined to the one read ("A or C", "(B) and (D)", "B/C", "B, C"): two answers, never one of them
    other_re = re.compile(
        r"[*_`\"'.):]*+\s*+(?:[,/&]|\b(?:or|and|vs\.?)\b)\s*+(?:option\s++)?[*_`\"']*+"
        r"(?:\(\s*+(" + alt + r")\s*+\)|(?-i:(" + alt + r"))(?![\w]))",
        re.IGNORECASE,
    )

    def read(m: re.Match[str], method: str) -> Parsed:
        g = 1 if m.group(1) is not None else 2
        key = m.group(g).upper()
        if _as_word(text, m, g):
            return NOT_PARSED
        other = other_re.match(text, m.end())
        if other is not None and (other.group(1) or other.group(2)).upper() != key:
            return NOT_PARSED
        return Parsed(by_key[key], method, (m.start(g), m.end(g)))

    answers = list(ans_re.finditer(text))
    if answers:
        return read(answers[-1], "answer")
    lead_re = re.compile(r"^[\s*_`\"']*+(?:\(\s*+(" + alt + r")\s*+\)|(" + alt + r")(?=[.):]|\s*+$))")
    lead = lead_re.match(text)
    if lead:
        if _echoes_options(text, lead, alt):
            return NOT_PARSED
        return read(lead, "leading")
    return NOT_PARSED
