"""Keeping the run store and its audit log in step: repairing the log on open, rebuilding a lost database.

``run_dir/attempts.jsonl`` is an fsync'd append-only audit log of the store's records (``vidaudit.run.audit_log``):
a line per registered trial, per attempt and per stage call, enough to rebuild the database from the log
alone. The writer commits the database before it writes the log lines, so on reopen the log may lack the
last records or end in a torn line: ``open_log`` cuts the torn tail and re-appends what the log lacks
(``Recovery`` says what). A writer opening a run dir whose log has records but whose ``store.sqlite`` is
missing never starts fresh: ``rebuild_from_log`` rebuilds the database from the log first (built aside and
renamed into place, so a crash mid-rebuild leaves no half store) and the writer reports it in
``recovery.rebuilt``.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vidaudit.core.errors import DataError
from vidaudit.core.types import Attempt, Trial
from vidaudit.run.audit_log import LOG_NAME, AuditLog, AuditLogRead, AuditLogScan, read_audit_log, scan_audit_log
from vidaudit.run.store.records import (
    StageCallRecord,
    StageRef,
    attempt_from_row,
    dec,
    from_json_col,
    log_attempt,
    log_stage_call,
    log_trial,
    stage_from_row,
    stages_from_row,
)
from vidaudit.run.store.schema import ATTEMPT_COLS, DB_NAME, STAGE_COLS, move_stale_sidecars, write_new_db


@dataclass(frozen=True)
class RebuildReport:
    """What ``rebuild_from_log`` restored."""

    trials: int
    attempts: int
    stage_calls: int
    duplicates: int = 0  # identical lines seen twice (kept once)
    torn_tail_bytes: int = 0
    moved_aside: list[str] = field(default_factory=list)  # stale -wal/-shm files renamed *.stale


@dataclass(frozen=True)
class Recovery:
    """What opening the store for writing repaired: the audit log's tail, lines it lacked, a lost database."""

    torn_tail_bytes: int = 0
    reappended: list[tuple[str, int]] = field(default_factory=list)  # attempts
    reappended_trials: list[str] = field(default_factory=list)
    reappended_stage_calls: list[tuple[str, str, int]] = field(default_factory=list)
    rebuilt: RebuildReport | None = None

    @property
    def clean(self) -> bool:
        return not (
            self.torn_tail_bytes
            or self.reappended
            or self.reappended_trials
            or self.reappended_stage_calls
            or self.rebuilt
        )


def has_records(log_path: Path) -> bool:
    """Whether the audit log holds at least one complete record (a lone torn line is nothing to keep)."""
    return log_path.is_file() and log_path.stat().st_size > 0 and bool(read_audit_log(log_path).rows)


def open_log(conn: sqlite3.Connection, log_path: Path) -> tuple[AuditLog, Recovery]:
    """Open the audit log for appending, cutting a torn tail and re-appending what the database ``conn`` holds and
    it lacks; returns the log and what was repaired.

    The log is first scanned without parsing (``scan_audit_log``): when it has as many lines of each
    kind as the database has rows and its last line of each kind is the database's last row, it lacks
    nothing and is not read (a resume of a large run costs a pass over its bytes, not a parse of every
    line). Otherwise it is read in full and compared key by key."""
    scan = scan_audit_log(log_path)
    if scan.torn_tail is None and not scan.unknown and _log_agrees(conn, scan):
        return AuditLog(log_path), Recovery()
    read = read_audit_log(log_path)
    log = AuditLog(log_path)
    log.cut_torn_tail(read)
    trials, attempts, stages = _missing_from(conn, read)
    lines = (
        [{**log_trial(t, ts), "recovered": True} for t, ts in trials]
        + [{**log_stage_call(s), "recovered": True} for s in stages]
        + [{**log_attempt(a, st), "recovered": True} for a, st in attempts]
    )
    log.append_many(lines)
    return log, Recovery(
        torn_tail_bytes=len(read.torn_tail or b""),
        reappended=[(a.trial_id, a.attempt) for a, _ in attempts],
        reappended_trials=[t.id for t, _ in trials],
        reappended_stage_calls=[(s.trial_id, s.stage, s.attempt) for s in stages],
    )


def _log_agrees(c: sqlite3.Connection, scan: AuditLogScan) -> bool:
    """Whether the scanned log has a line for each row of the database (counts and last keys agree)."""
    tables = (
        ("trial", "trials", "trial_id"),
        ("attempt", "attempts", "trial_id, attempt"),
        ("stage_call", "stage_calls", "trial_id, stage, attempt"),
    )
    for kind, table, key in tables:
        n = c.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        if n != scan.counts.get(kind, 0):
            return False
        if not n:
            continue
        order = "created_at DESC, trial_id DESC" if table == "trials" else "rowid DESC"
        row = tuple(
            dec(v) if isinstance(v, bytes) else v
            for v in c.execute(f"SELECT {key} FROM {table} ORDER BY {order} LIMIT 1").fetchone()
        )
        line = json.loads(scan.last[kind].decode("utf-8", "surrogatepass"))
        if kind == "trial":
            got: tuple[Any, ...] = (line["trial_id"],)
        else:
            rec = line[kind]
            got = (
                (rec["trial_id"], rec["attempt"])
                if kind == "attempt"
                else (rec["trial_id"], rec["stage"], rec["attempt"])
            )
        if got != row:
            return False
    return True


