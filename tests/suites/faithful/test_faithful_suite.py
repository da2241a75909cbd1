"""The Suite hooks: registry, prompts (pinned text), strict parsing, baselines' answers, the viewer."""

from __future__ import annotations

import numpy as np
import pytest

from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.suite import ScoreInput
from vidaudit.core.errors import ConfigError
from vidaudit.core.registry import get_suite
from vidaudit.core.types import Condition, Presentation, Sample, VideoRef

SUITE = get_suite("faithful")
VIDEO = VideoRef(path="videos/v.mp4", sha256="x", fps=10.0, width=160, height=120, n_frames=100, duration_s=10.0)


def _sample(answer: str = "Yes", **params) -> Sample:
    p = {
        "role": "target",
        "target_id": "t01",
        "target_sample_id": "v-t01",
        "probe_type": None,
        "source": "synthetic",
        "video_id": "v",
        "source_video_id": "v",
        "sub_sample_ids": ["v-t01-s1"],
        "subs": [
            {
                "sample_id": "v-t01-s1",
                "question": "Does the red circle marked 3 light up?",
                "answer": "Yes",
                "probe_type": "single_fact",
            }
        ],
        "chain_text": ["f01 at 1.00 s: the red circle marked 3 lights up"],
        **params,
    }
    return Sample(
        sample_id="v-t01",
        suite="faithful",
        params=p,
        question="Does X light up before Y does?",
        answer=answer,
        video=VIDEO,
    )


def test_the_suite_is_found_by_name() -> None:
    assert SUITE.name == "faithful" and SUITE.default_prompt in SUITE.prompt_names()


def test_prompt_text_is_pinned() -> None:
    s = _sample()
    native = SUITE.render_prompt(s, Condition(prompt="yes_no"))
    assert native.system is None
    assert native.text == (
        "Question: Does X light up before Y does?\nAnswer with Yes or No. You may explain briefly "
        'first; end your reply with a final line of the form "Answer: Yes" or "Answer: No".'
    )
    frames = SUITE.render_prompt(s, Condition(presentation=Presentation.FRAMES, fps=1.0, prompt="direct"))
    assert frames.text == (
        "The images above are frames of one video in time order, each preceded by its "
        "timestamp.\nQuestion: Does X light up before Y does?\n"
        "Reply with exactly one word: Yes or No."
    )
    assert SUITE.render_prompt(s, Condition(prompt="legend")).text.startswith("The video shows flat coloured shapes")
    with pytest.raises(ConfigError, match="synthetic"):
        SUITE.render_prompt(_sample(source="strand-release"), Condition(prompt="legend"))


@pytest.mark.parametrize(
    "text, said",
    [
        ("Yes, there is no other cup.", "Yes"),  # the release's parser read "no" here
        ("Answer: Yes\n(no further evidence)", "Yes"),  # and here
        ("The red shape lights up first.\nAnswer: No", "No"),
        ("\\boxed{yes}", "Yes"),
        ("It could be yes or no.", None),
        ("I am not sure.", None),
    ],
)
def test_parsing_is_strict(text: str, said: str | None) -> None:
    ts = SUITE.score(ScoreInput(_sample(), text, "ok"))
    assert ts.parse.value == said
    assert ts.correct is (said == "Yes")


def test_failed_calls_and_invalid_gold() -> None:
    assert SUITE.score(ScoreInput(_sample(), None, "api_error")).correct is None
    bad = SUITE.score(ScoreInput(_sample("NA", invalid=["non_yes_no"]), "Answer: Yes", "ok"))
    assert bad.correct is False and bad.metrics["gold_valid"] is False


def test_baseline_answers_are_in_the_answer_format() -> None:
    s = _sample("No")
    assert SUITE.score(ScoreInput(s, SUITE.baselines.oracle_answer(s), "ok")).correct is True
    draws = {SUITE.baselines.chance_answer(s, np.random.default_rng(i)) for i in range(20)}
    assert draws == {"Answer: Yes", "Answer: No"}
    assert SUITE.baselines.constant_answer(s, "yes") == "Answer: Yes"
    with pytest.raises(ConfigError):
        SUITE.baselines.constant_answer(s, "3")
    with pytest.raises(ConfigError):
        SUITE.baselines.chance_answer(s, np.random.default_rng(0), "0-12")


def test_record_params_and_viewer() -> None:
    s = _sample(polarity="positive")
    params = SUITE.record_params(s)
    assert params["role"] == "target" and params["gold"] == "Yes" and "subs" not in params
    ts = SUITE.score(ScoreInput(s, "Answer: Yes", "ok"))
    rec = ScoreRecord(
        trial_id="t",
        sample_id=s.sample_id,
        suite="faithful",
        model="m",
        condition="c",
        group_id="g",
        status="ok",
        correct=ts.correct,
        parse=ts.parse,
        params=params,
        metrics=ts.metrics,
    )
    vt = SUITE.viewer_trial(rec, s, "Answer: Yes")
    facts = dict(vt.facts)
    assert vt.group == "target" and vt.columns["said"] == "Yes"
    assert facts["sub-question 1 [single_fact]"] == "Does the red circle marked 3 light up? — Yes"
    assert facts["chain fact"].startswith("f01")
