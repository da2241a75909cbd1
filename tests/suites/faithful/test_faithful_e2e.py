"""End to end through the CLI, offline: generate faithful (smoke) -> run oracle, chance, constant -> report ->
score-responses, verify and resume; the report validates as ``Report`` and its numbers are the definitions'."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from clirun import invoke
from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.report import Report
from vidaudit.core.manifest import load_samples, read_dataset_info

COND = "frames@1/yes_no"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``cwd``, through the CLI's entry point in this process (tests/clirun.py)."""
    return invoke(*args, cwd=cwd)


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("faithful")
    r = _cli("generate", "faithful", "--out", str(root / "data"), "--preset", "smoke", "--workers", "1", cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Yes share 50.0%" in r.stderr
    r = _cli(
        "run",
        "faithful",
        "--data",
        str(root / "data"),
        "--model",
        "oracle",
        "--model",
        "chance",
        "--model",
        "constant:Yes",
        "--condition",
        "frames@1",
        "--out",
        str(root / "run"),
        cwd=root,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("report", str(root / "run"), cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    return root


def _report(path: Path) -> Report:
    return Report.model_validate_json(path.read_text())


def _score(data: Path, responses: Path, out: Path, report_dir: Path) -> Report:
    """``vidaudit score-responses`` of ``responses`` against ``data`` with a report, which is read back."""
    args = ["--samples", str(data), "--responses", str(responses), "--out", str(out), "--report", str(report_dir)]
    r = _cli("score-responses", *args, cwd=report_dir.parent)
    assert r.returncode == 0, r.stdout + r.stderr
    return _report(report_dir / "report.json")


def test_generate_writes_a_balanced_verified_dataset(flow: Path) -> None:
    info = read_dataset_info(flow / "data")
    assert info["suite"] == "faithful" and info["verified"] is True and info["n_videos"] == 2
    assert info["balance"]["target"]["yes_share"] == 0.5 and info["balance"]["sub"]["yes_share"] == 0.5
    samples = load_samples(flow / "data")
    roles = [s.params["role"] for s in samples]
    assert roles.count("sub") == 4 * roles.count("target") > 0
    assert {s.params["probe_type"] for s in samples if s.params["role"] == "sub"} == {
        "single_fact",
        "ordering",
        "identity",
    }
    for s in samples:
        assert (flow / "data" / s.params["world"]).is_file() and (flow / "data" / s.video.path).is_file()


def test_report_numbers(flow: Path) -> None:
    rep = _report(flow / "run" / "report" / "report.json")
    assert rep.suite == "faithful"
    m = rep.results["metrics"]
    assert m["oracle"][COND] == {"a_target": 1.0, "a_sub": 1.0, "a_faith": 1.0, "a_cons": 1.0}
    n = rep.results["detail"]["chance"][COND]["n_targets"]
    exp = rep.results["references"]["chance_expectation"]
    assert exp["a_faith"] == pytest.approx(0.5**5) and exp["a_target"] == 0.5
    chance = m["chance"][COND]
    assert chance["a_faith"] <= 3 / n  # P(>= 3 of 12 at 1/32) < 1%
    assert 0.25 <= chance["a_sub"] <= 0.75 and 0.1 <= chance["a_target"] <= 0.9
    # constant Yes = the majority reference (ties go to Yes): every target has two No sub-questions
    const = m["constant:Yes"][COND]
    maj = rep.results["references"]["majority"]
    assert const["a_target"] == maj["a_target"]["value"] == 0.5 and const["a_faith"] == maj["a_faith"]["value"] == 0.0
    for model, conds in rep.results["detail"].items():
        for cond, d in conds.items():
            assert all(c["holds"] for c in d["invariants"]), (model, cond)
            assert d["a_faith"]["value"] <= d["a_target"]["value"]
            assert d["trials"]["completion"] == 1.0 and d["missing_sub_trials"] == 0
    split = rep.results["detail"]["oracle"][COND]["sub_by_probe"]
    assert split["single_fact"]["value"] == split["ordering"]["value"] == 1.0
    pairs = {(p["a"], p["b"], p["metric"]): p for p in rep.results["paired_differences"]}
    p = pairs[(f"chance / {COND}", f"oracle / {COND}", "a_faith")]
    assert p["n_boot"] == 10_000 and p["points"] > 2.0 and p["verdict"] != "tie"
    ids = [s.id for s in rep.sections]
    assert ids[:2] == ["accuracies", "probe-types"] and "not-available" in ids
    html = (flow / "run" / "report" / "report.html").read_text()
    assert "Faithful accuracy" in html and "A_faith" in html


def test_scores_carry_the_role_and_probe_type(flow: Path) -> None:
    rows = [ScoreRecord.model_validate_json(x) for x in (flow / "run" / "scores.jsonl").read_text().splitlines()]
    assert {r.params["role"] for r in rows} == {"target", "sub"}
    assert all(r.params["target_id"] for r in rows)
    assert all(r.parse is not None and r.parse.method == "answer" for r in rows if r.model == "oracle")


def test_resume_calls_nothing(flow: Path) -> None:
    r = _cli("run", "--resume", str(flow / "run"), cwd=flow)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 called" in " ".join(r.stderr.split())


def test_verify_command_checks_pixels(flow: Path) -> None:
    r = _cli("verify", str(flow / "data"), cwd=flow)
    assert r.returncode == 0, r.stdout + r.stderr


def test_verify_refuses_a_dataset_without_world_records(flow: Path, tmp_path: Path) -> None:
    """Samples with no world record to check pixels against (an imported STRAND release) are refused in one line,
    exit 2, naming the data ``verify`` applies to."""
    data = tmp_path / "data"
    shutil.copytree(flow / "data", data)
    info = read_dataset_info(data)
    info["capabilities"]["world_records"] = False
    (data / "dataset.json").write_text(json.dumps(info))
    r = _cli("verify", str(data), "--workers", "1", cwd=flow)
    assert r.returncode == 2, r.stdout + r.stderr
    said = " ".join(r.stderr.split())
    assert f"{data} has no world records to check pixels against" in said
    assert "pixel verification applies to `vidaudit generate faithful` data" in said


def test_score_responses_counts_errors_and_unparseable_answers_as_wrong(flow: Path) -> None:
    samples = load_samples(flow / "data")
    target = next(s for s in samples if s.params["role"] == "target")
    group = [target.sample_id, *target.params["sub_sample_ids"]]
    lines = []
    for s in samples:
        if s.sample_id not in group:
            continue
        lines.append({"sample_id": s.sample_id, "model": "m", "response": f"Answer: {s.answer}"})
        lines.append({"sample_id": s.sample_id, "model": "flaky", "response": f"Answer: {s.answer}"})
    lines[-1] = {"sample_id": group[-1], "model": "flaky", "response": None, "status": "api_error"}
    lines.append({"sample_id": group[0], "model": "vague", "response": "It might be yes or no."})
    resp = flow / "resp.jsonl"
    resp.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rep = _score(flow / "data", resp, flow / "ext.jsonl", flow / "ext")
    m = rep.results["metrics"]
    assert m["m"]["external"]["a_faith"] == 1.0
    assert m["flaky"]["external"]["a_faith"] == 0.0 and m["flaky"]["external"]["a_target"] == 1.0
    assert m["flaky"]["external"]["a_sub"] == 0.75
    d = rep.results["detail"]["flaky"]["external"]
    assert d["trials"]["n_errored"] == {"api_error": 1} and d["trials"]["completion"] == 0.8
    vague = rep.results["detail"]["vague"]["external"]
    assert vague["a_target"]["value"] == 0.0 and vague["trials"]["n_unparseable"] == 1
    assert vague["missing_sub_trials"] == 4 and vague["a_sub"]["value"] == 0.0  # never asked: wrong


def test_a_lost_target_line_counts_wrong_and_a_partial_system_is_named(flow: Path) -> None:
    """A responses file that lost one target's line but kept its sub-questions' asked that group: the target
    is wrong over all planned targets (11 of 12, as when a sub-question line is lost), not left out (11 of 11).
    A system with lines for one video only is scored over its targets and a note says so."""
    samples = load_samples(flow / "data")
    targets = [s for s in samples if s.params["role"] == "target"]
    lost = targets[0].sample_id
    first_video = targets[0].params["source_video_id"]
    lines = []
    for s in samples:
        gold = f"Answer: {s.answer}"
        if s.sample_id != lost:
            lines.append({"sample_id": s.sample_id, "model": "lost", "response": gold})
        if s.params["source_video_id"] == first_video:
            lines.append({"sample_id": s.sample_id, "model": "half", "response": gold})
    resp = flow / "resp-lost.jsonl"
    resp.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rep = _score(flow / "data", resp, flow / "lost.jsonl", flow / "lost")
    d = rep.results["detail"]["lost"]["external"]
    n = len(targets)
    assert (d["a_faith"]["k"], d["a_faith"]["n"]) == (n - 1, n)
    assert (d["a_target"]["k"], d["a_target"]["n"]) == (n - 1, n)
    assert d["a_sub"]["k"] == d["a_sub"]["n"] == 4 * n
    assert (d["missing_target_trials"], d["missing_sub_trials"], d["orphan_sub_trials"]) == (1, 0, 0)
    errors = next(t for sec in rep.sections for t in sec.tables if t.id == "faithful-errors")
    row = next(r for r in errors.rows if r[0] == "lost")
    assert row[errors.columns.index("missing targets")] == "1"
    half = rep.results["detail"]["half"]["external"]
    k = sum(t.params["source_video_id"] == first_video for t in targets)
    assert 0 < k < n and half["n_targets"] == half["a_faith"]["n"] == k
    assert any(
        note.startswith(f"half under external has trials for {k} of the manifest's {n} targets") for note in rep.notes
    )
    # lost's target line is counted (wrong), so the suite does not call it partial; the generic note still says a
    # line is missing (score-responses' coverage note)
    assert not any(note.startswith("lost under") and "targets" in note for note in rep.notes)
    assert any(note.startswith("lost under external: responses for") for note in rep.notes)
    # half's targets are one video: no video-level interval, and its one-target lead over lost there is no verdict
    assert half["a_faith"]["n_videos"] == 1 and half["a_faith"]["video_ci_low"] is None
    acc = next(t for sec in rep.sections for t in sec.tables if t.id == "faithful-accuracy")
    row = next(r for r in acc.rows if r[0] == "half")
    assert row[acc.columns.index("A_faith by video")] == "— (1 video)"
    pair = next(
        p
        for p in rep.results["paired_differences"]
        if {p["a"], p["b"]} == {"half / external", "lost / external"} and p["metric"] == "a_target"
    )
    assert abs(pair["points"]) == pytest.approx(100 / k) and pair["n_groups"] == 1
    assert pair["verdict"] == "too few videos (1 < 6)"


def test_a_model_that_declines_or_echoes_the_options_scores_nothing(flow: Path) -> None:
    """ "No idea." and 'Answer: "Yes" or "No"' are no answers: read as No and Yes, each scored half the targets
    and half the sub-questions right (A_target 50%) for a model that answered nothing."""
    samples = load_samples(flow / "data")
    said = {
        "declines": "No idea.",
        "echoes": 'Answer: "Yes" or "No"',
        "hedges": "Answer: no way to tell.",
        "format": 'I cannot see the frames. Please end with "Answer: Yes" or "Answer: No".',
    }
    lines = [{"sample_id": s.sample_id, "model": m, "response": text} for s in samples for m, text in said.items()]
    resp = flow / "resp-decline.jsonl"
    resp.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rep = _score(flow / "data", resp, flow / "decline.jsonl", flow / "decline")
    for model in said:
        d = rep.results["detail"][model]["external"]
        assert d["a_target"]["k"] == d["a_sub"]["k"] == d["a_faith"]["k"] == 0, model
        assert d["trials"]["n_unparseable"] == d["trials"]["n_trials"] == len(samples), model
    records = [json.loads(x) for x in (flow / "decline.jsonl").read_text().splitlines()]
    assert {(x["correct"], x["parse"]["method"], x["metrics"]["said"]) for x in records} == {
        (False, "unparseable", None)
    }


def test_a_right_target_without_sub_questions_is_named_in_the_notes(tmp_path: Path) -> None:
    """A release target with an empty sub-question list is faithful whenever its answer is right (the empty
    product): a model wrong on every sub-question scored A_faith 1/3 and A_cons 100% beside A_sub 0%, and the
    report said nothing of why. A note now names the targets credited with nothing checked."""
    rel = tmp_path / "rel"
    rel.mkdir()
    release = {
        "video_name": "0001_abcdefghijk.mp4",
        "questions": ["Does the man pick up the cup before the woman sits down?", "Is the dog on the left?"],
        "answers": ["Yes", "No"],
        "sub-questions": [["Does the man pick up the cup?", "Does the woman sit down?"], []],
        "sub-answers": [["Yes", "Yes"], []],
    }
    (rel / "sample_0001.json").write_text(json.dumps(release))
    r = _cli("import", "strand", "--dir", str(rel), "--out", str(tmp_path / "data"), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    resp = tmp_path / "resp.jsonl"
    lines = [
        {"sample_id": s.sample_id, "model": "no", "response": "Answer: No"} for s in load_samples(tmp_path / "data")
    ]
    resp.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rep = _score(tmp_path / "data", resp, tmp_path / "s.jsonl", tmp_path / "rep")
    d = rep.results["detail"]["no"]["external"]
    assert (d["a_faith"]["k"], d["a_faith"]["n"], d["a_sub"]["k"]) == (1, 2, 0)
    assert d["a_cons"]["n_vacuous"] == 1
    assert any(
        n.startswith("no under external: 1 of the 1 targets it answered right have no sub-questions") for n in rep.notes
    )


def test_imported_release_is_scored_and_says_what_is_not_available(tmp_path: Path) -> None:
    from vidaudit.suites.faithful.strand_import import import_strand

    rel = tmp_path / "rel"
    rel.mkdir()
    (rel / "sample_0001.json").write_text(
        json.dumps(
            {
                "video_name": "0001_aaaaaaaaaaa.mp4",
                "questions": ["Does A happen before B?", "Does C happen?"],
                "answers": ["Yes", "NA"],
                "sub-questions": [["Does A happen?"], ["Is C shown?"]],
                "sub-answers": [["Yes"], ["Yes"]],
            }
        )
    )
    res = import_strand(rel, tmp_path / "data", on_invalid="keep-as-wrong")
    resp = tmp_path / "resp.jsonl"
    resp.write_text(
        "".join(json.dumps({"sample_id": s.sample_id, "response": "Answer: Yes"}) + "\n" for s in res.samples)
    )
    rep = _score(tmp_path / "data", resp, tmp_path / "s.jsonl", tmp_path / "rep")
    m = rep.results["metrics"]["external"]["external"]
    assert m["a_target"] == 0.5 and m["a_faith"] == 0.5  # the NA target is kept, and never right
    d = rep.results["detail"]["external"]["external"]
    assert isinstance(d["sub_by_probe"], str) and d["sub_by_probe"].startswith("not available")
    na = rep.results["not_available"]
    assert "sub_by_probe_type" in na and "retrieval_precision_recall" in na and "per_domain" in na
