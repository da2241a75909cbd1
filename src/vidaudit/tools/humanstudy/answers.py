"""Reading a study manifest and the annotators' answers files, refusing anything that does not fit the study.

An answers file is ``{"annotator": ID, "study": STUDY, "answers": {ITEM_ID: ANSWER}}`` as the page
downloads it. It is refused, with a message naming the file (and the item), when it is not UTF-8 JSON
of that shape, belongs to another study, names an item the study lacks, gives an answer that is not
one of the item's options, or repeats an annotator another file already has. Unanswered items are
allowed (they are counted, never scored).
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vidaudit.core.errors import DataError
from vidaudit.core.untrusted import distinct_keys, read_regular_bytes
from vidaudit.tools.humanstudy.items import StudyItem

MAX_TEXT_ANSWER = 4000


@dataclass(frozen=True)
class StudyManifest:
    path: Path
    study: str
    kind: str
    suite: str
    items: dict[str, StudyItem]
    raw: dict[str, Any]


@dataclass(frozen=True)
class AnswerSheet:
    path: Path
    annotator: str
    answers: dict[str, str]


def _read_json(path: Path, what: str) -> Any:
    data = read_regular_bytes(path, what=what)  # a FIFO or device named as the file is refused, not waited on
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=distinct_keys)
    except DataError as e:
        raise DataError(f"{path}: {what}: {e}") from None
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: {what} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise DataError(
            f"{path}: {what} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}); "
            "download it again from the study page"
        ) from None
    except RecursionError:
        raise DataError(f"{path}: {what} is JSON nested too deeply to read") from None


def load_manifest(path: str | Path) -> StudyManifest:
    """The study manifest (``study.json`` beside the page, or ``RUN/human_studies/STUDY.json``)."""
    path = Path(path)
    raw = _read_json(path, "the study manifest")
    if not isinstance(raw, dict) or not isinstance(raw.get("study"), str) or not isinstance(raw.get("items"), list):
        raise DataError(f"{path} is not a study manifest (written by `vidaudit human-study export`)")
    items: dict[str, StudyItem] = {}
    try:
        for row in raw["items"]:
            it = StudyItem.model_validate(row)
            items[it.item_id] = it
    except ValidationError as e:
        raise DataError(f"{path}: an item of the study manifest is not valid: {e.errors()[0]['msg']}") from None
    return StudyManifest(
        path=path, study=raw["study"], kind=str(raw.get("kind")), suite=str(raw.get("suite")), items=items, raw=raw
    )


def _shown(text: str) -> str:
    """Printable in a one-line message whatever it holds: non-ASCII as escapes."""
    return text.encode("ascii", "backslashreplace").decode("ascii")


def _check_text(path: Path, raw: dict) -> None:
    """Refuse a string that is not Unicode text: a lone surrogate (JSON's ``"\\ud800"`` escape without its pair)
    can be neither written to a UTF-8 file nor shown, and an annotator id must stay exactly what was typed."""
    got = raw.get("answers")
    answers: dict[Any, Any] = got if isinstance(got, dict) else {}
    fields = [
        ("the annotator id", raw.get("annotator")),
        ("the study id", raw.get("study")),
        *((f"an item id ({_shown(k)})", k) for k in answers),
        *((f"the answer to item {_shown(k)}", v) for k, v in answers.items()),
    ]
    for name, value in fields:
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise DataError(
                    f"{path}: {name} holds a lone surrogate ({_shown(value)}), which is not text; "
                    "re-save the file from the study page or remove that \\uD8xx-\\uDFxx escape"
                ) from None


def read_sheet(path: str | Path) -> tuple[str, AnswerSheet]:
    """(the study id it claims, the sheet) for one answers file, its shape checked."""
    path = Path(path)
    raw = _read_json(path, "the answers file")
    if not isinstance(raw, dict):
        raise DataError(
            f"{path}: an answers file is a JSON object {{annotator, study, answers}}, got {type(raw).__name__}"
        )
    extra = sorted(set(raw) - {"annotator", "study", "answers"})
    if extra:
        raise DataError(f"{path}: unknown field(s) {', '.join(extra)} in the answers file")
    _check_text(path, raw)
    annotator, study, answers = raw.get("annotator"), raw.get("study"), raw.get("answers")
    if not isinstance(annotator, str) or not annotator.strip():
        raise DataError(f'{path}: the answers file names no annotator ("annotator" must be a non-empty string)')
    if not isinstance(study, str) or not study:
        raise DataError(f'{path}: the answers file names no study ("study" must be the study id)')
    if not isinstance(answers, dict) or not all(isinstance(v, str) for v in answers.values()):
        raise DataError(f'{path}: "answers" must map item ids to answer strings')
    return study, AnswerSheet(path=path, annotator=annotator.strip(), answers=dict(answers))


def check_sheet(sheet: AnswerSheet, manifest: StudyManifest) -> None:
    """Every item id known, every answer one of the item's options (a text answer: a string of bounded size)."""
    for item_id, answer in sheet.answers.items():
        item = manifest.items.get(item_id)
        if item is None:
            raise DataError(
                f"{sheet.path}: item {item_id!r} is not in study {manifest.study} ({manifest.path}); "
                "the file was edited or made for another version of the study"
            )
        if item.options:
            keys = [k for k, _ in item.options]
            if answer not in keys:
                raise DataError(
                    f"{sheet.path}: item {item_id!r} has answer {answer!r}, not one of its options {', '.join(keys)}"
                )
        elif len(answer) > MAX_TEXT_ANSWER:
            raise DataError(
                f"{sheet.path}: item {item_id!r} has a text answer of {len(answer)} characters "
                f"(at most {MAX_TEXT_ANSWER})"
            )


def read_sheets(files: list[Path], manifest: StudyManifest) -> list[AnswerSheet]:
    """All answers files for ``manifest``, each checked; another study's file or a repeated annotator is refused."""
    if not files:
        raise DataError("no answers files given")
    sheets: list[AnswerSheet] = []
    by_annotator: dict[str, Path] = {}
    for f in files:
        study, sheet = read_sheet(f)
        if study != manifest.study:
            raise DataError(
                f"{f} is an answers file for study {study}, not for {manifest.study} "
                f"({manifest.path}); import it into the run its own study was exported from"
            )
        check_sheet(sheet, manifest)
        who = unicodedata.normalize("NFC", sheet.annotator)  # 'José' typed composed or decomposed is one person
        if who in by_annotator:
            raise DataError(
                f"{f} and {by_annotator[who]} are both from annotator '{_shown(sheet.annotator)}'; "
                "keep one file per annotator"
            )
        by_annotator[who] = Path(f)
        sheets.append(sheet)
    return sheets
