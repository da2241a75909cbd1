"""The audit's datasets under a shared ``--data-root`` (issue 36, items 7 and 9): locked, certified, checked on reuse.

Two real ``vidaudit audit`` processes share one data root: the second waits for the first (saying so) and reuses
what it made, and the folder they both run on is whole. A folder damaged after it was certified (a video
deleted, the manifest cut short) is generated again, or refused when another audit runs on it; a marker from
before markers listed files is checked the long way once. The content key covers the seeds: a paper audit never
reuses a standard audit's one-seed counting set. Everything is the counting smoke preset (18 videos).

Rendering the set is what costs here, so it is rendered only where rendering is what is checked: the two
concurrency tests and each regeneration ``vidaudit audit`` performs. A folder that only has to be there, certified
(tests/auditseed.py), and the regenerations of the in-process ``ensure`` test are the session's smoke set
(``smoke_dir``: the 18 videos the counting part renders, byte for byte), copied in by the generator given to ``ensure``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from auditseed import seed_counting_smoke
from vidaudit.core.contract.profile import AuditPart
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.registry import get_suite
from vidaudit.tools.audit.datasets import LOCKS_DIR, MARKER, ensure
from vidaudit.tools.audit.session import PlannedPart, dataset_key, plan_parts

SRC = Path(__file__).resolve().parents[3] / "src"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "300"}


def _audit_args(out: Path, root: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "vidaudit.cli",
        "audit",
        "--model",
        "oracle",
        "--suite",
        "counting",
        "--budget",
        "smoke",
        "--out",
        str(out),
        "--data-root",
        str(root),
        "--workers",
        "1",
    ]


def _audit(out: Path, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_audit_args(out, root), capture_output=True, text=True, check=False, timeout=900, env=_env())


def _part(root: Path) -> PlannedPart:
    return next(p for p in plan_parts("smoke", root.parent / "X", data_root=root, suites=["counting"]))


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _assert_whole(data: Path) -> None:
    """Every video the manifest names is there with its sha256, and the marker lists exactly the folder's files
    with their sizes and sha256s (read from disk here, not from the code that wrote them)."""
    rows = [json.loads(x) for x in (data / "manifest.jsonl").read_text().splitlines()]
    assert len(rows) == 18
    for r in rows:
        assert _sha(data / r["video"]["path"]) == r["video"]["sha256"], r["sample_id"]
    marker = json.loads((data / MARKER).read_text())
    on_disk = {p.relative_to(data).as_posix(): p for p in data.rglob("*") if p.is_file() and p.name != MARKER}
    assert set(marker["files"]) == set(on_disk)
    for rel, p in on_disk.items():
        assert marker["files"][rel] == {"size": p.stat().st_size, "sha256": _sha(p)}, rel


def _scores(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "runs" / "counting" / "scores.jsonl").read_text().splitlines()]


def _all_right(out: Path) -> None:
    scores = _scores(out)
    assert len(scores) == 18 and all(r["status"] == "ok" and r["correct"] for r in scores)


def _text(r: subprocess.CompletedProcess[str]) -> str:
    return " ".join((r.stdout + r.stderr).split())


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_second_audit_waits_for_the_first_and_reuses_its_data(tmp_path: Path) -> None:
    """Both audits start while a third holds the folder's generation lock: both wait, naming it; once it is let go,
    one generates and the other reuses, and both run all 18 trials on a whole folder."""
    root = tmp_path / "shared"
    data = _part(root).data_dir
    (root / LOCKS_DIR).mkdir(parents=True)
    fd = os.open(root / LOCKS_DIR / f"{data.name}.generate", os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.pwrite(fd, b"424242", 0)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    procs = []
    try:
        for name, log in zip("AB", logs, strict=True):
            with open(log, "w") as f:
                procs.append(
                    subprocess.Popen(_audit_args(tmp_path / name, root), stdout=f, stderr=subprocess.STDOUT, env=_env())
                )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not all(
            "waiting for process 424242" in " ".join(x.read_text().split()) for x in logs
        ):
            assert all(p.poll() is None for p in procs), [x.read_text() for x in logs]
            time.sleep(0.5)
        assert all("waiting for process 424242" in " ".join(x.read_text().split()) for x in logs)
        assert not data.exists()  # nothing was generated while the lock was held
    finally:
        os.close(fd)
    for p in procs:
        assert p.wait(timeout=600) == 0, [x.read_text() for x in logs]
    texts = [" ".join(x.read_text().split()) for x in logs]
    assert sorted("generating the smoke preset" in t for t in texts) == [False, True], texts
    assert sorted(f"reused {data}" in t for t in texts) == [False, True], texts
    _assert_whole(data)
    for name in "AB":
        _all_right(tmp_path / name)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_two_audits_started_together_both_finish_on_whole_data(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    procs = [
        subprocess.Popen(
            _audit_args(tmp_path / name, root), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env()
        )
        for name in "AB"
    ]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all("Traceback" not in o for o in outs)
    assert sum("generating the smoke preset" in o for o in outs) == 1, outs
    _assert_whole(_part(root).data_dir)
    for name in "AB":
        _all_right(tmp_path / name)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_damaged_folder_is_generated_again(smoke_dir: Path, tmp_path: Path) -> None:
    """A certified folder (as an audit leaves it; the tests above make one through the CLI) damaged two ways: each
    time ``vidaudit audit`` says why it cannot reuse it, renders it again and runs all 18 trials on it."""
    root = tmp_path / "shared"
    data = seed_counting_smoke(root, smoke_dir)
    assert data == _part(root).data_dir
    _assert_whole(data)
    victim = sorted((data / "videos").rglob("*.mp4"))[3]
    victim.unlink()
    r = _audit(tmp_path / "B", root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"cannot be reused ({victim.relative_to(data).as_posix()} is missing); generating it again" in _text(r)
    _assert_whole(data)
    _all_right(tmp_path / "B")
    manifest = data / "manifest.jsonl"
    manifest.write_text("".join(manifest.read_text().splitlines(keepends=True)[:3]))  # cut to 3 samples
    r = _audit(tmp_path / "C", root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cannot be reused (manifest.jsonl is" in _text(r) and "generating it again" in _text(r)
    _assert_whole(data)
    _all_right(tmp_path / "C")  # 18 trials, not 3


def _copied(smoke_dir: Path, data: Path) -> Callable[[], object]:
    """A generator for ``ensure`` that makes the folder by copying the session's smoke set (what the counting
    part's generator renders, byte for byte): ``copytree`` fails if ``ensure`` left the damaged folder in place."""
    return lambda: shutil.copytree(smoke_dir, data)


