"""The run store and run.json on real files: round trips, WAL, crash safety, secrets, resume rules.

What is proved: attempts round-trip exactly (property test, any str: lone surrogates and NULs
included); text with lone surrogates, NULs or 5 MB reads back equal from SQLite and the log; a failed
write rolls back and later writes work; WAL and synchronous=FULL are on; a writer process SIGKILLed
mid-loop leaves a consistent store holding every attempt it had reported committed and a parseable
audit log; a torn log line is tolerated, reported, and repaired on reopen; stage calls are numbered
per (trial, stage), found by key and re-appended to the log when missing; a schema-1 store opens
read-only and refuses writing with what to do, and upgrades; a lost store.sqlite is rebuilt from the
log exactly, never started fresh; nothing equal to an env secret is ever written; run.json
round-trips and refuses a changed config unless it only adds trials.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.types import (
    Attempt,
    Condition,
    ErrorKind,
    Event,
    ModelSpec,
    Presentation,
    Response,
    Sample,
    Status,
    Trace,
    Trial,
    Usage,
    VideoRef,
)
from vidaudit.run.audit_log import read_audit_log
from vidaudit.run.runconfig import BudgetConfig, RunConfig, open_run_config
from vidaudit.run.secrets import SecretLeakError, env_secrets
from vidaudit.run.store.reader import StoreReader
from vidaudit.run.store.records import StageCallRecord, StageRef
from vidaudit.run.store.sync import rebuild_from_log
from vidaudit.run.store.writer import RunStore

SRC = str(Path(__file__).resolve().parents[2] / "src")


def make_trial(i: int, model: str = "openai:gpt-test") -> Trial:
    return Trial(
        sample_id=f"s{i:04d}",
        video_sha256=f"{i:064x}",
        condition=Condition(presentation=Presentation.FRAMES, fps=2.0, prompt="structured_trace"),
        model=ModelSpec.parse(model),
    )


def ok_attempt(trial: Trial, n: int = 1, text: str = "3", cost: float | None = 0.01) -> Attempt:
    return Attempt(
        trial_id=trial.id,
        attempt=n,
        status=Status.OK,
        response=Response(
            text=text,
            usage=Usage(input_tokens=100, output_tokens=7),
            latency_s=0.5,
            finish_reason="stop",
            model_version="v1",
            cost_usd=cost,
        ),
        frame_indices=(0, 15, 30),
        frame_times=(0.0, 0.5, 1.0),
        started_at=1.0,
        ended_at=1.5,
    )


def err_attempt(
    trial: Trial,
    n: int,
    kind: ErrorKind = ErrorKind.TRANSIENT,
    status: Status = Status.API_ERROR,
    message: str = "503 upstream",
) -> Attempt:
    return Attempt(
        trial_id=trial.id,
        attempt=n,
        status=status,
        error_kind=kind,
        error_message=message,
        frame_indices=(0,),
        frame_times=(0.0,),
        started_at=2.0,
        ended_at=2.1,
    )


# --------------------------------------------------------------------------- round trip


def test_round_trip_results_and_summary(tmp_path: Path) -> None:
    t1, t2, t3 = make_trial(1), make_trial(2), make_trial(3)
    with RunStore(tmp_path) as store:
        assert store.register_trials([t1, t2, t3]) == 3
        assert store.register_trials([t1]) == 0  # idempotent
        store.append(err_attempt(t1, 1))
        store.append(ok_attempt(t1, 2))
        store.append(err_attempt(t2, 1, ErrorKind.TIMEOUT, Status.TIMEOUT, "timed out"))
        store.append(err_attempt(t2, 2, ErrorKind.REFUSED, Status.REFUSED, "safety"))

    with RunStore(tmp_path) as store:
        assert store.ok_trial_ids() == {t1.id}
        assert store.attempt_counts() == {t1.id: 2, t2.id: 2}
        assert store.latest(t1.id) == ok_attempt(t1, 2)
        assert store.latest(t3.id) is None
        best = {row.trial_id: a for row, a in store.results()}
        assert best[t1.id] == ok_attempt(t1, 2)  # the ok one
        assert best[t2.id].status is Status.REFUSED  # else the last
        assert best[t3.id] is None  # never tried, still listed
        rows = {row.trial_id: row for row, _ in store.results()}
        assert rows[t1.id].trial == t1 and rows[t1.id].model == "openai:gpt-test"
        assert rows[t1.id].condition_id == t1.condition.id
        s = store.summary()
        assert s.trials == 3
        assert s.by_status == {"ok": 1, "refused": 1, "pending": 1}
        assert s.attempts_by_status == {"api_error": 1, "ok": 1, "timeout": 1, "refused": 1}
        assert s.usage == Usage(input_tokens=100, output_tokens=7) and s.tokens == 107
        assert s.cost_usd == pytest.approx(0.01)
        log = store.audit_log()
        assert log.torn_tail is None and len(log.of_kind("attempt")) == 4
        assert log.trial_ids == {t1.id, t2.id, t3.id}  # one line per new trial, none for the repeat


def test_wal_and_full_sync_are_on(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        assert store.journal_mode() == "wal"
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    raw = sqlite3.connect(tmp_path / "store.sqlite")
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # persistent in the file
    raw.close()


def test_append_is_append_only_and_checked(tmp_path: Path) -> None:
    t = make_trial(1)
    with RunStore(tmp_path) as store:
        with pytest.raises(DataError, match="register_trials"):
            store.append(ok_attempt(t))
        store.register_trials([t])
        store.append(err_attempt(t, 1))
        with pytest.raises(DataError, match="already stored"):
            store.append(ok_attempt(t, 1))
        with pytest.raises(DataError, match="no response"):
            store.append(Attempt(trial_id=t.id, attempt=2, status=Status.OK, started_at=0, ended_at=0))
        assert store.attempt_counts() == {t.id: 1}
        assert len(store.audit_log().of_kind("attempt")) == 1


def test_readonly_reader_sees_commits_while_writer_is_open(tmp_path: Path) -> None:
    t = make_trial(1)
    writer = RunStore(tmp_path)
    writer.register_trials([t])
    reader = StoreReader(tmp_path)
    assert reader.attempt_counts() == {}
    writer.append(ok_attempt(t))
    assert reader.ok_trial_ids() == {t.id}
    assert not hasattr(reader, "append") and not hasattr(reader, "register_trials")  # a reader has no writes
    with pytest.raises(sqlite3.OperationalError, match="readonly"):  # and its connection cannot write either
        reader._conn.execute("INSERT INTO meta(key, value) VALUES ('x', 'y')")
    reader.close()
    writer.close()
    with pytest.raises(DataError, match="no run store"):
        StoreReader(tmp_path / "missing")


def test_not_a_store_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "store.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DataError, match="not a readable vidaudit store"):
        RunStore(tmp_path)


_text = st.text(max_size=60)  # any str: lone surrogates (category Cs) and NULs included


@st.composite
def attempts(draw: st.DrawFn) -> Attempt:
    ok = draw(st.booleans())
    times = draw(st.lists(st.floats(0, 1e4, allow_nan=False), max_size=6))
    base = dict(
        trial_id="x",
        attempt=1,
        frame_indices=tuple(draw(st.lists(st.integers(0, 10**6), max_size=6))),
        frame_times=tuple(times),
        started_at=draw(st.floats(0, 2e9)),
        ended_at=draw(st.floats(0, 2e9)),
    )
    if ok:
        usage = Usage(**{k: draw(st.integers(0, 10**7)) for k in Usage.model_fields})
        resp = Response(
            text=draw(_text),
            usage=usage,
            latency_s=draw(st.floats(0, 1e3)),
            finish_reason=draw(st.none() | _text),
            model_version=draw(st.none() | _text),
            cost_usd=draw(st.none() | st.floats(0, 100)),
        )
        return Attempt(status=Status.OK, response=resp, **base)
    kind = draw(st.sampled_from(list(ErrorKind)) | st.none())
    return Attempt(
        status=draw(st.sampled_from([Status.API_ERROR, Status.TIMEOUT, Status.REFUSED])),
        error_kind=kind,
        error_message=draw(st.none() | _text),
        **base,
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=attempts())
def test_any_attempt_round_trips_exactly(a: Attempt) -> None:
    with tempfile.TemporaryDirectory() as d:
        t = make_trial(7)
        a = a.model_copy(update={"trial_id": t.id})
        with RunStore(d) as store:
            store.register_trials([t])
            store.append(a)
        with StoreReader(d) as store:
            assert store.latest(t.id) == a
        assert Attempt.model_validate(read_audit_log(Path(d) / "attempts.jsonl").of_kind("attempt")[0]["attempt"]) == a


# --------------------------------------------------------------------------- lossless text, failed writes

NASTY = [
    "\ud800",
    "a\udfffb",
    "\ud83d\ude00 (a pair of lone surrogates, not U+1F600)",
    "nul\x00inside\x00",
    "\udcff\udc80 (invalid UTF-8 decoded with surrogateescape)",
    "ok \u00e9\u4e2d\U0001f600",
    "",
]


def test_any_text_is_stored_losslessly_and_other_attempts_survive(tmp_path: Path) -> None:
    huge = ("x\ud800" * 10 + "y" * 1000) * 5_000  # ~5 MB, lone surrogates throughout
    texts = NASTY + [huge, "normal answer \\boxed{3}"]
    trials = [make_trial(i) for i in range(len(texts))]
    want = {}
    with RunStore(tmp_path) as store:
        store.register_trials(trials)
        for t, text in zip(trials, texts, strict=True):
            a = ok_attempt(t, text=text).model_copy(update={"error_message": None})
            a = a.model_copy(
                update={
                    "response": a.response.model_copy(  # type: ignore[union-attr]
                        update={"finish_reason": text[:20], "model_version": text[-20:]}
                    )
                }
            )
            store.append(a)
            want[t.id] = a
        e = err_attempt(trials[0], 2, message="body: \ud800\x00 " + NASTY[2])
        store.append(e)
    with StoreReader(tmp_path) as store:
        for t in trials:
            assert store.attempts(t.id)[0] == want[t.id]
        assert store.latest(trials[0].id) == e
        assert store.integrity_check() == "ok"
    log = read_audit_log(tmp_path / "attempts.jsonl")
    logged = {
        r["attempt"]["trial_id"]: Attempt.model_validate(r["attempt"])
        for r in log.of_kind("attempt")
        if r["attempt"]["attempt"] == 1
    }
    assert logged == want
    with RunStore(tmp_path) as store:  # reopening finds nothing to repair
        assert store.recovery.clean


def test_a_failed_write_rolls_back_and_later_writes_work(tmp_path: Path) -> None:
    t1, t2 = make_trial(1), make_trial(2)
    with RunStore(tmp_path) as store:
        store.register_trials([t1, t2])
        bad = ok_attempt(t1).model_copy(update={"attempt": 2**70})  # fails inside the transaction
        with pytest.raises(OverflowError):
            store.append(bad)
        assert not store._conn.in_transaction
        store.append(ok_attempt(t1, text="\ud800 after the failure"))
        store.append(ok_attempt(t2))
        with pytest.raises(DataError, match="already stored"):
            store.append(ok_attempt(t2))
        assert not store._conn.in_transaction
        store.register_trials([make_trial(3)])
        assert store.attempt_counts() == {t1.id: 1, t2.id: 1}
        assert len(store.audit_log().of_kind("attempt")) == 2


# --------------------------------------------------------------------------- stage calls


def stage_call(
    trial: Trial, stage: str, key: str, *, ok: bool = True, text: str = "yes", n: int = 0, trial_attempt: int = 1
) -> StageCallRecord:
    resp = (
        Response(text=text, usage=Usage(input_tokens=50, output_tokens=5), latency_s=0.2, cost_usd=0.002)
        if ok
        else None
    )
    return StageCallRecord(
        trial_id=trial.id,
        stage=stage,
        attempt=n,
        trial_attempt=trial_attempt,
        call_key=key,
        model=ModelSpec.parse("test:judge"),
        request={"parts": [{"text": text}]},
        status=Status.OK if ok else Status.API_ERROR,
        error_kind=None if ok else ErrorKind.TRANSIENT,
        error_message=None if ok else "503",
        response=resp,
        started_at=3.0,
        ended_at=3.2,
    )


def test_stage_calls_are_numbered_found_by_key_and_counted_once(tmp_path: Path) -> None:
    t = make_trial(1)
    refs = [
        StageRef(stage="answer", call_key="k1", status=Status.OK, cached=True),
        StageRef(stage="judge", call_key="k2", status=Status.OK, cached=False),
    ]
    with RunStore(tmp_path) as store:
        store.register_trials([t])
        a = store.append_stage_call(stage_call(t, "answer", "k1", text="\ud800 3"))
        f = store.append_stage_call(stage_call(t, "judge", "k2", ok=False))
        j = store.append_stage_call(stage_call(t, "judge", "k2", trial_attempt=2))
        assert (a.attempt, f.attempt, j.attempt) == (1, 1, 2)
        with pytest.raises(DataError, match="already stored"):
            store.append_stage_call(stage_call(t, "judge", "k2", n=2))
        with pytest.raises(DataError, match="register_trials"):
            store.append_stage_call(stage_call(make_trial(9), "judge", "k2"))
        with pytest.raises(DataError, match="no response"):
            store.append_stage_call(stage_call(t, "judge", "k2").model_copy(update={"response": None}))
        store.append(err_attempt(t, 1), stages=refs[:1] + [refs[1].model_copy(update={"status": Status.API_ERROR})])
        composite = ok_attempt(t, 2).model_copy(
            update={"response": Response(text="3", usage=Usage(input_tokens=100, output_tokens=10), cost_usd=0.004)}
        )
        store.append(composite, stages=refs)
    with StoreReader(tmp_path) as store:
        assert store.stage_calls(t.id) == [a, f, j]
        assert store.ok_stage_call("k2") == j and store.ok_stage_call("k1") == a
        assert store.ok_stage_call("nope") is None
        assert store.attempt_stages(t.id, 2) == refs and store.attempt_stages(t.id, 9) is None
        s = store.summary()
        assert s.stage_calls == 3 and s.stage_calls_by_status == {"ok": 2, "api_error": 1}
        # the composite's own usage (a sum of its stages') is not spend: its two ok stage calls are
        assert s.usage == Usage(input_tokens=100, output_tokens=10) and s.cost_usd == pytest.approx(0.004)
    log = read_audit_log(tmp_path / "attempts.jsonl")
    assert log.stage_keys == {(t.id, "answer", 1), (t.id, "judge", 1), (t.id, "judge", 2)}
    assert [StageRef.model_validate(x) for x in log.of_kind("attempt")[-1]["stages"]] == refs

    lines = (tmp_path / "attempts.jsonl").read_bytes().splitlines(keepends=True)  # lose every stage line
    (tmp_path / "attempts.jsonl").write_bytes(b"".join(x for x in lines if b'"stage_call"' not in x))
    with RunStore(tmp_path) as store:
        assert (
            sorted(store.recovery.reappended_stage_calls)
            == sorted(read_audit_log(tmp_path / "attempts.jsonl").stage_keys)
            == sorted(log.stage_keys)
        )


# --------------------------------------------------------------------------- schema 1

V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE trials (trial_id TEXT PRIMARY KEY, sample_id TEXT NOT NULL, model TEXT NOT NULL,
    condition_id TEXT NOT NULL, trial_json TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE attempts (trial_id TEXT NOT NULL REFERENCES trials(trial_id), attempt INTEGER NOT NULL
    CHECK (attempt >= 1), status TEXT NOT NULL, error_kind TEXT, error_message TEXT, text TEXT, usage_json TEXT,
    cost_usd REAL, latency_s REAL, finish_reason TEXT, model_version TEXT, frame_indices TEXT NOT NULL,
    frame_times TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL NOT NULL, UNIQUE (trial_id, attempt));
CREATE INDEX attempts_status ON attempts(status);
INSERT INTO meta VALUES ('schema_version', '1');
"""


