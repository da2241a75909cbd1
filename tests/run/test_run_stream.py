"""The streamed plan stores exactly what today's planner plans, and a SIGKILL mid-run loses no stored answer.

Today's planner is ``PlanStream(...).planned()`` (the plan as a list) with each trial called once, directly, in plan order: the
reference. The streamed run (``vidaudit.run.session.execute``: a ``PlanStream`` registered in plan order and
read by each model's lane a window ahead, attempts committed in groups) and the list path of the executor
(``run_trials(list)``) must store the same trials in the same order, with the same canonical JSON and ids
(hashed the old way, ``sha256_json(trial.model_dump())``), and one ok attempt per trial holding the same
answer and frames. On the smoke sets of all three suites, with the built-in models.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.hashing import canonical_json, sha256_json
from vidaudit.core.manifest import load_samples
from vidaudit.core.registry import get_suite
from vidaudit.core.types import Attempt, ModelSpec, Sample, Status
from vidaudit.models.base import request_options
from vidaudit.run.audit_log import read_audit_log
from vidaudit.run.conditions import parse_condition
from vidaudit.run.executor import run_trials
from vidaudit.run.plan import PlanStream
from vidaudit.run.request import PlanRequest
from vidaudit.run.request_builder import RequestBuilder
from vidaudit.run.session import execute, prepare_run
from vidaudit.run.store.reader import StoreReader
from vidaudit.run.store.schema import DB_NAME
from vidaudit.run.store.writer import RunStore
from vidaudit.suites.counting.generate import generate
from vidaudit.suites.counting.grid import grid

runner = CliRunner()
MODELS = ("oracle", "chance")
CONDITIONS = ("native", "frames@1")


@pytest.fixture(scope="module")
def suite_data(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The smoke sets of the three suites (counting: the session's; faithful and stress rendered here)."""
    root = tmp_path_factory.mktemp("suites")
    for args in (
        ["generate", "faithful", "--preset", "smoke", "--workers", "1", "--out", str(root / "faithful")],
        ["generate", "stress", "--probe", "mosaic", "--out", str(root / "stress")],
    ):
        r = runner.invoke(app, args)
        assert r.exit_code == 0, r.output
    return {"counting": smoke_dir, "faithful": root / "faithful", "stress": root / "stress"}


def _conditions(suite: str) -> list:
    """The conditions `vidaudit run SUITE --condition C` makes (the suite's default prompt)."""
    return [parse_condition(c, get_suite(suite).default_prompt) for c in CONDITIONS]


def _reference(data: Path, suite: str) -> tuple[list[tuple[str, str]], dict[str, tuple[str, list, list]]]:
    """Today's planner: ``PlanStream(...).planned()`` as a list, each trial called once in plan order, ids hashed the old way."""
    models = [ModelSpec.parse(m) for m in MODELS]
    samples = load_samples(data)
    s = get_suite(suite)
    _, adapters, caps = prepare_run(PlanRequest(data=data, models=models, conditions=_conditions(suite), suite=suite))
    planned = PlanStream(
        samples,
        _conditions(suite),
        models,
        suite=s,
        caps_by_model=caps,
        options_by_model={k: request_options(a) for k, a in adapters.items()},
    ).planned()
    trials = [
        (sha256_json(p.trial.model_dump(mode="json")), canonical_json(p.trial.model_dump(mode="json"))) for p in planned
    ]
    build = RequestBuilder(data)

    async def call_all() -> dict[str, tuple[str, list, list]]:
        out = {}
        for p in planned:
            request = build(p)
            response = await adapters[p.trial.model.label].generate(request)
            idx, ts = request.sent_frames()
            out[p.id] = (response.text, idx, ts)
        return out

    return trials, asyncio.run(call_all())


def _stored(run: Path) -> tuple[list[tuple[str, str]], dict[str, tuple[str, list, list]], int]:
    with sqlite3.connect(f"file:{run / DB_NAME}?mode=ro", uri=True) as con:
        trials = con.execute("select trial_id, trial_json from trials order by created_at, trial_id").fetchall()
        rows = con.execute("select trial_id, status, text, frame_indices, frame_times from attempts").fetchall()
    assert all(r[1] == "ok" for r in rows)
    return ([(t, j) for t, j in trials], {r[0]: (r[2], json.loads(r[3]), json.loads(r[4])) for r in rows}, len(rows))


