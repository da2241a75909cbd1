"""What a scoring pass found, in a few lines: accuracy, parse failures and their share per model and condition.

``vidaudit score`` and ``score-responses`` print these lines beside the file they wrote, and the report's
notes name every model and condition whose parse-failure rate reaches ``PARSE_FAILURE_NOTE_RATE``: a strict
parser that cannot read most answers ("Answer: 5" where the suite asks for ``\\boxed{5}``) makes an
accuracy that measures the answer format, and a reader must see that first.

Accuracy here is the plain one every suite starts from: correct answers over planned trials (an errored
or unparseable trial counts as wrong), by the contract's one rule (``core.contract.records.counted``): a trial
that needs a judge the run did not have is in no denominator and is counted beside the figure. A suite's own
headline (e.g. faithful's A_faith) is in the report.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import typer
from pydantic import ValidationError

from vidaudit.core.contract.records import ScoreRecord, unjudged_text
from vidaudit.core.errors import DataError
from vidaudit.score.terminal import rate_text, text_table, unjudged_cell

#: a model and condition whose answers are unparseable at least this often (of those answered) get a note
PARSE_FAILURE_NOTE_RATE = 0.20
#: at most this many model/condition lines are printed; the total line always follows
MAX_LINES = 20


def is_parse_failure(r: ScoreRecord) -> bool:
    """An answered trial (status ok) whose text the suite's parser (or judge) could not read."""
    return r.status == "ok" and r.parse is not None and r.parse.method.endswith("unparseable")


@dataclass
class Tally:
    model: str
    condition: str
    planned: int = 0
    answered: int = 0  # status ok
    correct: int = 0
    unparseable: int = 0
    unjudged: int = 0  # answered, but only a judge can score them and the run had none: in no denominator

    def add(self, r: ScoreRecord) -> None:
        self.planned += 1
        self.answered += r.status == "ok"
        self.correct += r.correct is True
        self.unparseable += is_parse_failure(r)
        self.unjudged += r.needs_judge

    @property
    def counted(self) -> int:
        """The accuracy's denominator: planned trials less those that need a judge."""
        return self.planned - self.unjudged

    @property
    def parse_failure_rate(self) -> float | None:
        return self.unparseable / self.answered if self.answered else None

    def unparseable_text(self) -> str:
        rate = self.parse_failure_rate
        share = f" ({100 * rate:.0f}%)" if rate is not None else ""
        return f"{self.unparseable} of {self.answered}{share}"

    def line(self) -> str:
        acc = f"{100 * self.correct / self.counted:.1f}%" if self.counted else "n/a"
        of = (
            f"{self.correct} of {self.planned} planned"
            if not self.unjudged
            else f"{self.correct} of {self.counted} scored; {unjudged_text(self.unjudged)}"
        )
        rate = self.parse_failure_rate
        share = f" ({100 * rate:.0f}%)" if rate is not None else ""
        return f"accuracy {acc} ({of}), {self.unparseable} of {self.answered} answers unparseable{share}"


def tallies(records: Iterable[ScoreRecord]) -> list[Tally]:
    """One tally per (model, condition), in the order they first appear."""
    out: dict[tuple[str, str], Tally] = {}
    for r in records:
        if r.model_role == "human":
            continue
        out.setdefault((r.model, r.condition), Tally(r.model, r.condition)).add(r)
    return list(out.values())


def summary_lines(records: Sequence[ScoreRecord]) -> list[str]:
    """``MODEL · CONDITION: accuracy ..., N of M answers unparseable (P%)`` per group, then the total."""
    groups = tallies(records)
    lines = [f"{t.model} · {t.condition}: {t.line()}" for t in groups[:MAX_LINES]]
    if len(groups) > MAX_LINES:
        lines.append(f"... and {len(groups) - MAX_LINES} more model/condition pairs (all in scores.jsonl)")
    if len(groups) != 1:
        total = Tally("all", "all")
        for r in records:
            if r.model_role != "human":
                total.add(r)
        lines.append(f"all: {total.line()}")
    return lines


def summary_table(records: Sequence[ScoreRecord]) -> tuple[list[str], list[list[str]]]:
    """The same figures as :func:`summary_lines`, as a table (columns, rows) for the terminal: one row per model
    and condition, then ``all``; the ``unjudged`` column only where a trial needs a judge."""
    groups = tallies(records)
    shown = groups[:MAX_LINES]
    if len(groups) != 1:
        total = Tally("all", "all")
        for r in records:
            if r.model_role != "human":
                total.add(r)
        shown.append(total)
    judged = any(t.unjudged for t in shown)
    columns = [
        "model",
        "condition",
        "accuracy [95% CI] (k/n)",
        *(["unjudged"] if judged else []),
        "answers unparseable",
    ]
    rows = [
        [
            t.model,
            t.condition,
            rate_text(t.correct, t.counted),
            *([unjudged_cell(t.unjudged)] if judged else []),
            t.unparseable_text(),
        ]
        for t in shown
    ]
    if len(groups) > MAX_LINES:
        rows.insert(
            MAX_LINES,
            [
                f"... and {len(groups) - MAX_LINES} more model/condition pairs (all in scores.jsonl)",
                *[""] * (len(columns) - 1),
            ],
        )
    return columns, rows


def print_scores(path: Path) -> None:
    """The scores file written, then accuracy and parse failures (count and share) per model and condition, on
    stdout (``> out.txt`` keeps them; progress and logs go to stderr): what ``vidaudit score`` and
    ``score-responses`` end with."""
    columns, rows = summary_table(read_scores(path))
    typer.echo(f"scores: {path}")
    typer.echo(text_table(columns, rows))


def parse_failure_notes(records: Sequence[ScoreRecord], threshold: float = PARSE_FAILURE_NOTE_RATE) -> list[str]:
    """A report note for each model and condition whose answers are unparseable at ``threshold`` or more."""
    notes = []
    for t in tallies(records):
        rate = t.parse_failure_rate
        if rate is not None and t.unparseable and rate >= threshold:
            notes.append(
                f"{t.model} under {t.condition}: {t.unparseable} of {t.answered} answers "
                f"({100 * rate:.0f}%) were unparseable under the suite's strict answer rule and count as "
                "wrong; the accuracy measures the answer format as much as the model (check the prompt's "
                "format, docs/scoring.md)"
            )
    return notes


def read_scores(path: str | Path) -> list[ScoreRecord]:
    """``scores.jsonl`` back as records (a DataError naming the line when one does not validate)."""
    out = []
    with Path(path).open(encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(ScoreRecord.model_validate_json(line))
                except ValidationError as e:
                    raise DataError(f"{path}:{i}: not a score record ({e.error_count()} problem(s))") from None
    return out
