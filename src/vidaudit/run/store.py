"""The run store: every attempt and every stage call, appended and committed the moment it ends.

``run_dir/store.sqlite`` (SQLite in WAL mode) holds three tables, ``trials``, ``attempts`` and
``stage_calls``; ``run_dir/attempts.jsonl`` is an fsync'd append-only audit log of the same records
(see ``vidaudit.run.audit_log``): a line per registered trial, per attempt and per stage call, enough
to rebuild the database from the log alone (``rebuild_from_log``).

What invalidates an entry: nothing. Rows are keyed by the trial id, a sha256 of the trial's
canonical JSON (sample id, video sha256, condition, model spec with its generation settings), so a
changed prompt, video or setting is a *different* trial with a new id, never a stale hit. Rows are
never updated or deleted; a retry is a new attempt row.

Composite models: a trial of a composite model has, as any trial, one ``attempts`` row per attempt
(its status, final response and frames sent), whose ``stages_json`` lists the stages it used (call
key, status, and whether it was a cache hit); each call a stage actually made is a ``stage_calls``
row (trial id, stage, attempt number per (trial, stage), the trial attempt it was made for, its
content key, sub-model, sub-request fingerprint, status, error, text, usage, cost, latency, finish
reason, model version, start and end). An ok stage call is found again by its content key
(``ok_stage_call``) and never repeated. Spend (``summary``) counts each call once: plain attempts and
stage calls, never a composite attempt's summed usage.

Text is lossless. Any Python ``str`` is stored: one that UTF-8 can encode (NULs included) as TEXT;
one holding a lone surrogate (e.g. ``"\\ud800"`` from a model's JSON body) as a BLOB of its
``surrogatepass`` UTF-8 bytes (WTF-8), decoded back on read, so that it reads back equal. The audit
log escapes such a line as ASCII JSON.

Durability: ``journal_mode=WAL`` with ``synchronous=FULL`` (the WAL copied back into the database every
``WAL_CHECKPOINT_PAGES``). In WAL mode a committed transaction already survives a SIGKILL of this
process with ``synchronous=NORMAL`` (the WAL pages are in the OS cache); FULL adds an fsync of the WAL
on every commit so that it also survives an OS crash or power loss. Attempts are committed one by one,
or in commit groups (``grouped``: the executor's hot path, one transaction and one log fsync per
group); an attempt is stored once its group is committed, so a SIGKILL loses the calls in flight and
the group not yet committed, which were never stored and are re-run on resume (docs/reliability.md
states the guarantees). The database is committed before the log lines are written; on reopen the
writer cuts a torn log line and re-appends whatever the log lacks. Every write is one transaction that
is rolled back on any exception, so a failed write never leaves the connection inside a transaction.

Losing the database: a writer opening a run dir whose ``attempts.jsonl`` has records but whose
``store.sqlite`` is missing never starts fresh: it rebuilds the database from the log first (built
aside and renamed into place, so a crash mid-rebuild leaves no half store) and reports it in
``recovery.rebuilt``; a reader refuses with a message naming the rebuild.

Schema versions: this vidaudit writes schema 2. A schema-1 store (an earlier release: no stage
calls, no trial lines in its log) opens read-only, so old runs can still be reported; opening one
for writing is a ``DataError`` saying what to do (report it, start a new run dir, or ``upgrade``).

Concurrency: one writer process, one connection, writes serialised by a lock (safe from an asyncio
loop and its worker threads); any number of reader processes may open the store with
``readonly=True`` while it is being written.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vidaudit.core.errors import DataError
from vidaudit.core.hashing import canonical_json, sha256_text
from vidaudit.core.types import Attempt, ErrorKind, ModelSpec, Response, Status, Trial, Usage
from vidaudit.run import log_lines
from vidaudit.run.audit_log import (
    LOG_NAME,
    AuditLog,
    AuditLogRead,
    AuditLogScan,
    encode_line,
    read_audit_log,
    scan_audit_log,
)
from vidaudit.run.log_lines import attempt_line, frames_json, trial_line
from vidaudit.run.secrets import check_no_secrets, env_secrets, redact_model_output
from vidaudit.run.stage_calls import StageCallRecord, StageRef

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
""" + _OUTCOME_COLUMNS + """    frame_indices TEXT NOT NULL,
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
""" + _OUTCOME_COLUMNS + """    started_at    REAL NOT NULL,
    ended_at      REAL NOT NULL,
    response_extra TEXT,
    UNIQUE (trial_id, stage, attempt)
);
CREATE INDEX IF NOT EXISTS stage_calls_key ON stage_calls(call_key, status);
"""

_ATTEMPT_COLS = ("trial_id, attempt, status, error_kind, error_message, text, usage_json, cost_usd, latency_s, "
                 "finish_reason, model_version, frame_indices, frame_times, started_at, ended_at, stages_json, "
                 "response_extra")
_ATTEMPT_COLS_V1 = _ATTEMPT_COLS.replace(", stages_json, response_extra",
                                         ", NULL AS stages_json, NULL AS response_extra")
_STAGE_COLS = ("trial_id, stage, attempt, trial_attempt, call_key, model_json, request_json, status, error_kind, "
               "error_message, text, usage_json, cost_usd, latency_s, finish_reason, model_version, started_at, "
               "ended_at, response_extra")
