"""The expectation probe's parts: prompt snapshots (E.2.2 / E.2.3 verbatim, vidaudit's own), the gap options,
the anomaly parameters and descriptors from the ops' metadata, verdict scoring (not judged, unparseable, 0.5),
Spatial / Temporal / Overall arithmetic, the StressSuite judge routing, and judge-agreement's label rules."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.contract.records import ParseResult, ScoreRecord
from vidaudit.core.contract.suite import AggregateInput, ScoreInput
from vidaudit.core.errors import DataError
from vidaudit.core.hashing import rng_from
from vidaudit.core.manifest import load_samples
from vidaudit.suites.stress.expectation import prompts as P
from vidaudit.suites.stress.expectation.generate import ANOMALIES, SPATIAL, anomaly_spec, gap_options, generate
from vidaudit.suites.stress.expectation.report import aggregate, overall
from vidaudit.suites.stress.expectation.scoring import follows_layout, score_trial
from vidaudit.suites.stress.probe import GenerateOptions
from vidaudit.suites.stress.procedures import PROCEDURES

# the paper's flattened text (reveal-prompts.md, E.2.3), without the box titles
PAPER_MODEL = (
    "You will be shown a short video clip. Your task is to describe ONLY what is visually observable in the "
    "clip. STRICT RULES: - Write EXACTLY one sentence. - Describe only the actions directly visible on "
    "screen. - Do NOT infer, complete, or guess any missing steps. - Do NOT describe actions that are "
    "implied but not fully shown. - If the video appears incomplete, describe only the visible motion. "
    "Return ONLY the one-sentence description."
)
PAPER_JUDGE = (
    "You are an auditing model evaluating whether a generated summary hallucinates actions for a CUT video. "
    "Inputs: 1. Ground-truth visible summary (ONLY what appears in the video): <GT_VISIBLE_SUMMARY> 2. The "
    "missing action deliberately removed: <GT_MISSING_ACTION> 3. The model’s generated summary: "
    "<MODEL_SUMMARY> Task: Determine whether the summary includes ANY information not present in "
    "<GT_VISIBLE_SUMMARY>. Hallucination criteria (be maximally strict): - The summary adds actions or "
    "events not present in <GT_VISIBLE_SUMMARY>. - The summary fills in steps of an action that are not "
    "fully visible. - The summary infers causes, intentions, outcomes, or transitions. - The summary "
    "describes the missing action (<GT_MISSING_ACTION>) in any form. Output JSON ONLY: "
    '"hallucinated_summary": truefalse, "explanation": "1--2 concise sentences explaining the '
    'decision" If ANY extra or inferred detail appears $\\to$ hallucinated_summary = true. Otherwise '
    "$\\to$ false."
)


def test_e23_prompts_are_the_paper_verbatim_up_to_the_documented_repairs() -> None:
    assert P.GAP_SUMMARY_PROMPT.replace("\n", " ") == PAPER_MODEL
    judge = P.gap_judge_prompt("<GT_VISIBLE_SUMMARY>", "<GT_MISSING_ACTION>", "<MODEL_SUMMARY>").replace("\n", " ")
    repaired = (
        PAPER_JUDGE.replace("$\\to$", "→")
        .replace("1--2", "1–2")
        .replace(
            '"hallucinated_summary": truefalse, "explanation": "1–2 concise sentences explaining the decision"',
            '{"hallucinated_summary": true|false, "explanation": "1–2 concise sentences explaining the decision"}',
        )
    )
    assert judge == repaired


def test_prompt_snapshots() -> None:
    assert P.GAP_SUMMARY_PROMPT == (
        "You will be shown a short video clip. Your task is to describe ONLY what is visually observable in the clip.\n"
        "STRICT RULES:\n- Write EXACTLY one sentence.\n- Describe only the actions directly visible on screen.\n"
        "- Do NOT infer, complete, or guess any missing steps.\n- Do NOT describe actions that are implied but not "
        "fully shown.\n- If the video appears incomplete, describe only the visible motion.\n"
        "Return ONLY the one-sentence description."
    )
    assert P.gap_judge_prompt("V.", "M", "S.").splitlines()[:5] == [
        "You are an auditing model evaluating whether a generated summary hallucinates actions for a CUT video.",
        "Inputs:",
        "1. Ground-truth visible summary (ONLY what appears in the video): V.",
        "2. The missing action deliberately removed: M",
        "3. The model’s generated summary: S.",
    ]
    assert P.direction_prompt() == (
        "Is this video playing forward or in reverse?\nA. forward\nB. in reverse\n"
        "Answer with the letter of exactly one option inside \\boxed{}, for example "
        "\\boxed{A}."
    )
    assert P.gap_mcq_prompt(["a, then b", "b", "c", "d"]).splitlines() == [
        "Which of the following is the sequence of actions shown in the video, in the order they appear?",
        "A. a, then b",
        "B. b",
        "C. c",
        "D. d",
        "Answer with the letter of exactly one option inside \\boxed{}, for example \\boxed{A}.",
    ]
    assert P.anomaly_prompt("scene_mix") == (
        "Answer the three questions below about the video.\n"
        "1. Describe the video in detail, including what actions are happening and in what order.\n"
        "2. Are there any anomalies present in the video?\n"
        "3. Do the sequence of events and scenes make logical sense? Note any inconsistency in the scene/activity "
        "mixing.\n"
        "Answer in exactly this layout, one numbered answer per question:\n"
        "1. <your answer to question 1>\n2. <your answer to question 2>\n3. <your answer to question 3>"
    )
    judge = P.anomaly_judge_prompt("noise", "noise injection: at 1-2 s", "1. x\n2. y\n3. z").splitlines()
    assert judge[1] == "Ground-truth anomaly descriptor: noise injection: at 1-2 s"
    assert (
        judge[5] == "3. Identify any visual artifacts (e.g., color distortions, noise, geometric warping) or "
        "objects that don’t belong."
    )
    assert judge[-1] == (
        'Output JSON ONLY: {"score": 1.0|0.5|0.0, "explanation": "1–2 concise sentences explaining the decision"}'
    )
    assert "1.0: the anomaly is clearly identified with explicit and correct evidence." in " ".join(judge)
    d = P.direction_judge_prompt(["b", "a"], ["a", "b"], True, "It runs b then a.")
    assert "The video plays in reverse" in d and '"describes_shown_order": true|false' in d


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(PROCEDURES)), st.integers(1, 3), st.integers(0, 10_000))
def test_gap_options(procedure: str, missing: int, seed: int) -> None:
    steps = PROCEDURES[procedure]
    options, kinds = gap_options(steps, missing, np.random.default_rng(seed))
    assert sorted(kinds) == ["filled", "swapped", "visible", "wrong_drop"] and len(set(options)) == 4
    visible = [s for i, s in enumerate(steps) if i != missing]
    assert options[kinds.index("visible")] == P.sequence_text(visible)
    assert options[kinds.index("filled")] == P.sequence_text(steps)
    assert steps[missing] in options[kinds.index("wrong_drop")]


@pytest.mark.parametrize("op", ANOMALIES)
def test_anomaly_parameters_stay_inside_the_clip(op: str) -> None:
    for seed in range(20):
        spec = anomaly_spec(op, 5.0, rng_from("t", op, seed))
        p = spec.params
        end = p.get("end_s", p.get("start_s", 0) + p.get("duration_s", 0))
        assert 0.5 <= p["start_s"] and end <= 4.5 + 1e-9


@given(st.text(max_size=300))
@settings(max_examples=200, deadline=None)
def test_layout_parser_never_raises(text: str) -> None:
    assert follows_layout(text) in (True, False)


def test_layout_parser() -> None:
    assert follows_layout("1. a\n2. b\n3. c")
    assert follows_layout("**1.** a\n**2)** yes\n 3: none")
    assert not follows_layout("1. a\n3. c")
    assert not follows_layout("1. a 2. b 3. c")  # one line is not the layout
    assert not follows_layout("1. a\n2. b\n3. c\n1. again")


# --------------------------------------------------------------------------- data (one small dataset)


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("expectation") / "data"
    generate(out, GenerateOptions())
    return {s.sample_id: s for s in load_samples(out)}, out


def test_dataset(samples) -> None:
    from vidaudit.suites.stress.expectation.probe import PROBE
    from vidaudit.video.probe import probe

    by, out = samples
    assert len(by) == 2 * 13 and all(PROBE.check_sample(s) is None for s in by.values())
    gap = by["stress-expectation-omelette-s0-gap-summary"]
    src = probe(out / "videos" / "stress-expectation-omelette-s0-forward.mp4")
    a, b = gap.params["removed"]["frames"]
    assert gap.video.n_frames == src.n_frames - (b - a)
    assert gap.params["missing_action"] not in gap.params["shown"]
    assert gap.params["visible_summary"] == P.visible_summary(gap.params["shown"]) == PROBE.baselines.oracle_answer(gap)
    mcq = by["stress-expectation-omelette-s0-gap-mcq"]
    assert mcq.params["option_kinds"][ord(mcq.answer) - 65] == "visible" and mcq.params["chance"] == 0.25
    rev = by["stress-expectation-omelette-s0-direction-reverse"]
    assert rev.answer == "B" and rev.params["shown"] == list(reversed(rev.params["canonical"]))
    for op in ANOMALIES:
        s = by[f"stress-expectation-omelette-s0-anomaly-{op}"]
        assert s.params["anomaly_kind"] == ("spatial" if op in SPATIAL else "temporal")
        rng = next(iter(v for k, v in s.params["anomaly_info"].items() if isinstance(v, dict) and "t" in v))
        assert f"{rng['t'][0]:.2f}-{rng['t'][1]:.2f} s" in s.params["descriptor"]
        assert s.question == P.anomaly_prompt(op)
    # a perturbed forward clip is the source itself: the reverse video shows its frames backwards
    from vidaudit.video.decode import iter_frames

    f = list(iter_frames(out / rev.video.path))
    g = list(iter_frames(out / by["stress-expectation-omelette-s0-direction-forward"].video.path))
    assert len(f) == len(g) and np.abs(f[0].astype(int) - g[-1].astype(int)).mean() < 3


def test_judge_routing(samples) -> None:
    from vidaudit.suites.stress import SUITE

    by, _ = samples
    assert SUITE.capabilities.judges and "expectation:" + P.JUDGE_VERSION in SUITE.judge_version
    mcq = by["stress-expectation-omelette-s0-gap-mcq"]
    summary = by["stress-expectation-omelette-s0-gap-summary"]
    assert SUITE.judge_prompt(mcq, "\\boxed{A}") is None
    assert SUITE.judge_prompt(summary, "   ") is None  # empty: wrong without a judge call
    prompt = SUITE.judge_prompt(summary, "They crack eggs.")
    assert (
        prompt is not None
        and f"2. The missing action deliberately removed: {summary.params['missing_action']}" in prompt.text
        and "3. The model’s generated summary: They crack eggs." in prompt.text
    )
    verdict = '{"hallucinated_summary": false}'
    assert SUITE.score(ScoreInput(summary, "They crack eggs.", "ok", judgement=verdict)).correct


def test_verdict_scoring(samples) -> None:
    by, _ = samples
    summary = by["stress-expectation-omelette-s0-gap-summary"]
    anomaly = by["stress-expectation-omelette-s0-anomaly-noise"]
    describe = by["stress-expectation-omelette-s0-describe-reverse"]

    def sc(s, v, text="an answer"):
        return score_trial(ScoreInput(s, text, "ok", judgement=v))

    assert sc(summary, '{"hallucinated_summary": false}').correct is True
    assert sc(summary, '{"hallucinated_summary": "true", "explanation": "x"}').correct is False
    none = sc(summary, None)
    assert none.correct is None and none.parse.method == "not_judged"
    prose = sc(summary, "No, it does not hallucinate.")  # "no" in prose never decides
    assert prose.correct is False and prose.parse.method == "judge_unparseable"
    assert sc(anomaly, '{"score": 0.5}').correct is True and sc(anomaly, '{"score": 0.5}').parse.value == "0.5"
    assert sc(anomaly, '{"score": 0}').correct is False and sc(anomaly, '{"score": 1}').parse.value == "1.0"
    assert sc(anomaly, '{"score": 0.7}').parse.method == "judge_unparseable"
    assert sc(anomaly, '{"score": 1.0} and {"score": 0.0}').parse.method == "judge_unparseable"
    assert sc(describe, '{"describes_shown_order": true}').correct is True
    assert score_trial(ScoreInput(summary, "", "ok", judgement='{"hallucinated_summary": false}')).correct is False
    assert score_trial(ScoreInput(summary, None, "api_error")).correct is None


@given(st.text(max_size=200))
@settings(max_examples=150, deadline=None)
def test_scoring_never_raises_on_any_verdict(verdict: str) -> None:
    from vidaudit.core.types import Sample, VideoRef

    s = Sample(
        sample_id="s",
        suite="stress",
        params={"probe": "expectation", "task": "anomaly"},
        question="q",
        answer="d",
        video=VideoRef(path="v.mp4", fps=8.0, width=16, height=16, n_frames=8, duration_s=1.0),
    )
    ts = score_trial(ScoreInput(s, "1. a\n2. b\n3. c", "ok", judgement=verdict))
    assert ts.correct in (True, False) and ts.parse.method in ("judged", "judge_unparseable")


# --------------------------------------------------------------------------- Spatial / Temporal / Overall


def _rec(i: int, op: str, correct: bool | None, judge: str = "ok", model: str = "m") -> ScoreRecord:
    kind = "spatial" if op in SPATIAL else "temporal"
    return ScoreRecord(
        trial_id=f"t{i}-{model}",
        sample_id=f"s{i}",
        suite="stress",
        model=model,
        model_role="model",
        condition="c",
        group_id=f"g{i}",
        status="ok",
        correct=correct,
        parse=ParseResult(method="judged" if judge == "ok" else f"judge_{judge}"),
        params={"probe": "expectation", "task": "anomaly", "anomaly": op, "anomaly_kind": kind},
        metrics={"judge": judge, "verdict": "1.0" if correct else "0.0"},
    )


def test_spatial_temporal_overall_arithmetic() -> None:
    recs = [
        _rec(0, "noise", True),
        _rec(1, "noise", False),
        _rec(2, "colour_shift", True),
        _rec(3, "insert_object", None, "not_judged"),
        _rec(4, "cut", True),
        _rec(5, "reverse", False, "unparseable"),
        _rec(6, "scene_mix", False),
        _rec(7, "shuffle_frames", False),
    ]
    a = aggregate(recs)["cells"]["m|c"]["anomaly"]
    assert (a["spatial"]["n_correct"], a["spatial"]["n_judgeable"], a["spatial"]["not_judged"]) == (2, 3, 1)
    assert (a["temporal"]["n_correct"], a["temporal"]["n_judgeable"], a["temporal"]["unparseable"]) == (1, 4, 1)
    assert a["overall"] == pytest.approx((2 / 3 + 1 / 4) / 2)
    assert overall(None, 0.5) is None and overall(0.2, 0.6) == pytest.approx(0.4)
    # only one kind present: no Overall (never a mean of one)
    assert aggregate(recs[:3])["cells"]["m|c"]["anomaly"]["overall"] is None


def test_overall_table_row() -> None:
    from vidaudit.suites.stress.expectation.report import expectation_report

    recs = [_rec(i, op, i % 2 == 0) for i, op in enumerate(ANOMALIES)]
    rep = expectation_report(AggregateInput(recs, {}))
    row = next(t for t in rep.sections[0].tables if t.id == "stress-expectation-anomaly").rows[0]
    # spatial: ops 0 and 2 of 3 correct; temporal: ops 4 and 6 of 4 correct
    assert row[2:5] == ["66.7 (2/3)", "50.0 (2/4)", "58.3"]


def test_report_notes_and_section_follow_the_declared_probe_report() -> None:
    """ProbeReport words the headline from its declaration, appends the probe's own notes, and gives a section only
    when there are cells; cross_frame's records with nothing to pair get its note and no section."""
    from vidaudit.suites.stress.cross_frame.report import cross_frame_report
    from vidaudit.suites.stress.expectation.prompts import JUDGE_VERSION
    from vidaudit.suites.stress.expectation.report import expectation_report

    recs = [_rec(0, "noise", True), _rec(1, "cut", None, "not_judged"), _rec(2, "noise", True, model="n")]
    rep = expectation_report(AggregateInput(recs, {}))
    assert rep.notes == [
        f"expectation: 2 model x condition cells; judge prompts {JUDGE_VERSION}; anomaly Spatial, Temporal and "
        "Overall shown together; human ceiling not measured",
        "expectation: 1 free-text answers were not judged (run with --judge SPEC to score them)",
    ]
    assert [s.id for s in rep.sections] == ["stress-expectation"] and list(rep.results) == ["expectation"]
    assert sorted(rep.results["expectation"]["cells"]) == ["m|c", "n|c"]
    assert rep.results["expectation"]["cells"]["n|c"]["role"] == "model"
    raw = [
        r.model_copy(update={"params": {"probe": "cross_frame", "item": 0}, "condition": "frames@4/mcq"}) for r in recs
    ]
    rep = cross_frame_report(AggregateInput(raw, {}))
    assert rep.sections == [] and rep.results["cross_frame"]["cells"] == {}
    assert rep.notes == [
        "cross_frame: 0 masked condition(s), 0 model(s); chance 20.0% (w/o abstention) / 16.7% (w/ abstention); "
        "human ceiling not measured",
        "cross_frame: no masked and raw conditions to pair; run a raw condition and a +strip_mask(...) condition "
        "(see DIR/cross_frame.yaml)",
    ]