def test_a_damaged_folder_in_use_is_refused_and_an_old_marker_is_checked_once(smoke_dir: Path, tmp_path: Path) -> None:
    """``ensure``'s decisions on one folder, in process; each generation it asks for is a copy of the smoke set
    (``_copied``), so what is checked is what ``ensure`` decides and that what it certifies is whole."""
    p = _part(tmp_path / "shared")
    identity = p.part.identity("counting")
    lines: list[str] = []
    ensure(p.data_dir, p.key, identity, _copied(smoke_dir, p.data_dir), log=lines.append, label="counting")
    _assert_whole(p.data_dir)
    # a marker written before markers listed files: checked the long way (every video's sha256), then rewritten
    (p.data_dir / MARKER).write_text(json.dumps({"key": p.key, "identity": identity, "vidaudit": "0.0.9"}))
    ensure(p.data_dir, p.key, identity, _copied(smoke_dir, p.data_dir), log=lines.append, label="counting")
    assert lines[-1] == f"data  counting: reused {p.data_dir}"
    _assert_whole(p.data_dir)
    # an old marker over a video edited in place: generated again
    video = sorted((p.data_dir / "videos").rglob("*.mp4"))[0]
    video.write_bytes(video.read_bytes()[:-10] + b"0123456789")
    (p.data_dir / MARKER).write_text(json.dumps({"key": p.key, "identity": identity, "vidaudit": "0.0.9"}))
    ensure(p.data_dir, p.key, identity, _copied(smoke_dir, p.data_dir), log=lines.append, label="counting")
    assert any("does not match the manifest's sha256); generating it again" in x for x in lines)
    _assert_whole(p.data_dir)
    # damaged while another audit runs on it: refused, the folder left as it is
    video = sorted((p.data_dir / "videos").rglob("*.mp4"))[5]
    video.unlink()
    before = sorted(x.name for x in p.data_dir.rglob("*"))
    fd = os.open(p.data_dir.parent / LOCKS_DIR / f"{p.data_dir.name}.use", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_SH)
    try:
        with pytest.raises(ConfigError, match="another audit is running on it"):
            ensure(p.data_dir, p.key, identity, _copied(smoke_dir, p.data_dir), log=lines.append, label="counting")
        assert sorted(x.name for x in p.data_dir.rglob("*")) == before
    finally:
        os.close(fd)
    ensure(p.data_dir, p.key, identity, _copied(smoke_dir, p.data_dir), log=lines.append, label="counting")
    _assert_whole(p.data_dir)


def test_the_dataset_key_covers_the_seeds(tmp_path: Path) -> None:
    """A paper audit after a standard one must not reuse the standard's one-seed counting set (219 samples)."""
    counting = get_suite("counting")
    one_seed, preset = (
        AuditPart("counting", "paper", ("frames@1",), seeds=1),
        AuditPart("counting", "paper", ("frames@1",)),
    )
    assert dataset_key(counting, one_seed) != dataset_key(counting, preset)
    assert dataset_key(counting, one_seed) != dataset_key(
        counting, AuditPart("counting", "paper", ("frames@1",), seeds=2)
    )
    root = tmp_path / "root"
    standard = {p.part.name: p for p in plan_parts("standard", tmp_path / "S", data_root=root)}
    paper = {p.part.name: p for p in plan_parts("paper", tmp_path / "P", data_root=root)}
    assert standard["counting"].part.seeds == 1 and paper["counting"].part.seeds is None
    assert standard["counting"].key != paper["counting"].key
    assert standard["counting"].data_dir != paper["counting"].data_dir
    # parts that are the same dataset at both budgets share it (reuse by content)
    assert standard["camera_motion"].data_dir == paper["camera_motion"].data_dir


def test_a_generation_that_ends_without_a_video_is_never_marked_done(smoke_dir: Path, tmp_path: Path) -> None:
    """What happened when two audits raced: a video gone by the time the generation ended. No marker is written,
    and the next audit generates the folder anew."""
    p = _part(tmp_path / "shared")
    identity = p.part.identity("counting")

    def racing() -> None:  # the counting smoke data, as generated, then one video removed under it
        shutil.copytree(smoke_dir, p.data_dir, ignore=shutil.ignore_patterns("*.partial.jsonl"))
        sorted((p.data_dir / "videos").rglob("*.mp4"))[4].unlink()

    with pytest.raises(DataError, match="was generated but is not whole .* is missing"):
        ensure(p.data_dir, p.key, identity, racing, log=lambda _: None, label="counting")
    assert not (p.data_dir / MARKER).exists()
    lines: list[str] = []
    ensure(
        p.data_dir, p.key, identity, lambda: shutil.copytree(smoke_dir, p.data_dir), log=lines.append, label="counting"
    )
    assert "cannot be reused (no finished generation is marked there); generating it again" in lines[0]
    _assert_whole(p.data_dir)
