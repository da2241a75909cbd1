"""`score` and `score-responses` say the accuracy and how many answers could not be parsed; the report notes it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.manifest import load_samples
from vidaudit.score.records import ParseResult, ScoreRecord
from vidaudit.score.summary import (
    PARSE_FAILURE_NOTE_RATE,
    parse_failure_notes,
    summary_lines,
)

runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_score_responses_prints_accuracy_and_parse_failures_and_the_report_notes_them(smoke_dir: Path,
                                                                                      tmp_path: Path) -> None:
    samples = load_samples(smoke_dir)[:9]
    # the case: ordinary answers a strict parser does not read, beside boxed ones
    texts = ["\\boxed{{{}}}", "Answer: {}", "The answer is {}."]
    lines = [{"sample_id": s.sample_id, "response": texts[i % 3].format(s.answer), "model": "m", "condition": "c"}
             for i, s in enumerate(samples)]
    lines += [{"sample_id": s.sample_id, "response": f"\\boxed{{{s.answer}}}", "model": "boxed", "condition": "c"}
              for s in samples]
    resp = tmp_path / "responses.jsonl"
    resp.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "scores.jsonl"
    r = runner.invoke(app, ["score-responses", "--suite", "counting", "--samples", str(smoke_dir / "manifest.jsonl"),
                            "--responses", str(resp), "--out", str(out), "--report", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    text = _flat(r.output)
    assert f"scores: {out}" in text
    assert "m · c: accuracy 33.3% (3 of 9 planned), 6 of 9 answers unparseable (67%)" in text
    assert "boxed · c: accuracy 100.0% (9 of 9 planned), 0 of 9 answers unparseable (0%)" in text
    assert "all: accuracy 66.7% (12 of 18 planned), 6 of 18 answers unparseable (33%)" in text
    notes = json.loads((tmp_path / "rep" / "report.json").read_text())["notes"]
    flagged = [n for n in notes if "unparseable under the suite's strict answer rule" in n]
    assert len(flagged) == 1 and flagged[0].startswith("m under c: 6 of 9 answers (67%)"), notes
    assert "6 of 9 answers (67%) were unparseable" in (tmp_path / "rep" / "report.md").read_text()


def test_score_prints_the_summary_beside_the_path(smoke_dir: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    r = runner.invoke(app, ["run", "counting", "--data", str(smoke_dir), "--model", "oracle", "--model", "chance",
                            "--condition", "frames@1", "--limit", "4", "--out", str(run_dir)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["score", str(run_dir)])
    assert r.exit_code == 0, r.output
    text = _flat(r.output)
    assert f"scores: {run_dir / 'scores.jsonl'}" in text
    assert re.search(r"oracle · frames@1\S*: accuracy 100\.0% \(4 of 4 planned\), 0 of 4 answers unparseable \(0%\)",
                     text), text
    assert re.search(r"chance · frames@1\S*: accuracy \d+\.\d% \(\d of 4 planned\), 0 of 4 answers unparseable", text)
    assert "all: accuracy" in text


def _rec(i: int, *, parsed: bool, status: str = "ok", model: str = "m") -> ScoreRecord:
    return ScoreRecord(trial_id=f"t{model}{i}", sample_id=f"s{i}", suite="counting", model=model, condition="c",
                       group_id=f"g{i}", status=status, correct=parsed and status == "ok",
                       parse=ParseResult(value=1, method="boxed") if parsed else ParseResult(method="unparseable"))


def test_the_note_threshold_is_at_least_20_percent_of_the_answered_trials() -> None:
    assert PARSE_FAILURE_NOTE_RATE == 0.20
    at = [_rec(i, parsed=i > 0) for i in range(5)]                    # 1 of 5 = 20%: noted
    below = [_rec(i, parsed=i > 0, model="b") for i in range(6)]      # 1 of 6 = 17%: not
    errored = [_rec(i, parsed=True, status="api_error", model="e") for i in range(4)] + \
        [_rec(9, parsed=False, model="e")]                             # 1 of 1 answered: noted, errors apart
    notes = parse_failure_notes(at + below + errored)
    assert [n.split(":")[0] for n in notes] == ["m under c", "e under c"]
    assert notes[1].startswith("e under c: 1 of 1 answers (100%)")
    assert summary_lines(errored)[0] == "e · c: accuracy 0.0% (0 of 5 planned), 1 of 1 answers unparseable (100%)"
