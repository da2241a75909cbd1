"""generate stress --probe cross_frame -> run (oracle, chance, ideal-observer; the raw condition and a
+strip_mask condition, from the dataset's run config) -> score -> report, through the CLI (its entry point in the
test process, tests/clirun.py); resume calls nothing again, and a sampler that hides strips is refused before any
call (a real process: its exit code)."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clirun import invoke
from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.report import Report

MASK = "strip_mask(S=128,k=4,orientation=vertical,v=24)"


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``root``, through the CLI's entry point in this process (tests/clirun.py)."""
    return invoke(*args, cwd=root)


def _proc(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``root`` as a real process (the refusal's exit code)."""
    return subprocess.run(
        [sys.executable, "-m", "vidaudit.cli", *args], cwd=root, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cf_e2e")
    r = _cli(root, "generate", "stress", "--probe", "cross_frame", "--out", str(root / "data"), "--seeds", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    cfg = yaml.safe_load((root / "data" / "cross_frame.yaml").read_text())
    assert cfg["conditions"] == ["frames@6", f"frames@24+{MASK}"]
    args = (
        "run",
        "stress",
        "--config",
        str(root / "data" / "cross_frame.yaml"),
        "--model",
        "oracle",
        "--model",
        "chance",
        "--model",
        "ideal-observer",
        "--out",
        str(root / "run"),
    )
    r = _cli(root, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(root, *args)  # resume: everything is stored, nothing is called again
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
    assert len(list((root / "run" / "perturbed").rglob("*.mp4"))) == 2  # one masked video per clip


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


def test_the_audit_profile_counts_each_forced_trial_once(root: Path) -> None:
    """The audit profile's raw and masked figures (k/n, Wilson interval) are the forced-choice trials of each
    condition, counted from scores.jsonl, each once: the profile once summed the T, S and "all" split cells, so
    every k and n was doubled (a smoke audit printed chance's masked figure as 2/8 for the 1 of 4 its report shows) and its interval too narrow."""
    from vidaudit.core.contract.profile import AuditPart
    from vidaudit.suites.stress.audit import profile_figures

    recs = [ScoreRecord.model_validate_json(x) for x in (root / "run" / "scores.jsonl").read_text().splitlines()]
    rep = Report.model_validate_json((root / "run" / "report" / "report.json").read_text())
    part = AuditPart(name="cross_frame", preset="smoke", conditions=(), probe="cross_frame")
    by_model = profile_figures(part, rep.results).by_model
    assert set(by_model) == {"oracle", "chance", "ideal-observer"}
    for model, figures in by_model.items():
        for fig in figures:
            cond = "frames@6/mcq" if fig.name == "raw" else f"frames@24+{MASK}/mcq"
            mine = [r for r in recs if r.model == model and r.condition == cond and not r.params["abstention"]]
            k, n = sum(bool(r.correct) for r in mine), len(mine)
            assert n and (fig.k, fig.n) == (k, n), (model, fig)
            z = 1.959963984540054  # Wilson's interval, textbook form
            centre, half = (k + z * z / 2) / (n + z * z), z * math.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
            assert fig.ci_low == pytest.approx(max(0.0, centre - half)) and fig.ci_high == pytest.approx(
                min(1.0, centre + half)
            )


def test_a_sampler_that_hides_strips_is_refused(root: Path) -> None:
    r = _proc(
        root,
        "run",
        "stress",
        "--data",
        str(root / "data"),
        "--model",
        "oracle",
        "--prompt",
        "mcq",
        "--condition",
        f"frames@12+{MASK}",
        "--out",
        str(root / "bad"),
    )
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "refused before any call" in out and "coprime" in out and "stress-cross_frame-synth" in out
    assert not (root / "bad" / "store.sqlite").exists()


def test_the_paper_sampling_runs_on_request_with_its_coverage_warning(tmp_path: Path) -> None:
    """``--set sampling=paper``: Reveal's frames#64, frames#75 and frames@24 (Fig. 8 / Table 13), raw and masked. Without
    the opt-in frames#64 on a masked clip is refused (above); with it the run goes ahead, and the warning is
    printed at generate, recorded in dataset.json and every sample, and in the report. The recorded share of
    strips shown is read back independently: ffmpeg decodes the run's masked video and the columns lit in the
    frames the store logged as sent match it; the integrating observer, sent those frames, loses what it is not
    shown."""
    import json
    import sqlite3

    import numpy as np

    from realvideos import Player
    from vidaudit.core.manifest import load_samples
    from vidaudit.run.conditions import parse_condition
    from vidaudit.run.perturbed import plan_chain, render

    r = _cli(
        tmp_path,
        "generate",
        "stress",
        "--probe",
        "cross_frame",
        "--out",
        str(tmp_path / "data"),
        "--set",
        "sampling=paper",
        "--seeds",
        "2",
    )  # 4 clips, as the module's run: the same 81.2%, 2 of them missing strips
    assert r.returncode == 0, r.stdout + r.stderr
    out = " ".join((r.stdout + r.stderr).split())
    assert "warning: sampling=paper" in out and f"frames#64+{MASK}: 81.2% of strips shown on average" in out
    cfg = yaml.safe_load((tmp_path / "data" / "cross_frame.yaml").read_text())
    assert cfg["conditions"] == [
        "frames#64",
        f"frames#64+{MASK}",
        "frames#75",
        f"frames#75+{MASK}",
        "frames@24",
        f"frames@24+{MASK}",
    ]
    info = json.loads((tmp_path / "data" / "dataset.json").read_text())
    assert info["sampling"] == "paper" and "may leave some strips unseen" in info["coverage_warning"]
    assert info["coverage"][f"frames@24+{MASK}"]["n_missing_strips"] == 0
    samples = {s.sample_id: s for s in load_samples(tmp_path / "data")}
    assert all(s.params["strip_coverage"] == "partial" for s in samples.values())
    r = _cli(
        tmp_path,
        "run",
        "stress",
        "--data",
        str(tmp_path / "data"),
        "--prompt",
        "mcq",
        "--model",
        "oracle",
        "--model",
        "ideal-observer",
        "--out",
        str(tmp_path / "run"),
        *(x for c in cfg["conditions"] if "#75" not in c for x in ("--condition", c)),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    con = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    rows = con.execute(
        "select t.sample_id, t.condition_id, a.frame_indices from attempts a join trials t "
        "on a.trial_id = t.trial_id where t.condition_id like ?",
        (f"frames#64+{MASK}%",),
    ).fetchall()
    assert rows
    player = Player.required()
    cond = parse_condition(f"frames#64+{MASK}", "mcq")
    checked = 0
    for sid, _, sent in rows:
        s = samples[sid]
        sent = json.loads(sent)
        want = s.params["coverage"][f"frames#64+{MASK}"]
        # the masked video the run rendered for this clip (a cache hit: nothing is rendered again)
        path, _, _ = render(
            tmp_path / "data" / s.video.path, plan_chain(s, cond.perturbations), tmp_path / "run" / "perturbed"
        )
        _, frames = player.frames(path)
        assert len(frames) == 4 * s.video.n_frames
        lit = np.logical_or.reduce([(frames[i].max(axis=2) > 48).any(axis=0) for i in sent])
        full = np.logical_or.reduce([(f.max(axis=2) > 48).any(axis=0) for f in frames])
        assert abs(lit.sum() / full.sum() - want) < 0.05, (sid, lit.sum() / full.sum(), want)
        checked += 1
        if checked >= 2:
            break
    r = _cli(tmp_path, "report", str(tmp_path / "run"))
    assert r.returncode == 0, r.stdout + r.stderr
    rep = Report.model_validate_json((tmp_path / "run" / "report" / "report.json").read_text())
    res = rep.results["cross_frame"]
    assert any("WARNING" in n and f"frames#64+{MASK}" in n for n in res["coverage_warnings"])
    lossy = res["cells"][f"ideal-observer|frames#64/mcq|frames#64+{MASK}/mcq|abs|all"]
    whole = res["cells"][f"ideal-observer|frames@24/mcq|frames@24+{MASK}/mcq|abs|all"]
    assert lossy["raw"]["accuracy"] == whole["raw"]["accuracy"] == whole["occ"]["accuracy"] == 1.0
    assert lossy["occ"]["accuracy"] < 1.0  # strips not sent cannot be integrated


def _scored_lines(run: Path) -> tuple[dict, list[dict]]:
    import json

    head, *lines = (run / "scored_run.jsonl").read_text(encoding="utf-8").splitlines()
    return json.loads(head), [json.loads(x) for x in lines]


def test_the_scored_file_records_the_perturbed_video_each_masked_trial_was_sent(root: Path) -> None:
    """The scored file is the report's hand-off: a masked trial's line names the masked video its frames are frames
    of (in the run's cache, with its sha256, hashed here independently); an unmasked trial's line has no such key."""
    import hashlib

    _, lines = _scored_lines(root / "run")
    masked = [x for x in lines if "+strip_mask" in x["record"]["condition"]]
    plain = [x for x in lines if "+strip_mask" not in x["record"]["condition"]]
    assert masked and plain and all("perturbed" not in x for x in plain)
    cached = {
        p.relative_to(root / "run").as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (root / "run" / "perturbed").rglob("*.mp4")
    }
    assert all(x["frames"] for x in masked)
    assert {x["perturbed"]["path"] for x in masked} == set(cached)  # one masked video per clip, each named
    assert all(cached[x["perturbed"]["path"]] == x["perturbed"]["sha256"] for x in masked)


def _copy_run(root: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(root / "run", to / "run", ignore=shutil.ignore_patterns("report"))
    return to / "run"


def test_the_report_refuses_a_missing_or_edited_perturbed_video_and_rescore_renders_it_again(
    root: Path, tmp_path: Path
) -> None:
    import shutil

    run = _copy_run(root, tmp_path)
    before = {p.relative_to(run): p.read_bytes() for p in sorted((run / "perturbed").rglob("*")) if p.is_file()}
    shutil.rmtree(run / "perturbed")
    r = _cli(tmp_path, "report", str(run))
    assert r.returncode == 2 and "is missing" in r.stderr and "--rescore" in r.stderr, r.stdout + r.stderr
    r = _cli(tmp_path, "report", "--rescore", str(run))  # scoring renders the masked videos again: same bytes
    assert r.returncode == 0, r.stdout + r.stderr
    assert {p.relative_to(run): p.read_bytes() for p in sorted((run / "perturbed").rglob("*")) if p.is_file()} == before
    html = (run / "report" / "report.html").read_text()
    assert re.search(r"128 of 128 strips over the \d+ frames sent", html)
    video = next((run / "perturbed").rglob("*.mp4"))
    with video.open("r+b") as f:  # an edit in place, size kept
        f.seek(video.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    r = _cli(tmp_path, "report", str(run))
    assert r.returncode == 2 and "changed since the run scored it" in r.stderr, r.stdout + r.stderr


def test_a_scored_file_without_the_perturbed_videos_is_refused_not_drawn_from_the_source(
    root: Path, tmp_path: Path
) -> None:
    """A scored file written before it recorded perturbed videos (the same lines without the key, its checksum made
    whole again, computed here as the format says) would show the source video's frames for masked trials: the
    report refuses it and names the fix."""
    import hashlib
    import json

    run = _copy_run(root, tmp_path)
    head, lines = _scored_lines(run)
    for x in lines:
        x.pop("perturbed", None)
    body = "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines).encode("utf-8")
    fields = {k: v for k, v in head.items() if k != "sha256"}
    h = hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii"))
    h.update(b"\n" + body)
    head["sha256"] = h.hexdigest()
    (run / "scored_run.jsonl").write_bytes(json.dumps(head).encode("utf-8") + b"\n" + body)
    r = _cli(tmp_path, "report", str(run))
    assert r.returncode == 2 and "scored by an older vidaudit" in r.stderr, r.stdout + r.stderr
    assert "vidaudit score" in r.stderr and not (run / "report").exists()