def _missing_from(
    c: sqlite3.Connection, read: AuditLogRead
) -> tuple[list[tuple[Trial, float]], list[tuple[Attempt, list[StageRef] | None]], list[StageCallRecord]]:
    """What the database holds and the log lacks (keys compared first: full rows only for those)."""
    have_t, have_a, have_s = read.trial_ids, read.keys, read.stage_keys
    t_rowids = [
        r[0]
        for r in c.execute("SELECT rowid, trial_id FROM trials ORDER BY created_at, trial_id")
        if r[1] not in have_t
    ]
    a_rowids = [
        r[0]
        for r in c.execute("SELECT rowid, trial_id, attempt FROM attempts ORDER BY rowid")
        if (r[1], r[2]) not in have_a
    ]
    s_rowids = [
        r[0]
        for r in c.execute("SELECT rowid, trial_id, stage, attempt FROM stage_calls ORDER BY rowid")
        if (r[1], dec(r[2]), r[3]) not in have_s
    ]
    trials = []
    for rid in t_rowids:
        r = c.execute("SELECT trial_json, created_at FROM trials WHERE rowid=?", (rid,)).fetchone()
        trials.append((Trial.model_validate(from_json_col(r["trial_json"])), r["created_at"]))
    attempts = []
    for rid in a_rowids:
        r = c.execute(f"SELECT {ATTEMPT_COLS} FROM attempts WHERE rowid=?", (rid,)).fetchone()
        attempts.append((attempt_from_row(r), stages_from_row(r)))
    stages = [
        stage_from_row(c.execute(f"SELECT {STAGE_COLS} FROM stage_calls WHERE rowid=?", (rid,)).fetchone())
        for rid in s_rowids
    ]
    return trials, attempts, stages


def rebuild_from_log(run_dir: str | Path) -> RebuildReport:
    """Rebuild a missing ``store.sqlite`` from ``attempts.jsonl``: trials, attempts and stage calls, exactly.

    Refuses if the database exists (move it aside first). The new database is built beside the
    real path and renamed into place once complete; stale ``-wal``/``-shm`` files of the lost
    database are renamed ``*.stale`` so that SQLite cannot replay them into the new one. The log
    is not modified (a torn last line is left for the next writer to cut).
    """
    run_dir = Path(run_dir)
    db, log = run_dir / DB_NAME, run_dir / LOG_NAME
    if db.exists():
        raise DataError(
            f"{db} exists; rebuild_from_log only replaces a missing store: move it aside first "
            f"if you mean to rebuild it from {log}"
        )
    read = read_audit_log(log)
    if not read.rows:
        raise DataError(f"{log} holds no records to rebuild a store from")
    trials: dict[str, tuple[Trial, float]] = {}
    attempts: dict[tuple[str, int], tuple[Attempt, list[StageRef] | None]] = {}
    stages: dict[tuple[str, str, int], StageCallRecord] = {}
    dup = 0
    try:
        for i, line in enumerate(read.rows, 1):
            if "trial" in line:
                t = Trial.model_validate(line["trial"])
                if t.id != line.get("trial_id"):
                    raise DataError(
                        f"{log}: line {i}: trial id {line.get('trial_id')} is not the hash of its "
                        f"trial ({t.id}); the log was edited"
                    )
                new_t: Any = (t, float(line["created_at"]))
                key: Any = t.id
                table: dict[Any, Any] = trials
            elif "attempt" in line:
                a = Attempt.model_validate(line["attempt"])
                refs = [StageRef.model_validate(s) for s in line["stages"]] if line.get("stages") is not None else None
                new_t, key, table = (a, refs), (a.trial_id, a.attempt), attempts
            elif "stage_call" in line:
                s = StageCallRecord.model_validate(line["stage_call"])
                if s.attempt < 1:
                    raise DataError(f"{log}: line {i}: stage call without an attempt number")
                new_t, key, table = s, (s.trial_id, s.stage, s.attempt), stages
            else:
                raise DataError(f"{log}: line {i} is neither a trial, an attempt nor a stage call")
            if key in table:
                if table[key] != new_t:
                    raise DataError(
                        f"{log}: line {i} contradicts an earlier line for {key}; the log is "
                        f"append-only, so this was edited by hand"
                    )
                dup += 1
                continue
            table[key] = new_t
    except ValidationError as e:
        raise DataError(f"{log}: a line does not validate ({e}); written by an incompatible vidaudit") from e
    orphans = {k[0] for k in attempts} | {k[0] for k in stages}
    orphans -= set(trials)
    if orphans:
        raise DataError(
            f"{log} has attempts for {len(orphans)} trial(s) it never registered (e.g. "
            f"{sorted(orphans)[0]}): it was written by a vidaudit older than store schema 2, whose "
            f"log has no trial lines; the store cannot be rebuilt from it. Report what is left with "
            f"the old release, or start a new run dir"
        )
    moved = move_stale_sidecars(db)
    write_new_db(db, trials=list(trials.values()), attempts=list(attempts.values()), stage_calls=list(stages.values()))
    return RebuildReport(
        trials=len(trials),
        attempts=len(attempts),
        stage_calls=len(stages),
        duplicates=dup,
        torn_tail_bytes=len(read.torn_tail or b""),
        moved_aside=moved,
    )
