"""The stress report's intervals count sources where a cell's items share one (docs/stress.md, "Intervals").

camera_motion moves each scene six ways, so its model x condition cell holds six items per scene: a model right
on every item of two scenes and wrong on every item of two others has answered four sources, not 24 independent
items. Generated dataset -> answers scored by ``vidaudit score-responses`` -> the written report.json and
report.md are read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import invoke
from vidaudit.score.stats import wilson_interval


def _score_responses(root: Path) -> None:
    """``vidaudit score-responses`` of ROOT/resp.jsonl against ROOT/data, the report in ROOT/rep."""
    args = [
        "--samples",
        str(root / "data"),
        "--responses",
        str(root / "resp.jsonl"),
        "--out",
        str(root / "scores.jsonl"),
    ]
    r = invoke("score-responses", "--suite", "stress", *args, "--report", str(root / "rep"), cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, Path]:
    root = tmp_path_factory.mktemp("intervals")
    r = invoke("generate", "stress", "--probe", "camera_motion", "--seeds", "4", "--out", str(root / "data"), cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    samples = [json.loads(line) for line in (root / "data" / "manifest.jsonl").read_text().splitlines()]
    assert sorted({s["params"]["scene"] for s in samples}) == [0, 1, 2, 3] and len(samples) == 24
    lines = []
    for i, s in enumerate(sorted(samples, key=lambda s: s["sample_id"])):
        right = s["params"]["option"]
        wrong = "B" if right != "B" else "C"
        # "split": right on scenes 0 and 1, wrong on 2 and 3; "even": right on half of every scene's items
        split = right if s["params"]["scene"] < 2 else wrong
        even = right if s["params"]["motion"] in ("zoom_in", "pan_left", "tilt_up") else wrong
        lines.append({"sample_id": s["sample_id"], "model": "split", "response": f"\\boxed{{{split}}}"})
        lines.append({"sample_id": s["sample_id"], "model": "even", "response": f"\\boxed{{{even}}}"})
    (root / "resp.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    _score_responses(root)
    res = json.loads((root / "rep" / "report.json").read_text(encoding="utf-8"))["results"]["camera_motion"]
    return res, (root / "rep" / "report.md").read_text(encoding="utf-8"), root


def test_the_suite_names_each_records_scene_for_the_stages(report: tuple[dict, str, Path]) -> None:
    """``Suite.source_of`` is how a stage outside the suite (``vidaudit compare``) learns what the report counts: the
    stress suite routes each written record to its probe, which names the scene, not the record's video."""
    from vidaudit.core.contract.records import ScoreRecord
    from vidaudit.core.registry import get_suite

    records = [
        ScoreRecord.model_validate_json(line)
        for line in (report[2] / "scores.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    samples = {
        s["sample_id"]: s
        for s in map(json.loads, (report[2] / "data" / "manifest.jsonl").read_text(encoding="utf-8").splitlines())
    }
    stress, counting = get_suite("stress"), get_suite("counting")
    assert len(records) == 48
    for r in records:
        assert stress.source_of(r) == ("scene", str(samples[r.sample_id]["params"]["scene"])), r
        assert counting.source_of(r) == ("video", r.group_id)  # the contract's default: the item's video
    assert len({stress.source_of(r) for r in records}) == 4 < len({r.group_id for r in records}) == 24


def test_a_cell_of_scenes_that_disagree_counts_scenes_not_items(report: tuple[dict, str, Path]) -> None:
    res, md, _ = report
    cell = res["cells"]["split|external"]
    assert (cell["n_correct"], cell["n_planned"]) == (12, 24)
    assert cell["ci_unit"] == "scene" and cell["n_sources"] == 4 and cell["design_effect"] > 1
    lo, hi = wilson_interval(12, 24)  # what the report said before: 24 independent items, [31.4, 68.6]
    assert cell["ci_low"] < lo and cell["ci_high"] > hi
    # two scenes all right, two all wrong: four sources cannot pin the accuracy near 50%
    assert cell["ci_low"] < 0.25 and cell["ci_high"] > 0.75
    assert res["cells"]["split|external"]["per_synthesis"]["2d"]["ci_unit"] == "scene"
    row = next(line for line in md.splitlines() if line.startswith("| split | external | model |"))
    assert f"[{100 * cell['ci_low']:.1f}, {100 * cell['ci_high']:.1f}] (4 scenes)" in row
    assert any("intervals marked (N scenes) are counted over the items' sources" in line for line in md.splitlines())


def test_scenes_that_agree_keep_wilsons_interval_and_one_item_per_scene_is_over_items(
    report: tuple[dict, str, Path],
) -> None:
    res, _, _ = report
    even = res["cells"]["even|external"]
    assert (even["n_correct"], even["n_planned"]) == (12, 24)
    # every scene 3 of 6: no more spread between scenes than independent items give; never narrower than Wilson
    assert even["ci_unit"] == "scene" and even["design_effect"] == 1.0
    assert (even["ci_low"], even["ci_high"]) == wilson_interval(12, 24)
    for motion, c in res["cells"]["split|external"]["per_direction"].items():  # one item per scene: independent
        assert c["ci_unit"] == "item" and c["n_sources"] == 4, motion
        assert (c["ci_low"], c["ci_high"]) == wilson_interval(c["n_correct"], c["n_planned"])


def test_sycophancy_counts_videos_in_every_rate_and_the_balanced_accuracy(tmp_path: Path) -> None:
    """The default smoke set makes 18 claims about each of two videos (both claims of every pair show one video):
    a model right on every claim about one video and wrong on every claim about the other has answered two
    sources, in its rejection, acceptance and balanced accuracy alike."""
    r = invoke("generate", "stress", "--probe", "sycophancy", "--out", str(tmp_path / "data"), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    samples = [json.loads(line) for line in (tmp_path / "data" / "manifest.jsonl").read_text().splitlines()]
    videos = sorted({s["video"]["path"] for s in samples})
    assert len(videos) == 2 and len(samples) == 36
    lines = []
    for s in samples:
        right = s["answer"]
        answer = right if s["video"]["path"] == videos[0] else ("AGREE" if right == "DISAGREE" else "DISAGREE")
        lines.append({"sample_id": s["sample_id"], "model": "one-video", "response": answer})
    (tmp_path / "resp.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    _score_responses(tmp_path)
    rep = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    overall = rep["results"]["sycophancy"]["cells"]["one-video|external"]["overall"]
    for key in ("false_claim_rejection", "true_claim_acceptance", "balanced_accuracy"):
        cell = overall[key]
        assert cell["ci_unit"] == "video" and cell["n_sources"] == 2 and cell["design_effect"] > 1, key
    bal = overall["balanced_accuracy"]
    assert bal["accuracy"] == 0.5
    lo, hi = wilson_interval(18, 36)  # the old interval: 36 independent trials, [34.2, 65.8]
    assert bal["ci_low"] < lo and bal["ci_high"] > hi
    assert bal["ci_low"] < 0.2 and bal["ci_high"] > 0.8


def test_the_audit_profile_carries_the_reports_interval_not_wilson_over_items(report: tuple[dict, str, Path]) -> None:
    """``vidaudit audit``'s profile summed each model's cell into k of n and put Wilson's interval over the n items
    beside it: for a model right on two of four scenes, [31.4, 68.6] where the report counts four scenes."""
    from vidaudit.core.contract.profile import AuditPart
    from vidaudit.suites.stress.audit import profile_figures

    res, _, _ = report
    part = AuditPart(name="camera_motion", preset="smoke", conditions=("frames#8",), probe="camera_motion")
    figures = profile_figures(part, {"camera_motion": res}).by_model
    for model in ("split", "even"):
        cell = res["cells"][f"{model}|external"]
        (fig,) = figures[model]
        assert (fig.k, fig.n, fig.ci_low, fig.ci_high) == (12, 24, cell["ci_low"], cell["ci_high"])
        assert fig.note == "interval over 4 scenes"  # the unit the report's cell was counted in
    split = figures["split"][0]
    assert split.ci_high - split.ci_low > wilson_interval(12, 24)[1] - wilson_interval(12, 24)[0] + 0.1
