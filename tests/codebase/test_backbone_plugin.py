"""A suite defined outside the package, registered only through the ``vidaudit.suites`` entry point,
works with every command: generate -> run (oracle, chance) -> score -> report, and `vidaudit suites`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.report import Report

SITE = Path(__file__).parents[1] / "plugin_site"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SITE), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "vidaudit.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240
    )


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("toy")
    r = _cli("generate", "toy", "--out", str(root / "data"), cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(
        "run",
        "toy",
        "--data",
        str(root / "data"),
        "--model",
        "oracle",
        "--model",
        "chance",
        "--condition",
        "frames@2",
        "--condition",
        "native",
        "--out",
        str(root / "run"),
        cwd=root,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return root


def test_listed_by_vidaudit_suites(tmp_path: Path) -> None:
    r = _cli("suites", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "toy" in r.stdout and "counting" in r.stdout


def test_score_writes_one_record_per_trial(toy_run: Path) -> None:
    r = _cli("score", str(toy_run / "run"), cwd=toy_run)
    assert r.returncode == 0, r.stdout + r.stderr
    records = [ScoreRecord.model_validate_json(x) for x in (toy_run / "run" / "scores.jsonl").read_text().splitlines()]
    assert len(records) == 6 * 2 * 2
    assert {r.suite for r in records} == {"toy"}
    oracle = [r for r in records if r.model == "oracle"]
    assert oracle and all(r.correct for r in oracle)
    assert {r.model_role for r in records} == {"oracle", "chance"}
    # the toy's native condition is resolved per model: the baselines see every frame
    assert {r.condition for r in records} == {"frames@2/plain", "native@all/plain"}


def test_report_is_written_and_valid(toy_run: Path) -> None:
    r = _cli("report", str(toy_run / "run"), cwd=toy_run)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = Report.model_validate_json((toy_run / "run" / "report" / "report.json").read_text())
    assert rep.suite == "toy" and rep.sections[0].id == "toy"
    assert rep.results["accuracy"]["oracle|frames@2/plain"] == 1.0
    assert "toy suite: three colours" in rep.notes
    html = (toy_run / "run" / "report" / "report.html").read_text()
    assert "Toy accuracy" in html
    md = (toy_run / "run" / "report" / "report.md").read_text()
    assert "Toy accuracy" in md


def test_resume_calls_nothing(toy_run: Path) -> None:
    r = _cli("run", "--resume", str(toy_run / "run"), cwd=toy_run)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "24 already ok" in " ".join(r.stderr.split()), r.stderr


def test_score_responses_with_the_plugin(toy_run: Path) -> None:
    manifest = toy_run / "data" / "manifest.jsonl"
    sid = json.loads(manifest.read_text().splitlines()[0])["sample_id"]
    resp = toy_run / "resp.jsonl"
    resp.write_text(json.dumps({"sample_id": sid, "response": "\\boxed{red}", "model": "m"}) + "\n")
    r = _cli(
        "score-responses",
        "--suite",
        "toy",
        "--samples",
        str(manifest),
        "--responses",
        str(resp),
        "--out",
        str(toy_run / "s.jsonl"),
        "--report",
        str(toy_run / "rep"),
        cwd=toy_run,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    row = ScoreRecord.model_validate_json((toy_run / "s.jsonl").read_text())
    assert row.correct is True and row.suite == "toy"
    Report.model_validate_json((toy_run / "rep" / "report.json").read_text())


def test_wrong_suite_for_the_data_is_refused(toy_run: Path) -> None:
    r = _cli(
        "run",
        "counting",
        "--data",
        str(toy_run / "data"),
        "--model",
        "oracle",
        "--condition",
        "frames@1",
        "--out",
        str(toy_run / "wrong"),
        cwd=toy_run,
    )
    assert r.returncode == 2
    assert "vidaudit run toy" in " ".join(r.stderr.split())


def test_a_composite_model_from_a_plugin_runs_through_the_cli(toy_run: Path) -> None:
    """Each stage is a stored call; a resumed run repeats none; the final answer is scored."""
    from vidaudit.run.store.reader import StoreReader

    run = toy_run / "composite"
    args = (
        "run",
        "toy",
        "--data",
        str(toy_run / "data"),
        "--model",
        "toy-judge",
        "--condition",
        "frames@2",
        "--out",
        str(run),
    )
    r = _cli(*args, cwd=toy_run)
    assert r.returncode == 0, r.stdout + r.stderr
    with StoreReader(run) as store:
        calls = store.stage_calls()
        assert sorted({c.stage for c in calls}) == ["answer", "judge"] and len(calls) == 12
        before = len(calls)
    r = _cli(*args, cwd=toy_run)
    assert r.returncode == 0, r.stdout + r.stderr
    with StoreReader(run) as store:
        assert len(store.stage_calls()) == before
    r = _cli("score", str(run), cwd=toy_run)
    assert r.returncode == 0, r.stdout + r.stderr
    records = [ScoreRecord.model_validate_json(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    assert len(records) == 6 and all(x.correct for x in records)  # the judge's boxed answer is the last one