@pytest.mark.parametrize("suite", ["counting", "faithful", "stress"])
def test_a_streamed_run_stores_what_todays_planner_plans(
    suite: str, suite_data: dict[str, Path], tmp_path: Path
) -> None:
    data = suite_data[suite]
    trials, answers = _reference(data, suite)
    assert len(trials) == len(answers) > 0
    models = [ModelSpec.parse(m) for m in MODELS]
    # the streamed run, as `vidaudit run` makes it
    outcome = execute(data, tmp_path / "stream", models, _conditions(suite), suite=suite)
    assert outcome.summary is not None and outcome.summary.called == len(trials) == outcome.trials_ok
    # the executor's list path on the same plan
    planned, adapters, _ = prepare_run(
        PlanRequest(data=data, models=models, conditions=_conditions(suite), suite=suite)
    )
    with RunStore(tmp_path / "list") as store:
        asyncio.run(run_trials(planned, adapters, store, RequestBuilder(data)))
    for run in (tmp_path / "stream", tmp_path / "list"):
        got_trials, got_answers, n_attempts = _stored(run)
        assert got_trials == trials, run  # same ids, same JSON, same order (plan order)
        assert got_answers == answers, run  # one ok attempt per trial, the same answer and frames
        assert n_attempts == len(trials)
    # the stream's own ids and JSON are the old hashes of the same trials, in plan order
    stream = PlanStream(
        load_samples(data),
        _conditions(suite),
        models,
        suite=get_suite(suite),
        caps_by_model={k: a.capabilities for k, a in adapters.items()},
        options_by_model={k: request_options(a) for k, a in adapters.items()},
    )
    assert [(p.id, p.keyed.json if p.keyed else None) for p in stream] == trials
    # a resume finds every trial done and calls nothing
    again = execute(data, tmp_path / "stream", models, _conditions(suite), suite=suite)
    assert again.summary is not None and again.summary.called == 0
    assert again.summary.skipped_already_ok == len(trials)


# --------------------------------------------------------------------------- commit groups


def _attempt(tid: str, n: int = 1) -> Attempt:
    from vidaudit.core.types import Response

    return Attempt(
        trial_id=tid, attempt=n, status=Status.OK, response=Response(text=f"answer {tid}"), started_at=0.0, ended_at=1.0
    )


def test_a_commit_group_is_stored_when_full_or_late_and_a_bad_attempt_spares_the_others(tmp_path: Path) -> None:
    from vidaudit.core.errors import DataError
    from vidaudit.core.types import Condition, Trial

    trials = [
        Trial(
            sample_id=f"s{i}",
            video_sha256=None,
            condition=Condition(prompt="structured_trace"),
            model=ModelSpec.parse("oracle"),
        )
        for i in range(5)
    ]
    with RunStore(tmp_path) as store:
        store.register_trials(trials)
        with store.grouped(3, 60.0):
            store.append(_attempt(trials[0].id))
            store.append(_attempt(trials[1].id))
            assert store.pending == 2 and not store.flush_due()
            with StoreReader(tmp_path) as reader:  # not committed yet: no reader sees it
                assert reader.attempt_counts() == {}
            assert store.trial_status([trials[0].id])[trials[0].id].ok  # the writer counts its pending group
            store.append(_attempt(trials[2].id))
            assert store.flush_due()
            assert store.flush() == 3 and store.pending == 0
            with StoreReader(tmp_path) as reader:
                assert set(reader.ok_trial_ids()) == {t.id for t in trials[:3]}
        with store.grouped(100, 0.0):
            store.append(_attempt(trials[3].id))
            assert store.flush_due()  # the oldest pending is older than 0 s
            store.append(_attempt(trials[0].id))  # a duplicate inside a group
            store.append(_attempt(trials[4].id))
            with pytest.raises(DataError, match="already stored"):
                store.flush()
        assert set(store.ok_trial_ids()) == {t.id for t in trials}
    log = read_audit_log(tmp_path / "attempts.jsonl")
    assert sorted(k[0] for k in log.keys) == sorted(t.id for t in trials)  # the log has each stored attempt once


# --------------------------------------------------------------------------- SIGKILL mid-run


