"""The scored-run file ``RUN/scored_run.jsonl``: what ``score`` hands to ``report``.

``scores.jsonl`` is the public export (one ScoreRecord per line, the same for runs and
``score-responses``). The report needs more than the records: the raw text of each answer, the
frames each trial sent, the judge's verdicts, the settings sent to each model, the store's per-stage
usage and any imported human study. ``score`` writes all of it here, once; ``report`` reads it back
instead of re-scoring the store, so each stage reads the previous stage's files.

In memory a scored run is a :class:`Scored` (what ``score`` computed, or what :func:`read_scored_run` read
back); the score stage fills it, this module writes and reads it.

Line 1 is a :class:`ScoredRunHeader` (``format``, ``version``, provenance and the run-level facts);
each following line is a :class:`ScoredTrial` (with, on the lines of perturbed trials that sent frames only,
the :class:`PerturbedVideo` the frames are frames of). The header carries a stamp of what was scored (the
store's tables, ``run.json``, the sample snapshot, the human study, the dataset's manifest): a file
whose stamp no longer matches the run is refused, as is a version this vidaudit does not know, each
with a one-line error naming the fix (``vidaudit score RUN`` or ``vidaudit report --rescore RUN``).

The header's ``sha256`` is a checksum over the header's other fields (their canonical JSON, ASCII-escaped,
keys sorted) and the bytes of every trial line after it, so a file edited after ``score`` wrote it (a
``correct`` flipped, a model relabelled, trials removed with the header's count edited to match, a
header-only file) is refused like a stale one. It is an integrity check, not a signature: it catches
accidents, partial copies and hand edits, and says which file to regenerate. Every reader of the file
(``report``, ``compare``, the audit's profile) goes through :func:`read_checked`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from vidaudit import __version__
from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.suite import Suite
from vidaudit.core.errors import DataError, listed
from vidaudit.core.fileio import stage_text, written_together
from vidaudit.core.hashing import sha256_file
from vidaudit.core.manifest import MANIFEST, load_samples
from vidaudit.core.registry import get_suite
from vidaudit.core.types import Sample
from vidaudit.run.runconfig import RunConfig
from vidaudit.run.store.reader import store_file

SCORED_RUN = "scored_run.jsonl"
SCORES = "scores.jsonl"  # the public export beside it: one ScoreRecord per line


@dataclass
class Scored:
    """Records and what the report needs beside them (raw text, frames sent, samples, settings)."""

    suite: Suite
    records: list[ScoreRecord]
    samples: dict[str, Sample]
    raw_text: dict[str, str | None] = field(default_factory=dict)
    frames: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)
    data_dir: Path | None = None
    changed: list[str] = field(default_factory=list)
    #: per model label: trials whose frames the service sampled itself (the recorded frames are estimates)
    estimated_frames: dict[str, int] = field(default_factory=dict)
    #: per trial id: the judge's verdict text (runs with ``--judge``), shown beside the answer it judged
    judgements: dict[str, str] = field(default_factory=dict)
    #: an imported human study (``RUN/human_records.jsonl`` / ``human_study.json``), see vidaudit.tools.humanstudy
    human: list[ScoreRecord] = field(default_factory=list)
    human_study: dict[str, Any] | None = None
    #: a sequential design's figures from run.json (``--design``); empty for the full design
    design: dict[str, Any] = field(default_factory=dict)
    #: per model label, per condition: calls, frames and tokens per stage (``stage_usage``); empty without a store
    stage_usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: per trial id of a perturbed condition with frames sent: the perturbed video those frames are frames of
    perturbed: dict[str, PerturbedVideo] = field(default_factory=dict)
    #: responses scored from elsewhere (``score_rows``): per "MODEL under CONDITION", the manifest's samples that
    #: have no response there (``Unanswered``); empty for a run, whose plan is its own
    unanswered: dict[str, Unanswered] = field(default_factory=dict)


@dataclass(frozen=True)
class Unanswered:
    """The samples of a manifest a model and condition of an external log gave no response to: that harness ran
    a subset (``--limit``, a crash, a filter), so its accuracies are over the samples answered, not the dataset."""

    n_manifest: int
    missing: tuple[str, ...]

    def note(self, who: str) -> str:
        return (
            f"{who}: responses for {self.n_manifest - len(self.missing)} of the manifest's {self.n_manifest} "
            f"samples, none for the other {len(self.missing)} ({listed(self.missing, 5)}): its figures are of the "
            "responses given, not of the whole dataset"
        )


FORMAT: Literal["vidaudit.scored_run"] = "vidaudit.scored_run"
#: bump when a line's meaning changes; a reader refuses any other version (2: the header's ``sha256``)
SCORED_RUN_VERSION = 2
#: the run's files whose content the scored file depends on (beside the store's tables)
_STAMPED_FILES = ("run.json", "samples.jsonl", "human_records.jsonl", "human_study.json")
_STORE_TABLES = ("trials", "attempts", "stage_calls")


#: the run-level facts the header carries: fields of both ``Scored`` and ``ScoredRunHeader``, under the same names
_RUN_FACTS = ("changed", "settings", "estimated_frames", "design", "stage_usage", "human", "human_study")


def _run_facts(source: Scored | ScoredRunHeader) -> dict[str, Any]:
    """``source``'s run-level facts (``_RUN_FACTS``), each a shallow copy, for the other of the two to be built with."""
    return {name: copy.copy(getattr(source, name)) for name in _RUN_FACTS}


