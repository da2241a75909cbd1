"""The cross_frame probe without the CLI: the NExT-QA-format loader (good and broken dirs), the prompt,
scoring, baselines, the integrating observer on masked pixels, and strip coverage on the frames sent."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vidaudit.core.contract.suite import ScoreInput
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.hashing import rng_from, sha256_file
from vidaudit.core.manifest import load_samples
from vidaudit.core.types import ModelSpec, PerturbationSpec, Presentation, Request, Sample
from vidaudit.models.base import ModelCallError
from vidaudit.run.conditions import parse_condition
from vidaudit.run.perturbed import plan_chain, render
from vidaudit.run.plan import select_frames
from vidaudit.suites.stress import SUITE
from vidaudit.suites.stress.cross_frame import synthetic
from vidaudit.suites.stress.cross_frame.generate import generate
from vidaudit.suites.stress.cross_frame.nextqa import load_items, split_of
from vidaudit.suites.stress.cross_frame.observer import read_timeline
from vidaudit.suites.stress.cross_frame.options import ABSTAIN
from vidaudit.suites.stress.cross_frame.prompts import cross_frame_prompt
from vidaudit.suites.stress.probe import GenerateOptions
from vidaudit.video.decode import read_frames
from vidaudit.video.encode import VideoWriter
from vidaudit.video.perturb.integration import check_strip_coverage, separation_problems

HEADER = ["video", "frame_count", "width", "height", "question", "answer", "qid", "type", "a0", "a1", "a2", "a3", "a4"]
PROMPT_SNAPSHOT = """\
What colour was the cross?
A. magenta
B. green
C. blue
D. red
E. yellow
F. Cannot determine from the video
Answer with the letter of exactly one option inside \\boxed{}, for example \\boxed{A}."""


def _tiny_video(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with VideoWriter(path, 4, 16, 16) as w:
        for i in range(4):
            w.write(np.full((16, 16, 3), 40 * i + 20, np.uint8))


def _write_set(root: Path, rows: list[dict], header: list[str] = HEADER, videos: tuple[str, ...] = ("v1",)) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for v in videos:
        _tiny_video(root / "videos" / f"{v}.mp4")
    with open(root / "val.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return root


def _row(**kw) -> dict:
    base = {
        "video": "v1",
        "frame_count": "4",
        "width": "16",
        "height": "16",
        "question": "what is it?",
        "answer": "2",
        "qid": "7",
        "type": "TN",
        "a0": "x0",
        "a1": "x1",
        "a2": "x2",
        "a3": "x3",
        "a4": "x4",
    }
    return {**base, **kw}


# --------------------------------------------------------------------------- the loader


def test_loader_reads_nextqa_rows(tmp_path: Path) -> None:
    root = _write_set(tmp_path / "set", [_row(), _row(qid="8", type="CW", answer="0"), _row(qid="9", type="DL")])
    items = load_items(root)
    assert [(i.qid, i.split, i.answer) for i in items] == [("7", "T", 2), ("8", "S", 0), ("9", "S", 2)]
    assert items[0].options == ("x0", "x1", "x2", "x3", "x4") and items[0].line == 2


@pytest.mark.parametrize(
    "code,split",
    [
        ("TN", "T"),
        ("TC", "T"),
        ("TP", "T"),
        ("CW", "S"),
        ("CH", "S"),
        ("DC", "S"),
        ("DL", "S"),
        ("DO", "S"),
        ("XX", None),
        ("", None),
    ],
)
def test_split_of_nextqa_types(code: str, split: str | None) -> None:
    assert split_of(code) == split


def test_missing_column_is_named(tmp_path: Path) -> None:
    root = _write_set(tmp_path / "set", [_row()], header=[h for h in HEADER if h != "a3"])
    with pytest.raises(DataError, match=r"missing column\(s\) a3"):
        load_items(root)


@pytest.mark.parametrize("answer", ["5", "-1", "two"])
def test_answer_out_of_range_names_the_row(tmp_path: Path, answer: str) -> None:
    root = _write_set(tmp_path / "set", [_row(), _row(qid="8", answer=answer)])
    with pytest.raises(DataError, match=r"val\.csv line 3: answer"):
        load_items(root)


def test_a_missing_video_leaves_out_its_questions_and_is_counted(tmp_path: Path) -> None:
    """A user holds part of NExT-QA: the questions of the videos present are kept, the missing videos counted
    and named; none present is an error naming where they were looked for."""
    from vidaudit.suites.stress.sources import SourceLog

    root = _write_set(
        tmp_path / "set",
        [_row(), _row(qid="8", video="nope"), _row(qid="9", video="nope"), _row(qid="10", video="gone")],
    )
    log = SourceLog()
    items = load_items(root, log=log)
    assert [(i.video, i.qid) for i in items] == [("v1", "7")]
    assert log.counts == {"videos_missing": 2, "questions_without_video": 3}
    assert "2 of 3 videos are missing" in log.notes[0] and "gone, nope" in log.notes[0]
    only_missing = _write_set(tmp_path / "none", [_row(video="nope")], videos=())
    with pytest.raises(DataError, match=r"none of its 1 videos was found in \S*/none \(as VIDEO.mp4"):
        load_items(only_missing)


def test_unknown_type_and_duplicate_are_named(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"line 2: unknown question type 'ZZ'"):
        load_items(_write_set(tmp_path / "a", [_row(type="ZZ")]))
    with pytest.raises(DataError, match=r"line 3: .*listed twice"):
        load_items(_write_set(tmp_path / "b", [_row(), _row()]))


def test_no_csv_or_two_csvs_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no CSV"):
        load_items(tmp_path / "empty")
    root = _write_set(tmp_path / "two", [_row()])
    (root / "test.csv").write_text((root / "val.csv").read_text())
    with pytest.raises(ConfigError, match="--set csv="):
        load_items(root)
    assert len(load_items(root, "test.csv")) == 1


_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=30
).filter(lambda s: s.strip() == s and s)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(
            _text,
            st.lists(_text, min_size=5, max_size=5),
            st.integers(0, 4),
            st.sampled_from(["TN", "TC", "TP", "CW", "CH", "DC", "DL", "DO"]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_loader_round_trips_any_valid_rows(tmp_path_factory: pytest.TempPathFactory, rows) -> None:
    root = tmp_path_factory.mktemp("prop")
    _tiny_video(root / "videos" / "v1.mp4")
    with open(root / "q.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=HEADER)
        w.writeheader()
        for k, (q, opts, a, t) in enumerate(rows):
            w.writerow(_row(question=q, qid=str(k), answer=str(a), type=t, **{f"a{i}": o for i, o in enumerate(opts)}))
    items = load_items(root)
    assert [(i.question, list(i.options), i.answer, i.split) for i in items] == [
        (q, o, a, "T" if t.startswith("T") else "S") for q, o, a, t in rows
    ]


# --------------------------------------------------------------------------- the generated set


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cross_frame")
    generate(out, GenerateOptions(seeds=4))
    return out


def test_samples_pair_abstention_and_chance(data: Path) -> None:
    samples = load_samples(data)
    assert len(samples) == 8
    SUITE.check_samples(samples, str(data))
    by_item: dict[str, list[Sample]] = {}
    for s in samples:
        by_item.setdefault(s.params["item"], []).append(s)
    for pair in by_item.values():
        forced, abst = sorted(pair, key=lambda s: s.params["abstention"])
        assert forced.video == abst.video and forced.answer == abst.answer
        assert forced.params["chance"] == pytest.approx(1 / 5) and abst.params["chance"] == pytest.approx(1 / 6)
        assert abst.params["options"] == forced.params["options"] + [ABSTAIN]
    assert {s.params["split"] for s in samples} == {"T", "S"}
    assert {s.params["source"] for s in samples} == {"synthetic"}
    assert (data / "source" / "questions.csv").is_file()  # the loader read what the generator wrote


def test_prompt_snapshot() -> None:
    assert (
        cross_frame_prompt("What colour was the cross?", ["magenta", "green", "blue", "red", "yellow", ABSTAIN])
        == PROMPT_SNAPSHOT
    )


def test_scoring_and_baselines(data: Path) -> None:
    s = next(x for x in load_samples(data) if x.params["abstention"])
    assert SUITE.score(ScoreInput(s, SUITE.baselines.oracle_answer(s), "ok")).correct is True
    wrong = next(letter for letter in s.params["letters"] if letter != s.answer)
    assert SUITE.score(ScoreInput(s, f"\\boxed{{{wrong}}}", "ok")).correct is False
    abst = SUITE.score(ScoreInput(s, SUITE.baselines.constant_answer(s, "abstain"), "ok"))
    assert abst.metrics["abstained"] is True and abst.correct is False
    assert SUITE.score(ScoreInput(s, "no letter here", "ok")).parse.value is None
    assert SUITE.score(ScoreInput(s, None, "error")).correct is None
    forced = next(x for x in load_samples(data) if not x.params["abstention"])
    # F is not an option without abstention
    assert SUITE.score(ScoreInput(forced, "\\boxed{F}", "ok")).parse.value is None
    rng = rng_from("t")
    hits = [SUITE.score(ScoreInput(s, SUITE.baselines.chance_answer(s, rng), "ok")).correct for _ in range(600)]
    assert abs(sum(hits) / 600 - 1 / 6) < 0.06


def test_perturbations_the_probe_accepts(data: Path) -> None:
    s = load_samples(data)[0]
    assert SUITE.perturbation_problem(s, PerturbationSpec(name="strip_mask")) is None
    assert "strip_mask only" in SUITE.perturbation_problem(s, PerturbationSpec(name="reverse"))


def test_observer_has_no_reader_for_real_nextqa() -> None:
    from vidaudit.core.types import ImagePart, TextPart
    from vidaudit.models.ideal_observer import IdealObserverAdapter

    img = np.zeros((16, 16, 3), np.uint8)
    adapter = IdealObserverAdapter(ModelSpec(provider="ideal-observer"), suite=SUITE)
    req = Request(
        trial_id="t",
        parts=(ImagePart(image=img, frame_index=0, t=0.0), TextPart("q")),
        metadata={"probe": "cross_frame", "source": "nextqa", "template": None, "options": ["a"] * 5},
    )
    with pytest.raises(ModelCallError, match="no reader for real NExT-QA"):
        adapter._answer(req)


# --------------------------------------------------------------------------- masked pixels


def _masked(data: Path, spec: PerturbationSpec, tmp: Path):
    s = next(x for x in load_samples(data) if x.params["template"] == "count")
    pin = plan_chain(s, (spec,))
    path, sha, meta = render(data / s.video.path, pin, tmp)
    assert sha256_file(path) == sha
    return s, pin, path, meta


def test_coverage_and_separation_on_the_pixels_sent(data: Path, tmp_path: Path) -> None:
    spec = PerturbationSpec(name="strip_mask", params={"S": 64, "v": 24, "k": 4})
    s, pin, path, meta = _masked(data, spec, tmp_path)
    cond = parse_condition(f"frames@{pin.video.fps:g}+{spec.id}", "mcq")
    sel = select_frames(s, cond, pin.video)
    assert not check_strip_coverage(pin.coverage_meta(), sel.indices)
    assert not separation_problems(meta.info["sets"], meta.info["delta"])
    frames = read_frames(path, list(sel.indices))
    strips = meta.info["strip_px"]
    seen: set[int] = set()
    for i, f in zip(sel.indices, frames):
        col = f.max(axis=(0, 2)).astype(int)  # the brightest value of each column
        lit = {j for j, (a, b) in enumerate(strips) if col[(a + b) // 2] > 60}
        assert lit == set(meta.map["visible_strips"][i]), i  # exactly the strips of its set are visible
        seen |= lit
    assert seen == set(range(64))
    # and the integrating observer reads the clip's timeline from the masked frames sent
    clip = synthetic.make_clip(int(s.params["item"][5:8]), 6)
    got = read_timeline([(i, t, f) for i, t, f in zip(sel.indices, sel.times, frames)])
    assert got == list(clip.segments)


@settings(max_examples=30, deadline=None)
@given(k=st.sampled_from([2, 4, 8]), v=st.sampled_from([12, 24, 48]), stride=st.integers(1, 9))
def test_plan_refuses_exactly_the_strides_that_hide_strips(k: int, v: int, stride: int) -> None:
    from vidaudit.core.types import VideoRef

    s = Sample(
        sample_id="x",
        suite="stress",
        question="q",
        answer="A",
        params={"probe": "cross_frame"},
        video=VideoRef(path="v.mp4", sha256="0" * 64, fps=6, width=320, height=192, n_frames=18, duration_s=3),
    )
    spec = PerturbationSpec(name="strip_mask", params={"S": 128, "v": v, "k": k})
    pin = plan_chain(s, (spec,))
    n_sets = pin.strip_info["n_sets"]
    cond = parse_condition(f"frames@{pin.video.fps / stride:g}+{spec.id}", "mcq")
    assert cond.presentation is Presentation.FRAMES
    sel = select_frames(s, cond, pin.video)
    problems = check_strip_coverage(pin.coverage_meta(), sel.indices)
    sets = pin.strip_info["sets"]
    idx = pin.strip_info["set_index"]
    union = {j for i in sel.indices for j in sets[idx[i]]}
    if not problems:  # accepted: every strip is shown, within every window of n_sets frames sent
        assert union == set(range(128))
        for w in range(len(sel.indices) - n_sets + 1):
            assert {j for i in sel.indices[w : w + n_sets] for j in sets[idx[i]]} == set(range(128))
    elif np.gcd(stride, n_sets) > 1 and len(set(np.diff(sel.indices))) == 1:
        assert union != set(range(128))
    assert not separation_problems(sets, pin.strip_info["delta"])
