"""Final-answer, yes/no, option and timestamp parsers: contract, known traps, and never raising."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.score.answers import NUMBER_WORDS, boxed_spans, parse_agree, parse_count, parse_option, parse_yes_no
from vidaudit.suites.counting.scoring import LABEL_PATTERNS
from vidaudit.suites.counting.timestamps import extract_timestamps

FAST = settings(max_examples=150, deadline=None)


# --------------------------------------------------------------------------- counts


@pytest.mark.parametrize(
    "text, value, method",
    [
        (r"Ledger... so the answer is \boxed{\text{4}}", 4, "boxed"),
        (r"\boxed{\textbf{\text{11}}}", 11, "boxed"),
        (r"\boxed{{7}}", 7, "boxed"),
        (r"first \boxed{3}, corrected: \boxed{5 contacts}", 5, "boxed"),
        (r"\boxed{six}", 6, "boxed"),
        (r"\boxed{4.0}", 4, "boxed"),
        (r"Final answer: 9 \boxed{N}", 9, "final_answer"),
        ("The final answer is 7.", 7, "final_answer"),
        ("Final Answer: **twelve**", 12, "final_answer"),
        ("final count = 3", 3, "final_answer"),
        ("  12\n", 12, "bare"),
        ("Four.", 4, "word"),
    ],
)
def test_count_forms(text: str, value: int, method: str) -> None:
    p = parse_count(text)
    assert (p.value, p.method) == (value, method)
    s, e = p.span
    assert 0 <= s < e <= len(text)


@pytest.mark.parametrize(
    "text",
    [
        "I see 3 contacts and then 4 more",  # numbers in prose are not an answer
        r"\boxed{3-4}",
        r"\boxed{4.5}",
        r"\boxed{-2}",
        r"\boxed{3 or 4}",
        r"\boxed{4",
        "",
        "The ball bounced several times.",
        "twenty-one",
    ],
)
def test_count_unparseable(text: str) -> None:
    p = parse_count(text)
    assert p.method == "unparseable" and p.value is None and p.span is None


def test_boxed_span_covers_nested_braces() -> None:
    text = r"x \boxed{\text{4}} y"
    p = parse_count(text)
    assert text[p.span[0] : p.span[1]] == r"\boxed{\text{4}}"
    assert boxed_spans(r"\boxed{a{b}c} \boxed{d") == [(0, 13, "a{b}c")]


@FAST
@given(st.text())
def test_parsers_never_raise(text: str) -> None:
    for p in (parse_count(text), parse_yes_no(text), parse_option(text)):
        assert (p.value is None) == (p.method == "unparseable")
        if p.span is not None:
            assert 0 <= p.span[0] <= p.span[1] <= len(text)
    extract_timestamps(text, 24.0, label_patterns=LABEL_PATTERNS["state_machine"])


@FAST
@given(st.integers(0, 10_000), st.text(alphabet=st.characters(blacklist_characters="{}\\"), max_size=40))
def test_boxed_integer_round_trip(n: int, prose: str) -> None:
    text = f"{prose} \\boxed{{\\text{{{n}}}}}"
    p = parse_count(text)
    assert (p.value, p.method) == (n, "boxed")
    assert text[p.span[0] : p.span[1]].startswith(r"\boxed")


@FAST
@given(
    st.sampled_from(sorted(NUMBER_WORDS)),
    st.sampled_from(["Final answer: {}", "The final answer is {}.", "{}", r"\boxed{{{}}}"]),
)
def test_number_words(word: str, template: str) -> None:
    p = parse_count(template.format(word.capitalize()))
    assert p.value == NUMBER_WORDS[word]


# --------------------------------------------------------------------------- yes / no and options


@pytest.mark.parametrize(
    "text, value, method",
    [
        ("Yes, the ball touches the wall.", True, "leading"),
        ("No.", False, "leading"),
        (r"Reasoning... \boxed{No}", False, "boxed"),
        ("There is no doubt here. Answer: yes", True, "answer"),
        ("Final answer is **no**", False, "answer"),
    ],
)
def test_yes_no(text: str, value: bool, method: str) -> None:
    p = parse_yes_no(text)
    assert (p.value, p.method) == (value, method)


@pytest.mark.parametrize(
    "text",
    [
        "There is no ball, so I would say yes maybe",  # yes/no in prose only: not an answer position
        "The answer: yes or no? hard to tell",
        "Yes or no: unclear",
        "I cannot tell.",
    ],
)
def test_yes_no_refuses_prose(text: str) -> None:
    assert parse_yes_no(text).method == "unparseable"


@pytest.mark.parametrize(
    "text",
    [
        "No idea.",  # a hedge that opens with "no": read as the answer No, every No-gold item was right
        "Answer: no idea",
        "Answer: No doubt, yes",
        "Answer: no way to tell from these frames",
        "No one can tell from the frames.",
        "No clear answer: the ball is hidden.",
        'Answer: "Yes" or "No"',  # the options echoed, quoted: read as Yes
        "**Yes** / **No**",
        'I cannot see the frames. Please end with "Answer: Yes" or "Answer: No".',  # the format echoed: read as No
        "The format is Answer: Yes or Answer: No",
        "**Answer:** Yes / **Answer:** No",
    ],
)
def test_yes_no_refuses_hedges_and_echoed_options(text: str) -> None:
    assert parse_yes_no(text).method == "unparseable"


@pytest.mark.parametrize(
    "text, value",
    [
        ("No, it does not.", False),
        ("No one receives the ball.", False),  # "no one" answering the question, not a hedge
        ("Answer: No\nAnswer: no idea", False),  # the hedge is no answer; the answer before it stands
        ("No\nanswer is certain", False),  # a hedge reads on its own line only
        ("Answer: Yes, and no other agent does", True),
        ("Answer: no, the way it moves shows it", False),
        ('You asked for "Answer: Yes" or "Answer: No". The circle lights up first.\nAnswer: Yes', True),
        ('No. You wanted "Answer: Yes" or "Answer: No".', False),  # the echo is no answer; the leading No is
        ("Answer: Yes. Answer: No", False),  # two answers, not joined by "or": the last
    ],
)
def test_yes_no_still_reads_answers_beside_hedge_words(text: str, value: bool) -> None:
    assert parse_yes_no(text).value is value


@FAST
@given(
    st.sampled_from(["", "Answer: ", "Final answer: ", "The answer is "]),
    st.sampled_from([("", ""), ('"', '"'), ("'", "'"), ("**", "**"), ("`", "`"), ("(", ")"), ("[", "]"), ("_", "_")]),
    st.sampled_from([" or ", " / ", "/", " and ", " & ", " or\t"]),
    st.sampled_from(["Yes", "No", "yes", "NO"]),
)
def test_yes_no_echoed_options_are_never_an_answer(cue: str, marks: tuple[str, str], sep: str, first: str) -> None:
    other = "No" if first.lower() == "yes" else "Yes"
    text = f"{cue}{marks[0]}{first}{marks[1]}{sep}{marks[0]}{other}{marks[1]}"
    assert parse_yes_no(text).method == "unparseable", text


@pytest.mark.parametrize(
    "text, value",
    [
        ("(B) the red one", "B"),
        ("C. blue", "C"),
        (r"\boxed{D}", "D"),
        ("Answer: (c)", "C"),
        ("The answer is B", "B"),
    ],
)
def test_option(text: str, value: str) -> None:
    assert parse_option(text).value == value


@pytest.mark.parametrize("text", ["A ball moves left", "The answer is a ball", "Option E", "I think so"])
def test_option_refuses_articles_and_unknown_letters(text: str) -> None:
    assert parse_option(text).method == "unparseable"


# --------------------------------------------------------------------------- timestamps


def _times(text: str, duration: float = 24.0, domain: str | None = None) -> list[float]:
    pats = LABEL_PATTERNS[domain] if domain else ()
    return extract_timestamps(text, duration, label_patterns=pats).times


@pytest.mark.parametrize(
    "text, times",
    [
        ("1. 0:05.5 contact\n2. 1:02 contact", [5.5, 62.0]),
        ("at 3.2, t=4.75, time: 6, frame at 7.5", [3.2, 4.75, 6.0, 7.5]),
        ("3.5s 4 sec 6.25 seconds", [3.5, 4.0, 6.25]),
        ("a blink from 3s to 4s, one 1.5-2.0s, one between 7 and 8 seconds, one 0:10-0:11", [3.0, 1.5, 7.0, 10.0]),
        ("Event 3 - 5.0s (count: 4)", [5.0]),
        (r"Event 1, Event 2, count: 4, running count 5, \boxed{5}", []),
        ("every 1 second, 2 seconds apart, the clip is 24 seconds long, it lasts for 3 seconds", []),
        ("Frame 12 (t = 6.0 s)", [6.0]),
        ("0:00:05 and 00:01:02.5", [5.0, 62.5]),
    ],
)
def test_timestamp_forms(text: str, times: list[float]) -> None:
    assert _times(text, duration=100.0) == pytest.approx(times)


def test_merge_and_drop_are_counted() -> None:
    r = extract_timestamps("at 3.00s ... again 0:03.05 ... at 3.3s, then 99s and 25.5s", 24.0)
    assert r.times == pytest.approx([3.0, 3.3])
    assert r.n_merged == 1 and r.n_dropped == 2
    assert extract_timestamps("at 25.0s", 24.0).times == [25.0]  # within duration + 1 s


def test_labels_from_ledger_lines() -> None:
    text = "1. 0:02.0 A -> C (count 1)\n2. 0:03.0 transition to state B (count 2)\n3. 0:04.0 state: D\n4. 5.0s ?"
    r = extract_timestamps(text, 24.0, label_patterns=LABEL_PATTERNS["state_machine"])
    assert r.labels == ["C", "B", "D", None]
    text = "- 0:01.0 hits the left wall\n- 0:02.0 right wall contact\n- at 3.0s it bounces off the Top wall"
    r = extract_timestamps(text, 24.0, label_patterns=LABEL_PATTERNS["bounce_ball"])
    assert [x.lower() for x in r.labels] == ["left", "right", "top"]
    for e in r.events:
        assert re.fullmatch(r"[0-9:. atseconds]+", text[e.span[0] : e.span[1]])


@FAST
@given(
    st.lists(st.floats(0.0, 23.9, allow_nan=False).map(lambda x: round(x, 2)), max_size=12),
    st.sampled_from(["{m}:{s:05.2f}", "t={t:.2f}s", "at {t:.2f} seconds", "{t:.2f}s"]),
)
def test_ledger_round_trip(times: list[float], fmt: str) -> None:
    lines = [
        f"Event {i + 1}: " + fmt.format(m=int(t // 60), s=t % 60, t=t) + f" (count {i + 1})"
        for i, t in enumerate(times)
    ]
    text = "\n".join(lines) + f"\nFinal answer: \\boxed{{{len(times)}}}"
    r = extract_timestamps(text, 24.0)
    kept: list[float] = []
    for t in times:  # expected: text order, merging within 0.1 s of an earlier kept one
        if not any(abs(t - k) <= 0.1 + 1e-9 for k in kept):
            kept.append(t)
    assert r.times == pytest.approx(kept, abs=1e-6)
    assert r.n_merged == len(times) - len(kept) and r.n_dropped == 0


# --------------------------------------------------------------------------- silent misreads refused
# A number, letter or yes/no that is only part of what the model answered is never read as its answer.


@pytest.mark.parametrize(
    "text",
    [
        "Final answer: 1,024",  # thousands separator: was 1
        "final answer: 1 000",
        "Final answer: -3",  # a negative count: was 3
        "final answer: $-3$",
        "Final answer: \u2212 3",
        "Final answer: twenty-one",  # was 20
        "Final answer: one hundred",  # was 1
        "final answer: two thousand",
        "final answer: 5 or 6",  # a hedge between two counts: was 5
        "final answer: 5-6",
        "Final answer: 5\u20136",
        "Final answer: 5 to 6",
        "final answer: 5/6",
        "final answer: 2 + 3 = 5",  # arithmetic: was 2
        "final answer: 12:30",  # a time: was 12
        "final answer: 5%",
        "Final answer: <5",
        "Final Answer: ~5",
        "final answer: \u2265 5",
        r"\boxed{not 5}",  # a negated box: was 5
        r"\boxed{\neq 5}",
        r"\boxed{\geq 5}",
        r"\boxed{>5}",
        r"\boxed{5+}",
        r"\boxed{5 or more}",
        r"\boxed{at least five}",
        r"\boxed{about 5}",
        r"\boxed{one hundred}",  # was 1
    ],
)
def test_count_part_of_another_figure_is_refused(text: str) -> None:
    assert parse_count(text) == parse_count("")


@pytest.mark.parametrize(
    "text, value",
    [
        ("Final answer - 5", 5),  # a dash as separator, not a sign
        ("Final count \u2014 5", 5),
        ("Final answer: 5, one per bounce", 5),
        ("Final answer: 4 - one per wall", 4),
        ("Final answer: **5**.", 5),
        ("Final answer: 5 blinks at 1.0 s and 2.0 s", 5),
        (r"\boxed{5~contacts}", 5),  # LaTeX's ~ is a space
        (r"\boxed{\text{total: } 5}", 5),
    ],
)
def test_count_with_words_around_is_still_read(text: str, value: int) -> None:
    assert parse_count(text).value == value


@FAST
@given(
    st.integers(0, 999),
    st.integers(0, 999),
    st.sampled_from(["{a} or {b}", "{a}-{b}", "{a} to {b}", "{a}/{b}", "{a} and {b}", "{a}, {b}", "{a},{b:03d}"]),
    st.sampled_from(["Final answer: {}", "The final count is **{}**", "final answer = {}."]),
)
def test_two_numbers_after_final_answer_are_never_one(a: int, b: int, joined: str, cue: str) -> None:
    """Two counts joined after "final answer" are never read as the first (nor as any count but the one written)."""
    p = parse_count(cue.format(joined.format(a=a, b=b)))
    assert not p.ok


@FAST
@given(st.integers(1, 10_000), st.sampled_from(["-", "$-", "\u2212", "(-", "<", ">", "~", "\u2264", "\u2248"]))
def test_a_signed_or_bounded_count_is_never_read(n: int, sign: str) -> None:
    for text in (f"Final answer: {sign}{n}", f"\\boxed{{{sign}{n}}}"):
        assert not parse_count(text).ok, text


@pytest.mark.parametrize(
    "text",
    [
        "The answer is A or C",  # was A
        "Answer: A and C",
        "(A) or (C)",
        "The answer is (B) or (D)",
        "answer: B/C",
        "Answer: B, C",
        "Answer: **B** or **C**",
        "A. or C.",
    ],
)
def test_two_option_letters_are_never_one(text: str) -> None:
    assert not parse_option(text).ok


@FAST
@given(
    st.sampled_from("ABCD"),
    st.sampled_from("ABCD"),
    st.sampled_from([" or ", " and ", "/", ", ", " & "]),
    st.sampled_from(["The answer is {}", "Answer: {}", "{}", "**Answer:** {}"]),
    st.booleans(),
)
def test_two_different_letters_are_never_scored_as_one(x: str, y: str, sep: str, cue: str, paren: bool) -> None:
    a, b = (f"({x})", f"({y})") if paren else (x, y)
    p = parse_option(cue.format(a + sep + b))
    if x != y:
        assert not p.ok
    else:
        assert p.value in (None, x)


@pytest.mark.parametrize(
    "text, value",
    [("Answer: B, because C is red", "B"), ("Answer: B. C is wrong because", "B"), ("(A) or (A)", "A")],
)
def test_one_letter_beside_another_in_prose_is_read(text: str, value: str) -> None:
    assert parse_option(text).value == value


@pytest.mark.parametrize(
    "text",
    [
        "Answer: A man is walking the dog",  # was A: free text whose first word is the article
        "The answer is A person opening the door.",  # was A
        "Answer: A dog",
        "A: red. B: blue. C: green.",  # was A: the option list read back, no answer after it
        "A) red B) blue -> B",  # was A
        "(A) the red ball (B) the blue ball",  # was A
        "A. red\nB. blue\nC. green",  # was A
    ],
)
def test_an_article_or_an_echoed_option_list_is_no_letter(text: str) -> None:
    assert not parse_option(text).ok


@pytest.mark.parametrize(
    "text, value",
    [
        ("A: red. B: blue. C: green. The answer is B", "B"),  # the explicit answer after the echo
        ("A. red\nB. blue\nC. green\nAnswer: C", "C"),
        ("(A) red (B) blue \\boxed{B}", "B"),
        ("Answer: A because the ball moves left", "A"),  # words that follow a letter answer
        ("Answer: A is correct", "A"),
        ("Answer: A.", "A"),
        ("Answer: A) the red one", "A"),
        ("Answer: A\nthe ball moves left.", "A"),  # a new line ends the answer
        ("A. The ball moves left.", "A"),
        ("B. Option A: red is wrong.", "B"),  # another letter in another shape is prose, not an echoed list
    ],
)
def test_a_letter_answer_beside_an_echo_or_words_is_read(text: str, value: str) -> None:
    assert parse_option(text).value == value


_NOUNS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8).filter(
    lambda w: w not in {"because", "since", "as", "is", "was", "seems", "appears", "looks", "fits", "matches",
                        "would", "should", "must", "best", "or", "and", "vs"}
)  # fmt: skip


@FAST
@given(
    _NOUNS, st.lists(_NOUNS, max_size=4), st.sampled_from(["Answer: {}", "The answer is {}", "{}", "**Answer:** {}"])
)
def test_a_sentence_opened_by_the_article_is_never_option_a(noun: str, rest: list[str], cue: str) -> None:
    """ "A <noun> ..." after an answer cue (or alone) is an English sentence, never option A."""
    assert not parse_option(cue.format(" ".join(["A", noun, *rest]) + ".")).ok


@FAST
@given(
    st.lists(st.sampled_from("ABCD"), min_size=2, max_size=4, unique=True),
    st.lists(_NOUNS, min_size=4, max_size=4),
    st.sampled_from(["{}: {}. ", "{}) {} ", "({}) {} ", "{}. {}\n"]),
    st.sampled_from(["", "The answer is {}", "Answer: ({})", "\\boxed{{{}}}", "So {}."]),
    st.sampled_from("ABCD"),
)
def test_an_echoed_option_list_is_never_its_first_letter(
    letters: list[str], texts: list[str], item: str, tail: str, answer: str
) -> None:
    """An echoed list of options is never read as its first letter: only an explicit answer after it is read."""
    text = "".join(item.format(k, t) for k, t in zip(letters, texts, strict=False)) + tail.format(answer)
    p = parse_option(text)
    explicit = tail.startswith(("The answer", "Answer", "\\boxed"))
    assert p.value == (answer if explicit else None), text


@pytest.mark.parametrize("text", ["Yes and no", "yes & no", "Answer: yes and no", "No-one knows", "yes-man"])
def test_yes_and_no_together_or_a_hyphenated_word_is_not_an_answer(text: str) -> None:
    assert not parse_yes_no(text).ok


@pytest.mark.parametrize("text", ["I agree and disagree", "Answer: AGREE and DISAGREE"])
def test_agree_and_disagree_together_is_not_an_answer(text: str) -> None:
    assert not parse_agree(text).ok


@pytest.mark.parametrize(
    "text",
    [
        "Final answer: 5... wait, 6",  # was 5
        "Final answer: 4 (possibly 5)",  # was 4
        r"\boxed{5} no wait, \boxed{at least 6}",  # was 5: the refused last box let the earlier one be read
        r"\boxed{3} \boxed{5-6}",  # was 3
        "Final answer: 5. Actually, it's six.",
        "final answer: 5, no, 6",
        r"\boxed{5} Wait, make that 7",
        "Final Answer: **4**\n\nCorrection: 3",
    ],
)
def test_count_then_a_correction_is_not_the_first_count(text: str) -> None:
    """A second, different count after a correction or hedge word (or a last box that writes a number it does not
    give) makes the answer ambiguous: neither count is read."""
    assert not parse_count(text).ok


@pytest.mark.parametrize(
    "text, value",
    [
        (r"\boxed{5}. Actually, 5 is right.", 5),  # the same count again
        ("Final answer: 3 blinks, probably 2 s apart", 3),  # a time after the hedge, not a count
        ("Final answer: 4. Maybe 1.5 s between them", 4),
        ("Final answer: 5\n\nActually, let me list them: at 1.0 s, at 2.0 s", 5),  # no count right after the word
        (r"Final answer: 9 \boxed{N}", 9),  # a box with no number is a placeholder, passed over
        (r"first \boxed{3}, corrected: \boxed{5 contacts}", 5),  # the last box gives the count
    ],
)
def test_a_correction_word_without_another_count_leaves_the_count(text: str, value: int) -> None:
    assert parse_count(text).value == value


@FAST
@given(
    st.integers(0, 20),
    st.integers(0, 20),
    st.sampled_from(["Final answer: {a}", "The final count is **{a}**", r"\boxed{{{a}}}", "{a}"]),
    st.sampled_from(["... wait, {b}", " (possibly {b})", ". Actually, {b}.", "\n\nCorrection: {b}", " or rather {b}"]),
    st.booleans(),
)
def test_a_corrected_count_is_never_the_first(a: int, b: int, answer: str, correction: str, words: bool) -> None:
    """Whatever the two counts and however the correction is worded, the first count is never read when a different
    one follows the correction; the same count repeated leaves it."""
    second = [k for k, v in NUMBER_WORDS.items() if v == b][-1] if words else str(b)
    p = parse_count(answer.format(a=a) + correction.format(b=second))
    assert p.value in ((None,) if a != b else (a, None))
    if a == b and answer != "{a}":
        assert p.value == a


@pytest.mark.parametrize(
    "text",
    ["at 2 minutes", "at 1.5 min", "at 1m30s", "at 1 min 30 s", "at 2.5 ms", "at 3 hours", "time: 4 mins", "@ 5m"],
)
def test_a_time_not_in_seconds_is_never_read_as_seconds(text: str) -> None:
    """Each of these was read as a time in seconds the model did not write (2 minutes as 2.0 s, 1m30s as 1 s and
    30 s, 2.5 ms as 2.5 s): a number in minutes, milliseconds or hours is no event (this reader does not convert
    them), and the seconds of "1m30s" / "1 min 30 s" are not a time of their own."""
    assert _times(text, duration=200.0) == []


@pytest.mark.parametrize("text, times", [("at 2 s, 5 min later", [2.0]), ("at 3.5 s (about 3500 ms)", [3.5])])
def test_a_time_in_seconds_beside_one_in_another_unit_is_read(text: str, times: list[float]) -> None:
    assert _times(text, duration=200.0) == times


@pytest.mark.parametrize(
    "text",
    [
        "at -2 s",  # was 2 s
        "t=-2.5s",
        "at \u22122 s",  # a minus sign
        "(-1.5 s)",
        "Event 1: -2.0s",
        "at 1:75",  # an invalid clock: was 1 s
        "at 12:345",
        "at 0.5:00",
        "at 1:23:75",
        "at 0:05,5",  # a clock with a decimal comma: was 5 s
        "at 1,5 s",  # a decimal comma: was 1 s and 5 s
        "at 1,024 s",
        "not at 3 s",  # a negated cue: was 3 s
        "never at 3 s",
        "There was no blink at 3 s.",
        "Nothing happens at 3 s",
    ],
)
def test_a_negative_time_an_invalid_clock_a_decimal_comma_or_a_negated_cue_is_no_event(text: str) -> None:
    """Each was read as a time the model did not report: the sign of "-2 s" dropped, the "1" of the invalid clock
    "1:75", the 1 and the 5 of "1,5 s" (1.5 s in a decimal-comma locale, or a list written without a space: not
    settled, so neither), and the time in "not at 3 s"."""
    assert _times(text, duration=200.0) == []


@pytest.mark.parametrize(
    "text, times",
    [
        ("3 -4s", [4.0]),  # a dash after a number is not a sign (the reference reads 4 s)
        ("Event 3 - 5.0s", [5.0]),
        ("1.5-2.0s", [1.5]),
        ("0:10-0:11", [10.0]),
        ("at 1, 2 s", [1.0, 2.0]),  # a comma and a space: a list
        ("at 2 s, not at 3 s", [2.0]),
        ("at 3 s (not at 4 s), at 5 s", [3.0, 5.0]),
        ("No, at 3 s it hits the wall.", [3.0]),  # a "No," that answers a question is not a negated cue
        ("0:05:30", [330.0]),
    ],
)
def test_a_dash_comma_or_no_that_is_not_a_sign_or_negation_is_read(text: str, times: list[float]) -> None:
    assert _times(text, duration=400.0) == times


@pytest.mark.parametrize(
    "text, times",
    [
        ("at 1, 2 and 3 s", [1.0, 2.0, 3.0]),  # was 1 s and 3 s: the middle number was dropped
        ("at 1, 2, 3 s", [1.0, 2.0, 3.0]),
        ("at 1.5, 2.5, and 4 seconds", [1.5, 2.5, 4.0]),
        ("t=1, 2 and 3s", [1.0, 2.0, 3.0]),
        ("at 1 s, 2 s and 3 s", [1.0, 2.0, 3.0]),
        ("at 1, 2 and 3 s later", [1.0]),  # the list does not end at a time: only the cued first number
        ("at 1, 2 and 3 min", [1.0]),
        ("at 3, 2 blinks", [3.0]),  # no unit closes it: not a list of times
        ("Event 1, 2.5 s", [2.5]),  # no cue opens it: an ordinal and a time
        ("1, 2 and 3 s", [3.0]),
        ("count: at 1, 2 and 3 s", [3.0]),  # the opener is no time
        ("at 1,\n2 and 3 s", [1.0, 3.0]),  # a list is on one line
        ("at 2 s,3 s", []),  # a comma glued to both: a decimal comma or a list typed without a space, not read
    ],
)
def test_a_list_of_times_sharing_a_cue_and_a_unit_is_read_whole(text: str, times: list[float]) -> None:
    """ "at 1, 2 and 3 s": the cue opens the list and the unit closes it, so every number in it is a time; the
    frame-aware reader (which reads the numbers one by one) reads the same."""
    assert _times(text, duration=100.0) == times
    framed = extract_timestamps(text + "\nThen frame 99.", 100.0, frame_times=[0.5] * 4)
    assert framed.times == times and framed.n_frame_out_of_range == 1


@FAST
@given(
    st.lists(st.integers(0, 23), min_size=2, max_size=6),
    st.sampled_from(["at ", "t=", "around "]),
    st.sampled_from([", ", " and ", ", and "]),
    st.sampled_from([" s", "s", " seconds", " sec"]),
)
def test_every_number_of_a_list_of_times_is_read(ts: list[int], cue: str, sep: str, unit: str) -> None:
    text = cue + sep.join(map(str, ts)) + unit
    kept: list[float] = []
    for t in ts:  # text order, merging repeats
        if float(t) not in kept:
            kept.append(float(t))
    assert _times(text, duration=100.0) == kept, text


@FAST
@given(
    st.floats(0.1, 20.0).map(lambda x: round(x, 1)),
    st.sampled_from(["at {}s", "t={}s", "at {} seconds", "time: {}", "at {}"]),
    st.sampled_from(["-", "\u2212"]),
    st.sampled_from(["", "Event 1: ", "The ball hits the wall "]),
)
def test_a_negative_time_is_never_read_as_positive(t: float, fmt: str, sign: str, before: str) -> None:
    """A time written with a minus sign after its cue is never read, in particular never as its absolute value."""
    text = before + fmt.replace("{}", sign + "{}").format(t)
    assert _times(text, duration=100.0) == [], text


@FAST
@given(st.integers(0, 59), st.integers(60, 99), st.sampled_from(["at {}", "{} s", "t={}", "time: {}"]))
def test_an_invalid_clock_is_never_read(m: int, ss: int, fmt: str) -> None:
    """m:ss with ss >= 60 is no clock: neither m nor anything else is read from it."""
    assert _times(fmt.format(f"{m}:{ss}"), duration=4000.0) == []