class PerturbedVideo(BaseModel):
    """The video a perturbed trial's frames were taken from: its path in the run dir (``RUN/perturbed/``, the
    content cache; POSIX, relative to the run dir, so a moved run still finds it) and its sha256. The report draws
    the trial's thumbnails from it, checked against the sha256, and reads its perturbation metadata beside it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    sha256: str


class ScoredRunHeader(BaseModel):
    """The first line: what was scored, with which vidaudit, and the run-level facts the report shows."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["vidaudit.scored_run"] = FORMAT
    version: int = SCORED_RUN_VERSION
    vidaudit_version: str = __version__
    suite: str
    n_trials: int
    allow_changed: bool = False
    #: what the file was scored from (see :func:`run_stamp`); a mismatch means the file is stale
    stamp: dict[str, Any]
    changed: list[str] = []
    settings: dict[str, dict[str, Any]] = {}
    estimated_frames: dict[str, int] = {}
    design: dict[str, Any] = {}
    stage_usage: dict[str, dict[str, Any]] = {}
    human: list[ScoreRecord] = []
    human_study: dict[str, Any] | None = None
    #: the checksum of the header's other fields and every trial line (see :func:`checksum`)
    sha256: str


class ScoredTrial(BaseModel):
    """One trial: its score record, the answer's raw text (or the error), the frames sent, the judge's verdict."""

    model_config = ConfigDict(extra="forbid")

    record: ScoreRecord
    raw_text: str | None = None
    frames: list[tuple[int, float]] = []
    judgement: str | None = None
    #: only on the lines of perturbed trials with frames sent (absent elsewhere, so other lines keep their bytes)
    perturbed: PerturbedVideo | None = None


def _store_stamp(db: Path) -> dict[str, list[int]]:
    """Rows and the last rowid of each table: the store only ever appends, so any new trial, attempt or stage
    call changes them (one indexed lookup per table, nothing read row by row)."""
    out: dict[str, list[int]] = {}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        for table in _STORE_TABLES:
            try:
                n, last = conn.execute(f"SELECT COUNT(*), COALESCE(MAX(rowid), 0) FROM {table}").fetchone()
            except sqlite3.OperationalError:  # an older store without the table
                continue
            out[table] = [int(n), int(last)]
    except sqlite3.DatabaseError as e:
        raise DataError(f"{db} is not a readable vidaudit store ({e}); point at a run dir made by vidaudit") from e
    finally:
        conn.close()
    return out


def run_stamp(run_dir: str | Path, *, data_dir: str | Path | None = None) -> dict[str, Any]:
    """What a scored run depends on: the store's tables, the run's own files and the dataset's manifest
    (``data_dir``: where the dataset is now, when the caller knows better than ``run.json``, e.g. a moved audit)."""
    run_dir = Path(run_dir)
    data = Path(data_dir) if data_dir is not None else Path(RunConfig.load(run_dir).data_dir)
    manifest = data / MANIFEST if data.is_dir() else data
    files = {name: sha256_file(run_dir / name) if (run_dir / name).is_file() else None for name in _STAMPED_FILES}
    db = store_file(run_dir)
    return {
        "store": _store_stamp(db) if db.is_file() else {},
        "files": files,
        "data_manifest": sha256_file(manifest) if manifest.is_file() else None,
    }


