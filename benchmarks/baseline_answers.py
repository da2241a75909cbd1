"""The counting answer parsers as they were before the linear rewrite (vidaudit commit ab968e6,
``src/vidaudit/score/answers.py``), kept verbatim below this docstring as the baseline that
``benchmarks/scoring.py`` times side by side with the current ones. Not imported by the package.

Quadratic on adversarial text: ``boxed_spans`` copies the content of every nested box, and
``_INT``/``_FINAL_RE``/``_BARE_RE`` backtrack over long digit and space runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
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
_INT = r"[0-9]+(?:\.0+)?(?![0-9.]*[0-9])"  # "4" or "4.0", never the "4" of "4.5"


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


# --------------------------------------------------------------------------- \boxed{...}

_BOXED_OPEN = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BRACE = re.compile(r"\\[{}]|[{}]")  # an escaped brace is one token, not a brace
_LATEX_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")


def boxed_spans(text: str) -> list[tuple[int, int, str]]:
    """Every ``\\boxed{...}`` with balanced braces as (start, end, content); unclosed ones are skipped.

    Braces are matched in one pass with a stack (escaped ``\\{`` and ``\\}`` are not braces), so
    adversarial text with thousands of unclosed boxes stays linear.
    """
    opens = list(_BOXED_OPEN.finditer(text))
    if not opens:
        return []
    # A brace's partner depends only on the text after it, so scanning starts at the first box, and
    # only at braces (a regex walks the rest of the text in C).
    close_of: dict[int, int] = {}
    stack: list[int] = []
    for m in _BRACE.finditer(text, opens[0].end() - 1):
        tok = m.group()
        if tok == "{":
            stack.append(m.start())
        elif tok == "}" and stack:
            close_of[stack.pop()] = m.start()
    out = []
    for m in opens:
        brace = m.end() - 1
        if brace in close_of:
            end = close_of[brace] + 1
            out.append((m.start(), end, text[m.end() : end - 1]))
    return out


def _unwrap_latex(content: str) -> str:
    prev = None
    while prev != content:
        prev, content = content, _LATEX_WRAP.sub(r"\1", content)
    return content.replace("$", " ").replace("\\", " ")


# --------------------------------------------------------------------------- counts

_INT_RE = re.compile(rf"(?<![0-9.\-])({_INT})")
_WORD_RE = re.compile(rf"\b({_WORD_ALT})\b", re.IGNORECASE)
_FINAL_RE = re.compile(
    r"\bfinal\s+(?:answer|count|total|tally)\b[^0-9a-zA-Z\n]{0,12}?(?:\s*(?:is|was|=|:|of)\s*)?[\s*_`$\\(\[{:]*"
    rf"({_INT}|{_WORD_ALT})\b",
    re.IGNORECASE,
)
_BARE_RE = re.compile(rf"^[\s*_`$(\[]*({_INT}|{_WORD_ALT})[\s*_`$)\].!]*$", re.IGNORECASE)


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
    plain = _unwrap_latex(content)
    if re.search(r"[0-9]", plain):
        ints = _INT_RE.findall(plain)
        if len(ints) != 1 or len(re.findall(r"[0-9]+(?:\.[0-9]+)?", plain)) != 1 or re.search(r"-\s*[0-9]", plain):
            return None
        return _read_count(ints[0])
    words = _WORD_RE.findall(plain)
    return NUMBER_WORDS[words[0].lower()] if len(words) == 1 else None


def parse_count(text: str | None) -> Parsed:
    """The final count: last readable ``\\boxed{}``, then "final answer: N", then a bare answer.

    Methods: ``boxed`` (nested braces such as ``\\boxed{\\text{4}}`` work), ``final_answer``
    ("final answer is 4", "Final count: four"), ``bare`` (the whole response is a number),
    ``word`` (the whole response is a number word up to twenty), else ``unparseable``. Spans cover
    the construct read (the whole ``\\boxed{...}``, or the number after "final answer").
    """
    if not isinstance(text, str) or not text:
        return NOT_PARSED
    for start, end, content in reversed(boxed_spans(text)):
        v = _count_in_box(content)
        if v is not None:
            return Parsed(v, "boxed", (start, end))
    finals = list(_FINAL_RE.finditer(text))
    if finals:
        m = finals[-1]
        v = _read_count(m.group(1))
        if v is not None:
            return Parsed(v, "final_answer", (m.start(1), m.end(1)))
    m = _BARE_RE.match(text)
    if m:
        v = _read_count(m.group(1))
        if v is not None:
            return Parsed(v, "word" if m.group(1).lower() in NUMBER_WORDS else "bare", (m.start(1), m.end(1)))
    return NOT_PARSED


# --------------------------------------------------------------------------- yes / no

_YES = {"yes": True, "no": False, "true": True, "false": False}
_ANSWER_CUE = r"\b(?:final\s+answer|answer|verdict)\s*(?:is|:|=)\s*"
_YN_ANSWER_RE = re.compile(_ANSWER_CUE + r"[\s*_`\"'(\[]*(yes|no)\b", re.IGNORECASE)
_YN_LEAD_RE = re.compile(r"^[\s*_`\"'(\[]*(yes|no)\b(?!\s*(?:or|/)\s*(?:yes|no)\b)", re.IGNORECASE)


def parse_yes_no(text: str | None) -> Parsed:
    """Yes/no from an answer position only: last ``\\boxed{yes}``, last "answer: no", or a leading yes/no.

    A "yes" or "no" elsewhere in the prose is not an answer ("no doubt", "yes-man"), and
    "yes or no" is never read as either.
    """
    if not isinstance(text, str) or not text:
        return NOT_PARSED
    for start, end, content in reversed(boxed_spans(text)):
        word = re.sub(r"[^a-z]", "", _unwrap_latex(content).lower())
        if word in _YES:
            return Parsed(_YES[word], "boxed", (start, end))
    answers = [
        m
        for m in _YN_ANSWER_RE.finditer(text)
        if not re.match(r"\s*(?:or|/)\s*(?:yes|no)\b", text[m.end(1) :], re.IGNORECASE)
    ]
    if answers:
        m = answers[-1]
        return Parsed(_YES[m.group(1).lower()], "answer", (m.start(1), m.end(1)))
    m = _YN_LEAD_RE.match(text)
    if m:
        return Parsed(_YES[m.group(1).lower()], "leading", (m.start(1), m.end(1)))
    return NOT_PARSED


# --------------------------------------------------------------------------- options


def parse_option(text: str | None, options: Sequence[str] = ("A", "B", "C", "D")) -> Parsed:
    """A multiple-choice letter from an answer position: ``\\boxed{B}``, "answer: (B)", or a leading "B." / "(B)".

    Letters are matched as whole tokens (the article "a" is never option A unless it is
    boxed, parenthesised or after "answer:"). Returns the option as given in ``options``.
    """
    if not isinstance(text, str) or not text or not options:
        return NOT_PARSED
    by_key = {str(o).strip().upper(): str(o) for o in options if str(o).strip()}
    if not by_key:
        return NOT_PARSED
    alt = "|".join(re.escape(k) for k in sorted(by_key, key=len, reverse=True))
    for start, end, content in reversed(boxed_spans(text)):
        token = re.sub(r"[\s().:\[\]]", "", _unwrap_latex(content)).upper()
        if token in by_key:
            return Parsed(by_key[token], "boxed", (start, end))
    ans_re = re.compile(
        _ANSWER_CUE + r"(?:option\s+)?[\s*_`\"']*(?:\(\s*(" + alt + r")\s*\)|(?-i:(" + alt + r"))(?![\w]))",
        re.IGNORECASE,
    )
    answers = list(ans_re.finditer(text))
    if answers:
        m = answers[-1]
        g = 1 if m.group(1) is not None else 2
        return Parsed(by_key[m.group(g).upper()], "answer", (m.start(g), m.end(g)))
    lead = re.compile(r"^[\s*_`\"']*(?:\(\s*(" + alt + r")\s*\)|(" + alt + r")(?=[.):]|\s*$))")
    m = lead.match(text)
    if m:
        g = 1 if m.group(1) is not None else 2
        return Parsed(by_key[m.group(g).upper()], "leading", (m.start(g), m.end(g)))
    return NOT_PARSED
