"""Writing a run store: every attempt and every stage call, appended and committed the moment it ends.

``RunStore(run_dir)`` is the one writer of ``run_dir/store.sqlite`` (``store/schema.py``: its tables) and of its
audit log ``run_dir/attempts.jsonl`` (``store/sync.py``: kept in step on open, the database rebuilt from it when
lost); it reads as any ``StoreReader`` does. One writer process, one connection, writes serialised by a lock
(safe from an asyncio loop and its worker threads); readers in other processes open ``StoreReader`` meanwhile.

What invalidates an entry: nothing. Rows are keyed by the trial id, a sha256 of the trial's canonical JSON
(sample id, video sha256, condition, model spec with its generation settings), so a changed prompt, video or
setting is a *different* trial with a new id, never a stale hit. Rows are never updated or deleted; a retry is
a new attempt row.

Composite models: a trial of a composite model has, as any trial, one ``attempts`` row per attempt (its status,
final response and frames sent), whose ``stages_json`` lists the stages it used (call key, status, and whether
it was a cache hit); each call a stage actually made is a ``stage_calls`` row (trial id, stage, attempt number
per (trial, stage), the trial attempt it was made for, its content key, sub-model, sub-request fingerprint,
status, error, text, usage, cost, latency, finish reason, model version, start and end). An ok stage call is
found again by its content key (``ok_stage_call``) and never repeated. Spend (``summary``) counts each call
once: plain attempts and stage calls, never a composite attempt's summed usage.

Text is lossless. Any Python ``str`` is stored: one that UTF-8 can encode (NULs included) as TEXT; one holding
a lone surrogate (e.g. ``"\\ud800"`` from a model's JSON body) as a BLOB of its ``surrogatepass`` UTF-8 bytes
(WTF-8), decoded back on read, so that it reads back equal (``store/records.py``). The audit log escapes such
a line as ASCII JSON.

Durability: ``journal_mode=WAL`` with ``synchronous=FULL`` (the WAL copied back into the database every
``WAL_CHECKPOINT_PAGES``). In WAL mode a committed transaction already survives a SIGKILL of this process with
``synchronous=NORMAL`` (the WAL pages are in the OS cache); FULL adds an fsync of the WAL on every commit so
that it also survives an OS crash or power loss. Attempts are committed one by one, or in commit groups
(``grouped``: the executor's hot path, one transaction and one log fsync per group); an attempt is stored once
its group is committed, so a SIGKILL loses the calls in flight and the group not yet committed, which were
never stored and are re-run on resume (docs/reliability.md states the guarantees). The database is committed
before the log lines are written; on reopen the writer cuts a torn log line and re-appends whatever the log
lacks. Every write is one transaction that is rolled back on any exception, so a failed write never leaves
the connection inside a transaction.

Schema versions: a schema-1 store (an earlier release) is refused for writing with what to do
(``schema.old_schema_message``); ``RunStore.upgrade`` migrates one in place.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vidaudit.core.errors import DataError
from vidaudit.core.types import Attempt, Status, Trial
from vidaudit.run import log_lines
from vidaudit.run.audit_log import AuditLog, encode_line
from vidaudit.run.log_lines import attempt_line
from vidaudit.run.secrets import check_no_secrets, env_secrets, redact_model_output
from vidaudit.run.store.reader import StoreReader
from vidaudit.run.store.records import (
    KeyedTrial,
    StageCallRecord,
    StageRef,
    TrialDraft,
    attempt_row,
    enc,
    keyed_of,
    log_attempt,
    log_keyed_trial,
    log_stage_call,
    ok_record,
    stage_row,
    trial_row,
)
from vidaudit.run.store.schema import (
    DB_NAME,
    INSERT_ATTEMPT,
    INSERT_STAGE,
    INSERT_TRIAL,
    SCHEMA,
    SCHEMA_VERSION,
    WAL_CHECKPOINT_PAGES,
    fsync_dir,
    old_schema_message,
    schema_version,
    write_new_db,
)
from vidaudit.run.store.sync import RebuildReport, Recovery, has_records, open_log, rebuild_from_log


class _SomeStored(Exception):
    """Some trials of a registration were stored already (rolls its transaction back)."""


class RunStore(StoreReader):
    """The writer of a run store: trials, attempts and stage calls into SQLite, plus the fsync'd audit log."""

    def __init__(self, run_dir: str | Path) -> None:
        self._paths(run_dir)
        self._pending_lock = threading.Lock()
        self._pending: list[tuple[Attempt, tuple[Any, ...], dict[str, Any] | bytes]] = []
        #: attempts' log lines written by ``log_lines`` (off if the first disagrees with the generic line)
        self._fast_lines = log_lines.ENABLED
        self._fast_checked = False
        #: attempts' rows and lines written whole by ``records.ok_record`` (its first checked as ``_fast_checked``)
        self._fused_checked = False
        self._pending_since = 0.0
        #: the last trial's ``created_at`` (``register_trials``: strictly increasing)
        self._created = 0.0
        self._group: tuple[int, float] = (1, 0.0)
        #: attempts this object has committed (a caller compares it with what it appended)
        self.committed = 0
        self._secrets: dict[str, str] | None = None
        self._log: AuditLog | None = None
        self.recovery = Recovery()
        rebuilt: RebuildReport | None = None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if not self.db_path.exists() and has_records(self.log_path):
            rebuilt = rebuild_from_log(self.run_dir)  # never start fresh beside a log of paid calls
        self._open(sqlite3.connect(self.db_path, check_same_thread=False, isolation_level=None, timeout=30))
        if rebuilt is not None:
            self.recovery = dataclasses.replace(self.recovery, rebuilt=rebuilt)

    # ------------------------------------------------------------------ setup

    def _init(self) -> None:
        c = self._conn
        version = schema_version(c)
        if version is not None and version != SCHEMA_VERSION:  # checked before anything is written
            raise DataError(old_schema_message(self.db_path, version))
        mode = c.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise DataError(
                f"{self.db_path}: SQLite refused WAL mode (got {mode!r}); use a local filesystem "
                f"for the run dir (network filesystems do not support WAL)"
            )
        c.execute("PRAGMA synchronous=FULL")
        c.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        c.executescript(SCHEMA)
        c.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        if schema_version(c) != SCHEMA_VERSION:
            raise DataError(old_schema_message(self.db_path, schema_version(c)))
        self._log, self.recovery = open_log(c, self.log_path)

    def _settle(self) -> None:
        self.flush()

    def _pending_attempts(self) -> list[Attempt]:
        with self._pending_lock:
            return [a for a, _, _ in self._pending]

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on ANY exception (call with the lock held)."""
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            yield c
            c.execute("COMMIT")
        except BaseException:
            if c.in_transaction:
                c.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ writes

    def register_trials(self, trials: Iterable[Trial | KeyedTrial | TrialDraft]) -> int:
        """Record trials (idempotent); returns how many were new. New trials get a line in the audit log.

        A ``KeyedTrial`` (what the plan makes) is not serialised again, and a ``TrialDraft`` that gives its row is
        stored from its strings (its trial is built only to check it for secrets). Trials already stored cost one
        indexed lookup each, so registering a resumed plan in chunks is cheap. The rows go in with one
        ``executemany``; only when some were already stored are they inserted one by one, to know which.
        ``created_at`` increases strictly from row to row (``trial_rows()`` lists trials in registration order,
        ties by id: two rows made within the clock's resolution get the next representable time)."""
        secrets = env_secrets()
        todo: list[tuple[KeyedTrial | TrialDraft, float, tuple[Any, ...]]] = []
        last = self._created
        for t in trials:
            if type(t) is TrialDraft and t.json is not None and not secrets:
                k: KeyedTrial | TrialDraft = t
            else:
                k = keyed_of(t.make() if type(t) is TrialDraft else t)  # type: ignore[arg-type]
                if secrets:
                    check_no_secrets(k.data, f"trial {k.id}", secrets=secrets)
            created = time.time()
            if created <= last:
                created = math.nextafter(last, math.inf)
            last = created
            todo.append((k, created, trial_row(k, created)))
        self._created = last
        self.flush()  # the log keeps the order records were made in
        with self._lock:
            try:
                with self._transaction() as c:
                    if c.executemany(INSERT_TRIAL, [row for _, _, row in todo]).rowcount != len(todo):
                        raise _SomeStored  # rolled back: insert them one by one to know which are new
                added = todo
            except _SomeStored:
                with self._transaction() as c:
                    added = [x for x in todo if c.execute(INSERT_TRIAL, x[2]).rowcount == 1]
            assert self._log is not None
            self._log.append_many([log_keyed_trial(k, created) for k, created, _ in added])
        return len(added)

    # Group commits. By default every ``append`` is its own committed transaction and log fsync. Inside
    # ``grouped(rows, delay_s)`` (the executor's hot path) an ended attempt is validated, redacted and
    # encoded at once but committed with the others of its window: by ``flush``, which the caller runs
    # when ``flush_due()`` (``rows`` pending, or the oldest pending for ``delay_s``) and at the end. An
    # attempt counts as stored once its group is committed and fsync'd to the log; one still pending when
    # the process dies was never stored and its trial is run again on resume (docs/reliability.md).

    @contextmanager
    def grouped(self, rows: int, delay_s: float) -> Iterator[RunStore]:
        """Commit appended attempts in groups of up to ``rows`` or ``delay_s`` (see above); flushes on exit."""
        if rows < 1 or delay_s < 0:
            raise ValueError("a commit group needs rows >= 1 and delay_s >= 0")
        before = self._group
        self._group = (rows, delay_s)
        try:
            yield self
        finally:
            self._group = before
            self.flush()

    @property
    def pending(self) -> int:
        """Appended attempts not yet committed (always 0 outside ``grouped``)."""
        return len(self._pending)

    def flush_due(self) -> bool:
        if not self._pending:
            return False
        rows, delay = self._group
        return len(self._pending) >= rows or time.monotonic() - self._pending_since >= delay

    def append(self, attempt: Attempt, *, stages: Sequence[StageRef] | None = None) -> None:
        """Store one ended attempt: committed, then fsync'd to the audit log (at once, or with its group).

        ``stages``: for a composite model's attempt, the stages it used (its own usage is then not
        counted as spend: its stage calls are).
        """
        secrets = self._group_secrets()
        line: dict[str, Any] | bytes | None = None
        row: tuple[Any, ...] | None = None
        if secrets:
            attempt = redact_model_output(attempt)
        elif stages is None and self._fast_lines:
            fused = ok_record(attempt)
            if fused is not None and not self._fused_checked:  # the store's first, against the generic way
                self._fused_checked = True
                if fused != (attempt_row(attempt), encode_line(log_attempt(attempt, None))):
                    self._fast_lines, fused = False, None
            if fused is not None:
                row, line = fused
            elif self._fast_lines:
                line = self._fast_line(attempt)
        if line is None:
            line = log_attempt(attempt, stages)
        if secrets:
            assert isinstance(line, dict)  # with secrets every line is the generic dict, checked here
            check_no_secrets(line["attempt"], f"attempt {attempt.attempt} of trial {attempt.trial_id}", secrets=secrets)
        if attempt.status is Status.OK and attempt.response is None:
            raise DataError(
                f"attempt {attempt.attempt} of trial {attempt.trial_id} is ok but has no response; "
                f"an ok attempt must carry the response it got"
            )
        record = (attempt, attempt_row(attempt, stages) if row is None else row, line)
        with self._pending_lock:
            if not self._pending:
                self._pending_since = time.monotonic()
            self._pending.append(record)
        if self._group[0] <= 1:
            self.flush()

    def _fast_line(self, attempt: Attempt) -> bytes | None:
        """The attempt's log line written by ``log_lines`` (None: the generic way); the store's first is
        checked against the generic line, and a difference turns the fast lines off for this store."""
        fast = attempt_line(attempt)
        if fast is not None and not self._fast_checked:
            self._fast_checked = True
            if fast != encode_line(log_attempt(attempt, None)):
                self._fast_lines = False
                return None
        return fast

    def _group_secrets(self) -> dict[str, str]:
        """``env_secrets()``, read when a commit group opens (at most ``delay_s`` before its attempts are
        written; at every append outside ``grouped``)."""
        if self._group[0] <= 1 or not self._pending or self._secrets is None:
            self._secrets = env_secrets()
        return self._secrets

    def flush(self) -> int:
        """Commit every pending attempt in one transaction, then fsync their log lines once; returns how many.

        On a failure nothing of the group is stored unless it is one attempt's own fault (a duplicate, an
        unknown trial): then the others are stored one by one and that attempt's error is raised."""
        if not self._pending:
            return 0
        with self._lock:
            with self._pending_lock:
                batch, self._pending = self._pending, []
            if not batch:
                return 0
            try:
                with self._transaction() as c:
                    c.executemany(INSERT_ATTEMPT, [row for _, row, _ in batch])
            except sqlite3.IntegrityError:
                return self._store_one_by_one(batch)
            self.committed += len(batch)
            assert self._log is not None
            self._log.append_many([line for _, _, line in batch])
        return len(batch)

    def _store_one_by_one(self, batch: list[tuple[Attempt, tuple[Any, ...], dict[str, Any] | bytes]]) -> int:
        """A group with a bad attempt: store the good ones in order, raise the first bad one's error (lock held)."""
        assert self._log is not None
        first: DataError | None = None
        stored = 0
        for attempt, row, line in batch:
            try:
                with self._transaction() as c:
                    c.execute(INSERT_ATTEMPT, row)
            except sqlite3.IntegrityError as e:
                if first is None:
                    first = self._integrity_error(attempt, e)
                continue
            self.committed += 1
            self._log.append(line)
            stored += 1
        if first is not None:
            raise first
        return stored

    def _integrity_error(self, attempt: Attempt, e: sqlite3.IntegrityError) -> DataError:
        if "UNIQUE" in str(e):
            err = DataError(
                f"attempt {attempt.attempt} of trial {attempt.trial_id} is already stored; "
                f"attempts are append-only, number the next one {self._count(attempt.trial_id) + 1}"
            )
        else:
            err = DataError(f"attempt for unknown trial {attempt.trial_id}; call register_trials first")
        err.__cause__ = e
        return err

    def append_stage_call(self, call: StageCallRecord) -> StageCallRecord:
        """Store one ended stage call (numbering it when ``attempt`` is 0), then fsync it to the log."""
        call = redact_model_output(call)
        check_no_secrets(call.model_dump(mode="json"), f"stage {call.stage!r} call of trial {call.trial_id}")
        if call.status is Status.OK and call.response is None:
            raise DataError(f"stage {call.stage!r} call of trial {call.trial_id} is ok but has no response")
        self.flush()  # the log keeps the order records were made in
        with self._lock:
            try:
                with self._transaction() as c:
                    if call.attempt == 0:
                        n = c.execute(
                            "SELECT COALESCE(MAX(attempt), 0) + 1 FROM stage_calls WHERE trial_id=? AND stage=?",
                            (call.trial_id, enc(call.stage)),
                        ).fetchone()[0]
                        call = call.model_copy(update={"attempt": int(n)})
                    c.execute(INSERT_STAGE, stage_row(call))
            except sqlite3.IntegrityError as e:
                if "UNIQUE" in str(e):
                    raise DataError(
                        f"stage {call.stage!r} call {call.attempt} of trial {call.trial_id} is already "
                        f"stored; stage calls are append-only"
                    ) from e
                raise DataError(f"stage call for unknown trial {call.trial_id}; call register_trials first") from e
            assert self._log is not None
            self._log.append(log_stage_call(call))
        return call

    # ------------------------------------------------------------------ migration

    @staticmethod
    def upgrade(run_dir: str | Path) -> RebuildReport:
        """Upgrade a schema-1 store in place to schema 2; the old file is kept as ``store.sqlite.v1``.

        Its trials and attempts are copied exactly (every schema-1 attempt is a plain call), and the
        audit log gets the trial lines a schema-1 log lacks, so that it can rebuild the store later.
        """
        run_dir = Path(run_dir)
        db = run_dir / DB_NAME
        old = db.with_name(DB_NAME + ".v1")
        if old.exists():
            raise DataError(f"{old} exists: an earlier upgrade was interrupted or done; move it aside first")
        with StoreReader(run_dir) as src:
            if src.schema_version != 1:
                raise DataError(f"{db} has schema {src.schema_version}; only a schema-1 store is upgraded")
            trial_rows = src.trial_rows()
            attempts = [a for a, _ in src.all_attempts()]
        con = sqlite3.connect(db, isolation_level=None)  # fold the WAL in so the file alone is complete
        try:
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.execute("PRAGMA journal_mode=DELETE")
        finally:
            con.close()
        os.replace(db, old)
        fsync_dir(run_dir)
        write_new_db(
            db,
            trials=[(r.trial, r.created_at) for r in trial_rows],
            attempts=[(a, None) for a in attempts],
            stage_calls=[],
        )
        with RunStore(run_dir) as store:  # re-appends the trial lines the schema-1 log lacks
            trials_added = len(store.recovery.reappended_trials)
        return RebuildReport(
            trials=len(trial_rows),
            attempts=len(attempts),
            stage_calls=0,
            moved_aside=[old.name] + ([f"{trials_added} trial lines appended to the log"] if trials_added else []),
        )

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._lock:
                if self._log is not None:
                    self._log.close()
                    self._log = None
            super().close()