_INSERT_ATTEMPT = f"INSERT INTO attempts({_ATTEMPT_COLS}) VALUES ({', '.join('?' * 17)})"
_INSERT_STAGE = f"INSERT INTO stage_calls({_STAGE_COLS}) VALUES ({', '.join('?' * 19)})"
_INSERT_TRIAL = ("INSERT OR IGNORE INTO trials(trial_id, sample_id, model, condition_id, trial_json, created_at) "
                 "VALUES (?, ?, ?, ?, ?, ?)")


# --------------------------------------------------------------------------- lossless text


def _enc(s: str | None) -> str | bytes | None:
    """A str as SQLite can hold it losslessly: itself, or (lone surrogates) a BLOB of its WTF-8 bytes."""
    if s is None or s.isascii():
        return s
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass")
    return s


def _dec(v: str | bytes | None) -> str | None:
    """The inverse of ``_enc``."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogatepass")
    return v


def _json_col(obj: Any) -> str | bytes:
    return _enc(canonical_json(obj))  # type: ignore[return-value]


def _from_json_col(v: str | bytes) -> Any:
    return json.loads(_dec(v))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- rows


class KeyedTrial:
    """A trial with its JSON form and id, computed once: the id is the sha256 of exactly the canonical JSON
    that ``trials.trial_json`` stores, so the plan, the executor and the store never hash a trial twice.

    The plan makes one per trial and registering it needs only its id, its JSON, its log JSON and its row's
    labels (``head``), so the ``Trial`` and its ``data`` may be given as ``build``, called on first use."""

    __slots__ = ("json", "id", "log", "head", "_trial", "_data", "_build")

    def __init__(self, trial: Trial | None, data: dict[str, Any] | None, json: str, id: str,
                 log: str | None = None, *, head: tuple[str, str, str] | None = None,
                 build: Callable[[], tuple[Trial, dict[str, Any]]] | None = None) -> None:
        if (trial is None or data is None) and build is None:
            raise ValueError("a KeyedTrial needs its trial and data, or a build() that makes them")
        self.json = json
        self.id = id
        #: ``data`` as the audit log's trial line holds it (``audit_log.line_json``), when the plan wrote it already
        self.log = log
        #: (sample id, model label, condition id): the trial's row labels, when the plan has them already
        self.head = head
        self._trial, self._data, self._build = trial, data, build

    def _built(self) -> None:
        assert self._build is not None
        self._trial, self._data = self._build()
        self._build = None

    @property
    def trial(self) -> Trial:
        if self._trial is None:
            self._built()
        return self._trial  # type: ignore[return-value]

    @property
    def data(self) -> dict[str, Any]:
        """The trial as JSON data (``trial.model_dump(mode="json")``)."""
        if self._data is None:
            self._built()
        return self._data  # type: ignore[return-value]

    @classmethod
    def of(cls, trial: Trial) -> KeyedTrial:
        data = trial.model_dump(mode="json")
        text = canonical_json(data)
        return cls(trial, data, text, sha256_text(text))


@dataclass(frozen=True, slots=True)
class TrialStatus:
    """What the store holds of one trial: its attempts and whether one is ok."""

    attempts: int = 0
    ok: bool = False


#: trial ids per ``IN (...)`` lookup (well under SQLite's 32,766 host parameters)
LOOKUP_CHUNK = 500


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


@dataclass(frozen=True)
class RebuildReport:
    """What ``rebuild_from_log`` restored."""

    trials: int
    attempts: int
    stage_calls: int
    duplicates: int = 0            # identical lines seen twice (kept once)
    torn_tail_bytes: int = 0
    moved_aside: list[str] = field(default_factory=list)   # stale -wal/-shm files renamed *.stale


@dataclass(frozen=True)
class Recovery:
    """What opening the store for writing repaired: the audit log's tail, lines it lacked, a lost database."""

    torn_tail_bytes: int = 0
    reappended: list[tuple[str, int]] = field(default_factory=list)            # attempts
    reappended_trials: list[str] = field(default_factory=list)
    reappended_stage_calls: list[tuple[str, str, int]] = field(default_factory=list)
    rebuilt: RebuildReport | None = None

    @property
    def clean(self) -> bool:
        return not (self.torn_tail_bytes or self.reappended or self.reappended_trials
                    or self.reappended_stage_calls or self.rebuilt)


#: the last ``Usage`` stored and its JSON (as ``log_lines._usage``: responses that report none share one)
_last_usage: tuple[Usage | None, str] = (None, "")


def _usage_json(u: Usage) -> str:
    global _last_usage
    last = _last_usage
    if u is last[0]:
        return last[1]
    text = u.model_dump_json()
    _last_usage = (u, text)
    return text


def _response_cols(r: Response | None) -> tuple[Any, ...]:
    if r is None:
        return None, None, None, None, None, None
    return (_enc(r.text), _usage_json(r.usage), r.cost_usd, r.latency_s, _enc(r.finish_reason), _enc(r.model_version))