def _checksum_of(head: dict[str, Any]) -> Any:
    """A sha256 object fed the header's fields but ``sha256`` (canonical JSON, ASCII) and a line break; the trial
    lines' bytes follow. The header is hashed from its parsed fields, so the reader needs no byte-exact copy."""
    fields = {k: v for k, v in head.items() if k != "sha256"}
    h = hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii"))
    h.update(b"\n")
    return h


def checksum(head: dict[str, Any], body: bytes) -> str:
    """The header's ``sha256``: over ``head`` (the header line's JSON object; its own ``sha256`` left out) and
    ``body``, the bytes of every trial line after the header, line breaks included."""
    h = _checksum_of(head)
    h.update(body)
    return str(h.hexdigest())


def scored_run_text(scored: Scored, *, stamp: dict[str, Any], allow_changed: bool = False) -> str:
    """The whole file: the header (with the checksum of what follows) and one line per trial."""
    header = ScoredRunHeader(
        suite=scored.suite.name,
        n_trials=len(scored.records),
        allow_changed=allow_changed,
        stamp=stamp,
        sha256="",
        **_run_facts(scored),
    )
    body = "".join(
        trial_line(
            r,
            scored.raw_text.get(r.trial_id),
            scored.frames.get(r.trial_id, []),
            scored.judgements.get(r.trial_id),
            scored.perturbed.get(r.trial_id),
        )
        + "\n"
        for r in scored.records
    )
    digest = checksum(json.loads(header.model_dump_json()), body.encode("utf-8"))
    return header.model_copy(update={"sha256": digest}).model_dump_json() + "\n" + body


def scores_text(records: Sequence[ScoreRecord]) -> str:
    """``scores.jsonl``: one ScoreRecord per line, as ``model_dump_json`` writes it."""
    return "".join(r.model_dump_json() + "\n" for r in records)


def write_scored_run(
    run_dir: str | Path, scored: Scored, *, stamp: dict[str, Any], allow_changed: bool = False
) -> Path:
    """Write ``RUN/scored_run.jsonl`` and ``RUN/scores.jsonl`` together (both or neither: each is staged under a
    temporary name, then both renamed; ``stamp``: :func:`run_stamp`, taken before the store was read). A full
    disk or an unwritable folder is a one-line error and leaves the files already there as they were."""
    run_dir = Path(run_dir)
    path = run_dir / SCORED_RUN
    texts = (
        (path, scored_run_text(scored, stamp=stamp, allow_changed=allow_changed)),
        (run_dir / SCORES, scores_text(scored.records)),
    )
    with written_together(f"{path} and {SCORES}", "scored files", f"run `vidaudit score {run_dir}` again") as staged:
        for final, text in texts:
            staged.append((stage_text(final, text), final))
    return path


def trial_line(
    record: ScoreRecord,
    raw_text: str | None,
    frames: list[tuple[int, float]],
    judgement: str | None,
    perturbed: PerturbedVideo | None = None,
) -> str:
    """One trial's line: the record exactly as ``scores.jsonl`` holds it; the text through ``json`` with ASCII
    escapes, so that any string a model returned (a lone surrogate included) survives the round trip. The
    ``perturbed`` key is written only where there is a perturbed video."""
    line: dict[str, Any] = {
        "record": json.loads(record.model_dump_json()),
        "raw_text": raw_text,
        "frames": frames,
        "judgement": judgement,
    }
    if perturbed is not None:
        line["perturbed"] = perturbed.model_dump()
    return json.dumps(line, separators=(",", ":"))


def parse_trial_line(line: str | bytes) -> ScoredTrial:
    """The inverse of :func:`trial_line` (ValueError or ValidationError on a line that is not one)."""
    return ScoredTrial.model_validate(json.loads(line))


_FIX = "run `vidaudit score {run}` (or `vidaudit report --rescore {run}`)"


def _stale_reason(old: dict[str, Any], now: dict[str, Any]) -> str | None:
    """Why a scored file no longer describes the run (None: it does)."""
    if old.get("store") != now["store"]:
        return "trials, attempts or stage calls were stored since it was scored"
    files = old.get("files") or {}
    for name in _STAMPED_FILES:
        if files.get(name) != now["files"][name]:
            return f"{name} changed since it was scored"
    if old.get("data_manifest") != now["data_manifest"]:
        return "the dataset's manifest changed since it was scored"
    return None