def make_v1_store(run_dir: Path) -> tuple[list[Trial], list[Attempt]]:
    """A store as the schema-1 release wrote it (its SQL, its rows, an audit log with attempt lines only)."""
    from vidaudit.core.hashing import canonical_json

    run_dir.mkdir(parents=True, exist_ok=True)
    trials = [make_trial(i) for i in range(3)]
    attempts = [err_attempt(trials[0], 1), ok_attempt(trials[0], 2), ok_attempt(trials[1], 1, text="7")]
    con = sqlite3.connect(run_dir / "store.sqlite")
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(V1_SCHEMA)
    for i, t in enumerate(trials):
        con.execute(
            "INSERT INTO trials VALUES (?, ?, ?, ?, ?, ?)",
            (t.id, t.sample_id, t.model.label, t.condition.id, canonical_json(t.model_dump(mode="json")), 100.0 + i),
        )
    for a in attempts:
        r = a.response
        con.execute(
            "INSERT INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                a.trial_id,
                a.attempt,
                a.status.value,
                a.error_kind.value if a.error_kind else None,
                a.error_message,
                r.text if r else None,
                r.usage.model_dump_json() if r else None,
                r.cost_usd if r else None,
                r.latency_s if r else None,
                r.finish_reason if r else None,
                r.model_version if r else None,
                json.dumps(list(a.frame_indices)),
                json.dumps(list(a.frame_times)),
                a.started_at,
                a.ended_at,
            ),
        )
    con.commit()
    con.close()
    (run_dir / "attempts.jsonl").write_text(
        "".join(json.dumps({"attempt": a.model_dump(mode="json")}) + "\n" for a in attempts)
    )
    return trials, attempts


