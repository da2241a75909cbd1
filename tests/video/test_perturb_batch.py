"""``vidaudit perturb --batch`` and the folder shorthand: validated up front, rendered once per content key,
the same bytes and rows with 1 or 2 workers, resumed from the outputs, a failing job reported by its line."""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from test_perturb_fixtures import make_video
from vidaudit.cli import app
from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.parallel import pool_context
from vidaudit.video.perturb.batch import BATCH, CACHE, PARTIAL, folder_jobs, load_jobs, perturb_batch
from vidaudit.video.perturb.cache import cache_paths
from vidaudit.video.probe import probe

W, H = 160, 120


def make_jobs(root: Path) -> Path:
    """Three tiny videos (1-1.5 s at 160x120) and four jobs; the last has the first's content, another name."""
    src = root / "src"
    src.mkdir(parents=True)
    make_video(src / "a.mp4", n=12, fps=10.0, w=W, h=H)
    make_video(src / "b.mp4", n=15, fps=10.0, w=W, h=H, second=True)
    make_video(src / "c.mp4", n=10, fps=10.0, w=W, h=H)
    jobs = [
        {"source": "src/a.mp4", "op": "reverse", "seed": 0},
        {"source": "src/b.mp4", "op": "shuffle_frames", "params": {"start_s": 0.2}, "seed": 7, "name": "b_shuf"},
        {"source": str(src / "c.mp4"), "op": "noise", "params": {"sigma": 10, "duration_s": None}, "seed": 3},
        {"source": "src/a.mp4", "op": "reverse", "params": {"start_s": 0.0}, "seed": 0, "name": "a_again"},
    ]
    path = root / "jobs.jsonl"
    path.write_text("\n".join(json.dumps(j) for j in jobs) + "\n\n", encoding="utf-8")
    return path


