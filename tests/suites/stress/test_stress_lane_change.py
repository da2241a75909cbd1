"""The lane_change probe: the annotations.csv loader (and its errors), scoring, F1 counts, and generate ->
run (oracle, chance, constant) -> score -> report through the CLI on tiny synthetic road clips the test renders."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clirun import invoke
from laneclips import road_clip
from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.report import Report
from vidaudit.core.contract.suite import ScoreInput
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.manifest import load_samples
from vidaudit.core.types import Sample, VideoRef
from vidaudit.suites.stress import SUITE
from vidaudit.suites.stress.lane_change.loader import generate, read_annotations
from vidaudit.suites.stress.lane_change.options import QUESTION, prompt
from vidaudit.suites.stress.lane_change.report import f1_cell


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lanes") / "clips"
    root.mkdir()
    for i in range(3):
        road_clip(root / f"change{i}.mp4", True)
        road_clip(root / f"straight{i}.mp4", False)
    (root / "annotations.csv").write_text(
        "clip,label,start_s,end_s\n"
        + "".join(f"change{i}.mp4,lane_change,,\n" for i in range(3))
        + "".join(f"straight{i}.mp4,no_change,,\n" for i in range(3))
        + "change0.mp4,lane_change,0.4,1.6\n"  # a segment
        + "straight0.mp4,no_change,0,1\n"
    )
    return root


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``root``, through the CLI's entry point in this process (tests/clirun.py)."""
    return invoke(*args, cwd=root)


def _proc(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``root`` as a real process (a refusal's exit code)."""
    return subprocess.run(
        [sys.executable, "-m", "vidaudit.cli", *args], cwd=root, capture_output=True, text=True, timeout=300
    )


def test_loader(source: Path, tmp_path: Path) -> None:
    rows = read_annotations(source)
    assert len(rows) == 8 and rows[6].start_s == 0.4 and rows[6].end_s == 1.6 and rows[0].start_s is None
    generate(tmp_path / "data", source)
    samples = load_samples(tmp_path / "data")
    assert [s.answer for s in samples].count("lane_change") == 4
    seg = samples[6]
    assert seg.video.n_frames == 12 and seg.params["start_s"] == 0.4  # frames 4..15
    assert samples[0].video.n_frames == 20
    assert (tmp_path / "data" / samples[0].video.path).read_bytes() == (source / "change0.mp4").read_bytes()
    assert all(s.params["probe"] == "lane_change" and s.question == QUESTION for s in samples)
    SUITE.check_samples(samples, "lanes")


@pytest.mark.parametrize(
    ("csv", "err"),
    [
        ("clip,label\nchange0.mp4,maybe\n", "is not lane_change or no_change"),
        ("clip,label\nnope.mp4,lane_change\n", "is not a file"),
        ("clip,label,start_s\nchange0.mp4,lane_change,0.5\n", "both start_s and end_s"),
        ("clip,label,start_s,end_s\nchange0.mp4,lane_change,1.5,0.5\n", "start_s < end_s"),
        ("clip,label,start_s,end_s\nchange0.mp4,lane_change,x,1\n", "not numbers"),
        ("clip,label,start_s,end_s\nchange0.mp4,lane_change,0,9\n", "past the end"),
        ("clip,label,start_s,end_s\nchange0.mp4,lane_change,0,0.1\n", "fewer than two frames"),
        ("video,answer\nchange0.mp4,lane_change\n", "lacks clip, label"),
        ("clip,label\n", "lists no clips"),
    ],
)
def test_loader_errors(source: Path, tmp_path: Path, csv: str, err: str) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "change0.mp4").write_bytes((source / "change0.mp4").read_bytes())
    (root / "annotations.csv").write_text(csv)
    with pytest.raises(DataError, match=err):
        generate(tmp_path / "out", root)
    assert not (tmp_path / "out" / "manifest.jsonl").exists()


def test_loader_refuses_shifted_or_repeated_rows_and_counts_real_lines(tmp_path: Path) -> None:
    """A spreadsheet's faults in annotations.csv: an unquoted decimal comma ("1,5") splits a time into two
    fields, which used to read 1-5 s silently; one clip and segment twice (here with both labels) used to give
    two contradicting samples; after CRLF blank lines a row's line (kept in params) is the file's own line."""
    root = tmp_path / "src"
    root.mkdir()
    for name in ("a.mp4", "b.mp4"):
        (root / name).write_bytes(b"read_annotations checks the file is there; generate decodes it")
    (root / "annotations.csv").write_text("clip,label,start_s,end_s\na.mp4,lane_change,1,5,2,5\n")
    with pytest.raises(DataError, match=r"line 2: 6 fields but the header has 4.*1\.5, not 1,5"):
        read_annotations(root)
    (root / "annotations.csv").write_text(
        "clip,label,start_s,end_s\na.mp4,lane_change,1.5,2.5\nb.mp4,no_change,,\n./a.mp4,no_change,1.5,2.5\n"
    )
    with pytest.raises(DataError, match=r"line 4: clip './a.mp4' with the same segment is on line 2"):
        read_annotations(root)
    (root / "annotations.csv").write_bytes(
        b"\xef\xbb\xbfclip,label,start_s,end_s\r\n\r\na.mp4,lane_change,1.5,2.5\r\n\r\na.mp4,no_change,,\r\n"
    )
    rows = read_annotations(root)
    assert [(r.line, r.clip, r.label, r.start_s, r.end_s) for r in rows] == [
        (3, "a.mp4", "lane_change", 1.5, 2.5),
        (5, "a.mp4", "no_change", None, None),
    ]  # the same clip with another segment is a sample of its own


def test_loader_refuses_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a folder"):
        read_annotations(tmp_path / "missing")
    with pytest.raises(DataError, match="has no annotations.csv"):
        read_annotations(tmp_path)
    (tmp_path / "bad.mp4").write_bytes(b"not a video")
    (tmp_path / "annotations.csv").write_text("clip,label\nbad.mp4,no_change\n")
    with pytest.raises(DataError, match="line 2"):
        generate(tmp_path / "out", tmp_path)


def _sample(label: str) -> Sample:
    return Sample(
        sample_id=f"l-{label}",
        suite="stress",
        question=QUESTION,
        answer=label,
        params={"probe": "lane_change", "label": label},
        video=VideoRef(path="v.mp4", fps=10, width=16, height=16, n_frames=3, duration_s=0.3),
    )


def test_prompt_and_baselines() -> None:
    assert SUITE.render_prompt(_sample("no_change"), None).text == prompt()  # type: ignore[arg-type]
    assert prompt().splitlines()[:3] == [
        QUESTION,
        "A. Yes, the vehicle changes lanes",
        "B. No, the vehicle stays in its lane",
    ]
    for label in ("lane_change", "no_change"):
        s = _sample(label)
        assert SUITE.score(ScoreInput(s, SUITE.baselines.oracle_answer(s), "ok")).correct is True
    s = _sample("lane_change")
    assert SUITE.score(ScoreInput(s, SUITE.baselines.constant_answer(s, "yes"), "ok")).correct is True
    assert SUITE.score(ScoreInput(s, SUITE.baselines.constant_answer(s, "no_change"), "ok")).correct is False
    with pytest.raises(ConfigError, match="constant answer for lane_change"):
        SUITE.baselines.constant_answer(s, "left")
    assert SUITE.score(ScoreInput(s, "The vehicle changes lanes", "ok")).metrics["predicted_label"] is None  # strict


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from(["yes", "no", "unparsed", "error"])), min_size=1, max_size=40))
def test_f1_counts(trials: list[tuple[bool, str]]) -> None:
    """TP + FN is the positives, FP + TN the negatives; a failure or an unparsed answer is wrong."""
    recs = []
    for i, (pos, said) in enumerate(trials):
        label = "lane_change" if pos else "no_change"
        pred = {"yes": "lane_change", "no": "no_change"}.get(said)
        recs.append(
            ScoreRecord(
                trial_id=str(i),
                sample_id=str(i),
                suite="stress",
                model="m",
                model_role="model",
                group_id=str(i),
                condition="c",
                status="error" if said == "error" else "ok",
                correct=None if said == "error" else pred == label,
                params={"probe": "lane_change", "label": label},
                metrics={"predicted_label": pred},
            )
        )
    c = f1_cell(recs)
    n_pos = sum(p for p, _ in trials)
    assert c["tp"] + c["fn"] == n_pos and c["fp"] + c["tn"] == len(trials) - n_pos
    assert c["tp"] == sum(p and s == "yes" for p, s in trials)
    assert c["tn"] == sum((not p) and s == "no" for p, s in trials)
    if c["f1"] is not None:
        assert c["f1"] == pytest.approx(2 * c["tp"] / (2 * c["tp"] + c["fp"] + c["fn"]))