def _header(path: Path, first: bytes, run: str) -> tuple[ScoredRunHeader, dict[str, Any]]:
    """The header line (typed, and as parsed), its format and version checked before anything else is read."""
    try:
        head = json.loads(first)
    except ValueError as e:
        raise DataError(f"{path} is not a readable scored-run file ({e}); {_FIX.format(run=run)}") from None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise DataError(f"{path} is not a vidaudit scored-run file; {_FIX.format(run=run)}")
    if head.get("version") != SCORED_RUN_VERSION:
        raise DataError(
            f"{path} is a scored-run file of version {head.get('version')!r}, and this vidaudit "
            f"({__version__}) reads version {SCORED_RUN_VERSION}; {_FIX.format(run=run)}"
        )
    try:
        return ScoredRunHeader.model_validate(head), head
    except ValidationError as e:
        raise DataError(f"{path}:1: not a scored-run header ({e.errors()[0]['msg']}); {_FIX.format(run=run)}") from None


def read_checked(
    run_dir: str | Path, *, data_dir: str | Path | None = None
) -> tuple[ScoredRunHeader, list[ScoredTrial]]:
    """The header and every trial of ``RUN/scored_run.jsonl``, refused (a one-line ``DataError`` naming the fix)
    when the file is missing, of another version, not whole (fewer or more trials than its header says), does not
    match its checksum (edited, cut short or damaged since ``score`` wrote it) or is older than the run.
    ``data_dir``: see :func:`run_stamp`."""
    run_dir = Path(run_dir)
    path = run_dir / SCORED_RUN
    fix = _FIX.format(run=run_dir)
    if not path.is_file():
        raise DataError(f"no {SCORED_RUN} in {run_dir}: the run was not scored yet; {fix}")
    trials: list[ScoredTrial] = []
    try:
        with path.open("rb") as f:
            header, head = _header(path, f.readline(), str(run_dir))
            h = _checksum_of(head)
            for i, line in enumerate(f, start=2):
                h.update(line)
                try:
                    trials.append(parse_trial_line(line))
                except (ValueError, ValidationError) as e:
                    raise DataError(f"{path}:{i}: not a scored trial ({e}); {fix}") from None
    except OSError as e:
        raise DataError(f"{path} is not a readable scored-run file ({e}); {fix}") from None
    if len(trials) != header.n_trials:
        raise DataError(
            f"{path} holds {len(trials)} trials, its header says {header.n_trials} (a truncated file); {fix}"
        )
    if h.hexdigest() != header.sha256:
        raise DataError(
            f"{path} does not match its checksum: it was edited, cut short or damaged after `vidaudit "
            f"score` wrote it; {fix}"
        )
    reason = _stale_reason(header.stamp, run_stamp(run_dir, data_dir=data_dir))
    if reason is not None:
        raise DataError(f"{path} is older than the run ({reason}); {fix}")
    return header, trials


def read_scored_run(run_dir: str | Path) -> Scored:
    """The scored run as ``score`` wrote it, checked by :func:`read_checked` (whole, unedited, not stale)."""
    run_dir = Path(run_dir)
    path = run_dir / SCORED_RUN
    header, trials = read_checked(run_dir)
    data_dir = Path(RunConfig.load(run_dir).data_dir)
    out = Scored(
        suite=get_suite(header.suite),
        records=[],
        samples={s.sample_id: s for s in load_samples(data_dir)},
        source={"run_dir": str(run_dir)},
        data_dir=data_dir,
        **_run_facts(header),
    )
    for t in trials:
        tid = t.record.trial_id
        out.records.append(t.record)
        out.raw_text[tid] = t.raw_text
        out.frames[tid] = t.frames
        if t.judgement is not None:
            out.judgements[tid] = t.judgement
        if t.perturbed is not None:
            out.perturbed[tid] = t.perturbed
    missing = sorted({r.sample_id for r in out.records} - out.samples.keys())
    if missing:
        raise DataError(
            f"{len(missing)} sample(s) scored in {path} are not in {data_dir} (e.g. {missing[0]}); point "
            f"the run at its dataset, or {_FIX.format(run=run_dir)}"
        )
    return out