@pytest.fixture(scope="module")
def dry_grid(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """A dry-run manifest (350 samples, no video files) and four simulated models' surfaces."""
    out = tmp_path_factory.mktemp("dry")
    generate(
        grid(["blinking"], counts=(0, 1, 2, 3), frequencies=(0.5, 2.0), seeds=range(50)), out / "data", dry_run=True
    )
    surfaces = []
    for name, acc in (("a", 0.6), ("b", 0.3), ("c", 0.8), ("d", 0.1)):
        path = out / f"{name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(("domain", "N", "F", "accuracy"))
            w.writerow(("blinking", 0, 1.0, acc))
            w.writerows(("blinking", n, f, acc) for n in (1, 2, 3) for f in (0.5, 2.0))
        surfaces.append(path)
    return out / "data", surfaces


def _log_attempts(run: Path) -> dict[tuple[str, int], dict]:
    return {
        (r["attempt"]["trial_id"], r["attempt"]["attempt"]): r["attempt"]
        for r in read_audit_log(run / "attempts.jsonl").of_kind("attempt")
    }


def _store_attempts(run: Path) -> dict[tuple[str, int], tuple]:
    with sqlite3.connect(f"file:{run / DB_NAME}?mode=ro", uri=True) as con:
        return {
            (r[0], r[1]): r[2:]
            for r in con.execute("select trial_id, attempt, status, text, frame_indices, frame_times from attempts")
        }


def test_sigkill_mid_run_loses_no_stored_answer_and_the_resume_completes_once_each(
    dry_grid: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """A real `vidaudit run` (4 simulated models x 8 conditions x 350 samples = 11,200 trials, committed in
    groups) is SIGKILLed once its audit log holds 300 attempts: every attempt the store or the log holds
    then is there, unchanged, after the resume, and the resumed run ends with exactly one ok attempt per
    trial (none lost, none repeated)."""
    data, surfaces = dry_grid
    run = tmp_path / "run"
    conds = ["native", "frames@1", "frames@2", "frames@4", "frames@8", "frames@10", "frames@16", "keyframes"]
    cmd = [sys.executable, "-m", "vidaudit.cli", "run", "counting", "--data", str(data), "--out", str(run)]
    for s in surfaces:
        cmd += ["--model", f"simulated:{s}"]
    for c in conds:
        cmd += ["--condition", c]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    log = run / "attempts.jsonl"
    deadline = time.time() + 300
    seen, offset = 0, 0
    while time.time() < deadline and proc.poll() is None and seen < 300:
        if log.exists():
            with open(log, "rb") as fh:  # only what was appended since the last look
                fh.seek(offset)
                new = fh.read()
            offset += len(new)
            seen += new.count(b'{"attempt"')
        time.sleep(0.005)
    assert proc.poll() is None, "the run ended before it could be killed; make it larger"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    total = 4 * 8 * 350
    in_log = _log_attempts(run)
    in_store = _store_attempts(run)
    assert 300 <= len(in_log) < total, "killed after the last attempt was stored (a loaded machine?)"
    assert set(in_log) <= set(in_store)  # the store commits a group before its log lines are written
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    after = _store_attempts(run)
    for key, row in in_store.items():  # every answer stored before the kill is still there, unchanged
        assert after[key] == row
    assert set(_log_attempts(run)) == set(after)  # the writer re-appended what the killed log lacked
    per_trial: dict[str, list[str]] = {}
    for (tid, _), row in after.items():
        per_trial.setdefault(tid, []).append(row[0])
    assert len(per_trial) == total
    assert all(statuses == ["ok"] for statuses in per_trial.values())  # one attempt each: none repeated
    with StoreReader(run) as store:
        assert len(store.trial_rows()) == len(per_trial) and store.integrity_check() == "ok"


def test_a_writer_finds_what_the_log_lacks_at_its_end_or_in_its_middle(tmp_path: Path) -> None:
    """Opening a run for writing scans the log without parsing it; a log that lacks lines (the last group's,
    as a kill between commit and log write leaves it, or one cut from the middle) gets them back."""
    from vidaudit.core.types import Condition, Trial
    from vidaudit.run.audit_log import scan_audit_log

    trials = [
        Trial(
            sample_id=f"s{i}",
            video_sha256=None,
            condition=Condition(prompt="structured_trace"),
            model=ModelSpec.parse("oracle"),
        )
        for i in range(6)
    ]
    with RunStore(tmp_path) as store:
        store.register_trials(trials)
        with store.grouped(100, 60.0):
            for t in trials:
                store.append(_attempt(t.id))
    log = tmp_path / "attempts.jsonl"
    scan = scan_audit_log(log)
    assert scan.counts == {"trial": 6, "attempt": 6, "stage_call": 0} and not scan.unknown and scan.torn_tail is None
    with RunStore(tmp_path) as store:
        assert store.recovery.clean
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:-2]))  # the last two attempts' lines never reached the log
    with RunStore(tmp_path) as store:
        assert store.recovery.reappended == [(trials[4].id, 1), (trials[5].id, 1)]
    lines = log.read_bytes().splitlines(keepends=True)
    cut = json.loads(lines[7])["attempt"]
    assert lines[8].startswith(b'{"attempt"')
    log.write_bytes(b"".join(lines[:7] + lines[8:]))  # an attempt line cut from the middle
    with RunStore(tmp_path) as store:
        assert store.recovery.reappended == [(cut["trial_id"], 1)]
    with RunStore(tmp_path) as store:
        assert store.recovery.clean
    assert sorted(k[0] for k in read_audit_log(log).keys) == sorted(t.id for t in trials)


