"""The run store: every attempt, appended and committed the moment it ends.

``run_dir/store.sqlite`` (SQLite in WAL mode) holds two tables, ``trials`` and ``attempts``;
``run_dir/attempts.jsonl`` is an fsync'd append-only audit log of the same attempts.

What invalidates an entry: nothing. Rows are keyed by the trial id, a sha256 of the trial's
canonical JSON (sample id, video sha256, condition, model spec with its generation settings), so a
changed prompt, video or setting is a *different* trial with a new id, never a stale hit. Rows are
never updated or deleted; a retry is a new attempt row.

Durability: ``journal_mode=WAL`` with ``synchronous=FULL``. In WAL mode a committed transaction
already survives a SIGKILL of this process with ``synchronous=NORMAL`` (the WAL pages are in the
OS cache); FULL adds an fsync of the WAL on every commit so that it also survives an OS crash or
power loss. A model call costs seconds and money while an fsync costs milliseconds, and the audit
log is fsync'd anyway, so FULL keeps the two records in step for the price of nothing that matters.
A SIGKILL therefore loses at most the calls in flight, which were never stored and are re-run on
resume. The database is committed before the log line is written; on reopen the writer cuts a torn
log line and re-appends whatever the log lacks.

Concurrency: one writer process, one connection, writes serialised by a lock (safe from an asyncio
loop and its worker threads); any number of reader processes may open the store with
``readonly=True`` while it is being written.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vidaudit.core.errors import DataError
from vidaudit.core.hashing import canonical_json
from vidaudit.core.types import Attempt, ErrorKind, Response, Status, Trial, Usage
from vidaudit.run.audit_log import LOG_NAME, AuditLog, AuditLogRead, read_audit_log
from vidaudit.run.secrets import check_no_secrets

DB_NAME = "store.sqlite"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    trial_id     TEXT PRIMARY KEY,
    sample_id    TEXT NOT NULL,
    model        TEXT NOT NULL,
    condition_id TEXT NOT NULL,
    trial_json   TEXT NOT NULL,
    created_at   REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    trial_id      TEXT NOT NULL REFERENCES trials(trial_id),
    attempt       INTEGER NOT NULL CHECK (attempt >= 1),
    status        TEXT NOT NULL,
    error_kind    TEXT,
    error_message TEXT,
    text          TEXT,
    usage_json    TEXT,
    cost_usd      REAL,
    latency_s     REAL,
    finish_reason TEXT,
    model_version TEXT,
    frame_indices TEXT NOT NULL,
    frame_times   TEXT NOT NULL,
    started_at    REAL NOT NULL,
    ended_at      REAL NOT NULL,
    UNIQUE (trial_id, attempt)
);
CREATE INDEX IF NOT EXISTS attempts_status ON attempts(status);
"""

_ATTEMPT_COLS = ("trial_id, attempt, status, error_kind, error_message, text, usage_json, cost_usd, latency_s, "
                 "finish_reason, model_version, frame_indices, frame_times, started_at, ended_at")


@dataclass(frozen=True)
class TrialRow:
    trial_id: str
    sample_id: str
    model: str
    condition_id: str
    trial: Trial
    created_at: float


@dataclass(frozen=True)
class StoreSummary:
    """Counts by the status of each trial's best attempt (``pending``: never attempted)."""

    trials: int
    by_status: dict[str, int]
    attempts: int
    attempts_by_status: dict[str, int]
    usage: Usage
    cost_usd: float

    @property
    def tokens(self) -> int:
        return self.usage.input_tokens + self.usage.output_tokens


@dataclass(frozen=True)
class Recovery:
    """What opening the store for writing repaired in the audit log."""

    torn_tail_bytes: int = 0
    reappended: list[tuple[str, int]] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.torn_tail_bytes and not self.reappended


def _attempt_row(a: Attempt) -> tuple[Any, ...]:
    r = a.response
    return (a.trial_id, a.attempt, a.status.value, a.error_kind.value if a.error_kind else None, a.error_message,
            r.text if r else None, r.usage.model_dump_json() if r else None, r.cost_usd if r else None,
            r.latency_s if r else None, r.finish_reason if r else None, r.model_version if r else None,
            json.dumps(list(a.frame_indices)), json.dumps(list(a.frame_times)), a.started_at, a.ended_at)


def _attempt_from_row(row: sqlite3.Row) -> Attempt:
    response = None
    if row["text"] is not None:
        response = Response(text=row["text"], usage=Usage.model_validate_json(row["usage_json"] or "{}"),
                            latency_s=row["latency_s"] or 0.0, finish_reason=row["finish_reason"],
                            model_version=row["model_version"], cost_usd=row["cost_usd"])
    return Attempt(trial_id=row["trial_id"], attempt=row["attempt"], status=Status(row["status"]),
                   error_kind=ErrorKind(row["error_kind"]) if row["error_kind"] else None,
                   error_message=row["error_message"], response=response,
                   frame_indices=tuple(json.loads(row["frame_indices"])),
                   frame_times=tuple(json.loads(row["frame_times"])),
                   started_at=row["started_at"], ended_at=row["ended_at"])