def outputs(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The jobs rendered once with one worker (shared by the tests that only read it)."""
    root = tmp_path_factory.mktemp("batch")
    jobs = make_jobs(root)
    res = perturb_batch(load_jobs(jobs), root / "one", workers=1)
    assert (res.rendered, res.cached, res.reused, res.failed) == (3, 1, 0, [])
    return jobs, root / "one"


def test_rows_describe_the_outputs_and_identical_jobs_render_once(batch: tuple[Path, Path]) -> None:
    jobs, out = batch
    rows = [json.loads(x) for x in (out / BATCH).read_text().splitlines()]
    assert [r["name"] for r in rows] == ["a-reverse", "b_shuf", "c-noise", "a_again"]
    assert [r["line"] for r in rows] == [1, 2, 3, 4]
    assert not (out / PARTIAL).exists()
    for r in rows:
        mp4 = out / r["video"]
        meta = json.loads(mp4.with_suffix(".json").read_text())
        assert r["sha256"] == sha256_file(mp4) == meta["sha256"] and r["error"] is None
        assert r["n_frames"] == probe(mp4).n_frames == meta["n_frames"]
        assert r["source_sha256"] == sha256_file(r["source"]) and r["cache_key"] == meta["cache_key"]
    assert rows[1]["params"] == {"start_s": 0.2, "end_s": None} and rows[1]["seed"] == 7  # defaults filled in
    assert rows[0]["cache_key"] == rows[3]["cache_key"] and rows[0]["sha256"] == rows[3]["sha256"]
    assert len(list((out / CACHE).rglob("*.mp4"))) == 3  # one entry per content
    assert rows[0]["n_frames"] == 12 and rows[2]["n_frames"] == 10


def test_two_workers_write_the_same_bytes_and_rows(batch: tuple[Path, Path], tmp_path: Path) -> None:
    jobs, one = batch
    res = perturb_batch(load_jobs(jobs), tmp_path / "two", workers=2)
    assert (res.rendered, res.cached, res.failed) == (3, 1, [])
    assert outputs(tmp_path / "two") == outputs(one)


def test_single_video_form_writes_the_same_files(batch: tuple[Path, Path], tmp_path: Path) -> None:
    jobs, one = batch
    r = CliRunner().invoke(
        app,
        [
            "perturb",
            str(jobs.parent / "src/b.mp4"),
            "--op",
            "shuffle_frames",
            "--set",
            "start_s=0.2",
            "--seed",
            "7",
            "--out",
            str(tmp_path / "x.mp4"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert (tmp_path / "x.mp4").read_bytes() == (one / "b_shuf.mp4").read_bytes()
    assert (tmp_path / "x.json").read_bytes() == (one / "b_shuf.json").read_bytes()


def test_resume_reuses_outputs_whose_content_key_matches(batch: tuple[Path, Path], tmp_path: Path) -> None:
    jobs, one = batch
    out = tmp_path / "again"
    shutil.copytree(one, out)
    before = outputs(out)
    (out / "b_shuf.mp4").unlink()  # a lost output, its cache entry kept: placed again
    res = perturb_batch(load_jobs(jobs), out)
    assert (res.rendered, res.cached, res.reused) == (0, 1, 3)
    row_b = json.loads((out / BATCH).read_text().splitlines()[1])
    mp4, _ = cache_paths(out / CACHE, row_b["cache_key"])
    (out / "c-noise.json").write_text("{}")  # unreadable metadata, and a lost cache entry too
    c_key = json.loads((out / BATCH).read_text().splitlines()[2])["cache_key"]
    for p in cache_paths(out / CACHE, c_key):
        p.unlink()
    res = perturb_batch(load_jobs(jobs), out)
    assert (res.rendered, res.cached, res.reused) == (1, 0, 3)
    assert outputs(out) == before and mp4.is_file()
    (out / "a-reverse.json").write_text((out / "b_shuf.json").read_text())  # another job's output: not reused
    res = perturb_batch(load_jobs(jobs), out)
    assert (res.reused, res.cached) == (3, 1) and outputs(out) == before


def test_cli_batch_prints_where_the_outputs_are(batch: tuple[Path, Path], tmp_path: Path) -> None:
    jobs, one = batch
    r = CliRunner().invoke(app, ["perturb", "--batch", str(jobs), "--out", str(tmp_path / "cli")])
    assert r.exit_code == 0, r.output
    assert "4 of 4 job(s)" in r.output and "3 rendered" in r.output and str(tmp_path / "cli" / BATCH) in r.output
    assert outputs(tmp_path / "cli") == outputs(one)
    r = CliRunner().invoke(app, ["perturb", "--batch", str(jobs), "--out", str(tmp_path / "cli")])
    assert r.exit_code == 0 and "4 reused" in r.output


def test_every_bad_line_is_listed_and_nothing_is_written(batch: tuple[Path, Path], tmp_path: Path) -> None:
    jobs, _ = batch
    src = jobs.parent / "src"
    lines = [
        json.dumps({"source": str(src / "a.mp4"), "op": "reverse"}),  # 1 fine
        "{not json",  # 2
        json.dumps({"source": str(src / "a.mp4"), "op": "melt"}),  # 3 unknown op
        json.dumps({"source": str(src / "a.mp4"), "op": "noise", "params": {"sigma": 999}}),  # 4 range
        json.dumps({"source": str(src / "a.mp4"), "op": "cut", "params": {"duration_s": 5}}),  # 5 too long
        json.dumps({"source": str(src / "gone.mp4"), "op": "reverse", "name": "g"}),  # 6 missing
        json.dumps({"source": str(src / "b.mp4"), "op": "reverse", "name": "a-reverse"}),  # 7 same name
        json.dumps({"source": str(src / "a.mp4"), "op": "reverse", "seed": "1", "name": "s"}),  # 8 seed
        json.dumps({"source": str(src / "a.mp4"), "op": "reverse", "colour": 1, "name": "k"}),  # 9 key
        json.dumps(
            {"source": str(src / "a.mp4"), "op": "reverse", "second": str(src / "b.mp4"), "name": "t"}
        ),  # 10 second
        json.dumps({"source": str(src / "a.mp4"), "op": "scene_mix", "name": "m"}),  # 11 needs one
        json.dumps({"source": str(src / "a.mp4"), "op": "reverse", "name": "../x"}),  # 12 name
        json.dumps(["a.mp4"]),
    ]  # 13 array
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as e:
        load_jobs(bad)
    msg = str(e.value)
    for n in range(2, 14):
        assert f"line {n}:" in msg or f"lines 1, {n}:" in msg, (n, msg)
    assert "lines 1, 7: all write a-reverse.mp4" in msg and "melt" in msg and "gone.mp4" in msg
    assert "line 1:" not in msg
    r = CliRunner().invoke(app, ["perturb", "--batch", str(bad), "--out", str(tmp_path / "never")])
    assert r.exit_code != 0 and "nothing was rendered" in r.output
    assert not (tmp_path / "never").exists()
    r = CliRunner().invoke(app, ["perturb", "--batch", str(bad), "--op", "reverse", "--out", str(tmp_path / "n")])
    assert r.exit_code != 0 and "drop SOURCE, --op" in r.output and not (tmp_path / "n").exists()


def test_a_failing_job_is_reported_by_line_and_the_others_finish(tmp_path: Path) -> None:
    jobs = load_jobs(make_jobs(tmp_path))
    make_video(tmp_path / "src" / "b.mp4", n=15, fps=10.0, w=W, h=H)  # changed after it was validated
    res = perturb_batch(jobs, tmp_path / "out", workers=2)
    assert [line for line, _ in res.failed] == [2] and "sha256" in res.failed[0][1]
    rows = [json.loads(x) for x in (tmp_path / "out" / BATCH).read_text().splitlines()]
    assert [r["error"] is None for r in rows] == [True, False, True, True]
    assert rows[1]["video"] is None and not (tmp_path / "out" / "b_shuf.mp4").exists()
    assert all((tmp_path / "out" / r["video"]).is_file() for r in rows if r["video"])


def _dies_on(name: str, fn, *args):
    """Runs in the pool's worker: the process dies (no exception, no result) when the job renders ``name``."""
    if Path(args[0]).name == name:
        os._exit(3)
    return fn(*args)


class _Dying(Executor):
    """A real one-process pool whose worker dies on b.mp4's job: every job not finished by then is lost."""

    def __init__(self) -> None:
        self._pool = ProcessPoolExecutor(1, mp_context=pool_context())

    def submit(self, fn, /, *args, **kwargs) -> Future:
        return self._pool.submit(_dies_on, "b.mp4", fn, *args)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def test_a_lost_worker_fails_its_jobs_by_line_and_the_batch_still_writes_its_rows(tmp_path: Path) -> None:
    jobs = load_jobs(make_jobs(tmp_path))
    res = perturb_batch(jobs, tmp_path / "out", pool=lambda initializer=None: _Dying())
    rows = [json.loads(x) for x in (tmp_path / "out" / BATCH).read_text().splitlines()]
    assert len(rows) == 4 and 2 in [line for line, _ in res.failed]
    assert all("BrokenProcessPool" in err for _, err in res.failed)
    assert rows[0]["error"] is None and (tmp_path / "out" / rows[0]["video"]).is_file()  # a.mp4 ran first
    assert rows[1]["error"] is not None and rows[1]["video"] is None
    assert not (tmp_path / "out" / PARTIAL).exists()


def test_folder_shorthand_is_one_job_per_video(
    batch: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs, one = batch
    src = jobs.parent / "src"
    (src / "notes.txt").write_text("not a video")
    monkeypatch.chdir(jobs.parent)  # a relative folder
    r = CliRunner().invoke(app, ["perturb", "src", "--op", "reverse", "--out", str(tmp_path / "f")])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (tmp_path / "f" / BATCH).read_text().splitlines()]
    assert [r["name"] for r in rows] == ["a-reverse", "b-reverse", "c-reverse"]
    assert (tmp_path / "f" / "a-reverse.mp4").read_bytes() == (one / "a-reverse.mp4").read_bytes()
    assert [j.name for j in folder_jobs(src, "noise", {"duration_s": None}, 1)] == ["a-noise", "b-noise", "c-noise"]
    r = CliRunner().invoke(
        app, ["perturb", str(src), "--op", "noise", "--set", "sigma=999", "--out", str(tmp_path / "g")]
    )
    assert r.exit_code != 0 and not (tmp_path / "g").exists() and "a.mp4: noise:" in r.output
    r = CliRunner().invoke(app, ["perturb", str(src), "--op", "reverse", "--out", str(src)])
    assert r.exit_code != 0 and "source folder" in r.output
    r = CliRunner().invoke(
        app, ["perturb", str(src / "a.mp4"), "--op", "reverse", "--out", str(tmp_path / "x.mp4"), "--workers", "2"]
    )
    assert r.exit_code != 0 and "for batches" in r.output


def test_executor_ray_without_ray_names_its_extra(batch: tuple[Path, Path], tmp_path: Path) -> None:
    import subprocess
    import sys

    block = "import sys; sys.modules['ray'] = None; from vidaudit.cli import app; app()"
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            block,
            "perturb",
            "--batch",
            str(batch[0]),
            "--out",
            str(tmp_path / "o"),
            "--executor",
            "ray",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 2 and 'pip install "vidaudit[ray]"' in " ".join(out.split()), out
    assert "Traceback" not in out and not (tmp_path / "o").exists()