def _response_extra(r: Response | None) -> str | None:
    """What a Response carries beyond its columns: the frames the service used, and whether they are estimates."""
    if r is None or (r.frames_sent is None and not r.frames_estimated):
        return None
    return json.dumps({"frames_sent": list(r.frames_sent) if r.frames_sent is not None else None,
                       "frames_estimated": r.frames_estimated})


def _response_from(row: sqlite3.Row) -> Response | None:
    if row["text"] is None:
        return None
    extra = json.loads(row["response_extra"]) if row["response_extra"] else {}
    sent = extra.get("frames_sent")
    return Response(text=_dec(row["text"]), usage=Usage.model_validate_json(row["usage_json"] or "{}"),
                    latency_s=row["latency_s"] or 0.0, finish_reason=_dec(row["finish_reason"]),
                    model_version=_dec(row["model_version"]), cost_usd=row["cost_usd"],
                    frames_sent=tuple(sent) if sent is not None else None,
                    frames_estimated=bool(extra.get("frames_estimated", False)))


def _stages_json(stages: Sequence[StageRef] | None) -> str | bytes | None:
    return None if stages is None else _json_col([s.model_dump(mode="json") for s in stages])


def _attempt_row(a: Attempt, stages: Sequence[StageRef] | None = None) -> tuple[Any, ...]:
    return (a.trial_id, a.attempt, a.status.value, a.error_kind.value if a.error_kind else None,
            _enc(a.error_message), *_response_cols(a.response),
            frames_json(a.frame_indices) or json.dumps(list(a.frame_indices)),
            frames_json(a.frame_times) or json.dumps(list(a.frame_times)), a.started_at, a.ended_at,
            _stages_json(stages), _response_extra(a.response))


def _attempt_from_row(row: sqlite3.Row) -> Attempt:
    return Attempt(trial_id=row["trial_id"], attempt=row["attempt"], status=Status(row["status"]),
                   error_kind=ErrorKind(row["error_kind"]) if row["error_kind"] else None,
                   error_message=_dec(row["error_message"]), response=_response_from(row),
                   frame_indices=tuple(json.loads(row["frame_indices"])),
                   frame_times=tuple(json.loads(row["frame_times"])),
                   started_at=row["started_at"], ended_at=row["ended_at"])


def _stages_from_row(row: sqlite3.Row) -> list[StageRef] | None:
    v = row["stages_json"]
    return None if v is None else [StageRef.model_validate(s) for s in _from_json_col(v)]


def _stage_row(s: StageCallRecord) -> tuple[Any, ...]:
    return (s.trial_id, _enc(s.stage), s.attempt, s.trial_attempt, _enc(s.call_key),
            _json_col(s.model.model_dump(mode="json")),
            _json_col(s.request), s.status.value, s.error_kind.value if s.error_kind else None, _enc(s.error_message),
            *_response_cols(s.response), s.started_at, s.ended_at, _response_extra(s.response))


def _stage_from_row(row: sqlite3.Row) -> StageCallRecord:
    return StageCallRecord(trial_id=row["trial_id"], stage=_dec(row["stage"]), attempt=row["attempt"],
                           trial_attempt=row["trial_attempt"], call_key=_dec(row["call_key"]),
                           model=ModelSpec.model_validate(_from_json_col(row["model_json"])),
                           request=_from_json_col(row["request_json"]), status=Status(row["status"]),
                           error_kind=ErrorKind(row["error_kind"]) if row["error_kind"] else None,
                           error_message=_dec(row["error_message"]), response=_response_from(row),
                           started_at=row["started_at"], ended_at=row["ended_at"])


class _SomeStored(Exception):
    """Some trials of a registration were stored already (rolls its transaction back)."""


def _trial_log_line(k: KeyedTrial, created_at: float) -> dict[str, Any] | bytes:
    """A new trial's log line: spliced from its log JSON when the plan made it, else the generic dict."""
    fast = trial_line(k.log, k.id, created_at) if k.log is not None else None
    return fast or {"trial": k.data, "trial_id": k.id, "created_at": created_at}


def _trial_line(t: Trial, created_at: float) -> dict[str, Any]:
    return {"trial": t.model_dump(mode="json"), "trial_id": t.id, "created_at": created_at}


def _attempt_line(a: Attempt, stages: Sequence[StageRef] | None) -> dict[str, Any]:
    line: dict[str, Any] = {"attempt": a.model_dump(mode="json")}
    if stages is not None:
        line["stages"] = [s.model_dump(mode="json") for s in stages]
    return line


def _stage_line(s: StageCallRecord) -> dict[str, Any]:
    return {"stage_call": s.model_dump(mode="json")}


def _trial_row(k: KeyedTrial, created_at: float) -> tuple[Any, ...]:
    if k.head is not None:
        sample_id, model, condition = k.head
    else:
        t = k.trial
        sample_id, model, condition = t.sample_id, t.model.label, t.condition.id
    return (k.id, _enc(sample_id), _enc(model), _enc(condition), _enc(k.json), created_at)


def _schema_version(conn: sqlite3.Connection) -> int | None:
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


def _has_records(log_path: Path) -> bool:
    """Whether the audit log holds at least one complete record (a lone torn line is nothing to keep)."""
    return log_path.is_file() and log_path.stat().st_size > 0 and bool(read_audit_log(log_path).rows)