# --------------------------------------------------------------------------- judge-agreement's label rules


def test_kappa_of_a_known_table() -> None:
    from vidaudit.score.agreement import compare_labels

    pairs = [("true", "true")] * 20 + [("true", "false")] * 5 + [("false", "true")] * 10 + [("false", "false")] * 15
    c = compare_labels(pairs)
    assert c["kappa"] == pytest.approx(0.4) and c["observed_agreement"] == pytest.approx(0.7)
    assert c["confusion"] == {"false": {"false": 15, "true": 10}, "true": {"false": 5, "true": 20}}
    with pytest.raises(DataError, match="share no label"):
        compare_labels([("true", "1.0"), ("false", "0.0")])


@given(st.one_of(st.text(max_size=40), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False)))
def test_label_normalisation(value) -> None:
    from vidaudit.score.agreement import normalise_label

    out = normalise_label(value)
    assert out == normalise_label(out)  # idempotent
    assert isinstance(out, str)


def test_label_normalisation_examples() -> None:
    from vidaudit.score.agreement import normalise_label

    assert normalise_label(True) == normalise_label(" TRUE ") == "true"
    assert normalise_label(1) == normalise_label("1") == normalise_label(1.0) == "1.0"
    assert normalise_label("0.5") == "0.5" and normalise_label("Unparseable") == "unparseable"


