"""Generators' per-video jobs through ``core.jobs``: the same manifest and the same video bytes whichever way the
jobs ran (serially in this process, or on an executor a ``pool(initializer=...)`` factory makes).

The pool here is a real local process pool (forkserver, as ``core.jobs`` starts its own): every job and its
arguments and result cross a process boundary by pickle, as they do to a Ray task, and the jobs complete in
whatever order the two processes finish them. One pool serves the module (its processes keep their imports),
handed out through a factory whose executor ignores ``shutdown``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.errors import ConfigError
from vidaudit.core.jobs import iter_completed, run_jobs, worker_count
from vidaudit.core.parallel import pool_context
from vidaudit.suites.stress import SUITE as STRESS
from vidaudit.suites.stress.probe import GenerateOptions

runner = CliRunner()


class _Borrowed(Executor):
    """The module's process pool behind the Executor interface; ``shutdown`` leaves it up for the next test."""

    def __init__(self, pool: ProcessPoolExecutor, calls: list[Any]) -> None:
        self._pool, self._calls = pool, calls

    def submit(self, fn, /, *args, **kwargs) -> Future:
        self._calls.append(fn.__name__)
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        return None


@pytest.fixture(scope="module")
def procs() -> Iterator[ProcessPoolExecutor]:
    with ProcessPoolExecutor(2, mp_context=pool_context()) as pool:
        yield pool


@pytest.fixture()
def factory(procs: ProcessPoolExecutor):
    """``pool(initializer=...)`` as ``--executor`` hands it; ``factory.calls`` lists the jobs submitted."""
    calls: list[str] = []

    def make(initializer=None) -> Executor:
        return _Borrowed(procs, calls)

    make.calls = calls  # type: ignore[attr-defined]
    return make


def _lane_source(root: Path) -> Path:
    from vidaudit.video.encode import write_video

    root.mkdir(parents=True)
    frames = [np.full((48, 64, 3), 20 * i, np.uint8) for i in range(12)]
    write_video(root / "a.mp4", frames, 6.0, 64, 48)
    write_video(root / "b.mp4", frames[::-1], 6.0, 64, 48)
    (root / "annotations.csv").write_text("clip,label,start_s,end_s\na.mp4,lane_change,0.5,1.5\nb.mp4,no_change,,\n")
    return root


#: every probe that renders or encodes videos, at the smallest settings that still make each kind of job
CASES: dict[str, dict[str, Any]] = {
    "camera_motion": {"seeds": 1, "settings": {"synthesis": "both", "size": "64x48"}},
    "wireframe": {"seeds": 1},
    "mosaic": {"seeds": 1},
    "cross_frame": {"seeds": 2},
    "shortcuts": {"seeds": 1},
    "expectation": {"seeds": 1},
    "lane_change": {},
}


def _videos(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.mp4"))}


@pytest.mark.parametrize("name", list(CASES))
def test_stress_probe_on_a_pool_writes_the_serial_bytes(name: str, tmp_path: Path, factory) -> None:
    opts = dict(CASES[name])
    if name == "lane_change":
        opts["source"] = _lane_source(tmp_path / "clips")
    probe = STRESS.probe(name)
    serial = probe.generate(tmp_path / "serial", GenerateOptions(**opts))
    pooled = probe.generate(tmp_path / "pooled", GenerateOptions(**opts, pool=factory))
    assert factory.calls, "no job went to the pool"
    assert pooled.read_bytes() == serial.read_bytes()  # same samples, same sha256, same order
    videos = _videos(tmp_path / "pooled")
    assert videos == _videos(tmp_path / "serial") and videos
    assert not (tmp_path / "pooled" / ".staging").exists()


def test_faithful_on_a_pool_writes_the_serial_bytes(tmp_path: Path, factory) -> None:
    from vidaudit.suites.faithful.generate import generate, specs_for

    specs = specs_for("smoke", 2)
    a = generate(specs, tmp_path / "serial", workers=1)
    b = generate(specs, tmp_path / "pooled", pool=factory)
    assert factory.calls == ["_job", "_job"]
    assert b.manifest.read_bytes() == a.manifest.read_bytes()
    assert _videos(tmp_path / "pooled") == _videos(tmp_path / "serial")
    assert {p.name: p.read_bytes() for p in (tmp_path / "pooled" / "worlds").iterdir()} == {
        p.name: p.read_bytes() for p in (tmp_path / "serial" / "worlds").iterdir()
    }


@pytest.mark.parametrize("name", ["sycophancy", "sycophancy_pairs"])
def test_probes_that_render_nothing_refuse_a_pool(name: str, tmp_path: Path, factory) -> None:
    with pytest.raises(ConfigError, match=rf"probe {name} renders no video.*drop --executor ray"):
        STRESS.probe(name).generate(tmp_path / "out", GenerateOptions(source=tmp_path, pool=factory))
    assert not (tmp_path / "out").exists() and not factory.calls


# --------------------------------------------------------------------------- the helper itself


def _square(x: int) -> int:
    return x * x


def _fail_on(x: int, bad: int) -> int:
    if x == bad:
        raise ValueError(f"job {x} failed")
    return x


def _threads(initializer=None) -> Executor:
    return ThreadPoolExecutor(3, initializer=initializer)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-1000, 1000), max_size=12))
