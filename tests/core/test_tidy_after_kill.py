"""Tidy after a kill (issue 36, item 8): a killed writer's temporaries are swept by the next run, and a killed
driver takes its render workers with it.

Real processes, killed with SIGKILL: ``vidaudit perturb`` mid-encode (its ``..NAME.HOST~PID...part.mp4`` is a
temporary of a temporary, which the sweep did not know), and ``vidaudit generate counting --workers 2`` once both
workers are rendering (before, the workers finished every queued video into the dataset and then waited forever).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vidaudit.core.fileio import owner_token, stage_dir, sweep_stale_temporaries

SRC = Path(__file__).resolve().parents[2] / "src"
ENV = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}


def _dead_pid() -> int:
    return int(
        subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
        ).stdout
    )


def test_every_kind_of_temporary_of_a_dead_writer_is_swept(tmp_path: Path) -> None:
    final = tmp_path / "x.mp4"
    host = owner_token().rpartition("~")[0]
    dead, live = _dead_pid(), os.getppid()
    stale = [
        tmp_path / f".x.mp4.{host}~{dead}.ab12.tmp.mp4",  # atomic_path's
        tmp_path / f"..x.mp4.{host}~{dead}.cd34.tmp.mp4.{host}~{dead}.ef56.part.mp4",  # a temporary's own
        tmp_path / f".x.mp4.{host}~{dead}.gh78.tmp",
    ]  # stage_dir's (a folder)
    kept = [
        tmp_path / f".x.mp4.{host}~{live}.ij90.tmp.mp4",  # a writer still running
        tmp_path / f".x.mp4.otherhost~{dead}.kl12.tmp.mp4",  # another machine's (shared disk)
        tmp_path / ".x.mp4.notes",
        tmp_path / "..x.mp4.readme",
    ]  # not a temporary at all
    for p in stale[:2] + kept:
        p.write_bytes(b"x")
    stale[2].mkdir()
    (stale[2] / "inside.mp4").write_bytes(b"x")
    assert sorted(sweep_stale_temporaries(final)) == sorted(stale)
    assert all(p.exists() for p in kept) and not any(p.exists() for p in stale)
    made = stage_dir(final)
    assert made.is_dir() and made.name.startswith(f".x.mp4.{owner_token()}.") and made.name.endswith(".tmp")
    assert sweep_stale_temporaries(final) == []  # this process is alive: its folder stays


@pytest.mark.timeout(600)
def test_a_killed_perturb_leaves_nothing_the_next_run_keeps(tmp_path: Path) -> None:
    src, out = tmp_path / "src.mp4", tmp_path / "out"
    subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=640x360:rate=30",
            "-t",
            "4",
            "-pix_fmt",
            "yuv420p",
            "-c:v",
            "libx264",
            str(src),
        ],
        check=True,
        timeout=120,
    )
    args = [sys.executable, "-m", "vidaudit.cli", "perturb", str(src), "--op", "blank", "--out", str(out / "x.mp4")]
    proc = subprocess.Popen(
        [*args, "--set", "duration_s=900"], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            parts = [p for p in out.glob("..x.mp4.*.part.mp4") if p.stat().st_size > 0] if out.is_dir() else []
            if parts:
                break
            time.sleep(0.2)
        assert parts, "the encoder never started writing"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    left = sorted(p.name for p in out.iterdir())
    assert left and all(n.startswith("..x.mp4.") for n in left), left  # what the kill leaves
    r = subprocess.run([*args, "--set", "duration_s=1"], env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["x.json", "x.mp4"]


def _group(pgid: int) -> dict[int, tuple[int, str]]:
    """pid -> (ppid, state) of every process of the group (zombies included; their state is Z)."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # state ppid pgrp ...
        if int(fields[2]) == pgid:
            out[int(d.name)] = (int(fields[1]), fields[0])
    return out


def _videos(out: Path) -> list[str]:
    return sorted(p.name for p in out.rglob("*.mp4") if not p.name.startswith("."))


@pytest.mark.timeout(600)
def test_generate_workers_die_with_their_driver(tmp_path: Path) -> None:
    out = tmp_path / "data"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vidaudit.cli",
            "generate",
            "counting",
            "--preset",
            "smoke",
            "--out",
            str(out),
            "--workers",
            "2",
        ],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    pgid = proc.pid
    try:
        deadline = time.monotonic() + 300
        workers: list[int] = []
        while time.monotonic() < deadline and proc.poll() is None:
            group = _group(pgid)
            servers = [p for p, (ppid, _) in group.items() if ppid == proc.pid and p != proc.pid]
            workers = [p for p, (ppid, st) in group.items() if ppid in servers and st != "Z"]
            if len(workers) >= 2:
                break
            time.sleep(0.2)
        assert len(workers) >= 2 and proc.poll() is None, "the pool never started"
        os.kill(proc.pid, signal.SIGKILL)  # the driver only, as an OOM killer or `kill -9 PID` would
        proc.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and [p for p, (_, st) in _group(pgid).items() if st != "Z"]:
            time.sleep(0.2)
        assert not [p for p, (_, st) in _group(pgid).items() if st != "Z"], _group(pgid)  # workers, forkserver
        assert len(_videos(out)) < 18  # they stopped where they were, never finishing the queued videos
    finally:
        for pid in _group(pgid):  # only the processes this test started (its own session)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
