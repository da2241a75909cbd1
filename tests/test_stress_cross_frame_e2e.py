"""generate stress --probe cross_frame -> run (oracle, chance, ideal-observer; the raw condition and a
+strip_mask condition, from the dataset's run config) -> score -> report, through the CLI; resume calls
nothing again, and a sampler that hides strips is refused before any call."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vidaudit.report.model import Report
from vidaudit.score.records import ScoreRecord

MASK = "strip_mask(S=128,k=4,orientation=vertical,v=24)"


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vidaudit.cli", *args], cwd=root, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cf_e2e")
    r = _cli(root, "generate", "stress", "--probe", "cross_frame", "--out", str(root / "data"), "--seeds", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    cfg = yaml.safe_load((root / "data" / "cross_frame.yaml").read_text())
    assert cfg["conditions"] == ["frames@6", f"frames@24+{MASK}"]
    args = ("run", "stress", "--config", str(root / "data" / "cross_frame.yaml"), "--model", "oracle", "--model",
            "chance", "--model", "ideal-observer", "--out", str(root / "run"))
    r = _cli(root, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(root, *args)                          # resume: everything is stored, nothing is called again
    assert r.returncode == 0 and "24 already ok" in r.stdout + r.stderr and "0 called" in r.stdout + r.stderr
    for stage in ("score", "report"):
        r = _cli(root, stage, str(root / "run"))
        assert r.returncode == 0, r.stdout + r.stderr
    return root


def test_records(root: Path) -> None:
    recs = [ScoreRecord.model_validate_json(x) for x in (root / "run" / "scores.jsonl").read_text().splitlines()]
    assert len(recs) == 4 * 2 * 3
    assert all(r.correct for r in recs if r.model == "oracle")
    observer = [r for r in recs if r.model == "ideal-observer"]
    assert all(r.correct for r in observer), [(r.sample_id, r.condition) for r in observer if not r.correct]
    assert {r.condition for r in recs} == {"frames@6/mcq", f"frames@24+{MASK}/mcq"}
    assert len(list((root / "run" / "perturbed").rglob("*.mp4"))) == 2      # one masked video per clip


def test_report(root: Path) -> None:
    rep = Report.model_validate_json((root / "run" / "report" / "report.json").read_text())
    res = rep.results["cross_frame"]
    assert res["chance"] == {"forced": pytest.approx(0.2), "abstention": pytest.approx(1 / 6)}
    cell = res["cells"][f"ideal-observer|frames@6/mcq|frames@24+{MASK}/mcq|abs|all"]
    assert cell["tbsr"] == 1.0 and cell["n_pairs"] == 2 and cell["raw"]["accuracy"] == 1.0
    chance = res["cells"][f"chance|frames@6/mcq|frames@24+{MASK}/mcq|forced|all"]
    assert chance["n_pairs"] == 2 and chance["raw"]["n_planned"] == 2
    sec = next(s for s in rep.sections if s.id == "stress-cross-frame")
    table = sec.tables[0]
    assert table.columns[-3:] == ["chance", "paper reported", "human ceiling"]
    assert all(row[-1] == "not measured" for row in table.rows)
    html = (root / "run" / "report" / "report.html").read_text()
    assert "strips visible" in html and re.search(r"128 of 128 strips over the \d+ frames sent", html)


def test_a_sampler_that_hides_strips_is_refused(root: Path) -> None:
    r = _cli(root, "run", "stress", "--data", str(root / "data"), "--model", "oracle", "--prompt", "mcq",
             "--condition", f"frames@12+{MASK}", "--out", str(root / "bad"))
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "refused before any call" in out and "coprime" in out and "stress-cross_frame-synth" in out
    assert not (root / "bad" / "store.sqlite").exists()
