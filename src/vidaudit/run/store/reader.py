"""Reading a run store: what was planned, what each attempt and stage call returned, what it all cost.

``StoreReader(run_dir)`` opens ``run_dir/store.sqlite`` read-only: any number of readers, in any process, while
the one writer (``store/writer.RunStore``, a ``StoreReader`` that also writes) appends. The score stage reads a
run through this class alone. A store of either readable schema opens (``schema.READABLE_SCHEMAS``: a schema-1
store of an earlier release has no stage calls, which then read as none). A missing database whose audit log
holds records is refused with a message naming the rebuild (a writer rebuilds it: ``store/sync.py``).

Reads hold the connection's lock, so the writer's threads and an asyncio loop may read while it writes; the
writer's appends still pending in a commit group are committed first (``_settle``), or, for
``trial_status``, counted without committing them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from pydantic import ValidationError

from vidaudit.core.errors import DataError
from vidaudit.core.types import Attempt, Status, Trial, Usage
from vidaudit.run.audit_log import LOG_NAME, AuditLogRead, read_audit_log
from vidaudit.run.store.records import (
    StageCallRecord,
    StageRef,
    TrialRow,
    TrialStatus,
    attempt_from_row,
    dec,
    enc,
    from_json_col,
    stage_from_row,
    stages_from_row,
)
from vidaudit.run.store.schema import (
    ATTEMPT_COLS,
    ATTEMPT_COLS_V1,
    DB_NAME,
    READABLE_SCHEMAS,
    SCHEMA_VERSION,
    STAGE_COLS,
    schema_version,
)
from vidaudit.run.store.sync import has_records

#: trial ids per ``IN (...)`` lookup (well under SQLite's 32,766 host parameters)
LOOKUP_CHUNK = 500


@dataclass(frozen=True)
class StoreSummary:
    """Counts by the status of each trial's best attempt (``pending``: never attempted).

    ``usage`` and ``cost_usd`` are what was spent: every plain attempt and every stage call, once
    (a composite attempt's own usage is the sum of its stages', which are counted as stage calls).
    """

    trials: int
    by_status: dict[str, int]
    attempts: int
    attempts_by_status: dict[str, int]
    usage: Usage
    cost_usd: float
    stage_calls: int = 0
    stage_calls_by_status: dict[str, int] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return self.usage.input_tokens + self.usage.output_tokens


def store_file(run_dir: str | Path) -> Path:
    """Where a run dir's store is (whether or not it exists yet)."""
    return Path(run_dir) / DB_NAME