def test_schema_1_store_opens_read_only_and_refuses_writing(tmp_path: Path) -> None:
    trials, attempts = make_v1_store(tmp_path)
    before = (tmp_path / "store.sqlite").read_bytes()
    with StoreReader(tmp_path) as store:
        assert store.schema_version == 1
        assert [r.trial for r in store.trial_rows()] == trials
        best = {row.trial_id: a for row, a in store.results()}
        assert best == {trials[0].id: attempts[1], trials[1].id: attempts[2], trials[2].id: None}
        assert store.attempts(trials[0].id) == attempts[:2] and store.latest(trials[1].id) == attempts[2]
        assert store.stage_calls() == [] and store.ok_stage_call("k") is None
        assert store.attempt_stages(trials[0].id, 2) is None
        s = store.summary()
        assert s.by_status == {"ok": 2, "pending": 1} and s.cost_usd == pytest.approx(0.02) and s.stage_calls == 0
    with pytest.raises(DataError) as info:
        RunStore(tmp_path)
    msg = " ".join(str(info.value).split())
    assert "schema-1" in msg and f"vidaudit report {tmp_path}" in msg and "new run dir" in msg
    assert "RunStore.upgrade" in msg and "Rebuilding from the audit log does not apply" in msg
    con = sqlite3.connect(f"file:{tmp_path / 'store.sqlite'}?mode=ro", uri=True)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    con.close()
    assert tables == {"meta", "trials", "attempts"}  # refusing wrote nothing
    assert (tmp_path / "store.sqlite").read_bytes() == before
    # a schema-1 log alone cannot rebuild a store: it has no trial lines
    (tmp_path / "store.sqlite").rename(tmp_path / "v1.sqlite")
    for side in ("store.sqlite-wal", "store.sqlite-shm"):
        (tmp_path / side).unlink(missing_ok=True)
    with pytest.raises(DataError, match="never registered"):
        RunStore(tmp_path)
    assert not (tmp_path / "store.sqlite").exists()