def test_run_jobs_returns_results_in_submission_order(xs: list[int]) -> None:
    progress: list[tuple[int, int]] = []
    got = run_jobs(_square, [(x,) for x in xs], pool=_threads, on_progress=lambda d, n: progress.append((d, n)))
    assert got == [x * x for x in xs] == run_jobs(_square, [(x,) for x in xs], workers=1)
    assert progress == [(i, len(xs)) for i in range(len(xs) + 1)]
    assert sorted(i for i, _ in iter_completed(_square, [(x,) for x in xs], pool=_threads)) == list(range(len(xs)))


def test_a_failed_job_is_raised_in_the_driver_and_the_initializer_runs_only_in_workers() -> None:
    seen: list[str] = []

    def init() -> None:
        seen.append(threading.current_thread().name)

    with pytest.raises(ValueError, match="job 3 failed"):
        run_jobs(_fail_on, [(x, 3) for x in range(8)], pool=_threads, initializer=init)
    assert seen and all(name != threading.main_thread().name for name in seen)
    seen.clear()
    assert run_jobs(_fail_on, [(x, -1) for x in range(3)], workers=1, initializer=init) == [0, 1, 2]
    assert seen == []  # serially: no worker, no initializer
    made: list[int] = []
    assert run_jobs(_square, [], pool=lambda initializer=None: made.append(1)) == [] and not made
    assert worker_count(None, 0) == 1 and worker_count(8, 3) == 3
    with pytest.raises(ConfigError, match="--workers must be at least 1"):
        worker_count(0, 3)


# --------------------------------------------------------------------------- the CLI options


@pytest.mark.parametrize("command", [["generate", "stress", "--probe", "mosaic"], ["generate", "faithful"]])
def test_cli_refuses_a_ray_address_without_executor_ray(command: list[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = runner.invoke(app, [*command, "--out", str(out), "--ray-address", "127.0.0.1:1"])
    assert r.exit_code != 0 and "--ray-address needs --executor ray" in r.output
    r = runner.invoke(app, [*command, "--out", str(out), "--executor", "dask"])
    assert r.exit_code != 0 and "--executor must be one of local, ray" in r.output
    assert not out.exists()


def test_cli_generate_stress_workers_gives_the_serial_bytes(tmp_path: Path) -> None:
    args = ["generate", "stress", "--probe", "mosaic", "--seeds", "1"]
    assert runner.invoke(app, [*args, "--out", str(tmp_path / "a")]).exit_code == 0
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "b"), "--workers", "2"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "a" / "manifest.jsonl").read_bytes() == (tmp_path / "b" / "manifest.jsonl").read_bytes()


def test_a_lost_job_gives_its_stand_in_and_the_others_go_on() -> None:
    for way in ({"pool": _threads}, {"workers": 1}):
        got = dict(iter_completed(_fail_on, [(x, 3) for x in range(6)], lost=lambda e: f"lost: {e}", **way))
        assert got == {0: 0, 1: 1, 2: 2, 3: "lost: job 3 failed", 4: 4, 5: 5}, way


def test_stopping_the_iteration_cancels_the_queued_jobs_and_returns_at_once() -> None:
    gate, running, started = threading.Event(), threading.Event(), []
    pool = ThreadPoolExecutor(1)

    def job(x: int) -> int:
        started.append(x)
        if x > 0:
            running.set()
            gate.wait(timeout=30)
        return x

    completed = iter_completed(job, [(x,) for x in range(5)], pool=lambda initializer=None: pool)
    assert next(completed) == (0, 0) and running.wait(timeout=30)
    t0 = time.monotonic()
    completed.close()  # job 1 still waits on the gate: close does not wait for it
    assert time.monotonic() - t0 < 5 and not gate.is_set()
    gate.set()
    pool.shutdown(wait=True)
    assert started == [0, 1]  # jobs 2-4 were cancelled before they started
