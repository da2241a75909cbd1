"""The stress suite's shortcuts probe: the D.5 prompt layout, the answer key, CLP, the YouCook2-format
loader, and generate -> run (oracle, chance, ideal-observer, constant) -> score -> report via the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clirun import invoke
from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.report import Report
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.hashing import rng_from
from vidaudit.core.manifest import load_samples
from vidaudit.suites.stress.probe import GenerateOptions
from vidaudit.suites.stress.procedures import PROCEDURES, render_procedure
from vidaudit.suites.stress.shortcuts.questions import ABSTAIN, build_key, prompt_text
from vidaudit.suites.stress.shortcuts.report import aggregate

SNAPSHOT = """\
Look at the video and say what is the FIRST action performed in this video?
A. crack the eggs
B. whisk the eggs
C. pour into the pan
D. fold the omelette
Answer with just the letter."""


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``root``, through the CLI's entry point in this process (tests/clirun.py)."""
    return invoke(*args, cwd=root)


def _proc(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``root`` as a real process (a refusal's exit code)."""
    return subprocess.run(
        [sys.executable, "-m", "vidaudit.cli", *args], cwd=root, capture_output=True, text=True, timeout=300
    )


def test_prompt_snapshot() -> None:
    assert prompt_text("first", PROCEDURES["omelette"][:4]) == SNAPSHOT
    with pytest.raises(ConfigError):
        prompt_text("first", ["a", "b"])


@given(
    st.sampled_from(sorted(PROCEDURES)),
    st.sampled_from(["first", "last", "sequence"]),
    st.sampled_from(["reordered", "blank", "unrelated"]),
    st.integers(0, 10_000),
)
def test_answer_key(procedure: str, q: str, cond: str, seed: int) -> None:
    canonical = list(PROCEDURES[procedure])
    rng = rng_from("t", seed)
    shown = None
    if cond == "reordered":
        while True:  # a reordering that changes the queried position, as shuffle_segments guarantees
            shown = [canonical[i] for i in rng.permutation(len(canonical))]
            if (
                (q == "first" and shown[0] != canonical[0])
                or (q == "last" and shown[-1] != canonical[-1])
                or (q == "sequence" and shown != canonical)
            ):
                break
    key = build_key(q, cond, canonical, shown, rng)
    letters = {"A": 0, "B": 1, "C": 2, "D": 3}
    assert len(set(key.options)) == 4 and key.correct != key.lp
    assert key.lp is not None
    lp_text = key.options[letters[key.lp]]
    assert lp_text == (", then ".join(canonical) if q == "sequence" else canonical[0 if q == "first" else -1])
    if cond == "reordered":
        assert key.abstain is None and ABSTAIN not in key.options
        want = ", then ".join(shown) if q == "sequence" else shown[0 if q == "first" else -1]
        assert key.options[letters[key.correct]] == want
    else:
        assert key.options[letters[key.correct]] == ABSTAIN and key.abstain == key.correct


def _rec(model: str, correct: bool, kind: str, vc: str = "blank", q: str = "first") -> ScoreRecord:
    return ScoreRecord(
        trial_id=f"{model}-{kind}-{vc}-{q}-{correct}-{id(object())}",
        sample_id="s",
        suite="stress",
        model=model,
        condition="c",
        group_id="g",
        status="ok",
        correct=correct,
        params={"probe": "shortcuts", "video_condition": vc, "question_kind": q, "blank_s": 10.0},
        metrics={"picked_kind": kind},
    )


def test_clp_counts_errors_that_pick_the_language_prior() -> None:
    recs = [
        _rec("m", False, "lp"),
        _rec("m", False, "lp"),
        _rec("m", False, "distractor"),
        _rec("m", True, "correct"),
        _rec("m", False, "lp", vc="reordered"),
    ]
    c = aggregate(recs)["cells"]["m|c"]
    assert c["clp_pooled"] == {"errors": 4, "lp_errors": 3, "clp": 0.75}
    assert c["clp_blank"] == {"errors": 3, "lp_errors": 2, "clp": pytest.approx(2 / 3)}
    assert c["blank_avg"]["10"]["accuracy"] == pytest.approx(0.25)
    assert aggregate([_rec("o", True, "correct")])["cells"]["o|c"]["clp_pooled"]["clp"] is None


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shortcuts")
    r = _cli(root, "generate", "stress", "--probe", "shortcuts", "--out", str(root / "data"))
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(
        root,
        "run",
        "stress",
        "--data",
        str(root / "data"),
        "--model",
        "oracle",
        "--model",
        "chance",
        "--model",
        "ideal-observer",
        "--model",
        "constant:A",
        "--condition",
        "frames@4",
        "--out",
        str(root / "run"),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(root, "report", str(root / "run"))
    assert r.returncode == 0, r.stdout + r.stderr
    return root / "run"


def test_dataset_is_balanced_and_exact(run_dir: Path) -> None:
    samples = load_samples(run_dir.parent / "data")
    assert len(samples) == 2 * 3 * 3
    by = {(s.params["video_condition"], s.params["question_kind"]) for s in samples}
    assert len(by) == 9
    for s in samples:
        p = s.params
        assert s.answer != p["option_lp"]
        if p["video_condition"] == "reordered":
            assert p["shown"] != p["canonical"] and sorted(p["shown"]) == sorted(p["canonical"])
        else:
            assert p["options"]["ABCD".index(s.answer)] == ABSTAIN


def test_report(run_dir: Path) -> None:
    rep = Report.model_validate_json((run_dir / "report" / "report.json").read_text())
    res = rep.results["shortcuts"]["cells"]
    assert res["oracle|frames@4/mcq"]["overall"]["accuracy"] == 1.0
    assert res["ideal-observer|frames@4/mcq"]["overall"]["accuracy"] == 1.0  # the pixels hold every answer
    const = res["constant:A|frames@4/mcq"]
    assert const["role"] == "constant" and const["overall"]["n_planned"] == 18
    sec = next(s for s in rep.sections if s.id == "stress-shortcuts")
    tables = {t.id: t for t in sec.tables}
    acc = tables["stress-shortcuts-accuracy"]
    assert {"chance", "paper reported", "human ceiling", "CLP"} <= set(acc.columns)
    assert all(row[acc.columns.index("chance")] == "25.0" for row in acc.rows)
    records = [ScoreRecord.model_validate_json(x) for x in (run_dir / "scores.jsonl").read_text().splitlines()]
    assert {r.params["probe"] for r in records} == {"shortcuts"}


def test_blank_durations_on_request(tmp_path: Path) -> None:
    """``--set blank_s=5,60``: the paper's shortest and longest blanks (D.6), written as black videos of exactly
    that length (read back from the files), recorded in dataset.json, keys balanced in each Blank-Avg cell."""
    from vidaudit.video.probe import probe

    r = _cli(
        tmp_path, "generate", "stress", "--probe", "shortcuts", "--out", str(tmp_path / "data"), "--set", "blank_s=5,60"
    )
    assert r.returncode == 0, r.stdout + r.stderr
    samples = load_samples(tmp_path / "data")
    blank = [s for s in samples if s.params["video_condition"] == "blank"]
    assert sorted({s.params["blank_s"] for s in blank}) == [5.0, 60.0] and len(blank) == 2 * 2 * 3
    for s in blank:
        info = probe(tmp_path / "data" / s.video.path)
        assert abs(info.n_frames / info.fps - s.params["blank_s"]) < 1e-9, (s.sample_id, info.n_frames, info.fps)
    for d in (5.0, 60.0):  # Blank-Avg cell: First and Last of the two sources, four different letters
        assert sorted(
            s.answer for s in blank if s.params["blank_s"] == d and s.params["question_kind"] != "sequence"
        ) == ["A", "B", "C", "D"]
    assert json.loads((tmp_path / "data" / "dataset.json").read_text())["blank_s"] == [5.0, 60.0]
    for bad, why in (("5,x", "not a number"), ("0", "outside"), ("5,5", "given twice"), ("700", "outside")):
        r = _proc(
            tmp_path,
            "generate",
            "stress",
            "--probe",
            "shortcuts",
            "--out",
            str(tmp_path / "bad"),
            "--set",
            f"blank_s={bad}",
        )
        assert r.returncode == 2 and why in r.stdout + r.stderr, (bad, r.stdout + r.stderr)


def _youcook2(root: Path, n_videos: int = 2, broken: dict | None = None) -> Path:
    src = root / "yc2"
    (src / "videos").mkdir(parents=True)
    db = {}
    for i, proc in enumerate(sorted(PROCEDURES)[:n_videos]):
        vid = f"vid{i:02d}"
        steps = PROCEDURES[proc][:4]
        segs = render_procedure(
            proc, [0, 1, 2, 3], [0.5, 0.6, 0.5, 0.7], src / "videos" / f"{vid}.mp4", width=96, height=64, fps=8.0
        )
        db[vid] = {
            "duration": segs[-1].end_s,
            "subset": "validation",
            "recipe_type": "1",
            "annotations": [
                {"id": j, "segment": [s.start_s, s.end_s], "sentence": steps[j]} for j, s in enumerate(segs)
            ],
        }
    if broken:
        db["vid00"].update(broken)
    (src / "youcook2_annotations.json").write_text(json.dumps({"database": db}))
    return src


def test_youcook2_loader(tmp_path: Path) -> None:
    from vidaudit.suites.stress.shortcuts.generate import generate

    src = _youcook2(tmp_path)
    generate(tmp_path / "data", GenerateOptions(source=src))
    samples = load_samples(tmp_path / "data")
    assert len(samples) == 2 * 3 * 3 and {s.params["source"] for s in samples} == {"youcook2"}
    assert all(
        s.params["canonical"] == list(PROCEDURES[sorted(PROCEDURES)[0]][:4])
        for s in samples
        if s.params["source_name"] == "vid00"
    )


@pytest.mark.parametrize(
    "broken, match",
    [
        ({"annotations": [{"id": 0, "segment": [0, 1], "sentence": "a"}]}, "at least 4"),
        ({"annotations": [{"id": 0, "sentence": "a"}] * 4}, "needs 'segment'"),
        (
            {"annotations": [{"id": j, "segment": [1 - j * 0.1, 2], "sentence": f"s{j}"} for j in range(4)]},
            "time order",
        ),
        ({"annotations": [{"id": j, "segment": [j, j + 1], "sentence": "same"} for j in range(4)]}, "repeated"),
    ],
)
def test_youcook2_loader_refuses_broken_annotations(tmp_path: Path, broken: dict, match: str) -> None:
    from vidaudit.suites.stress.shortcuts.generate import generate

    src = _youcook2(tmp_path, broken=broken)
    with pytest.raises(DataError, match=match):
        generate(tmp_path / "data", GenerateOptions(source=src))
    assert not (tmp_path / "data" / "manifest.jsonl").exists()


def test_youcook2_missing_video(tmp_path: Path) -> None:
    """A user holds part of YouCook2: an absent video is counted and left out; fewer than two left is an error."""
    from vidaudit.suites.stress.shortcuts.generate import generate
    from vidaudit.suites.stress.shortcuts.youcook2 import load_youcook2
    from vidaudit.suites.stress.sources import SourceLog

    src = _youcook2(tmp_path, n_videos=3)
    (src / "videos" / "vid01.mp4").unlink()
    log = SourceLog()
    assert [s.name for s in load_youcook2(src, log)] == ["vid00", "vid02"]
    assert log.counts == {"entries_without_video": 1} and "1 annotated videos have no file" in log.notes[0]
    (src / "videos" / "vid02.mp4").unlink()
    with pytest.raises(DataError, match="at least two YouCook2 videos.*1 usable"):
        generate(tmp_path / "data", GenerateOptions(source=src))