def test_schema_1_store_upgrades_in_place(tmp_path: Path) -> None:
    trials, attempts = make_v1_store(tmp_path)
    report = RunStore.upgrade(tmp_path)
    assert (report.trials, report.attempts) == (3, 3)
    assert (tmp_path / "store.sqlite.v1").is_file()
    with RunStore(tmp_path) as store:
        assert store.recovery.clean
        assert [r.trial for r in store.trial_rows()] == trials
        assert [a for t in trials for a in store.attempts(t.id)] == attempts
        store.append(ok_attempt(trials[2]))
        assert store.audit_log().trial_ids == {t.id for t in trials}
    with RunStore(tmp_path / "x") as store:
        pass
    with pytest.raises(DataError, match="only a schema-1"):
        RunStore.upgrade(tmp_path / "x")


# --------------------------------------------------------------------------- rebuild from the log


def _snapshot(store: RunStore) -> tuple:
    trials = [(r.trial, r.created_at) for r in store.trial_rows()]
    attempts = [
        (a, store.attempt_stages(a.trial_id, a.attempt)) for r in store.trial_rows() for a in store.attempts(r.trial_id)
    ]
    return trials, attempts, store.stage_calls(), store.summary()


def _lose_database(run_dir: Path) -> None:
    for name in ("store.sqlite", "store.sqlite-wal", "store.sqlite-shm"):
        (run_dir / name).unlink(missing_ok=True)