@pytest.mark.parametrize(
    "text, match",
    [
        ("not json", "is not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"a": null}', "has label None"),
        ("{}", "no labels"),
    ],
)
def test_labels_file_errors(tmp_path: Path, text: str, match: str) -> None:
    from vidaudit.score.agreement import read_human_labels

    p = tmp_path / "labels.json"
    p.write_text(text)
    with pytest.raises(DataError, match=re.escape(match)):
        read_human_labels(p)
    c = tmp_path / "labels.csv"
    c.write_text("id,verdict\nx,true\n")
    with pytest.raises(DataError, match="item,label"):
        read_human_labels(c)


def test_the_smaller_qwen2_models_unlabelled_anomaly_scores() -> None:
    """§5.5 prints 9.8 / 9.6 / 7.9 / 6.6 for Qwen2-VL-7B Instruct / Base and 2B Instruct / Base without naming
    the metric: shown as unlabelled, never as a Spatial / Temporal / Overall triple."""
    from vidaudit.suites.stress.common import paper_name
    from vidaudit.suites.stress.expectation.report import MATCH, _anomaly_paper

    got = {
        label: _anomaly_paper(paper_name(label, MATCH))
        for label in ("Qwen/Qwen2-VL-7B-Instruct", "qwen2-vl-7b", "Qwen2-VL-2B-Instruct", "qwen2-vl-2b")
    }
    assert [v.split(" ")[0] for v in got.values()] == ["9.8", "9.6", "7.9", "6.6"]
    assert all("unlabelled" in v and "/" not in v.split("(")[0] for v in got.values())
    assert _anomaly_paper(paper_name("qwen2.5-vl-7b", MATCH)).startswith("19.3 / 2.9")
