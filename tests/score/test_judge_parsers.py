"""The judge-verdict and AGREE/DISAGREE parsers: total on arbitrary text, strict about answer positions."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.score.answers import parse_agree, parse_yes_no
from vidaudit.score.judge import read_verdict

PROSE = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300)


@settings(max_examples=300)
@given(PROSE)
def test_parsers_never_raise(text: str) -> None:
    for kind in ("bool", "score"):
        v = read_verdict(text, "hallucinated_summary", kind=kind)
        assert v.ok == (v.value is not None)
    p = parse_agree(text)
    assert p.ok == (p.value is not None)


WORDS = st.sampled_from(["the", "video", "shows", "a", "cat", "moving", "left", "not", "clearly", "it", "is"])


@given(st.lists(WORDS, min_size=1, max_size=8), st.lists(WORDS, max_size=8), st.sampled_from(["no", "No", "NO"]))
def test_a_no_inside_a_sentence_never_decides(before: list[str], after: list[str], no: str) -> None:
    text = " ".join([*before, no, *after])
    assert not parse_yes_no(text).ok
    assert not parse_agree(text).ok


@given(st.lists(WORDS, min_size=1, max_size=8), st.sampled_from(["agree", "disagree", "AGREE", "Disagree"]))
def test_an_agree_inside_a_sentence_never_decides(before: list[str], word: str) -> None:
    assert not parse_agree(" ".join([*before, word])).ok


@given(
    st.sampled_from(["AGREE", "DISAGREE"]),
    st.sampled_from(["", ".", "!", " - the video shows it"]),
    st.sampled_from(["", "I ", "**", "Answer: ", "\\boxed{"]),
)
def test_agree_in_answer_positions(word: str, tail: str, head: str) -> None:
    close = "}" if head.startswith("\\boxed") else ""
    text = head + word + close + tail
    p = parse_agree(text)
    assert p.ok and p.value is (word == "AGREE"), text


def test_agree_refuses_non_answers() -> None:
    for t in ("I do not agree", "AGREE or DISAGREE?", "agreed", "Not sure.", "", "no, I agree"):
        assert not parse_agree(t).ok, t


@given(st.booleans(), PROSE.filter(lambda s: "{" not in s), PROSE.filter(lambda s: "{" not in s), st.booleans())
def test_verdict_in_prose_or_fence(value: bool, before: str, after: str, fenced: bool) -> None:
    obj = json.dumps({"hallucinated_summary": value, "explanation": "x"})
    body = f"```json\n{obj}\n```" if fenced else obj
    v = read_verdict(f"{before}{body}{after}", "hallucinated_summary")
    assert v.ok and v.value is value and v.explanation == "x"


@given(st.sampled_from([0, 0.5, 1, "1.0", "0.5"]))
def test_score_verdicts(x: object) -> None:
    v = read_verdict(json.dumps({"score": x}), "score", kind="score")
    assert v.ok and v.value == float(x)


def test_unparseable_verdicts_say_why() -> None:
    cases = {
        "The summary is fine.": "no JSON object",
        '{"hallucinated_summary": "maybe"}': "is not true or false",
        '{"other": true}': "no JSON object",
        '{"hallucinated_summary": true} then {"hallucinated_summary": false}': "both ways",
        '{"score": 0.7}': "is not",
    }
    for text, why in cases.items():
        kind = "score" if "score" in text else "bool"
        field = "score" if kind == "score" else "hallucinated_summary"
        v = read_verdict(text, field, kind=kind)
        assert not v.ok and why in v.why, (text, v)
    assert not read_verdict('{"score": true}', "score", kind="score").ok  # a bool is not a score
    assert not read_verdict('{"score": NaN}', "score", kind="score").ok