def test_cli_end_to_end(source: Path, tmp_path: Path) -> None:
    r = _proc(tmp_path, "generate", "stress", "--probe", "lane_change", "--out", str(tmp_path / "data"))
    assert r.returncode != 0 and "--source" in r.stdout + r.stderr
    r = _cli(
        tmp_path,
        "generate",
        "stress",
        "--probe",
        "lane_change",
        "--source",
        str(source),
        "--out",
        str(tmp_path / "data"),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(
        tmp_path,
        "run",
        "stress",
        "--data",
        str(tmp_path / "data"),
        "--model",
        "oracle",
        "--model",
        "chance",
        "--model",
        "constant:no_change",
        "--condition",
        "frames@4",
        "--out",
        str(tmp_path / "run"),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    for cmd in ("score", "report"):
        r = _cli(tmp_path, cmd, str(tmp_path / "run"))
        assert r.returncode == 0, r.stdout + r.stderr
    recs = [ScoreRecord.model_validate_json(x) for x in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()]
    assert len(recs) == 8 * 3 and {r.params["probe"] for r in recs} == {"lane_change"}
    rep = Report.model_validate_json((tmp_path / "run" / "report" / "report.json").read_text())
    cells = rep.results["lane_change"]["cells"]
    oracle = next(c for k, c in cells.items() if k.startswith("oracle|"))
    assert (oracle["tp"], oracle["fn"], oracle["fp"], oracle["tn"], oracle["f1"]) == (4, 0, 0, 4, 1.0)
    const = next(c for k, c in cells.items() if k.startswith("constant:no_change|"))
    assert (const["tp"], const["fn"], const["f1"]) == (0, 4, 0.0)
    assert const["chance_f1"] == pytest.approx(0.5 / (0.5 + 0.5))
    sec = next(s for s in rep.sections if s.id == "stress-lane-change")
    table = sec.tables[0]
    assert {"TP", "FN", "FP", "TN", "F1", "chance F1", "human ceiling"} <= set(table.columns)
    assert all(row[-1] == "not measured" for row in table.rows)
    assert "Lane change" in (tmp_path / "run" / "report" / "report.html").read_text()
