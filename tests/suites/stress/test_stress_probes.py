"""The stress suite's probe routing: every probe listed loads, the suite sends each hook to the probe a
sample names, and bad probe names, settings and presets are refused with the known choices named."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.suite import AggregateInput, PartedSuite, Suite, check_suite
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.manifest import load_samples
from vidaudit.core.types import Sample, VideoRef
from vidaudit.suites.stress import SUITE
from vidaudit.suites.stress.cli import parse_settings
from vidaudit.suites.stress.probe import GenerateOptions, Probe, ProbeBaselines
from vidaudit.suites.stress.suite import PARTS


def _sample(probe: object, **params: object) -> Sample:
    return Sample(
        sample_id="s",
        suite="stress",
        question="q",
        answer="pan_left",
        params={"probe": probe, **params},
        video=VideoRef(path="v.mp4", fps=10, width=16, height=16, n_frames=3, duration_s=0.3),
    )


def test_every_listed_probe_loads_and_is_described() -> None:
    assert isinstance(SUITE, PartedSuite) and SUITE.part_param == "probe"
    assert set(PARTS) == set(SUITE.parts) == set(SUITE.probes)
    for name in PARTS:
        p = SUITE.probe(name)
        assert isinstance(p, Probe) and isinstance(p, Suite) and p.name == name and p.presets and p.prompt_names()
        assert "probe" in p.record_keys
        assert set(p.prompt_names()) <= set(SUITE.prompt_names())
        # a probe is a whole suite: score and aggregate its own (no lazy hook targets), and its baselines
        assert check_suite(p, name) is p and isinstance(p.baselines, ProbeBaselines)
        assert not any(hasattr(p, old) for old in ("scorer", "reporter", "trial_viewer"))


def test_unknown_probe_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="camera_motion"):
        SUITE.probe("nope")
    with pytest.raises(DataError, match="unknown stress probe"):
        SUITE.check_samples([_sample("nope")], "data")


def test_suite_routes_to_the_named_probe() -> None:
    s = _sample("camera_motion", motion="pan_left")
    assert SUITE.baselines.oracle_answer(s) == SUITE.probe("camera_motion").baselines.oracle_answer(s)
    assert SUITE.request_metadata(s)["probe"] == "camera_motion"
    assert SUITE.record_params(s) == {"probe": "camera_motion", "motion": "pan_left"}
    with pytest.raises(DataError, match="is not its motion"):
        SUITE.check_samples([_sample("camera_motion", motion="zoom_in")], "data")


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="no setting foo"):
        GenerateOptions(settings={"foo": "1"}).check_settings(("bar",), "p")
    GenerateOptions(settings={"bar": "1"}).check_settings(("bar",), "p")


@given(
    st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), st.text(alphabet="abc=1 ", max_size=6), max_size=4)
)
def test_parse_settings_round_trips(d: dict[str, str]) -> None:
    assert parse_settings([f"{k}={v}" for k, v in d.items()]) == {k: v.strip() for k, v in d.items()}


@pytest.mark.parametrize("bad", [["novalue"], ["=x"], ["a=1", "a=2"]])
def test_parse_settings_refuses(bad: list[str]) -> None:
    with pytest.raises(ConfigError):
        parse_settings(bad)


def test_constant_answers_its_text_verbatim() -> None:
    import asyncio

    from vidaudit.core.types import ModelSpec, Request
    from vidaudit.models.baselines import ConstantAdapter

    s = _sample("camera_motion", motion="pan_left")
    for text in ("AGREE", "DISAGREE", "C", "The answer is \\boxed{D}", "3"):
        a = ConstantAdapter(ModelSpec.parse(f"constant:{text}"), samples={"s": s}, suite=SUITE)
        req = Request(trial_id="t", parts=[], metadata={"sample_id": "s"})
        assert asyncio.run(a.generate(req)).text == text
    with pytest.raises(ConfigError, match="constant needs"):
        ConstantAdapter(ModelSpec.parse("constant"), samples={"s": s}, suite=SUITE)


def test_ideal_observer_full_size_option(tmp_path) -> None:
    import numpy as np

    from vidaudit.core.types import ModelSpec, Request, VideoPart
    from vidaudit.models.ideal_observer import IdealObserverAdapter, observed_frames
    from vidaudit.video.encode import write_video

    path = tmp_path / "v.mp4"
    write_video(path, [np.full((32, 48, 3), 40 * i, np.uint8) for i in range(3)], 3.0, 48, 32)
    part = VideoPart(
        path=str(path),
        sha256=None,
        fps=3.0,
        duration_s=1.0,
        n_frames=3,
        source_fps=3.0,
        frame_indices=(0, 2),
        timestamps=(0.0, 2 / 3),
    )
    req = Request(trial_id="t", parts=(part,))
    assert {f.shape for _, _, f in observed_frames(req, "x")} == {(16, 24, 3)}
    assert {f.shape for _, _, f in observed_frames(req, "x", half=False)} == {(32, 48, 3)}
    full = IdealObserverAdapter(ModelSpec.parse("ideal-observer"), suite=SUITE, full_size=True)
    assert full.request_options() == {"full_size": True}
    assert IdealObserverAdapter(ModelSpec.parse("ideal-observer"), suite=SUITE).request_options() == {}
    with pytest.raises(ConfigError, match="full_size"):
        IdealObserverAdapter(ModelSpec.parse("ideal-observer"), suite=SUITE, full_size="maybe")


def _record(
    i: int, role: str, probe: str = "camera_motion", correct: bool = True, condition: str = "frames@4/mcq"
) -> ScoreRecord:
    return ScoreRecord(
        trial_id=f"t{role}{i}",
        sample_id=f"s{i}",
        suite="stress",
        model=role if role != "human" else f"human:{i % 2}",
        model_role=role,
        group_id="g",
        condition=condition,
        status="ok",
        correct=correct,
        params={"probe": probe, "motion": "pan_left", "synthesis": "2d"},
        metrics={"predicted": "pan_left"},
    )


def test_human_records_reach_the_probe_in_aggregate_input_not_as_model_rows() -> None:
    """The human study travels in AggregateInput.human: the camera_motion table's human-ceiling column reads it
    (the condition a person saw is not the model's: the pooled cell), no human row joins the models', and a
    human record of another probe is not counted; without a study the column reads "not measured"."""
    models = [_record(i, "oracle") for i in range(3)]
    human = [_record(10 + i, "human", correct=i < 3, condition="video") for i in range(4)]
    human.append(_record(20, "human", probe="mosaic", correct=False))

    def summary(inputs: AggregateInput) -> list[list[str]]:
        rep = SUITE.aggregate(inputs)
        table = next(t for t in rep.sections[0].tables if t.id == "stress-camera-accuracy")
        return table.rows

    rows = summary(AggregateInput(models, {}, human=human))
    assert [r[0] for r in rows] == ["oracle"] and rows[0][-1] == "75.0 (3/4)"
    assert summary(AggregateInput(models, {}))[0][-1] == "not measured"
    assert "human ceiling 75.0 (3/4) (imported study)" in " ".join(
        SUITE.aggregate(AggregateInput(models, {}, human=human)).notes
    )
    # the probe itself, given every probe's human records, counts its own
    direct = SUITE.probe("camera_motion").aggregate(AggregateInput(models, {}, human=human))
    assert "human ceiling 75.0 (3/4) (imported study)" in " ".join(direct.notes)


#: parameters a record of each probe needs to land in its tables' cells
HEADLINE_PARAMS: dict[str, dict[str, object]] = {
    "camera_motion": {},
    "wireframe": {"task": "counting", "arrangement": "control", "line_width": 0},
    "shortcuts": {"video_condition": "reordered", "question_kind": "first"},
    "expectation": {"task": "direction", "direction": "forward"},
}


@pytest.mark.parametrize("probe", HEADLINE_PARAMS)
def test_a_headline_that_names_the_human_ceiling_says_what_the_table_shows(probe: str) -> None:
    """With a study imported, a probe whose headline speaks of the human ceiling gives the study's figure, the one in
    its table's human-ceiling column, never "not measured" beside a measured column (wireframe's headline once did),
    and so do the probe's results in report.json, which the audit profile reads (they once held None whatever was
    imported, so a profile showed the paper's humans instead of the study)."""
    from vidaudit.core.contract.profile import AuditPart
    from vidaudit.suites.stress.audit import profile_figures

    params = HEADLINE_PARAMS[probe]

    def rec(r: ScoreRecord) -> ScoreRecord:
        return r.model_copy(update={"params": {**r.params, **params}})

    models = [rec(_record(i, "oracle", probe=probe)) for i in range(3)]
    human = [rec(_record(10 + i, "human", probe=probe, correct=i < 3, condition="video")) for i in range(4)]
    rep = SUITE.probe(probe).aggregate(AggregateInput(models, {}, human=human))
    shown = {row[-1] for t in rep.sections[0].tables if t.columns[-1] == "human ceiling" for row in t.rows}
    assert shown == {"75.0 (3/4)"}
    assert "human ceiling 75.0 (3/4) (imported study)" in rep.notes[0]
    bare = SUITE.probe(probe).aggregate(AggregateInput(models, {}))
    assert bare.notes[0].endswith("human ceiling not measured")
    # report.json's results carry the same figure, and the audit profile reads it there (not the paper's humans)
    cell = rep.results[probe]["human_ceiling"]
    assert (cell["n_correct"], cell["n_planned"]) == (3, 4) and bare.results[probe]["human_ceiling"] is None
    part = AuditPart(name=probe, preset="smoke", conditions=("frames#4",), probe=probe)
    figure = profile_figures(part, rep.results).human_ceiling
    assert figure is not None and figure.value == 0.75 and figure.note == "imported human study"


