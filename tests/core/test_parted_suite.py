"""PartedSuite, the contract's suite made of parts: every hook goes to the part a sample names, parts load
lazily through the registry's loader and are checked like suites, and the report joins the parts in order."""

from __future__ import annotations

import numpy as np
import pytest

from vidaudit.core.contract.records import ScoreRecord, TrialScore
from vidaudit.core.contract.report import Section, SuiteReport
from vidaudit.core.contract.roles import Baselines
from vidaudit.core.contract.suite import AggregateInput, PartedSuite, Prompt, ScoreInput, Suite, SuiteCapabilities
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.types import Condition, Presentation, Sample, VideoRef


class _LetterBaselines(Baselines):
    def __init__(self, letter: str) -> None:
        self.letter = letter

    def oracle_answer(self, sample) -> str:
        return self.letter

    def chance_answer(self, sample, rng, option: str = "") -> str:
        return self.letter


class _Letter(Suite):
    """A part that answers with its own letter (``_JudgedLetter`` asks a judge too)."""

    default_prompt = "ask"

    def __init__(self, name: str, judging: bool = False) -> None:
        self.name = name
        self.capabilities = SuiteCapabilities(judges=judging)
        self.judge_version = f"{name}-1" if judging else ""
        self.baselines = _LetterBaselines(name)

    def prompt_names(self):
        return ["ask", f"ask-{self.name}"]

    def render_prompt(self, sample, condition) -> Prompt:
        return Prompt(None, f"{self.name}: {sample.question}")

    def request_metadata(self, sample):
        return {"own": self.name}

    def score(self, trial: ScoreInput) -> TrialScore:
        return TrialScore(correct=trial.text == self.name, metrics={"judgement": trial.judgement})

    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        n, h = len(inputs.records), len(inputs.human)
        return SuiteReport(
            results={self.name: n, f"{self.name}-human": h},
            sections=[Section(id=self.name, title=self.name)],
            notes=[f"{self.name}: {n}"],
        )


class _JudgedLetter(_Letter):
    def judge_prompt(self, sample, answer):
        return Prompt(None, f"judge {answer}")


A = _Letter("a")
B = _JudgedLetter("b", judging=True)


class _Letters(PartedSuite):
    name = "letters"
    default_prompt = "ask"
    part_param = "letter"
    part_noun = "letter"
    parts = {"b": f"{__name__}:B", "a": f"{__name__}:A"}  # report order: b first
    capabilities = SuiteCapabilities(judges=True)


def _sample(letter: object, sid: str = "s") -> Sample:
    return Sample(
        sample_id=sid,
        suite="letters",
        question="q",
        answer="x",
        params={"letter": letter},
        video=VideoRef(path="v.mp4", fps=10, width=16, height=16, n_frames=3, duration_s=0.3),
    )


def _record(letter: str, i: int, role: str = "model") -> ScoreRecord:
    return ScoreRecord(
        trial_id=f"{letter}{i}",
        sample_id=f"{letter}{i}",
        suite="letters",
        model="m",
        model_role=role,
        group_id="g",
        condition="c",
        status="ok",
        correct=True,
        params={"letter": letter},
    )


def test_hooks_route_to_the_named_part() -> None:
    suite = _Letters()
    a, b = _sample("a"), _sample("b")
    assert suite.baselines.oracle_answer(a) == "a" and suite.baselines.chance_answer(b, np.random.default_rng(0)) == "b"
    assert suite.request_metadata(a) == {"letter": "a", "own": "a"}
    cond = Condition(presentation=Presentation.FRAMES, n_frames=2, prompt="ask-b")
    assert suite.render_prompt(b, cond).text == "b: q"
    with pytest.raises(ConfigError, match="letter a has no prompt 'ask-b'; it has ask, ask-a"):
        suite.render_prompt(a, cond)
    assert suite.prompt_names() == ["ask", "ask-b", "ask-a"]
    assert suite.part("a") is suite.part("a") is A  # loaded once


def test_only_judging_parts_get_a_judgement() -> None:
    suite = _Letters()
    assert suite.score(ScoreInput(_sample("b"), "b", "ok", judgement="yes")).metrics == {"judgement": "yes"}
    assert suite.score(ScoreInput(_sample("a"), "a", "ok", judgement="yes")).metrics == {"judgement": None}
    assert suite.judges_any([_sample("a")]) is False and suite.judges_any([_sample("a"), _sample("b")]) is True
    assert suite.judge_version == "b:b-1"
    assert suite.judge_prompt(_sample("a"), "x") is None and suite.judge_prompt(_sample("b"), "x") is not None


def test_aggregate_joins_the_parts_in_order_and_refuses_unknown_ones() -> None:
    suite = _Letters()
    rep = suite.aggregate(AggregateInput([_record("a", 0), _record("b", 0), _record("a", 1)], {}))
    assert rep.results == {"b": 1, "b-human": 0, "a": 2, "a-human": 0}
    assert [s.id for s in rep.sections] == ["b", "a"] and rep.notes == ["b: 1", "a: 2"]
    with pytest.raises(DataError, match=r"unknown letters letters \['c'\]"):
        suite.aggregate(AggregateInput([_record("c", 0)], {}))


def test_each_part_gets_the_human_records_of_its_own_samples() -> None:
    """AggregateInput.human travels to the part its records name; a part the run has no records of is left out
    with its human records (as a part without records always was)."""
    suite = _Letters()
    human = [_record("a", 7, "human"), _record("a", 8, "human"), _record("b", 9, "human"), _record("c", 9, "human")]
    rep = suite.aggregate(AggregateInput([_record("a", 0)], {}, human=human))
    assert rep.results == {"a": 1, "a-human": 2}
    assert AggregateInput([_record("a", 0)], {}, human=human).with_human[1:] == human


def test_unknown_or_misregistered_parts_are_refused() -> None:
    suite = _Letters()
    with pytest.raises(ConfigError, match="unknown letters letter 'c'; choose from b, a"):
        suite.baselines.oracle_answer(_sample("c"))
    with pytest.raises(ConfigError, match="unknown letters letter None"):
        suite.baselines.oracle_answer(_sample(None))

    class Broken(_Letters):
        parts = {"z": f"{__name__}:A", "y": f"{__name__}:NOPE"}

    with pytest.raises(ConfigError, match="calls itself 'a'"):
        Broken().part("z")
    with pytest.raises(ConfigError, match="does not exist"):
        Broken().part("y")
