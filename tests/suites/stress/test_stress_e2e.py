"""generate stress (2D and 3D) -> run (oracle, chance, camera-flow, ideal-observer; frames@4) -> score ->
report, through the CLI (its entry point in the test process, tests/clirun.py; the refusal of an unknown probe as a
real process; camera-flow is a built-in provider)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clirun import invoke
from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.report import Report


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``root``, through the CLI's entry point in this process (tests/clirun.py)."""
    return invoke(*args, cwd=root)


def _proc(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``root`` as a real process (a refusal's exit code)."""
    return subprocess.run(
        [sys.executable, "-m", "vidaudit.cli", *args], cwd=root, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stress_e2e")
    r = _cli(
        root, "generate", "stress", "--probe", "camera_motion", "--set", "synthesis=both", "--out", str(root / "data")
    )
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
        "camera-flow",
        "--model",
        "ideal-observer",
        "--condition",
        "frames@4",
        "--out",
        str(root / "run"),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(root, "score", str(root / "run"))
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(root, "report", str(root / "run"))
    assert r.returncode == 0, r.stdout + r.stderr
    return root / "run"


def test_unknown_probe_is_refused(tmp_path: Path) -> None:
    r = _proc(tmp_path, "generate", "stress", "--probe", "no_such_probe", "--out", str(tmp_path / "d"))
    assert r.returncode != 0 and "camera_motion" in r.stdout + r.stderr


def test_records(run_dir: Path) -> None:
    recs = [ScoreRecord.model_validate_json(x) for x in (run_dir / "scores.jsonl").read_text().splitlines()]
    assert len(recs) == 24 * 4
    by = {m: [r for r in recs if r.model == m] for m in ("oracle", "chance", "camera-flow", "ideal-observer")}
    assert all(r.correct for r in by["oracle"])
    assert {r.model_role for r in by["camera-flow"]} == {"observer"} == {r.model_role for r in by["ideal-observer"]}
    assert all(r.parse is not None and r.parse.method == "boxed" for r in recs)
    for observer in ("camera-flow", "ideal-observer"):
        for synth in ("2d", "3d"):
            rs = [r for r in by[observer] if r.params["synthesis"] == synth]
            flow = sum(bool(r.correct) for r in rs) / len(rs)
            assert len(rs) == 12 and flow >= 0.95, (observer, synth, flow)
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
    assert len(grids) == 4 and grids[0].rows == ["zoom_in", "zoom_out", "pan_left", "pan_right", "tilt_up", "tilt_down"]
    summary = sec.tables[0]
    assert "chance" in summary.columns and "human ceiling" in summary.columns
    assert all(row[-1] == "not measured" for row in summary.rows)
    paper = next(t for t in sec.tables if t.id == "stress-camera-paper")
    assert ["Gemini 2.5 Pro", "24.3"] in paper.rows
    synth = next(t for t in sec.tables if t.id == "stress-camera-synthesis")
    assert {row[2] for row in synth.rows} == {"2d", "3d"}
    cell = next(c for k, c in cells.items() if k.startswith("camera-flow|"))
    assert set(cell["per_synthesis"]) == {"2d", "3d"}
    assert "Camera motion" in (run_dir / "report" / "report.html").read_text()
