"""`score` and `score-responses` say the accuracy and how many answers could not be parsed; the report notes it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.contract.records import ParseResult, ScoreRecord
from vidaudit.core.manifest import load_samples
from vidaudit.score.summary import (
    PARSE_FAILURE_NOTE_RATE,
    parse_failure_notes,
    summary_lines,
)

runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_score_responses_prints_accuracy_and_parse_failures_and_the_report_notes_them(
    smoke_dir: Path, tmp_path: Path
) -> None:
    samples = load_samples(smoke_dir)[:9]
    # the case: ordinary answers a strict parser does not read, beside boxed ones
    texts = ["\\boxed{{{}}}", "Answer: {}", "The answer is {}."]
    lines = [
        {"sample_id": s.sample_id, "response": texts[i % 3].format(s.answer), "model": "m", "condition": "c"}
        for i, s in enumerate(samples)
    ]
    lines += [
        {"sample_id": s.sample_id, "response": f"\\boxed{{{s.answer}}}", "model": "boxed", "condition": "c"}
        for s in samples
    ]
    resp = tmp_path / "responses.jsonl"
    resp.write_text("".join(json.dumps(x) + "\n" for x in lines))
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
    text = _flat(r.stdout)  # results on stdout: `> out.txt` keeps them
    assert f"scores: {out}" in text
    rows = _rows(r.stdout)
    assert rows["m"] == ["c", "33.3%", "[12.1,", "64.6]", "(3/9)", "6", "of", "9", "(67%)"]
    assert rows["boxed"] == ["c", "100.0%", "[70.1,", "100.0]", "(9/9)", "0", "of", "9", "(0%)"]
    assert rows["all"] == ["all", "66.7%", "[43.7,", "83.7]", "(12/18)", "6", "of", "18", "(33%)"]
    notes = json.loads((tmp_path / "rep" / "report.json").read_text())["notes"]
    flagged = [n for n in notes if "unparseable under the suite's strict answer rule" in n]
    assert len(flagged) == 1 and flagged[0].startswith("m under c: 6 of 9 answers (67%)"), notes
    assert "6 of 9 answers (67%) were unparseable" in (tmp_path / "rep" / "report.md").read_text()


def test_score_prints_the_summary_beside_the_path(smoke_dir: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    r = runner.invoke(
        app,
        [
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            "oracle",
            "--model",
            "chance",
            "--condition",
            "frames@1",
            "--limit",
            "4",
            "--out",
            str(run_dir),
        ],
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["score", str(run_dir)])
    assert r.exit_code == 0, r.output
    text = _flat(r.stdout)
    assert f"scores: {run_dir / 'scores.jsonl'}" in text
    rows = _rows(r.stdout)
    assert re.fullmatch(r"frames@1\S* 100\.0% \[51\.0, 100\.0\] \(4/4\) 0 of 4 \(0%\)", " ".join(rows["oracle"]))
    assert re.fullmatch(r"frames@1\S* \d+\.\d% \[.*\] \(\d/4\) 0 of 4 \(0%\)", " ".join(rows["chance"]))
    assert "all" in rows and "unjudged" not in r.stdout  # the column appears only where a trial needs a judge


def _rows(stdout: str) -> dict[str, list[str]]:
    """The score table's rows (under its header and rule line) by model, each split into words."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("model ")) + 2
    return {line.split()[0]: line.split()[1:] for line in lines[start:] if line.strip()}


def _rec(i: int, *, parsed: bool, status: str = "ok", model: str = "m") -> ScoreRecord:
    return ScoreRecord(
        trial_id=f"t{model}{i}",
        sample_id=f"s{i}",
        suite="counting",
        model=model,
        condition="c",
        group_id=f"g{i}",
        status=status,
        correct=parsed and status == "ok",
        parse=ParseResult(value=1, method="boxed") if parsed else ParseResult(method="unparseable"),
    )


def test_the_note_threshold_is_at_least_20_percent_of_the_answered_trials() -> None:
    assert PARSE_FAILURE_NOTE_RATE == 0.20
    at = [_rec(i, parsed=i > 0) for i in range(5)]  # 1 of 5 = 20%: noted
    below = [_rec(i, parsed=i > 0, model="b") for i in range(6)]  # 1 of 6 = 17%: not
    errored = [_rec(i, parsed=True, status="api_error", model="e") for i in range(4)] + [
        _rec(9, parsed=False, model="e")
    ]  # 1 of 1 answered: noted, errors apart
    notes = parse_failure_notes(at + below + errored)
    assert [n.split(":")[0] for n in notes] == ["m under c", "e under c"]
    assert notes[1].startswith("e under c: 1 of 1 answers (100%)")
    assert summary_lines(errored)[0] == "e · c: accuracy 0.0% (0 of 5 planned), 1 of 1 answers unparseable (100%)"


def test_a_trial_that_needs_a_judge_is_in_no_denominator_and_counted_beside_the_figure() -> None:
    """The contract's one rule (``needs_judge``): an unjudged answer is neither right nor wrong, and is counted."""
    from vidaudit.score.summary import summary_table

    judged = [
        ScoreRecord(
            trial_id=f"j{i}",
            sample_id=f"s{i}",
            suite="stress",
            model="m",
            condition="c",
            group_id="g",
            status="ok",
            correct=None,
            parse=ParseResult(method="not_judged"),
        )
        for i in range(28)
    ]
    mcq = [_rec(i, parsed=True) for i in range(8)]
    failed = [_rec(90, parsed=False, status="api_error")]  # a failed call stays in the denominator, wrong
    columns, rows = summary_table(judged + mcq + failed)
    assert columns == ["model", "condition", "accuracy [95% CI] (k/n)", "unjudged", "answers unparseable"]
    assert rows == [["m", "c", "88.9% [56.5, 98.0] (8/9)", "28, need --judge", "0 of 36 (0%)"]]
    assert summary_lines(judged + mcq)[0] == (
        "m · c: accuracy 100.0% (8 of 8 scored; 28 unjudged, need --judge), 0 of 36 answers unparseable (0%)"
    )
