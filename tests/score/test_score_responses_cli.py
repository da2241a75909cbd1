"""`vidaudit score-responses`: other harnesses' responses scored with vidaudit's trace metrics."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.manifest import load_samples

runner = CliRunner()


def _ledger(times: list[float], count: int) -> str:
    lines = [f"- at {t:.2f} s: event, running count {i}" for i, t in enumerate(times, 1)]
    return "\n".join(lines + [f"Final Answer: \\boxed{{{count}}}"])


def test_score_responses_with_report(smoke_dir: Path, tmp_path: Path) -> None:
    samples = [s for s in load_samples(smoke_dir) if s.answer == 3]
    s = samples[0]
    true = s.trace.times
    lines = [
        {"sample_id": s.sample_id, "response": _ledger(true, 3), "model": "m", "condition": "c"},  # faithful
        {"sample_id": s.sample_id, "response": _ledger([true[-1] + 3.0], 3), "model": "m2"},  # ACR
        {"sample_id": s.sample_id, "response": "I cannot tell.", "model": "m3"},  # unparseable
        {"sample_id": s.sample_id, "response": "<script>alert(1)</script> \\boxed{2}", "model": "m4"},
    ]
    resp = tmp_path / "responses.jsonl"
    resp.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = tmp_path / "scores.jsonl"
    r = runner.invoke(
        app,
        [
            "score-responses",
            "--suite",
            "counting",
            "--samples",
            str(smoke_dir / "manifest.jsonl"),
            "--responses",
            str(resp),
            "--out",
            str(out),
            "--report",
            str(tmp_path / "rep"),
        ],
    )
    assert r.exit_code == 0, r.output
    from vidaudit.core.contract.records import ScoreRecord

    records = [ScoreRecord.model_validate_json(x) for x in out.read_text().splitlines()]
    rows = [r.flat() for r in records]
    assert len(rows) == 4
    for key in ("trial_id", "sample_id", "model", "condition", "status", "correct"):  # every suite's line
        assert key in json.loads(out.read_text().splitlines()[0])
    for key in (
        "sample_id",
        "predicted_count",
        "parse_method",
        "reported_times",
        "n_reported",
        "n_matched",
        "precision",
        "recall",
        "f1",
        "vor",
        "correct",
        "acr",
        "rfr",
        "taxonomy",
    ):
        assert key in rows[0]
    a, b, c, d = rows
    assert (a["correct"], a["n_matched"], a["f1"], a["acr"]) == (True, 3, 1.0, False)
    assert (b["correct"], b["n_matched"], b["acr"]) == (True, 0, True)
    assert (c["parse_method"], c["correct"]) == ("unparseable", False)
    assert d["predicted_count"] == 2 and b["model"] == "m2" and b["condition"] == "external"
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())["results"]
    assert rep["trace_metrics"]["m3"]["external"]["macro"]["parse_failure_rate"] == 1.0
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "<script>alert(1)</script>" not in html


def test_score_responses_unknown_sample(smoke_dir: Path, tmp_path: Path) -> None:
    resp = tmp_path / "r.jsonl"
    resp.write_text(json.dumps({"sample_id": "nope", "response": "\\boxed{1}"}) + "\n")
    r = runner.invoke(
        app,
        ["score-responses", "--samples", str(smoke_dir), "--responses", str(resp), "--out", str(tmp_path / "s.jsonl")],
    )
    assert r.exit_code == 2
    assert "'nope' is not in" in " ".join(r.output.split())
    assert not (tmp_path / "s.jsonl").exists()


def _write(tmp_path: Path, lines: list[object], raw: bytes | None = None) -> Path:
    resp = tmp_path / "r.jsonl"
    if raw is not None:
        resp.write_bytes(raw)
    else:
        resp.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return resp


def _score(smoke_dir: Path, tmp_path: Path, resp: Path, *extra: str):
    return runner.invoke(
        app,
        [
            "score-responses",
            "--samples",
            str(smoke_dir),
            "--responses",
            str(resp),
            "--out",
            str(tmp_path / "s.jsonl"),
            *extra,
        ],
    )


def test_duplicate_lines_are_an_error_unless_deduped(smoke_dir: Path, tmp_path: Path) -> None:
    sid = load_samples(smoke_dir)[1].sample_id
    resp = _write(
        tmp_path,
        [
            {"sample_id": sid, "response": "\\boxed{1}", "model": "m"},
            {"sample_id": sid, "response": "\\boxed{2}", "model": "m"},
        ],
    )
    r = _score(smoke_dir, tmp_path, resp)
    text = " ".join(r.output.split())
    assert r.exit_code == 2 and "are both for sample" in text and "--dedupe first|last" in text, r.output
    assert not (tmp_path / "s.jsonl").exists()
    for keep, want in (("first", 1), ("last", 2)):
        r = _score(smoke_dir, tmp_path, resp, "--dedupe", keep)
        assert r.exit_code == 0, r.output
        rows = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
        assert len(rows) == 1 and rows[0]["parse"]["value"] == want


def test_bad_response_lines_exit_2_and_write_nothing(smoke_dir: Path, tmp_path: Path) -> None:
    sid = load_samples(smoke_dir)[1].sample_id
    cases = {
        "array": (None, b"[1, 2]\n", "JSON object"),
        "not utf-8": (None, b'{"sample_id": "x", "response": "\xff"}\n', "not UTF-8"),
        "non-string": ([{"sample_id": sid, "response": 3}], None, "must be a string"),
        "bad status": ([{"sample_id": sid, "response": None, "status": "exploded"}], None, "is not one of"),
    }
    for name, (lines, raw, expect) in cases.items():
        resp = _write(tmp_path, lines or [], raw)
        r = _score(smoke_dir, tmp_path, resp)
        assert r.exit_code == 2, (name, r.output)
        assert expect in " ".join(r.output.split()), (name, r.output)
        assert not (tmp_path / "s.jsonl").exists(), name


def test_null_response_is_a_failed_call_not_an_answer(smoke_dir: Path, tmp_path: Path) -> None:
    sid = load_samples(smoke_dir)[1].sample_id
    resp = _write(tmp_path, [{"sample_id": sid, "response": None, "model": "m"}])
    r = _score(smoke_dir, tmp_path, resp)
    assert r.exit_code == 0, r.output
    row = json.loads((tmp_path / "s.jsonl").read_text())
    assert row["status"] == "api_error" and row["correct"] is None and row["parse"] is None


def test_responses_for_part_of_the_manifest_are_scored_and_say_so(smoke_dir: Path, tmp_path: Path) -> None:
    """A harness run with --limit (or one that crashed) answered part of the dataset: its scores are over the
    samples answered, and the report said "All N planned trials completed" with no word of the others."""
    samples = load_samples(smoke_dir)
    answered, skipped = samples[:-2], samples[-2:]
    resp = tmp_path / "responses.jsonl"
    resp.write_text(
        "".join(
            json.dumps({"sample_id": s.sample_id, "response": f"\\boxed{{{s.answer}}}", "model": "m"}) + "\n"
            for s in answered
        )
        + json.dumps({"sample_id": samples[0].sample_id, "response": "\\boxed{0}", "model": "full"})
        + "\n"
        + "".join(
            json.dumps({"sample_id": s.sample_id, "response": "\\boxed{1}", "model": "full"}) + "\n"
            for s in samples[1:]
        )
    )
    out, rep = tmp_path / "scores.jsonl", tmp_path / "rep"
    args = ["score-responses", "--samples", str(smoke_dir / "manifest.jsonl"), "--responses", str(resp)]
    r = runner.invoke(app, [*args, "--out", str(out), "--report", str(rep)])
    assert r.exit_code == 0, r.output
    n = len(samples)
    want = (
        f"m under external: responses for {n - 2} of the manifest's {n} samples, none for the other 2 "
        f"({skipped[0].sample_id}, {skipped[1].sample_id}): its figures are of the responses given"
    )
    assert f"note: {want}" in r.output
    assert "full under external" not in r.output  # a log that answered everything has no note
    notes = json.loads((rep / "report.json").read_text())["notes"]
    assert sum(want in x for x in notes) == 1 and not any("full under" in x for x in notes)
    assert want in " ".join((rep / "report.md").read_text().split())
    assert sum(1 for _ in out.open()) == 2 * n - 2  # scored as given: the missing are not invented