class RunStore:
    """SQLite store of trials and attempts, plus the fsync'd audit log, in ``run_dir``."""

    def __init__(self, run_dir: str | Path, *, readonly: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.readonly = readonly
        self.db_path = self.run_dir / DB_NAME
        self.log_path = self.run_dir / LOG_NAME
        self._lock = threading.Lock()
        self._log: AuditLog | None = None
        self.recovery = Recovery()
        if readonly:
            if not self.db_path.is_file():
                raise DataError(f"no run store at {self.db_path}; run `vidaudit run` first or check the path")
            self._conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, check_same_thread=False,
                                         isolation_level=None)
        else:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.db_path, check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.row_factory = sqlite3.Row
        try:
            self._init()
        except sqlite3.DatabaseError as e:
            self._conn.close()
            raise DataError(f"{self.db_path} is not a readable vidaudit store ({e}); point at a run dir "
                            f"made by vidaudit or start a new one") from e

    # ------------------------------------------------------------------ setup

    def _init(self) -> None:
        c = self._conn
        c.execute("PRAGMA foreign_keys=ON")
        c.execute("PRAGMA busy_timeout=30000")
        if self.readonly:
            self._check_schema()
            return
        mode = c.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise DataError(f"{self.db_path}: SQLite refused WAL mode (got {mode!r}); use a local filesystem "
                            f"for the run dir (network filesystems do not support WAL)")
        c.execute("PRAGMA synchronous=FULL")
        c.executescript(_SCHEMA)
        c.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        self._check_schema()
        self._open_log()

    def _check_schema(self) -> None:
        row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None or int(row[0]) != SCHEMA_VERSION:
            raise DataError(f"{self.db_path}: store schema {row[0] if row else None!r}, this vidaudit reads "
                            f"{SCHEMA_VERSION}; use the vidaudit version that wrote it or a new run dir")

    def _open_log(self) -> None:
        """Open the audit log for appending, cutting a torn tail and re-appending what it lacks."""
        read = read_audit_log(self.log_path)
        self._log = AuditLog(self.log_path)
        self._log.cut_torn_tail(read)
        have = read.keys
        missing = [a for a in self._all_attempts() if (a.trial_id, a.attempt) not in have]
        for a in missing:
            self._log.append({"attempt": a.model_dump(mode="json"), "recovered": True})
        self.recovery = Recovery(torn_tail_bytes=len(read.torn_tail or b""),
                                 reappended=[(a.trial_id, a.attempt) for a in missing])

    def _require_writable(self) -> None:
        if self.readonly:
            raise DataError(f"{self.db_path} was opened read-only; open RunStore(run_dir) to write")

    # ------------------------------------------------------------------ writes

    def register_trials(self, trials: Iterable[Trial]) -> int:
        """Record trials (idempotent); returns how many were new."""
        self._require_writable()
        rows = []
        for t in trials:
            data = t.model_dump(mode="json")
            check_no_secrets(data, f"trial {t.id}")
            rows.append((t.id, t.sample_id, t.model.label, t.condition.id, canonical_json(data), time.time()))
        with self._lock:
            c = self._conn
            c.execute("BEGIN IMMEDIATE")
            try:
                before = c.total_changes
                c.executemany("INSERT OR IGNORE INTO trials(trial_id, sample_id, model, condition_id, trial_json, "
                              "created_at) VALUES (?, ?, ?, ?, ?, ?)", rows)
                new = c.total_changes - before
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise
        return new

    def append(self, attempt: Attempt) -> None:
        """Store one ended attempt in its own committed transaction, then fsync it to the audit log."""
        self._require_writable()
        data = attempt.model_dump(mode="json")
        check_no_secrets(data, f"attempt {attempt.attempt} of trial {attempt.trial_id}")
        if attempt.status is Status.OK and attempt.response is None:
            raise DataError(f"attempt {attempt.attempt} of trial {attempt.trial_id} is ok but has no response; "
                            f"an ok attempt must carry the response it got")
        with self._lock:
            c = self._conn
            try:
                c.execute("BEGIN IMMEDIATE")
                c.execute(f"INSERT INTO attempts({_ATTEMPT_COLS}) VALUES ({', '.join('?' * 15)})",
                          _attempt_row(attempt))
                c.execute("COMMIT")
            except sqlite3.IntegrityError as e:
                c.execute("ROLLBACK")
                if "UNIQUE" in str(e):
                    raise DataError(f"attempt {attempt.attempt} of trial {attempt.trial_id} is already stored; "
                                    f"attempts are append-only, number the next one "
                                    f"{self._count(attempt.trial_id) + 1}") from e
                raise DataError(f"attempt for unknown trial {attempt.trial_id}; call register_trials first") from e
            assert self._log is not None
            self._log.append({"attempt": data})

    # ------------------------------------------------------------------ reads

    def _count(self, trial_id: str) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM attempts WHERE trial_id=?", (trial_id,)).fetchone()[0])

    def _all_attempts(self) -> list[Attempt]:
        rows = self._conn.execute(f"SELECT {_ATTEMPT_COLS} FROM attempts ORDER BY rowid").fetchall()
        return [_attempt_from_row(r) for r in rows]

    def ok_trial_ids(self) -> set[str]:
        with self._lock:
            rows = self._conn.execute("SELECT DISTINCT trial_id FROM attempts WHERE status=?", (Status.OK.value,))
            return {r[0] for r in rows}

    def attempt_counts(self) -> dict[str, int]:
        with self._lock:
            rows = self._conn.execute("SELECT trial_id, COUNT(*) FROM attempts GROUP BY trial_id")
            return {r[0]: int(r[1]) for r in rows}

    def attempts(self, trial_id: str) -> list[Attempt]:
        with self._lock:
            rows = self._conn.execute(f"SELECT {_ATTEMPT_COLS} FROM attempts WHERE trial_id=? ORDER BY attempt",
                                      (trial_id,)).fetchall()
        return [_attempt_from_row(r) for r in rows]

    def latest(self, trial_id: str) -> Attempt | None:
        with self._lock:
            row = self._conn.execute(f"SELECT {_ATTEMPT_COLS} FROM attempts WHERE trial_id=? "
                                     f"ORDER BY attempt DESC LIMIT 1", (trial_id,)).fetchone()
        return _attempt_from_row(row) if row else None

    def trial_rows(self) -> list[TrialRow]:
        with self._lock:
            rows = self._conn.execute("SELECT * FROM trials ORDER BY created_at, trial_id").fetchall()
        out = []
        for r in rows:
            try:
                trial = Trial.model_validate_json(r["trial_json"])
            except ValidationError as e:
                raise DataError(f"{self.db_path}: trial {r['trial_id']} does not validate ({e}); the store was "
                                f"written by an incompatible vidaudit") from e
            out.append(TrialRow(r["trial_id"], r["sample_id"], r["model"], r["condition_id"], trial,
                                r["created_at"]))
        return out

    def results(self) -> Iterator[tuple[TrialRow, Attempt | None]]:
        """Each registered trial with its best attempt: the ok one if any, else the last (None: never tried).

        Unattempted and errored trials are yielded too: they stay in every denominator.
        """
        best: dict[str, Attempt] = {}
        with self._lock:
            rows = self._conn.execute(f"SELECT {_ATTEMPT_COLS} FROM attempts ORDER BY trial_id, attempt").fetchall()
        for r in rows:
            a = _attempt_from_row(r)
            prev = best.get(a.trial_id)
            if prev is None or prev.status is not Status.OK:
                best[a.trial_id] = a
        for row in self.trial_rows():
            yield row, best.get(row.trial_id)

    def summary(self) -> StoreSummary:
        by_status: dict[str, int] = {}
        for _, a in self.results():
            key = a.status.value if a else "pending"
            by_status[key] = by_status.get(key, 0) + 1
        with self._lock:
            rows = self._conn.execute("SELECT status, usage_json, cost_usd FROM attempts").fetchall()
        attempts_by_status: dict[str, int] = {}
        usage = Usage()
        cost = 0.0
        for r in rows:
            attempts_by_status[r["status"]] = attempts_by_status.get(r["status"], 0) + 1
            if r["usage_json"]:
                usage = usage + Usage.model_validate_json(r["usage_json"])
            cost += r["cost_usd"] or 0.0
        return StoreSummary(trials=sum(by_status.values()), by_status=by_status, attempts=len(rows),
                            attempts_by_status=attempts_by_status, usage=usage, cost_usd=cost)

    def audit_log(self) -> AuditLogRead:
        """A tolerant read of the audit log (a torn last line is reported in ``torn_tail``)."""
        return read_audit_log(self.log_path)

    def journal_mode(self) -> str:
        with self._lock:
            return str(self._conn.execute("PRAGMA journal_mode").fetchone()[0])

    def integrity_check(self) -> str:
        with self._lock:
            return str(self._conn.execute("PRAGMA integrity_check").fetchone()[0])

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        with self._lock:
            if self._log is not None:
                self._log.close()
                self._log = None
            self._conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
