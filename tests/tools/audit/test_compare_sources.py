"""``vidaudit compare`` counts the sources the suite names (``Suite.source_of``), as the part's report does.

camera_motion moves each scene six ways: six videos of one scene. A generated ``--seeds 4`` set (24 items, 24
videos, 4 scenes) is run with oracle and chance through ``vidaudit run``, ``score`` and ``report``, its profile written
by the audit's own writer (one part, as ``vidaudit audit`` writes it), and ``vidaudit compare``'s JSON and printed
lines are read: each entry's interval over 4 scenes (the report's cell interval), and the paired bootstrap over the
same 4 scenes, not over 24 videos."""

from __future__ import annotations

import json

import pytest

from clirun import invoke
from vidaudit.core.contract.profile import AuditPart
from vidaudit.core.registry import get_suite
from vidaudit.tools.audit.build import write_profile
from vidaudit.tools.audit.session import PlannedPart


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, dict, list[dict]]:
    root = tmp_path_factory.mktemp("compare_sources")
    data, run = root / "data", root / "runs" / "camera_motion"
    r = invoke("generate", "stress", "--probe", "camera_motion", "--seeds", "4", "--out", str(data), cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    args = ["run", "--data", str(data), "--model", "oracle", "--model", "chance", "--condition", "frames@4"]
    r = invoke(*args, "--out", str(run), cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    for stage in ("score", "report"):
        r = invoke(stage, str(run), cwd=root)
        assert r.returncode == 0, r.stdout + r.stderr
    part = AuditPart(name="camera_motion", preset="smoke", seeds=4, conditions=("frames@4",), probe="camera_motion")
    planned = PlannedPart(get_suite("stress"), part, "seeds4", data, run, ("frames@4",))
    write_profile(root, "smoke", ["oracle", "chance"], [planned])
    r = invoke("compare", str(root), "--out", str(root / "cmp.json"), env={"COLUMNS": "200"}, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads((run / "report" / "report.json").read_text(encoding="utf-8"))["results"]["camera_motion"]
    samples = [json.loads(line) for line in (data / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]
    return json.loads((root / "cmp.json").read_text(encoding="utf-8")), r.stdout, report, samples


def test_each_entry_counts_scenes_as_the_report_does(compared: tuple[dict, str, dict, list[dict]]) -> None:
    res, stdout, report, samples = compared
    assert len(samples) == 24 and len({s["video"]["sha256"] for s in samples}) == 24
    assert len({s["params"]["scene"] for s in samples}) == 4
    (block,) = res["parts"]
    assert [e["model"] for e in block["entries"]] == ["oracle", "chance"]
    for e in block["entries"]:
        assert (e["n"], e["ci_unit"], e["n_sources"]) == (24, "scene", 4), e
        (cell,) = [c for key, c in report["cells"].items() if key.startswith(f"{e['model']}|")]
        assert (cell["n_correct"], cell["n_planned"], cell["ci_unit"], cell["n_sources"]) == (e["k"], 24, "scene", 4)
        assert (e["ci_low"], e["ci_high"]) == pytest.approx((cell["ci_low"], cell["ci_high"]), abs=1e-12)
        assert e["design_effect"] == pytest.approx(cell["design_effect"], abs=1e-12)
        line = next(x for x in stdout.splitlines() if x.strip().startswith(f"{e['entry']} "))
        assert (
            f"[{100 * e['ci_low']:.1f}%, {100 * e['ci_high']:.1f}%] ({e['k']}/24 trials, interval over 4 scenes,"
            in line
        )
    assert block["entries"][0]["k"] == 24  # the oracle


def test_the_paired_bootstrap_resamples_scenes_not_videos(compared: tuple[dict, str, dict, list[dict]]) -> None:
    res, stdout, _, _ = compared
    (pair,) = res["parts"][0]["paired"]
    assert pair["a"].endswith(":oracle") and pair["b"].endswith(":chance")
    assert (pair["n_pairs"], pair["n_groups"], pair["group_unit"]) == (24, 4, "scene")
    # four scenes: no test over them reaches 5% (a sign flip of each: 2 * 0.5^4), said beside the interval
    assert pair["note"].startswith("too few scenes for a verdict (4 < 6)")
    assert f"over 24 paired trials in 4 scenes; {pair['note']}" in stdout