def test_a_lost_database_is_rebuilt_from_the_log_exactly(tmp_path: Path) -> None:
    ts = [make_trial(i) for i in range(4)]
    refs = [StageRef(stage="judge", call_key="k\ud800", status=Status.OK, cached=False)]
    with RunStore(tmp_path) as store:
        store.register_trials(ts)
        store.append(err_attempt(ts[0], 1, message="\ud800 503"))
        store.append(ok_attempt(ts[0], 2, text="nul\x00 \udcff"))
        store.append_stage_call(stage_call(ts[1], "judge", "k\ud800", text="\ud800 yes"))
        store.append(ok_attempt(ts[1]), stages=refs)
        before = _snapshot(store)
    log_before = (tmp_path / "attempts.jsonl").read_bytes()
    _lose_database(tmp_path)
    with pytest.raises(DataError, match="rebuild"):
        StoreReader(tmp_path)  # a reader never writes, but says how
    with RunStore(tmp_path) as store:  # a writer never starts fresh beside a log
        rebuilt = store.recovery.rebuilt
        assert rebuilt is not None and (rebuilt.trials, rebuilt.attempts, rebuilt.stage_calls) == (4, 3, 1)
        assert not store.recovery.clean and not store.recovery.reappended
        assert _snapshot(store) == before
    assert (tmp_path / "attempts.jsonl").read_bytes() == log_before  # the log is never rewritten
    with RunStore(tmp_path) as store:
        assert store.recovery.clean
    with pytest.raises(DataError, match="exists"):
        rebuild_from_log(tmp_path)


