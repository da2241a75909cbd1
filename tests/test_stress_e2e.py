"""generate stress -> run (oracle, chance, camera-flow; frames@4) -> score -> report, through the CLI
(camera-flow is a built-in provider)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vidaudit.report.model import Report
from vidaudit.score.records import ScoreRecord


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vidaudit.cli", *args], cwd=root, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stress_e2e")
    r = _cli(root, "generate", "stress", "--probe", "camera_motion", "--out", str(root / "data"))
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(root, "run", "stress", "--data", str(root / "data"), "--model", "oracle", "--model", "chance",
             "--model", "camera-flow", "--condition", "frames@4", "--out", str(root / "run"))
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(root, "score", str(root / "run"))
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(root, "report", str(root / "run"))
    assert r.returncode == 0, r.stdout + r.stderr
    return root / "run"


def test_unknown_probe_is_refused(tmp_path: Path) -> None:
    r = _cli(tmp_path, "generate", "stress", "--probe", "no_such_probe", "--out", str(tmp_path / "d"))
    assert r.returncode != 0 and "camera_motion" in r.stdout + r.stderr


def test_records(run_dir: Path) -> None:
    recs = [ScoreRecord.model_validate_json(x) for x in (run_dir / "scores.jsonl").read_text().splitlines()]
    assert len(recs) == 12 * 3
    by = {m: [r for r in recs if r.model == m] for m in ("oracle", "chance", "camera-flow")}
    assert all(r.correct for r in by["oracle"])
    assert {r.model_role for r in by["camera-flow"]} == {"observer"}
    assert all(r.parse is not None and r.parse.method == "boxed" for r in recs)
    flow = sum(bool(r.correct) for r in by["camera-flow"]) / len(by["camera-flow"])
    assert flow >= 0.95, flow
    assert {r.params["probe"] for r in recs} == {"camera_motion"}


def test_report_validates(run_dir: Path) -> None:
    rep = Report.model_validate_json((run_dir / "report" / "report.json").read_text())
    assert rep.suite == "stress"
    cells = rep.results["camera_motion"]["cells"]
    oracle = next(c for k, c in cells.items() if k.startswith("oracle|"))
    assert oracle["accuracy"] == 1.0 and oracle["completion"] == 1.0
    assert abs(rep.results["camera_motion"]["chance"] - 1 / 6) < 1e-12
    sec = rep.sections[0]
    assert sec.id == "stress-camera-motion"
    grids = [f for f in sec.figures if f.kind == "grid"]
    assert len(grids) == 3 and grids[0].rows == ["zoom_in", "zoom_out", "pan_left", "pan_right", "tilt_up",
                                                 "tilt_down"]
    summary = sec.tables[0]
    assert "chance" in summary.columns and "human ceiling" in summary.columns
    assert all(row[-1] == "not measured" for row in summary.rows)
    paper = next(t for t in sec.tables if t.id == "stress-camera-paper")
    assert ["Gemini 2.5 Pro", "24.3"] in paper.rows
    assert "Camera motion" in (run_dir / "report" / "report.html").read_text()