def test_every_probe_a_person_can_answer_reports_its_human_ceiling() -> None:
    """Every probe with items a person answers keeps ``human_ceiling`` in its results (None until a study is
    imported: the key the audit profile reads) and its headline says so; shortcuts and expectation once had
    neither. sycophancy_pairs is a generator model's claim pairs: no person answers them."""
    for name in PARTS:
        rep = SUITE.probe(name).aggregate(AggregateInput([], {}))
        if name == "sycophancy_pairs":
            assert "human_ceiling" not in rep.results[name] and "human ceiling" not in rep.notes[0]
            continue
        assert rep.results[name]["human_ceiling"] is None, name
        assert rep.notes[0].endswith("; human ceiling not measured"), rep.notes[0]


def test_a_parameter_outside_its_probes_domain_is_refused_by_name(tmp_path) -> None:
    """Each probe declares the parameters whose value must come from a fixed set; a generated dataset passes,
    and one sample with any such value changed (or missing) is refused naming the key and the allowed values."""
    declared = {n: SUITE.probe(n).domains for n in PARTS}
    assert {n for n, d in declared.items() if d} == {
        "camera_motion",
        "cross_frame",
        "expectation",
        "lane_change",
        "mosaic",
        "shortcuts",
        "sycophancy",
        "sycophancy_pairs",
        "wireframe",
    }
    samples = load_samples(SUITE.probe("mosaic").generate(tmp_path / "m", GenerateOptions(preset="smoke")))
    SUITE.check_samples(samples, "m")
    for key, allowed in declared["mosaic"].items():
        for value in ("bogus", None):
            bad = samples[0].model_copy(update={"params": {**samples[0].params, key: value}})
            with pytest.raises(DataError) as e:
                SUITE.check_samples([*samples[1:], bad], "m")
            assert f"1 stress samples cannot be trusted: {bad.sample_id}: {key} {value!r} is not one of " + (
                ", ".join(allowed)
            ) in str(e.value)
    for name, domains in declared.items():
        if domains:
            first, allowed = next(iter(domains.items()))
            assert SUITE.probe(name).check_sample(_sample(name)) == f"{first} None is not one of {', '.join(allowed)}"
