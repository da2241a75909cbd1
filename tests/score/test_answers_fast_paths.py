"""The count parser's and box readers' fast paths read every text as the code before them (issue 24, fourth round).

``parse_count``, ``box_bounds`` and ``boxed_spans`` decide the usual shapes (no backslash; one backslash
that opens ``\\boxed{`` closed by the first "}") with ``str`` methods, and ``parse_count`` builds its
``Parsed`` without the frozen ``__init__``. The oracle is ``answers_reference.py``, the code as it was
before; texts are built around the fast paths' edges: other backslashes, ``\\fbox``, spaces before "{",
nested, unclosed and escaped braces, a "}" before the box, digit runs around 15, non-ASCII digits,
several boxes and "final answer" forms.
"""

from __future__ import annotations

from dataclasses import fields

from hypothesis import given, settings
from hypothesis import strategies as st

import answers_reference as ref
from vidaudit.score.answers import Parsed, box_bounds, boxed_spans, parse_count

PIECES = st.sampled_from(
    [
        "\\",
        "\\\\",
        "\\boxed{",
        "\\boxed {",
        "\\boxed\n{",
        "\\boxed",
        "\\fbox{",
        "\\fbox {",
        "boxed{",
        "\\box{",
        "\\boxed{\\boxed{",
        "\\text{",
        "\\mathbf{",
        "\\{",
        "\\}",
        "{",
        "}",
        "}}",
        "{{",
        "$",
        "-",
        ".",
        ".0",
        " ",
        "\n",
        "0",
        "7",
        "42",
        "007",
        "9" * 14,
        "9" * 15,
        "9" * 16,
        "1" * 20,
        "\u0663",
        "\u00b2",
        "\uff17",
        "four",
        "twenty",
        "x",
        "final answer: ",
        "Final Answer: ",
        "2. Final Answer: ",
        "final count is ",
        "FINAL TOTAL = ",
        "answer",
        "- Event 1: 0:01.50, object turns on, running count 1\n",
        "\ud800",
        "\x00",
    ]
)
DIGITS = st.one_of(
    st.text(alphabet="0123456789", min_size=0, max_size=18),
    st.sampled_from(["9" * 15, "9" * 16, "9" * 17, "9007199254740993", "0" * 16, "\u0663", "\u00b2"]),
    st.text(alphabet="0123456789\u0663\u00b2\uff17 .-x{}\\", min_size=0, max_size=18),
)
PLAIN = st.text(alphabet=st.sampled_from("ab 01:\n.{}-$*"), max_size=40)
OPENERS = st.sampled_from(
    [
        "\\boxed{",
        "\\boxed{",
        "\\boxed {",
        "\\fbox{",
        "\\boxed{{",
        "boxed{",
        "\\boxedx",
        "\\boxed(",
        "\\boxed}",
        "\\boxe{",
        "\\Boxed{",
        "\\\\boxed{",
    ]
)
CLOSERS = st.sampled_from(["}", "}", "}}", "", "\\}", "{}", " }"])
BOX = st.builds(lambda opener, content, close: opener + content + close, OPENERS, DIGITS, CLOSERS)
AROUND = st.one_of(
    PLAIN, st.lists(PIECES, max_size=5).map("".join), st.builds(lambda a, box, b: a + box + b, PLAIN, BOX, PLAIN)
)  # another box before or after
# the usual response with one thing changed: the prefix, the opener, the content, the closer or the rest
ONE_BOX = st.builds(lambda pre, box, post: pre + box + post, AROUND, BOX, AROUND)
TEXT = st.one_of(ONE_BOX, st.lists(PIECES, max_size=30).map("".join), st.text(max_size=80))


def _same_parsed(new: Parsed, old: Parsed) -> None:
    assert new == old and repr(new) == repr(old) and type(new) is type(old)
    assert type(new.value) is type(old.value)  # an int, never a bool or a float that compares equal
    assert list(new.__dict__) == [f.name for f in fields(Parsed)] and new.__dict__ == old.__dict__
    assert new.to_dict() == old.to_dict()


@settings(max_examples=1500, deadline=None)
@given(TEXT, st.booleans())
def test_the_fast_paths_read_what_the_reference_reads(text: str, boxes_first: bool) -> None:
    if boxes_first:  # the extractor may read the boxes first; neither order changes either answer
        assert boxed_spans(text) == ref.boxed_spans(text)
    _same_parsed(parse_count(text), ref.parse_count(text))
    assert boxed_spans(text) == ref.boxed_spans(text)
    assert box_bounds(text) == ref.box_bounds(text)


def test_the_edges_by_name() -> None:
    for text in [
        "\\boxed{7}",
        "2. Final Answer: \\boxed{12}",
        "\\boxed{" + "9" * 15 + "}",
        "\\boxed{" + "9" * 16 + "}",
        "\\boxed{}",
        "\\boxed{\u0663}",
        "\\boxed {3}",
        "\\fbox{3}",
        "} \\boxed{3}",
        "\\boxed{3} \\boxed{4}",
        "\\boxed{3",
        "\\boxed{{3}}",
        "\\boxed{3\\}}",
        "\\\\boxed{3}",
        "final answer: 5",
        "5",
        "five",
        "x\\boxed{3}y\\",
        "\\boxed{4}}",
        "\\boxed{0012}",
        "\\boxed{-3}",
        "\\boxed{3.0}",
        "no box here",
        "",
        "\\",
        "\\boxed{four}",
        "\\boxed{ 3}",
    ]:
        _same_parsed(parse_count(text), ref.parse_count(text))
        assert boxed_spans(text) == ref.boxed_spans(text), text
        assert box_bounds(text) == ref.box_bounds(text), text
    assert parse_count(None) is ref.parse_count(None)


def test_the_boxes_parse_count_leaves_are_only_its_texts() -> None:
    """``boxed_spans`` reuses the box ``parse_count`` just read only for that very text."""
    parse_count("\\boxed{3}")
    for other in ["\\boxed{3", "ab \\boxed{3}", "\\boxed{3} \\boxed{4}", "", "\\boxed{3}"]:
        assert boxed_spans(other) == ref.boxed_spans(other)
    text = "- Event 1: 0:01.50\n2. Final Answer: \\boxed{12}"
    assert parse_count(text).span == (36, 46) and boxed_spans(text) == [(36, 46, "12")] == ref.boxed_spans(text)