# --------------------------------------------------------------------------- the plan's servability check


def test_the_plan_check_finds_what_reading_every_trial_finds(smoke_dir: Path) -> None:
    """``PlanStream.check`` reads only the trials that can add a problem (each (model, condition)'s first, those that
    send no frame or more images than the model takes), selection sizes counted once per resolved condition: the
    same problems, in the same order, as ``servable_problems`` over every trial, for models that take few images,
    none, or no native video, sharing conditions."""
    from vidaudit.models.base import Capabilities
    from vidaudit.run.servable import servable_problems

    samples = load_samples(smoke_dir)
    # and samples on other clocks, a 10 s clip first (frames@1 sends 10 <= 16 images, and 40 > 16 of a 40 s clip):
    # sizes are counted once per clock, and a clip's must not be another's (the check would skip the long clip)
    for k, (sid, n) in enumerate((("short", 300), ("long", 1200), ("short-again", 300))):
        row = samples[1].model_dump(mode="json")
        row["sample_id"] = f"{row['sample_id']}-{sid}"
        row["video"].update(n_frames=n, duration_s=n / row["video"]["fps"])
        samples.insert(0 if k == 0 else len(samples), Sample.model_validate(row))
    caps = {
        "constant:a": Capabilities(native_video=False, images=True, max_images=3),
        "constant:b": Capabilities(native_video=True, images=False),
        "constant:c": Capabilities(native_video=True, images=True, max_images=None),
        "constant:d": Capabilities(native_video=True, images=True, max_images=16),
    }
    models = [ModelSpec.parse(m) for m in caps]
    conds = [
        parse_condition(c, "structured_trace")
        for c in ("native@1", "frames@1", "frames@8", "keyframes", "frames#4", "native@all")
    ]
    stream = PlanStream(samples, conds, models, suite=get_suite("counting"), caps_by_model=caps)
    every = servable_problems(
        ((g.label, g.condition, s, sel, pin.video if pin else s.video) for g, s, sel, pin in stream.inputs()), caps
    )
    assert len(every) > len(caps)  # once-per-group problems and per-sample ones (a max of 3 images)
    over_16 = [p for p in every if p.startswith("constant:d takes at most 16") and " frames@1/" in p]
    assert any(p.endswith("-long; lower K or use native video") for p in over_16)
    assert over_16 and not any("-short" in p for p in over_16)
    assert servable_problems(stream._to_check([]), caps) == every
    assert servable_problems(stream._to_check([]), caps) == every  # again, from the counted sizes


def test_the_lanes_pass_takes_registrations_ids_and_hashes_again_where_they_do_not_fit(smoke_dir: Path) -> None:
    """After a full ``keys`` pass (registration) a model's trials are read again without hashing them: the same ids,
    JSON and order as a stream that never registered (each trial hashed, and the old way too). A recorded walk that
    does not fit the new one (a trial's sample index differs: e.g. a perturbed input refused in one walk only; a
    group's first id differs; the record ends early) is dropped from that trial on and the rest hashed again."""
    from vidaudit.run.session import prepare_stream

    models = [ModelSpec.parse(m) for m in MODELS]
    conds = [parse_condition(c, "structured_trace") for c in ("native", "frames@1", "keyframes")]

    def seen(s: PlanStream, label: str) -> list[tuple[str, str]]:
        return [(p.id, p.keyed.json if p.keyed else "") for p in s.for_model(label)]

    fresh = prepare_stream(PlanRequest(data=smoke_dir, models=models, conditions=conds))[0]
    want = {m.label: seen(fresh, m.label) for m in models}
    assert all(tid == sha256_json(json.loads(text)) for rows in want.values() for tid, text in rows)
    registered = prepare_stream(PlanRequest(data=smoke_dir, models=models, conditions=conds))[0]
    assert [d.id for d in registered.keys()] == [tid for m in models for tid, _ in want[m.label]]
    assert set(registered._ids) == {m.label for m in models}
    for m in models:
        assert seen(registered, m.label) == want[m.label]
    label = models[0].label
    ids, order = registered._ids[label]
    n = len(order)
    assert n == len(want[label]) > 4 and len(ids) == 32 * n
    tampered = [
        (ids[32:] + bytes(32), order),  # ids one off, the indices right
        (ids[:32] + ids[64:], type(order)("I", [order[0], *order[2:]])),  # a trial skipped in the record
        (ids[:-64], order[:-2]),
    ]  # the record ends early
    for kept in tampered:
        registered._ids[label] = kept
        assert seen(registered, label) == want[label]
