"""The object-centric framework end to end, offline, through the CLI: smoke worlds -> run the offline framework,
its shuffled-order and linking-off ablations and the blind references -> report (A_faith far above every blind
reference; shuffling the trajectories' time order brings ordering probes near chance; retrieval scored). The CLI
runs through its entry point in the test process (tests/clirun.py)."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from clirun import invoke
from vidaudit.core.contract.report import Report

COND = "native@1/yes_no"
OC = "object-centric:offline"
SHUF = "object-centric:order=shuffled,offline"
NOLINK = "object-centric:chunk_s=3,linking=off,offline"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``cwd``, through the CLI's entry point in this process (tests/clirun.py)."""
    return invoke(*args, cwd=cwd)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("oc")
    # four smoke worlds: since issue 32 a smoke world has one order pair (beside a count and an identity pair), and
    # the shuffled-order claim needs more than the 8 ordering probes of the preset's two worlds
    r = _cli(
        "generate",
        "faithful",
        "--out",
        str(root / "data"),
        "--preset",
        "smoke",
        "--seeds",
        "4",
        "--workers",
        "1",
        cwd=root,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(
        "run",
        "faithful",
        "--data",
        str(root / "data"),
        "--model",
        OC,
        "--model",
        SHUF,
        "--model",
        NOLINK,
        "--model",
        "majority",
        "--model",
        "question-only:chance",
        "--condition",
        "native@1",
        "--out",
        str(root / "run"),
        cwd=root,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("report", str(root / "run"), cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    return root / "run"


def _results(run: Path) -> dict:
    return Report.model_validate_json((run / "report" / "report.json").read_text()).results


def test_framework_is_far_above_every_blind_reference(run: Path) -> None:
    res = _results(run)
    m = res["metrics"]
    refs = res["references"]
    blind = [
        refs["majority"]["a_faith"]["value"],
        refs["chance_expectation"]["a_faith"],
        m["majority"][COND]["a_faith"],
        m["question-only:chance"][COND]["a_faith"],
    ]
    assert m[OC][COND]["a_faith"] >= 0.75
    assert m[OC][COND]["a_faith"] >= max(blind) + 0.5
    kinds = {r["kind"] for r in refs["runs"]}
    assert kinds == {"majority", "question_only"} and isinstance(refs["caption_only"], str)


def test_shuffled_order_brings_ordering_probes_near_chance(run: Path) -> None:
    d = _results(run)["detail"]
    assert d[OC][COND]["sub_by_probe"]["ordering"]["value"] >= 0.9
    shuffled = d[SHUF][COND]["sub_by_probe"]
    assert 0.2 <= shuffled["ordering"]["value"] <= 0.8
    assert shuffled["single_fact"]["value"] > shuffled["ordering"]["value"]


def test_extraction_is_built_once_per_video_and_retrieval_is_scored(run: Path) -> None:
    with sqlite3.connect(run / "store.sqlite") as con:
        calls = dict(con.execute("select stage, count(*) from stage_calls group by stage").fetchall())
    # 4 videos of 20 s (the smoke preset since issue 23; 12 s before): two chunks each, 15 s and 5 s (shared by the
    # default and shuffled specs: same sub-requests), and 7 chunks of 3 s each for the linking-off spec
    assert calls["extract"] == 4 * 2 + 4 * 7
    ret = _results(run)["retrieval"]
    assert f"{OC} / {COND}" in ret and ret[f"{OC} / {COND}"]["precision_macro"] > 0.9
    assert "majority / " + COND not in ret