class RunStore:
    """SQLite store of trials, attempts and stage calls, plus the fsync'd audit log, in ``run_dir``."""

    def __init__(self, run_dir: str | Path, *, readonly: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.readonly = readonly
        self.db_path = self.run_dir / DB_NAME
        self.log_path = self.run_dir / LOG_NAME
        self._lock = threading.Lock()
        self._pending_lock = threading.Lock()
        self._pending: list[tuple[Attempt, tuple[Any, ...], dict[str, Any] | bytes]] = []
        #: attempts' log lines written by ``log_lines`` (off if the first disagrees with the generic line)
        self._fast_lines = log_lines.ENABLED
        self._fast_checked = False
        self._pending_since = 0.0
        self._group: tuple[int, float] = (1, 0.0)
        #: attempts this object has committed (a caller compares it with what it appended)
        self.committed = 0
        self._secrets: dict[str, str] | None = None
        self._log: AuditLog | None = None
        self.recovery = Recovery()
        self.schema_version = SCHEMA_VERSION
        rebuilt: RebuildReport | None = None
        if readonly:
            if not self.db_path.is_file():
                if _has_records(self.log_path):
                    raise DataError(f"no run store at {self.db_path}, but its audit log {self.log_path} is there: "
                                    f"open the run for writing (`vidaudit run --resume {self.run_dir}`) to rebuild "
                                    f"the store from the log, or call RunStore.rebuild_from_log")
                raise DataError(f"no run store at {self.db_path}; run `vidaudit run` first or check the path")
            self._conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, check_same_thread=False,
                                         isolation_level=None)
        else:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            if not self.db_path.exists() and _has_records(self.log_path):
                rebuilt = self.rebuild_from_log(self.run_dir)  # never start fresh beside a log of paid calls
            self._conn = sqlite3.connect(self.db_path, check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.row_factory = sqlite3.Row
        try:
            self._init()
        except sqlite3.DatabaseError as e:
            self._conn.close()
            raise DataError(f"{self.db_path} is not a readable vidaudit store ({e}); point at a run dir "
                            f"made by vidaudit or start a new one") from e
        except BaseException:
            self._conn.close()
            raise
        if rebuilt is not None:
            self.recovery = dataclasses.replace(self.recovery, rebuilt=rebuilt)

    # ------------------------------------------------------------------ setup

    def _init(self) -> None:
        c = self._conn
        c.execute("PRAGMA foreign_keys=ON")
        c.execute("PRAGMA busy_timeout=30000")
        version = _schema_version(c)
        if self.readonly:
            if version not in READABLE_SCHEMAS:
                raise DataError(f"{self.db_path}: store schema {version!r}, this vidaudit reads "
                                f"{', '.join(map(str, READABLE_SCHEMAS))}; use the vidaudit version that wrote it")
            self.schema_version = int(version)
            return
        if version is not None and version != SCHEMA_VERSION:  # checked before anything is written
            raise DataError(self._old_schema_message(version))
        mode = c.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise DataError(f"{self.db_path}: SQLite refused WAL mode (got {mode!r}); use a local filesystem "
                            f"for the run dir (network filesystems do not support WAL)")
        c.execute("PRAGMA synchronous=FULL")
        c.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        c.executescript(_SCHEMA)
        c.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        if _schema_version(c) != SCHEMA_VERSION:
            raise DataError(self._old_schema_message(_schema_version(c)))
        self._open_log()

    def _old_schema_message(self, version: int | None) -> str:
        run = self.run_dir
        if version == 1:
            return (f"{self.db_path} is a schema-1 run store (made by an earlier vidaudit release); this vidaudit "
                    f"writes schema 2 (composite models' stage calls) and will not write into it. It can still be "
                    f"read: report it read-only with `vidaudit report {run}`. To run more trials, start a new run "
                    f"dir (`--out NEW_DIR`), or upgrade this one in place with RunStore.upgrade({str(run)!r}) "
                    f"(keeps the old file as {DB_NAME}.v1). Rebuilding from the audit log does not apply: a "
                    f"schema-1 log has no trial lines")
        return (f"{self.db_path}: store schema {version!r}, this vidaudit writes {SCHEMA_VERSION}; use the vidaudit "
                f"version that wrote it, or a new run dir")

    def _open_log(self) -> None:
        """Open the audit log for appending, cutting a torn tail and re-appending what it lacks.

        The log is first scanned without parsing (``scan_audit_log``): when it has as many lines of each
        kind as the database has rows and its last line of each kind is the database's last row, it lacks
        nothing and is not read (a resume of a large run costs a pass over its bytes, not a parse of every
        line). Otherwise it is read in full and compared key by key."""
        scan = scan_audit_log(self.log_path)
        if scan.torn_tail is None and not scan.unknown and self._log_agrees(scan):
            self._log = AuditLog(self.log_path)
            return
        read = read_audit_log(self.log_path)
        self._log = AuditLog(self.log_path)
        self._log.cut_torn_tail(read)
        trials, attempts, stages = self._missing_from(read)
        lines = ([{**_trial_line(t, ts), "recovered": True} for t, ts in trials]
                 + [{**_stage_line(s), "recovered": True} for s in stages]
                 + [{**_attempt_line(a, st), "recovered": True} for a, st in attempts])
        self._log.append_many(lines)
        self.recovery = Recovery(torn_tail_bytes=len(read.torn_tail or b""),
                                 reappended=[(a.trial_id, a.attempt) for a, _ in attempts],
                                 reappended_trials=[t.id for t, _ in trials],
                                 reappended_stage_calls=[(s.trial_id, s.stage, s.attempt) for s in stages])

    def _log_agrees(self, scan: AuditLogScan) -> bool:
        """Whether the scanned log has a line for each row of the database (counts and last keys agree)."""
        c = self._conn
        tables = (("trial", "trials", "trial_id"), ("attempt", "attempts", "trial_id, attempt"),
                  ("stage_call", "stage_calls", "trial_id, stage, attempt"))
        for kind, table, key in tables:
            n = c.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            if n != scan.counts.get(kind, 0):
                return False
            if not n:
                continue
            order = "created_at DESC, trial_id DESC" if table == "trials" else "rowid DESC"
            row = tuple(_dec(v) if isinstance(v, bytes) else v
                        for v in c.execute(f"SELECT {key} FROM {table} ORDER BY {order} LIMIT 1").fetchone())
            line = json.loads(scan.last[kind].decode("utf-8", "surrogatepass"))
            if kind == "trial":
                got: tuple[Any, ...] = (line["trial_id"],)
            else:
                rec = line[kind]
                got = (rec["trial_id"], rec["attempt"]) if kind == "attempt" else \
                    (rec["trial_id"], rec["stage"], rec["attempt"])
            if got != row:
                return False
        return True

    def _missing_from(self, read: AuditLogRead) -> tuple[list[tuple[Trial, float]],
                                                         list[tuple[Attempt, list[StageRef] | None]],
                                                         list[StageCallRecord]]:
        """What the database holds and the log lacks (keys compared first: full rows only for those)."""
        c = self._conn
        have_t, have_a, have_s = read.trial_ids, read.keys, read.stage_keys
        t_rowids = [r[0] for r in c.execute("SELECT rowid, trial_id FROM trials ORDER BY created_at, trial_id")
                    if r[1] not in have_t]
        a_rowids = [r[0] for r in c.execute("SELECT rowid, trial_id, attempt FROM attempts ORDER BY rowid")
                    if (r[1], r[2]) not in have_a]
        s_rowids = [r[0] for r in c.execute("SELECT rowid, trial_id, stage, attempt FROM stage_calls ORDER BY rowid")
                    if (r[1], _dec(r[2]), r[3]) not in have_s]
        trials = []
        for rid in t_rowids:
            r = c.execute("SELECT trial_json, created_at FROM trials WHERE rowid=?", (rid,)).fetchone()
            trials.append((Trial.model_validate(_from_json_col(r["trial_json"])), r["created_at"]))
        attempts = []
        for rid in a_rowids:
            r = c.execute(f"SELECT {_ATTEMPT_COLS} FROM attempts WHERE rowid=?", (rid,)).fetchone()
            attempts.append((_attempt_from_row(r), _stages_from_row(r)))
        stages = [_stage_from_row(c.execute(f"SELECT {_STAGE_COLS} FROM stage_calls WHERE rowid=?", (rid,)).fetchone())
                  for rid in s_rowids]
        return trials, attempts, stages

    def _require_writable(self) -> None:
        if self.readonly:
            raise DataError(f"{self.db_path} was opened read-only; open RunStore(run_dir) to write")

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

    def register_trials(self, trials: Iterable[Trial | KeyedTrial]) -> int:
        """Record trials (idempotent); returns how many were new. New trials get a line in the audit log.

        A ``KeyedTrial`` (what the plan makes) is not serialised again. Trials already stored cost one
        indexed lookup each, so registering a resumed plan in chunks is cheap. The rows go in with one
        ``executemany``; only when some were already stored are they inserted one by one, to know which."""
        self._require_writable()
        secrets = env_secrets()
        todo = []
        for t in trials:
            k = t if isinstance(t, KeyedTrial) else KeyedTrial.of(t)
            if secrets:
                check_no_secrets(k.data, f"trial {k.id}", secrets=secrets)
            created = time.time()   # per row, as before: trial_rows() lists trials in registration order
            todo.append((k, created, _trial_row(k, created)))
        self.flush()  # the log keeps the order records were made in
        with self._lock:
            try:
                with self._transaction() as c:
                    if c.executemany(_INSERT_TRIAL, [row for _, _, row in todo]).rowcount != len(todo):
                        raise _SomeStored  # rolled back: insert them one by one to know which are new
                added = todo
            except _SomeStored:
                with self._transaction() as c:
                    added = [x for x in todo if c.execute(_INSERT_TRIAL, x[2]).rowcount == 1]
            assert self._log is not None
            self._log.append_many([_trial_log_line(k, created) for k, created, _ in added])
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
        self._require_writable()
        secrets = self._group_secrets()
        line: dict[str, Any] | bytes | None = None
        if secrets:
            attempt = redact_model_output(attempt)
        elif stages is None and self._fast_lines:
            line = self._fast_line(attempt)
        if line is None:
            line = _attempt_line(attempt, stages)
        if secrets:
            assert isinstance(line, dict)  # with secrets every line is the generic dict, checked here
            check_no_secrets(line["attempt"], f"attempt {attempt.attempt} of trial {attempt.trial_id}",
                             secrets=secrets)
        if attempt.status is Status.OK and attempt.response is None:
            raise DataError(f"attempt {attempt.attempt} of trial {attempt.trial_id} is ok but has no response; "
                            f"an ok attempt must carry the response it got")
        record = (attempt, _attempt_row(attempt, stages), line)
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
            if fast != encode_line(_attempt_line(attempt, None)):
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
                    c.executemany(_INSERT_ATTEMPT, [row for _, row, _ in batch])
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
                    c.execute(_INSERT_ATTEMPT, row)
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
            err = DataError(f"attempt {attempt.attempt} of trial {attempt.trial_id} is already stored; "
                            f"attempts are append-only, number the next one {self._count(attempt.trial_id) + 1}")
        else:
            err = DataError(f"attempt for unknown trial {attempt.trial_id}; call register_trials first")
        err.__cause__ = e
        return err

    def append_stage_call(self, call: StageCallRecord) -> StageCallRecord:
        """Store one ended stage call (numbering it when ``attempt`` is 0), then fsync it to the log."""
        self._require_writable()
        call = redact_model_output(call)
        check_no_secrets(call.model_dump(mode="json"), f"stage {call.stage!r} call of trial {call.trial_id}")
        if call.status is Status.OK and call.response is None:
            raise DataError(f"stage {call.stage!r} call of trial {call.trial_id} is ok but has no response")
        self.flush()  # the log keeps the order records were made in
        with self._lock:
            try:
                with self._transaction() as c:
                    if call.attempt == 0:
                        n = c.execute("SELECT COALESCE(MAX(attempt), 0) + 1 FROM stage_calls WHERE trial_id=? AND "
                                      "stage=?", (call.trial_id, _enc(call.stage))).fetchone()[0]
                        call = call.model_copy(update={"attempt": int(n)})
                    c.execute(_INSERT_STAGE, _stage_row(call))
            except sqlite3.IntegrityError as e:
                if "UNIQUE" in str(e):
                    raise DataError(f"stage {call.stage!r} call {call.attempt} of trial {call.trial_id} is already "
                                    f"stored; stage calls are append-only") from e
                raise DataError(f"stage call for unknown trial {call.trial_id}; call register_trials first") from e
            assert self._log is not None
            self._log.append(_stage_line(call))
        return call

    # ------------------------------------------------------------------ reads

    @property
    def _attempt_cols(self) -> str:
        return _ATTEMPT_COLS if self.schema_version >= 2 else _ATTEMPT_COLS_V1

    def _count(self, trial_id: str) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM attempts WHERE trial_id=?", (trial_id,)).fetchone()[0])

    def _all_attempts(self) -> list[tuple[Attempt, list[StageRef] | None]]:
        rows = self._conn.execute(f"SELECT {self._attempt_cols} FROM attempts ORDER BY rowid").fetchall()
        return [(_attempt_from_row(r), _stages_from_row(r)) for r in rows]

    def trial_status(self, trial_ids: Sequence[str]) -> dict[str, TrialStatus]:
        """{trial id: attempts stored, whether one is ok} for the ids that have attempts, by the attempts
        index in chunks of ``LOOKUP_CHUNK``: a resume looks its plan up piece by piece, holding none of it.
        Attempts of a pending commit group are counted too (without committing them now)."""
        out: dict[str, TrialStatus] = {}
        with self._pending_lock:
            pending = [a for a, _, _ in self._pending]
        with self._lock:
            for i in range(0, len(trial_ids), LOOKUP_CHUNK):
                chunk = trial_ids[i:i + LOOKUP_CHUNK]
                rows = self._conn.execute(f"SELECT trial_id, COUNT(*), MAX(status = 'ok') FROM attempts WHERE "
                                          f"trial_id IN ({','.join('?' * len(chunk))}) GROUP BY trial_id", chunk)
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
                chunk = trial_ids[i:i + LOOKUP_CHUNK]
                out.update(r[0] for r in self._conn.execute(
                    f"SELECT trial_id FROM trials WHERE trial_id IN ({','.join('?' * len(chunk))})", chunk))
        return out

    def ok_trial_ids(self) -> set[str]:
        self.flush()
        with self._lock:
            rows = self._conn.execute("SELECT DISTINCT trial_id FROM attempts WHERE status=?", (Status.OK.value,))
            return {r[0] for r in rows}

    def attempt_counts(self) -> dict[str, int]:
        self.flush()
        with self._lock:
            rows = self._conn.execute("SELECT trial_id, COUNT(*) FROM attempts GROUP BY trial_id")
            return {r[0]: int(r[1]) for r in rows}

    def attempts(self, trial_id: str) -> list[Attempt]:
        self.flush()
        with self._lock:
            rows = self._conn.execute(f"SELECT {self._attempt_cols} FROM attempts WHERE trial_id=? ORDER BY attempt",
                                      (trial_id,)).fetchall()
        return [_attempt_from_row(r) for r in rows]

    def attempt_stages(self, trial_id: str, attempt: int) -> list[StageRef] | None:
        """The stages a composite's attempt used (None: a plain call, or no such attempt)."""
        self.flush()
        with self._lock:
            row = self._conn.execute(f"SELECT {self._attempt_cols} FROM attempts WHERE trial_id=? AND attempt=?",
                                     (trial_id, attempt)).fetchone()
        return _stages_from_row(row) if row else None

    def latest(self, trial_id: str) -> Attempt | None:
        self.flush()
        with self._lock:
            row = self._conn.execute(f"SELECT {self._attempt_cols} FROM attempts WHERE trial_id=? "
                                     f"ORDER BY attempt DESC LIMIT 1", (trial_id,)).fetchone()
        return _attempt_from_row(row) if row else None

    def stage_calls(self, trial_id: str | None = None) -> list[StageCallRecord]:
        """Stored stage calls (of one trial, or all), in the order they were stored."""
        if self.schema_version < 2:
            return []
        where, args = ("WHERE trial_id=?", (trial_id,)) if trial_id is not None else ("", ())
        with self._lock:
            rows = self._conn.execute(f"SELECT {_STAGE_COLS} FROM stage_calls {where} ORDER BY rowid",
                                      args).fetchall()
        return [_stage_from_row(r) for r in rows]

    def ok_stage_call(self, call_key: str) -> StageCallRecord | None:
        """The first ok stage call with this content key, if any (a cache hit)."""
        if self.schema_version < 2:
            return None
        with self._lock:
            row = self._conn.execute(f"SELECT {_STAGE_COLS} FROM stage_calls WHERE call_key=? AND status=? "
                                     f"ORDER BY rowid LIMIT 1", (_enc(call_key), Status.OK.value)).fetchone()
        return _stage_from_row(row) if row else None

    def trial_rows(self) -> list[TrialRow]:
        with self._lock:
            rows = self._conn.execute("SELECT * FROM trials ORDER BY created_at, trial_id").fetchall()
        out = []
        for r in rows:
            try:
                trial = Trial.model_validate(_from_json_col(r["trial_json"]))
            except (ValidationError, ValueError) as e:
                raise DataError(f"{self.db_path}: trial {r['trial_id']} does not validate ({e}); the store was "
                                f"written by an incompatible vidaudit") from e
            out.append(TrialRow(r["trial_id"], _dec(r["sample_id"]), _dec(r["model"]),  # type: ignore[arg-type]
                                _dec(r["condition_id"]), trial, r["created_at"]))  # type: ignore[arg-type]
        return out

    def results(self) -> Iterator[tuple[TrialRow, Attempt | None]]:
        """Each registered trial with its best attempt: the ok one if any, else the last (None: never tried).

        Unattempted and errored trials are yielded too: they stay in every denominator.
        """
        self.flush()
        best: dict[str, Attempt] = {}
        with self._lock:
            rows = self._conn.execute(f"SELECT {self._attempt_cols} FROM attempts "
                                      f"ORDER BY trial_id, attempt").fetchall()
        for r in rows:
            a = _attempt_from_row(r)
            prev = best.get(a.trial_id)
            if prev is None or prev.status is not Status.OK:
                best[a.trial_id] = a
        for row in self.trial_rows():
            yield row, best.get(row.trial_id)

    def summary_spend(self) -> tuple[int, float]:
        """(tokens, cost in USD) spent so far, as ``summary()`` counts them (plain attempts and stage calls,
        never a composite attempt's own usage), summed by SQLite without reading a row into Python."""
        self.flush()
        stages = self.schema_version >= 2
        tokens = cost = 0.0
        with self._lock:
            for table, where in (("attempts", "WHERE stages_json IS NULL" if stages else ""),
                                 *((("stage_calls", ""),) if stages else ())):
                t, c = self._conn.execute(
                    f"SELECT COALESCE(SUM(COALESCE(json_extract(usage_json, '$.input_tokens'), 0) + "
                    f"COALESCE(json_extract(usage_json, '$.output_tokens'), 0)), 0), "
                    f"COALESCE(SUM(COALESCE(cost_usd, 0)), 0) FROM {table} {where}").fetchone()
                tokens += t
                cost += c
        return int(tokens), float(cost)

    def summary(self) -> StoreSummary:
        by_status: dict[str, int] = {}
        for _, a in self.results():
            key = a.status.value if a else "pending"
            by_status[key] = by_status.get(key, 0) + 1
        with self._lock:
            rows = self._conn.execute(f"SELECT status, usage_json, cost_usd, "
                                      f"{'stages_json' if self.schema_version >= 2 else 'NULL AS stages_json'} "
                                      f"FROM attempts").fetchall()
            stage_rows = self._conn.execute("SELECT status, usage_json, cost_usd FROM stage_calls").fetchall() \
                if self.schema_version >= 2 else []
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
        return StoreSummary(trials=sum(by_status.values()), by_status=by_status, attempts=len(rows),
                            attempts_by_status=attempts_by_status, usage=usage, cost_usd=cost,
                            stage_calls=len(stage_rows), stage_calls_by_status=stages_by_status)

    def audit_log(self) -> AuditLogRead:
        """A tolerant read of the audit log (a torn last line is reported in ``torn_tail``)."""
        return read_audit_log(self.log_path)

    def journal_mode(self) -> str:
        with self._lock:
            return str(self._conn.execute("PRAGMA journal_mode").fetchone()[0])

    def integrity_check(self) -> str:
        with self._lock:
            return str(self._conn.execute("PRAGMA integrity_check").fetchone()[0])

    # ------------------------------------------------------------------ rebuild and upgrade

    @staticmethod
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
            raise DataError(f"{db} exists; rebuild_from_log only replaces a missing store: move it aside first "
                            f"if you mean to rebuild it from {log}")
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
                        raise DataError(f"{log}: line {i}: trial id {line.get('trial_id')} is not the hash of its "
                                        f"trial ({t.id}); the log was edited")
                    new_t: Any = (t, float(line["created_at"]))
                    key: Any = t.id
                    table: dict[Any, Any] = trials
                elif "attempt" in line:
                    a = Attempt.model_validate(line["attempt"])
                    refs = [StageRef.model_validate(s) for s in line["stages"]] if line.get("stages") is not None \
                        else None
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
                        raise DataError(f"{log}: line {i} contradicts an earlier line for {key}; the log is "
                                        f"append-only, so this was edited by hand")
                    dup += 1
                    continue
                table[key] = new_t
        except ValidationError as e:
            raise DataError(f"{log}: a line does not validate ({e}); written by an incompatible vidaudit") from e
        orphans = {k[0] for k in attempts} | {k[0] for k in stages}
        orphans -= set(trials)
        if orphans:
            raise DataError(f"{log} has attempts for {len(orphans)} trial(s) it never registered (e.g. "
                            f"{sorted(orphans)[0]}): it was written by a vidaudit older than store schema 2, whose "
                            f"log has no trial lines; the store cannot be rebuilt from it. Report what is left with "
                            f"the old release, or start a new run dir")
        moved = _move_stale_sidecars(db)
        _write_new_db(db, trials=list(trials.values()), attempts=list(attempts.values()),
                      stage_calls=list(stages.values()))
        return RebuildReport(trials=len(trials), attempts=len(attempts), stage_calls=len(stages), duplicates=dup,
                             torn_tail_bytes=len(read.torn_tail or b""), moved_aside=moved)

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
        with RunStore(run_dir, readonly=True) as src:
            if src.schema_version != 1:
                raise DataError(f"{db} has schema {src.schema_version}; only a schema-1 store is upgraded")
            trial_rows = src.trial_rows()
            attempts = [a for a, _ in src._all_attempts()]
        con = sqlite3.connect(db, isolation_level=None)  # fold the WAL in so the file alone is complete
        try:
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.execute("PRAGMA journal_mode=DELETE")
        finally:
            con.close()
        os.replace(db, old)
        _fsync_dir(run_dir)
        _write_new_db(db, trials=[(r.trial, r.created_at) for r in trial_rows],
                      attempts=[(a, None) for a in attempts], stage_calls=[])
        with RunStore(run_dir) as store:  # re-appends the trial lines the schema-1 log lacks
            trials_added = len(store.recovery.reappended_trials)
        return RebuildReport(trials=len(trial_rows), attempts=len(attempts), stage_calls=0,
                             moved_aside=[old.name] + ([f"{trials_added} trial lines appended to the log"]
                                                       if trials_added else []))

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        try:
            if not self.readonly:
                self.flush()
        finally:
            with self._lock:
                if self._log is not None:
                    self._log.close()
                    self._log = None
                self._conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _move_stale_sidecars(db: Path) -> list[str]:
    """Rename a lost database's -wal / -shm / -journal so that SQLite never applies them to a new file."""
    moved = []
    for suffix in ("-wal", "-shm", "-journal"):
        p = db.with_name(db.name + suffix)
        if p.exists():
            dst = p.with_name(f"{p.name}.{int(time.time())}.stale")
            os.replace(p, dst)
            moved.append(dst.name)
    return moved


def _write_new_db(db: Path, *, trials: Sequence[tuple[Trial, float]],
                  attempts: Sequence[tuple[Attempt, list[StageRef] | None]],
                  stage_calls: Sequence[StageCallRecord]) -> None:
    """Build a schema-2 database at ``db`` atomically: written beside it, fsync'd, renamed into place."""
    tmp = db.with_name(db.name + ".rebuild")
    for p in (tmp, tmp.with_name(tmp.name + "-journal")):
        p.unlink(missing_ok=True)
    con = sqlite3.connect(tmp, isolation_level=None)
    try:
        con.execute("PRAGMA foreign_keys=ON")
        con.executescript(_SCHEMA)
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        con.executemany(_INSERT_TRIAL, [_trial_row(KeyedTrial.of(t), ts) for t, ts in trials])
        con.executemany(_INSERT_STAGE, [_stage_row(s) for s in stage_calls])
        con.executemany(_INSERT_ATTEMPT, [_attempt_row(a, st) for a, st in attempts])
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
    _fsync_dir(db.parent)
