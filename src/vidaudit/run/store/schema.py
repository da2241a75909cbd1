"""The run store's schema: its file, its tables, its version, and building a database whole.

``run_dir/store.sqlite`` (SQLite in WAL mode) holds three tables, ``trials``, ``attempts`` and
``stage_calls``, and a ``meta`` table with the schema version. This vidaudit writes schema 2. A schema-1
store (an earlier release: no stage calls, no trial lines in its log) opens read-only, so old runs can still
be reported (``ATTEMPT_COLS_V1``); opening one for writing is a ``DataError`` saying what to do
(``old_schema_message``: report it, start a new run dir, or ``RunStore.upgrade``, the migration, in
``store/writer.py``). ``write_new_db`` builds a schema-2 database beside its path and renames it into place:
what a rebuild from the audit log and an upgrade both write.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from vidaudit.core.errors import DataError
from vidaudit.core.types import Attempt, Trial
from vidaudit.run.store.records import KeyedTrial, StageCallRecord, StageRef, attempt_row, stage_row, trial_row

DB_NAME = "store.sqlite"
#: WAL pages after which a commit copies them back into the database (SQLite's default: 1,000). The trial ids
#: are random keys, so a commit group touches index pages all over the file; with a longer WAL a page changed
#: by several groups is copied back once (about 40 MB of WAL at most; durability is the WAL's, unchanged).
#: A simulated run's CPU per trial grew 6% from 17,520 to 262,800 trials with the default, 3% with this
#: (benchmarks/README.md, "Harness CPU per trial")
WAL_CHECKPOINT_PAGES = 10_000
SCHEMA_VERSION = 2
READABLE_SCHEMAS = (1, 2)

#: the outcome columns an attempt and a stage call share (one call's answer or error, its cost and timing)
_OUTCOME_COLUMNS = """    status        TEXT NOT NULL,
    error_kind    TEXT,
    error_message TEXT,
    text          TEXT,
    usage_json    TEXT,
    cost_usd      REAL,
    latency_s     REAL,
    finish_reason TEXT,
    model_version TEXT,
"""
SCHEMA = (
    """
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
"""
    + _OUTCOME_COLUMNS
    + """    frame_indices TEXT NOT NULL,
    frame_times   TEXT NOT NULL,
    started_at    REAL NOT NULL,
    ended_at      REAL NOT NULL,
    stages_json   TEXT,                -- NULL: a plain call; a JSON list of StageRef: a composite's attempt
    response_extra TEXT,               -- NULL or JSON: frames_sent / frames_estimated the adapter reported
    UNIQUE (trial_id, attempt)
);
CREATE INDEX IF NOT EXISTS attempts_status ON attempts(status);
CREATE TABLE IF NOT EXISTS stage_calls (
    trial_id      TEXT NOT NULL REFERENCES trials(trial_id),
    stage         TEXT NOT NULL,
    attempt       INTEGER NOT NULL CHECK (attempt >= 1),
    trial_attempt INTEGER NOT NULL CHECK (trial_attempt >= 1),
    call_key      TEXT NOT NULL,
    model_json    TEXT NOT NULL,
    request_json  TEXT NOT NULL,
"""
    + _OUTCOME_COLUMNS
    + """    started_at    REAL NOT NULL,
    ended_at      REAL NOT NULL,
    response_extra TEXT,
    UNIQUE (trial_id, stage, attempt)
);
CREATE INDEX IF NOT EXISTS stage_calls_key ON stage_calls(call_key, status);
"""
)

ATTEMPT_COLS = (
    "trial_id, attempt, status, error_kind, error_message, text, usage_json, cost_usd, latency_s, "
    "finish_reason, model_version, frame_indices, frame_times, started_at, ended_at, stages_json, "
    "response_extra"
)
ATTEMPT_COLS_V1 = ATTEMPT_COLS.replace(", stages_json, response_extra", ", NULL AS stages_json, NULL AS response_extra")
STAGE_COLS = (
    "trial_id, stage, attempt, trial_attempt, call_key, model_json, request_json, status, error_kind, "
    "error_message, text, usage_json, cost_usd, latency_s, finish_reason, model_version, started_at, "
    "ended_at, response_extra"
)
INSERT_ATTEMPT = f"INSERT INTO attempts({ATTEMPT_COLS}) VALUES ({', '.join('?' * 17)})"
INSERT_STAGE = f"INSERT INTO stage_calls({STAGE_COLS}) VALUES ({', '.join('?' * 19)})"
INSERT_TRIAL = (
    "INSERT OR IGNORE INTO trials(trial_id, sample_id, model, condition_id, trial_json, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)


def schema_version(conn: sqlite3.Connection) -> int | None:
    """The stored schema version; None for an empty database (no meta table yet)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone() is None:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    if row is None:
        return None
    try:
        return int(row[0])
    except ValueError:
        raise DataError(f"store schema version {row[0]!r} is not a number; not a vidaudit store") from None


def old_schema_message(db_path: Path, version: int | None) -> str:
    """Why a store of another schema is not written into, and what to do instead."""
    run = db_path.parent
    if version == 1:
        return (
            f"{db_path} is a schema-1 run store (made by an earlier vidaudit release); this vidaudit "
            f"writes schema 2 (composite models' stage calls) and will not write into it. It can still be "
            f"read: report it read-only with `vidaudit report {run}`. To run more trials, start a new run "
            f"dir (`--out NEW_DIR`), or upgrade this one in place with RunStore.upgrade({str(run)!r}) "
            f"(keeps the old file as {DB_NAME}.v1). Rebuilding from the audit log does not apply: a "
            f"schema-1 log has no trial lines"
        )
    return (
        f"{db_path}: store schema {version!r}, this vidaudit writes {SCHEMA_VERSION}; use the vidaudit "
        f"version that wrote it, or a new run dir"
    )


# --------------------------------------------------------------------------- building a database whole


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def move_stale_sidecars(db: Path) -> list[str]:
    """Rename a lost database's -wal / -shm / -journal so that SQLite never applies them to a new file."""
    moved = []
    for suffix in ("-wal", "-shm", "-journal"):
        p = db.with_name(db.name + suffix)
        if p.exists():
            dst = p.with_name(f"{p.name}.{int(time.time())}.stale")
            os.replace(p, dst)
            moved.append(dst.name)
    return moved


def write_new_db(
    db: Path,
    *,
    trials: Sequence[tuple[Trial, float]],
    attempts: Sequence[tuple[Attempt, list[StageRef] | None]],
    stage_calls: Sequence[StageCallRecord],
) -> None:
    """Build a schema-2 database at ``db`` atomically: written beside it, fsync'd, renamed into place."""
    tmp = db.with_name(db.name + ".rebuild")
    for p in (tmp, tmp.with_name(tmp.name + "-journal")):
        p.unlink(missing_ok=True)
    con = sqlite3.connect(tmp, isolation_level=None)
    try:
        con.execute("PRAGMA foreign_keys=ON")
        con.executescript(SCHEMA)
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        con.executemany(INSERT_TRIAL, [trial_row(KeyedTrial.of(t), ts) for t, ts in trials])
        con.executemany(INSERT_STAGE, [stage_row(s) for s in stage_calls])
        con.executemany(INSERT_ATTEMPT, [attempt_row(a, st) for a, st in attempts])
        con.execute("COMMIT")
    except BaseException:
        con.close()
        tmp.unlink(missing_ok=True)
        raise
    con.close()
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, db)
    fsync_dir(db.parent)
