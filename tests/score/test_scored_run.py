"""``report`` reads what ``score`` wrote: RUN/scored_run.jsonl, typed, versioned and stamped with what it scored.

A real run (oracle and chance at frames@1 on the smoke data, a real SQLite store) is scored with
``vidaudit score``; the report made from the file is the report made by re-scoring the store, a
file of another version or older than the run is refused with a one-line error naming the fix, and
re-scoring happens only when asked (``--rescore``) or when the run was never scored.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.errors import DataError
from vidaudit.score import stage as score_stage
from vidaudit.score.scored_run import (
    SCORED_RUN,
    SCORED_RUN_VERSION,
    ScoredRunHeader,
    parse_trial_line,
    read_scored_run,
    run_stamp,
    trial_line,
    write_scored_run,
)

runner = CliRunner()


def _cli(*args: str):
    return runner.invoke(app, list(args))


@pytest.fixture(scope="module")
def scored_run(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scored")
    r = _cli(
        "run",
        "counting",
        "--data",
        str(smoke_dir),
        "--model",
        "oracle",
        "--model",
        "chance",
        "--condition",
        "frames@1",
        "--out",
        str(root / "run"),
    )
    assert r.exit_code == 0, r.output
    r = _cli("score", str(root / "run"))
    assert r.exit_code == 0, r.output
    return root / "run"


@pytest.fixture
def run(scored_run: Path, tmp_path: Path) -> Path:
    """A copy of the scored run that a test may change."""
    out = tmp_path / "run"
    shutil.copytree(scored_run, out, ignore=shutil.ignore_patterns(".lock", "report"))
    return out


def _without_time(path: Path) -> str:
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", "<time>", path.read_text(encoding="utf-8"))


def _one_line_error(r, *needles: str) -> str:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    for n in needles:
        assert n in r.output, r.output
    return r.output


def test_score_writes_a_typed_versioned_file_with_every_trial(scored_run: Path) -> None:
    lines = (scored_run / SCORED_RUN).read_text(encoding="utf-8").splitlines()
    header = ScoredRunHeader.model_validate_json(lines[0])
    assert header.format == "vidaudit.scored_run" and header.version == SCORED_RUN_VERSION
    assert header.suite == "counting" and header.n_trials == len(lines) - 1 > 0
    assert header.stamp["store"]["trials"][0] == header.n_trials
    scores = [ScoreRecord.model_validate_json(x) for x in (scored_run / "scores.jsonl").read_text().splitlines()]
    assert [parse_trial_line(x).record for x in lines[1:]] == scores  # the records of scores.jsonl, in order
    assert {m for m in header.settings} == {"oracle", "chance"}


def test_the_file_reads_back_as_the_store_scores(scored_run: Path) -> None:
    got, fresh = read_scored_run(scored_run), score_stage.score_store(scored_run)
    assert got.records == fresh.records and got.raw_text == fresh.raw_text and got.frames == fresh.frames
    assert (got.settings, got.stage_usage, got.design, got.changed) == (
        fresh.settings,
        fresh.stage_usage,
        fresh.design,
        fresh.changed,
    )
    assert got.samples == fresh.samples and got.suite.name == fresh.suite.name


def test_every_run_level_fact_reads_back_as_written(run: Path) -> None:
    """The header carries each run-level fact of ``Scored`` and gives it back: each set here to a value no run of
    the smoke data has (an empty default would hide a fact the header dropped)."""
    scored = read_scored_run(run)
    first = scored.records[0]
    facts = {
        "changed": ["a changed trial"],
        "settings": {"oracle": {"temperature": 0.5}},
        "estimated_frames": {"oracle": 3},
        "design": {"name": "adaptive", "waves": 2},
        "stage_usage": {"oracle": {"frames@1": {"calls": 4}}},
        "human": [first.model_copy(update={"model": "human:p1"})],
        "human_study": {"kappa": 0.75},
    }
    for name, value in facts.items():
        setattr(scored, name, value)
    write_scored_run(run, scored, stamp=run_stamp(run), allow_changed=True)
    got = read_scored_run(run)
    assert {name: getattr(got, name) for name in facts} == facts
    assert got.records == scored.records


def test_report_reads_the_file_and_never_rescores(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = _cli("report", str(run), "--rescore")
    assert r.exit_code == 0, r.output
    rescored = {k: _without_time(run / "report" / f"report.{k}") for k in ("json", "md", "html")}

    def refuse(*_a, **_k):
        raise AssertionError("report re-scored the store without --rescore")

    monkeypatch.setattr(score_stage, "score_store", refuse)
    r = _cli("report", str(run))
    assert r.exit_code == 0, r.output
    assert "reading scores" in r.output and "scoring" not in r.output
    for k, text in rescored.items():
        assert _without_time(run / "report" / f"report.{k}") == text, k


def test_a_run_never_scored_is_scored_first(run: Path) -> None:
    (run / SCORED_RUN).unlink()
    (run / "scores.jsonl").unlink()
    r = _cli("report", str(run))
    assert r.exit_code == 0, r.output
    assert (run / SCORED_RUN).is_file() and (run / "scores.jsonl").is_file() and "scoring" in r.output


def test_an_unknown_version_is_refused_naming_the_fix(run: Path) -> None:
    path = run / SCORED_RUN
    head, rest = path.read_text(encoding="utf-8").split("\n", 1)
    path.write_text(json.dumps({**json.loads(head), "version": SCORED_RUN_VERSION + 1}) + "\n" + rest)
    _one_line_error(_cli("report", str(run)), f"version {SCORED_RUN_VERSION + 1}", "vidaudit score", "--rescore")
    assert _cli("report", str(run), "--rescore").exit_code == 0
    assert ScoredRunHeader.model_validate_json(path.read_text().split("\n", 1)[0]).version == SCORED_RUN_VERSION


def test_not_a_scored_run_file_and_a_truncated_one_are_refused(run: Path) -> None:
    path = run / SCORED_RUN
    text = path.read_text(encoding="utf-8")
    path.write_text(text.rsplit("\n", 2)[0] + "\n")  # the last trial lost
    _one_line_error(_cli("report", str(run)), "truncated", "vidaudit score")
    path.write_text('{"format": "something else"}\n')
    _one_line_error(_cli("report", str(run)), "not a vidaudit scored-run file", "--rescore")
    path.write_bytes(b"\xff\xfe not json")
    _one_line_error(_cli("report", str(run)), "not a readable scored-run file")


def test_a_file_older_than_the_store_is_refused_until_rescored(run: Path, smoke_dir: Path) -> None:
    r = _cli(
        "run",
        "counting",
        "--data",
        str(smoke_dir),
        "--model",
        "oracle",
        "--model",
        "chance",
        "--condition",
        "frames@1",
        "--condition",
        "frames@2",
        "--out",
        str(run),
    )
    assert r.exit_code == 0, r.output
    _one_line_error(_cli("report", str(run)), "older than the run", "were stored since", "vidaudit score", "--rescore")
    r = _cli("report", str(run), "--rescore")
    assert r.exit_code == 0, r.output
    report = json.loads((run / "report" / "report.json").read_text())
    assert report["n_records"] == len((run / "scores.jsonl").read_text().splitlines())
    assert "oracle" in report["models"] and any("frames@2" in c for c in report["conditions"])
    assert _cli("report", str(run)).exit_code == 0  # fresh again


def test_a_human_study_imported_after_scoring_makes_the_file_stale(run: Path) -> None:
    (run / "human_records.jsonl").write_text("")
    _one_line_error(_cli("report", str(run)), "human_records.jsonl changed", "vidaudit score")


def test_allow_changed_asks_for_a_scoring_step(run: Path) -> None:
    _one_line_error(_cli("report", str(run), "--allow-changed"), "--rescore")
    assert _cli("report", str(run), "--allow-changed", "--rescore").exit_code == 0


def test_a_missing_file_from_python_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not scored yet.*vidaudit score"):
        read_scored_run(tmp_path)


#: what a model may return: any code point, lone surrogates included (the store keeps them losslessly)
_TEXT = st.text(st.characters(exclude_categories=()), max_size=40)
_PLAIN = st.text(max_size=20)


@given(
    raw=st.none() | _TEXT,
    judgement=st.none() | _TEXT,
    frames=st.lists(st.tuples(st.integers(0, 10**6), st.floats(0, 1e5, allow_nan=False)), max_size=5),
    metric=st.floats(-1e9, 1e9, allow_nan=False) | st.integers(-(2**40), 2**40) | _PLAIN,
    param=_PLAIN,
)
def test_a_trial_line_round_trips_any_text(raw, judgement, frames, metric, param) -> None:
    rec = ScoreRecord(
        trial_id="t",
        sample_id="s",
        suite="counting",
        model="m",
        condition="c",
        group_id="g",
        status="ok",
        correct=True,
        metrics={"x": metric},
        params={"p": param},
    )
    got = parse_trial_line(trial_line(rec, raw, frames, judgement))
    assert got.record == ScoreRecord.model_validate_json(rec.model_dump_json())
    assert (got.raw_text, got.frames, got.judgement) == (raw, [tuple(f) for f in frames], judgement)