def test_rebuild_ignores_a_torn_tail_and_stale_wal(tmp_path: Path) -> None:
    ts = [make_trial(i) for i in range(3)]
    with RunStore(tmp_path) as store:
        store.register_trials(ts)
        for t in ts:
            store.append(ok_attempt(t))
    (tmp_path / "store.sqlite").unlink()
    (tmp_path / "store.sqlite-wal").write_bytes(b"stale wal of the lost database")
    with open(tmp_path / "attempts.jsonl", "ab") as f:
        f.write(b'{"attempt": {"trial_')
    report = rebuild_from_log(tmp_path)
    assert (report.trials, report.attempts, report.torn_tail_bytes) == (3, 3, 20)
    assert report.moved_aside and not (tmp_path / "store.sqlite-wal").exists()
    with RunStore(tmp_path) as store:
        assert store.recovery.torn_tail_bytes == 20 and not store.recovery.reappended
        assert store.ok_trial_ids() == {t.id for t in ts}
        assert store.integrity_check() == "ok"


# --------------------------------------------------------------------------- crash safety

_WRITER = r"""
import sys
from vidaudit.core.types import *
from vidaudit.run.store.records import StageCallRecord, StageRef
from vidaudit.run.store.writer import RunStore
from vidaudit.run.store.reader import StoreReader
store = RunStore(sys.argv[1])
for i in range(100000):
    t = Trial(sample_id=f"s{i}", video_sha256=None, condition=Condition(prompt="structured_trace"),
              model=ModelSpec(provider="p"))
    store.register_trials([t])
    store.append(Attempt(trial_id=t.id, attempt=1, status=Status.OK,
                         response=Response(text="x" * (i % 997), usage=Usage(input_tokens=i)),
                         started_at=float(i), ended_at=float(i)))
    print(t.id, flush=True)
"""


def test_sigkill_mid_run_keeps_every_committed_attempt(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env)
    committed: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        committed.append(line.strip())
        if len(committed) >= 40:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the writer should have been killed mid-loop"
    committed += [line.strip() for line in proc.stdout if line.endswith("\n")]  # reported before the kill

    log_before = read_audit_log(tmp_path / "attempts.jsonl")  # tolerant read: must not raise
    with StoreReader(tmp_path) as reader:
        assert reader.integrity_check() == "ok"
        stored = reader.ok_trial_ids()
    assert set(committed) <= stored  # every reported commit survived
    assert len(stored) - len(committed) <= 1  # at most the one in flight when killed
    assert {k for k, _ in log_before.keys} <= stored  # the log never runs ahead of the database

    with RunStore(tmp_path) as store:  # the writer reopens and repairs the log
        after = store.audit_log()
        assert after.torn_tail is None
        assert {k for k, _ in after.keys} == stored
        assert all(a is not None and a.status is Status.OK for _, a in store.results() if _.trial_id in stored)


def test_torn_last_line_is_reported_and_repaired(tmp_path: Path) -> None:
    ts = [make_trial(i) for i in range(3)]
    with RunStore(tmp_path) as store:
        store.register_trials(ts)
        for t in ts:
            store.append(ok_attempt(t))
    log = tmp_path / "attempts.jsonl"
    data = log.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    log.write_bytes(data[: last_start + 25])  # tear the last line as a kill mid-write would

    torn = read_audit_log(log)
    assert torn.torn_tail is not None and len(torn.torn_tail) == 25
    assert len(torn.of_kind("attempt")) == 2

    with RunStore(tmp_path) as store:
        assert store.recovery.torn_tail_bytes == 25
        assert store.recovery.reappended == [(ts[2].id, 1)]
        repaired = store.audit_log()
        assert repaired.torn_tail is None
        assert repaired.keys == {(t.id, 1) for t in ts}
        assert repaired.rows[-1]["recovered"] is True
    with RunStore(tmp_path) as store:  # idempotent: nothing more to repair
        assert store.recovery.clean


def test_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "attempts.jsonl").write_text('{"attempt": 1}\nnot json\n{"x": 2}\n')
    with pytest.raises(DataError, match=r"attempts.jsonl:2"):
        read_audit_log(tmp_path / "attempts.jsonl")


