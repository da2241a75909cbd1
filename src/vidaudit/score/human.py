"""Reading an imported human study back for the report: its records and its summary, both or neither.

``vidaudit human-study import`` (``vidaudit.tools.humanstudy``) writes these two files into a run directory;
the score stage reads them here, so that no stage imports the human-study tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.errors import DataError
from vidaudit.core.fileio import read_jsonl_objects

HUMAN_RECORDS = "human_records.jsonl"  # ScoreRecords of the human answers
HUMAN_STUDY = "human_study.json"  # the summary: accuracy, kappa, unanimity


def load_human(run_dir: str | Path) -> tuple[list[ScoreRecord], dict[str, Any] | None]:
    """``(records, summary)`` of ``RUN/human_records.jsonl`` and ``RUN/human_study.json``; ``([], None)`` if absent."""
    run_dir = Path(run_dir)
    rec_path, sum_path = run_dir / HUMAN_RECORDS, run_dir / HUMAN_STUDY
    if not rec_path.is_file() and not sum_path.is_file():
        return [], None
    if not (rec_path.is_file() and sum_path.is_file()):
        raise DataError(
            f"run {run_dir} has only one of {HUMAN_RECORDS} and {HUMAN_STUDY}; run `vidaudit human-study import` again"
        )
    records = []
    for i, row in read_jsonl_objects(rec_path, "the human records"):
        try:
            records.append(ScoreRecord.model_validate(row))
        except ValidationError as e:
            raise DataError(f"{rec_path}:{i}: not a score record: {e.errors()[0]['msg']}") from None
    try:
        summary = json.loads(sum_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DataError(f"{sum_path}: cannot read the human-study summary ({e}); import the answers again") from e
    if not isinstance(summary, dict) or any(r.metrics.get("study") != summary.get("study") for r in records):
        raise DataError(f"{rec_path} and {sum_path} are not from one study; run `vidaudit human-study import` again")
    return records, summary


def performance_records(records: list[ScoreRecord]) -> list[ScoreRecord]:
    """The records a suite's aggregation sees: answers to the model's own question (not data-quality ones)."""
    return [r for r in records if r.metrics.get("study_kind") == "performance"]