class StoreReader:
    """A run store opened read-only: trials, attempts and stage calls as they were stored, in ``run_dir``."""

    def __init__(self, run_dir: str | Path) -> None:
        self._paths(run_dir)
        if not self.db_path.is_file():
            if has_records(self.log_path):
                raise DataError(
                    f"no run store at {self.db_path}, but its audit log {self.log_path} is there: "
                    f"open the run for writing (`vidaudit run --resume {self.run_dir}`) to rebuild "
                    f"the store from the log, or call vidaudit.run.store.sync.rebuild_from_log"
                )
            raise DataError(f"no run store at {self.db_path}; run `vidaudit run` first or check the path")
        self._open(
            sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None)
        )

    # ------------------------------------------------------------------ opening

    def _paths(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.db_path = store_file(self.run_dir)
        self.log_path = self.run_dir / LOG_NAME
        self._lock = threading.Lock()
        self.schema_version = SCHEMA_VERSION

    def _open(self, conn: sqlite3.Connection) -> None:
        """Take ``conn`` and check what it holds (``_init``), closing it on any failure."""
        conn.row_factory = sqlite3.Row
        self._conn = conn
        try:
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=30000")
            self._init()
        except sqlite3.DatabaseError as e:
            conn.close()
            raise DataError(
                f"{self.db_path} is not a readable vidaudit store ({e}); point at a run dir "
                f"made by vidaudit or start a new one"
            ) from e
        except BaseException:
            conn.close()
            raise

    def _init(self) -> None:
        version = schema_version(self._conn)
        if version not in READABLE_SCHEMAS:
            raise DataError(
                f"{self.db_path}: store schema {version!r}, this vidaudit reads "
                f"{', '.join(map(str, READABLE_SCHEMAS))}; use the vidaudit version that wrote it"
            )
        self.schema_version = int(version)

    def _settle(self) -> None:
        """Before a read: nothing to do for a reader (the writer commits its pending group here)."""

    def _pending_attempts(self) -> list[Attempt]:
        """Attempts appended but not yet committed: none for a reader."""
        return []

    # ------------------------------------------------------------------ reads

    @property
    def _attempt_cols(self) -> str:
        return ATTEMPT_COLS if self.schema_version >= 2 else ATTEMPT_COLS_V1

    def _count(self, trial_id: str) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM attempts WHERE trial_id=?", (trial_id,)).fetchone()[0])

    def all_attempts(self) -> list[tuple[Attempt, list[StageRef] | None]]:
        """Every attempt with the stages it used, in the order they were stored."""
        rows = self._conn.execute(f"SELECT {self._attempt_cols} FROM attempts ORDER BY rowid").fetchall()
        return [(attempt_from_row(r), stages_from_row(r)) for r in rows]

    def trial_status(self, trial_ids: Sequence[str]) -> dict[str, TrialStatus]:
        """{trial id: attempts stored, whether one is ok} for the ids that have attempts, by the attempts
        index in chunks of ``LOOKUP_CHUNK``: a resume looks its plan up piece by piece, holding none of it.
        Attempts of a pending commit group are counted too (without committing them now)."""
        out: dict[str, TrialStatus] = {}
        pending = self._pending_attempts()
        with self._lock:
            for i in range(0, len(trial_ids), LOOKUP_CHUNK):
                chunk = trial_ids[i : i + LOOKUP_CHUNK]
                rows = self._conn.execute(
                    f"SELECT trial_id, COUNT(*), MAX(status = 'ok') FROM attempts WHERE "
                    f"trial_id IN ({','.join('?' * len(chunk))}) GROUP BY trial_id",
                    chunk,
                )
                for tid, n, ok in rows:
                    out[tid] = TrialStatus(int(n), bool(ok))
        if pending:
            wanted = set(trial_ids)
            for a in pending:
                if a.trial_id in wanted:
                    was = out.get(a.trial_id, TrialStatus())
                    out[a.trial_id] = TrialStatus(was.attempts + 1, was.ok or a.status is Status.OK)
        return out

    def has_trials(self) -> bool:
        """Whether any trial is registered."""
        with self._lock:
            return self._conn.execute("SELECT 1 FROM trials LIMIT 1").fetchone() is not None

    def registered(self, trial_ids: Sequence[str]) -> set[str]:
        """Which of ``trial_ids`` the store has registered (indexed, in chunks)."""
        out: set[str] = set()
        with self._lock:
            for i in range(0, len(trial_ids), LOOKUP_CHUNK):
                chunk = trial_ids[i : i + LOOKUP_CHUNK]
                out.update(
                    r[0]
                    for r in self._conn.execute(
                        f"SELECT trial_id FROM trials WHERE trial_id IN ({','.join('?' * len(chunk))})", chunk
                    )
                )
        return out

    def ok_trial_ids(self) -> set[str]:
        self._settle()
        with self._lock:
            rows = self._conn.execute("SELECT DISTINCT trial_id FROM attempts WHERE status=?", (Status.OK.value,))
            return {r[0] for r in rows}

    def attempt_counts(self) -> dict[str, int]:
        self._settle()
        with self._lock:
            rows = self._conn.execute("SELECT trial_id, COUNT(*) FROM attempts GROUP BY trial_id")
            return {r[0]: int(r[1]) for r in rows}

    def attempts(self, trial_id: str) -> list[Attempt]:
        self._settle()
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {self._attempt_cols} FROM attempts WHERE trial_id=? ORDER BY attempt", (trial_id,)
            ).fetchall()
        return [attempt_from_row(r) for r in rows]

    def attempt_stages(self, trial_id: str, attempt: int) -> list[StageRef] | None:
        """The stages a composite's attempt used (None: a plain call, or no such attempt)."""
        self._settle()
        with self._lock:
            row = self._conn.execute(
                f"SELECT {self._attempt_cols} FROM attempts WHERE trial_id=? AND attempt=?", (trial_id, attempt)
            ).fetchone()
        return stages_from_row(row) if row else None

    def latest(self, trial_id: str) -> Attempt | None:
        self._settle()
        with self._lock:
            row = self._conn.execute(
                f"SELECT {self._attempt_cols} FROM attempts WHERE trial_id=? ORDER BY attempt DESC LIMIT 1", (trial_id,)
            ).fetchone()
        return attempt_from_row(row) if row else None

    def stage_calls(self, trial_id: str | None = None) -> list[StageCallRecord]:
        """Stored stage calls (of one trial, or all), in the order they were stored."""
        if self.schema_version < 2:
            return []
        where, args = ("WHERE trial_id=?", (trial_id,)) if trial_id is not None else ("", ())
        with self._lock:
            rows = self._conn.execute(f"SELECT {STAGE_COLS} FROM stage_calls {where} ORDER BY rowid", args).fetchall()
        return [stage_from_row(r) for r in rows]

    def ok_stage_call(self, call_key: str) -> StageCallRecord | None:
        """The first ok stage call with this content key, if any (a cache hit)."""
        if self.schema_version < 2:
            return None
        with self._lock:
            row = self._conn.execute(
                f"SELECT {STAGE_COLS} FROM stage_calls WHERE call_key=? AND status=? ORDER BY rowid LIMIT 1",
                (enc(call_key), Status.OK.value),
            ).fetchone()
        return stage_from_row(row) if row else None

    def trial_rows(self) -> list[TrialRow]:
        with self._lock:
            rows = self._conn.execute("SELECT * FROM trials ORDER BY created_at, trial_id").fetchall()
        out = []
        for r in rows:
            try:
                trial = Trial.model_validate(from_json_col(r["trial_json"]))
            except (ValidationError, ValueError) as e:
                raise DataError(
                    f"{self.db_path}: trial {r['trial_id']} does not validate ({e}); the store was "
                    f"written by an incompatible vidaudit"
                ) from e
            out.append(
                TrialRow(
                    r["trial_id"],
                    dec(r["sample_id"]),  # type: ignore[arg-type]
                    dec(r["model"]),  # type: ignore[arg-type]
                    dec(r["condition_id"]),  # type: ignore[arg-type]
                    trial,
                    r["created_at"],
                )
            )
        return out

    def results(self) -> Iterator[tuple[TrialRow, Attempt | None]]:
        """Each registered trial with its best attempt: the ok one if any, else the last (None: never tried).

        Unattempted and errored trials are yielded too: they stay in every denominator.
        """
        self._settle()
        best: dict[str, Attempt] = {}
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {self._attempt_cols} FROM attempts ORDER BY trial_id, attempt"
            ).fetchall()
        for r in rows:
            a = attempt_from_row(r)
            prev = best.get(a.trial_id)
            if prev is None or prev.status is not Status.OK:
                best[a.trial_id] = a
        for row in self.trial_rows():
            yield row, best.get(row.trial_id)

    def summary_spend(self) -> tuple[int, float]:
        """(tokens, cost in USD) spent so far, as ``summary()`` counts them (plain attempts and stage calls,
        never a composite attempt's own usage), summed by SQLite without reading a row into Python."""
        self._settle()
        stages = self.schema_version >= 2
        tokens = cost = 0.0
        with self._lock:
            for table, where in (
                ("attempts", "WHERE stages_json IS NULL" if stages else ""),
                *((("stage_calls", ""),) if stages else ()),
            ):
                t, c = self._conn.execute(
                    f"SELECT COALESCE(SUM(COALESCE(json_extract(usage_json, '$.input_tokens'), 0) + "
                    f"COALESCE(json_extract(usage_json, '$.output_tokens'), 0)), 0), "
                    f"COALESCE(SUM(COALESCE(cost_usd, 0)), 0) FROM {table} {where}"
                ).fetchone()
                tokens += t
                cost += c
        return int(tokens), float(cost)

    def summary(self) -> StoreSummary:
        by_status: dict[str, int] = {}
        for _, a in self.results():
            key = a.status.value if a else "pending"
            by_status[key] = by_status.get(key, 0) + 1
        with self._lock:
            rows = self._conn.execute(
                f"SELECT status, usage_json, cost_usd, "
                f"{'stages_json' if self.schema_version >= 2 else 'NULL AS stages_json'} "
                f"FROM attempts"
            ).fetchall()
            stage_rows = (
                self._conn.execute("SELECT status, usage_json, cost_usd FROM stage_calls").fetchall()
                if self.schema_version >= 2
                else []
            )
        attempts_by_status: dict[str, int] = {}
        stages_by_status: dict[str, int] = {}
        usage = Usage()
        cost = 0.0
        for r in rows:
            attempts_by_status[r["status"]] = attempts_by_status.get(r["status"], 0) + 1
            if r["stages_json"] is not None:
                continue  # a composite's attempt: its spend is its stage calls'
            if r["usage_json"]:
                usage = usage + Usage.model_validate_json(r["usage_json"])
            cost += r["cost_usd"] or 0.0
        for r in stage_rows:
            stages_by_status[r["status"]] = stages_by_status.get(r["status"], 0) + 1
            if r["usage_json"]:
                usage = usage + Usage.model_validate_json(r["usage_json"])
            cost += r["cost_usd"] or 0.0
        return StoreSummary(
            trials=sum(by_status.values()),
            by_status=by_status,
            attempts=len(rows),
            attempts_by_status=attempts_by_status,
            usage=usage,
            cost_usd=cost,
            stage_calls=len(stage_rows),
            stage_calls_by_status=stages_by_status,
        )

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
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