# --------------------------------------------------------------------------- secrets

SECRET = "sk-test-9f8e7d6c5b4a3210"


def test_never_writes_a_secret_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("HF_TOKEN", "short")  # too short to be a key: not treated as one
    assert env_secrets().get("OPENAI_API_KEY") == SECRET and "HF_TOKEN" not in env_secrets()
    t = make_trial(1)
    with RunStore(tmp_path) as store:
        store.register_trials([t])
        # what a server or model wrote is redacted and marked, never a reason to stop the run
        store.append(err_attempt(t, 1, ErrorKind.AUTH, message=f"Incorrect API key provided: {SECRET}"))
        store.append(ok_attempt(t, 2, text=f"my key is {SECRET}!"))
        got = store.attempts(t.id)
        assert got[0].error_message == "Incorrect API key provided: [REDACTED:OPENAI_API_KEY]"
        assert got[1].response is not None and got[1].response.text == "my key is [REDACTED:OPENAI_API_KEY]!"
        leaky = Trial(
            sample_id="s",
            video_sha256=None,
            condition=Condition(prompt="structured_trace"),
            model=ModelSpec(provider="openai", name="m", base_url=f"http://h/v1?key={SECRET}"),
        )
        with pytest.raises(SecretLeakError, match="model.base_url"):
            store.register_trials([leaky])
        store.append(ok_attempt(t, 3, text="short"))  # short env values are not secrets
        assert store.attempt_counts() == {t.id: 3}
    for path in tmp_path.iterdir():
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_key_echoed_twice_is_redacted_both_times(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """redact_text replaces every copy of a key, not only the first: a model that repeats the key must
    leave no copy in the stored answer (a first-copy-only redaction would make the store refuse the row)."""
    from vidaudit.run.secrets import redact_text

    env = {"OPENAI_API_KEY": SECRET}
    text, names = redact_text(f"{SECRET} and again {SECRET}, then {SECRET}.", env)
    assert text == ("[REDACTED:OPENAI_API_KEY] and again [REDACTED:OPENAI_API_KEY], then [REDACTED:OPENAI_API_KEY].")
    assert names == ["OPENAI_API_KEY"] and SECRET not in text
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    t = make_trial(1)
    with RunStore(tmp_path) as store:
        store.register_trials([t])
        store.append(ok_attempt(t, 1, text=f"key {SECRET}; key {SECRET}"))
        got = store.attempts(t.id)[0]
        assert got.response is not None
        assert got.response.text == "key [REDACTED:OPENAI_API_KEY]; key [REDACTED:OPENAI_API_KEY]"
    for path in tmp_path.iterdir():
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_sample_whose_video_sha256_alone_changed_is_a_changed_sample(tmp_path: Path) -> None:
    """sample_digest covers the video's sha256: a regenerated video under the same path, question, answer
    and trace is a changed sample (the snapshot refuses a resume onto it), while its path may move freely."""
    from vidaudit.run.snapshot import changed_samples, sample_digest, update_snapshot

    s = Sample(
        sample_id="s1",
        suite="counting",
        params={"domain": "blinking"},
        question="How many?",
        answer=1,
        trace=Trace(events=(Event(t=1.0, frame=30, type="blink", count=1),)),
        video=VideoRef(path="v.mp4", sha256="a" * 64, fps=30.0, width=64, height=64, n_frames=90, duration_s=3.0),
    )
    new_video = s.model_copy(update={"video": s.video.model_copy(update={"sha256": "b" * 64})})
    moved = s.model_copy(update={"video": s.video.model_copy(update={"path": "elsewhere/v.mp4"})})
    assert sample_digest(new_video) != sample_digest(s)
    assert sample_digest(moved) == sample_digest(s)
    assert changed_samples({"s1": s}, {"s1": new_video}, ["s1"]) == ["s1"]
    update_snapshot(tmp_path, [s])
    update_snapshot(tmp_path, [moved])
    with pytest.raises(ConfigError, match="1 sample\\(s\\) changed .*s1"):
        update_snapshot(tmp_path, [new_video])


# --------------------------------------------------------------------------- run.json


def _config(tmp_path: Path, models: list[str], conditions: list[Condition], **kw: object) -> RunConfig:
    return RunConfig.new(
        suite="counting",
        data_dir=tmp_path / "data",
        models=[ModelSpec.parse(m) for m in models],
        conditions=conditions,
        **kw,
    )  # type: ignore[arg-type]


def test_run_config_round_trip_and_versions(tmp_path: Path) -> None:
    c = _config(
        tmp_path,
        ["openai:gpt-test"],
        [Condition(prompt="structured_trace")],
        max_attempts=5,
        budget=BudgetConfig(max_cost_usd=2.5),
    )
    c.save(tmp_path)
    loaded = RunConfig.load(tmp_path)
    assert loaded == c
    assert loaded.versions["python"].count(".") == 2 and "numpy" in loaded.versions
    assert loaded.git_revision is None or len(loaded.git_revision) == 40
    raw = json.loads((tmp_path / "run.json").read_text())
    assert raw["models"][0]["provider"] == "openai" and raw["budget"]["max_cost_usd"] == 2.5
    assert not list(tmp_path.glob(".run.json.*"))  # atomic write left no temp file


def test_reopening_may_only_add_trials(tmp_path: Path) -> None:
    native = Condition(prompt="structured_trace")
    frames = Condition(presentation=Presentation.FRAMES, fps=4, prompt="structured_trace")
    first = open_run_config(tmp_path, _config(tmp_path, ["openai:a"], [native]))
    grown = open_run_config(tmp_path, _config(tmp_path, ["openai:a", "openai:b"], [frames, native], max_attempts=4))
    assert [m.label for m in grown.models] == ["openai:a", "openai:b"]
    assert grown.conditions == (native, frames)
    assert grown.max_attempts == 4 and grown.created_at == first.created_at and len(grown.sessions) == 2
    assert RunConfig.load(tmp_path) == grown
    with pytest.raises(ConfigError, match="models removed or changed: openai:a"):
        open_run_config(tmp_path, _config(tmp_path, ["openai:b"], [native, frames]))
    with pytest.raises(ConfigError, match="conditions removed"):
        open_run_config(tmp_path, _config(tmp_path, ["openai:a", "openai:b"], [native]))
    changed = [ModelSpec.parse("openai:a", temperature=0.7), ModelSpec.parse("openai:b")]
    with pytest.raises(ConfigError, match="openai:a"):
        open_run_config(
            tmp_path,
            RunConfig.new(suite="counting", data_dir=tmp_path / "data", models=changed, conditions=[native, frames]),
        )
    with pytest.raises(ConfigError, match="suite"):
        open_run_config(
            tmp_path,
            RunConfig.new(
                suite="stress", data_dir=tmp_path / "data", models=list(grown.models), conditions=list(grown.conditions)
            ),
        )
    assert RunConfig.load(tmp_path) == grown  # failed reopens changed nothing


def test_run_config_refuses_secrets_and_bad_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    c = _config(tmp_path, [f"openai:m@http://h/v1?k={SECRET}"], [Condition(prompt="structured_trace")])
    with pytest.raises(SecretLeakError):
        c.save(tmp_path)
    assert not (tmp_path / "run.json").exists()
    with pytest.raises(DataError, match="no run.json"):
        RunConfig.load(tmp_path)
    (tmp_path / "run.json").write_text('{"suite": 3}')
    with pytest.raises(DataError, match="not a valid run config"):
        RunConfig.load(tmp_path)


def test_a_log_with_only_a_torn_line_is_nothing_to_rebuild(tmp_path: Path) -> None:
    (tmp_path / "attempts.jsonl").write_bytes(b'{"trial": {"sample_')  # killed during its first write
    with RunStore(tmp_path) as store:
        assert store.recovery.rebuilt is None and store.recovery.torn_tail_bytes == 19
        assert store.trial_rows() == []
    assert (tmp_path / "attempts.jsonl").read_bytes() == b""


def test_frames_the_service_used_and_estimated_frames_round_trip(tmp_path: Path) -> None:
    """What an adapter reports about the frames (server-sampled: estimated) survives the store and a rebuild."""
    t = make_trial(7)
    base = ok_attempt(t)
    est = base.model_copy(
        update={
            "response": base.response.model_copy(  # type: ignore[union-attr]
                update={"frames_sent": (0, 31, 63), "frames_estimated": True}
            )
        }
    )
    with RunStore(tmp_path) as store:
        store.register_trials([t])
        store.append(est)
        got = store.attempts(t.id)[0]
    assert got == est and got.response is not None and got.response.frames_estimated
    for name in ("store.sqlite", "store.sqlite-wal", "store.sqlite-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    with RunStore(tmp_path) as store:  # rebuilt from the audit log
        assert store.attempts(t.id)[0] == est
