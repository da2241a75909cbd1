"""A careless or hostile user of the counting suite: overwritten datasets, absurd settings, corrupt manifests,
traces whose times, frames or answers disagree, and a verifier that checks every frame exactly."""

from __future__ import annotations

import json
import math
import os
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.manifest import load_samples
from vidaudit.core.types import Event, Sample, Trace
from vidaudit.suites.counting.generate import generate
from vidaudit.suites.counting.grid import GridPoint
from vidaudit.suites.counting.scene import RenderSettings
from vidaudit.suites.counting.verify import (
    answer_problems,
    check_answers,
    check_sample,
    check_video,
    dataset_render,
    exact_schedule,
    timing_problems,
)
from vidaudit.video.encode import write_video

runner = CliRunner()
SMALL = RenderSettings(duration_s=6.0)
POINTS = [GridPoint("blinking", 3, 1.0, 0), GridPoint("state_machine", 3, 1.0, 0)]


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two small rendered, verified samples (6 s at 30 fps)."""
    out = tmp_path_factory.mktemp("hardening") / "data"
    generate(POINTS, out, SMALL, workers=1)
    return out


def shifted(trace: Trace, frames: int, fps: float = 30.0, *, move_t: bool = True) -> Trace:
    """Every event moved by ``frames`` frames (its time too, unless ``move_t`` is False)."""
    return Trace(
        events=tuple(
            e.model_copy(update={"frame": e.frame + frames, "t": e.t + frames / fps if move_t else e.t})
            for e in trace.events
        )
    )


def copy_dataset(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def rewrite(data_dir: Path, sample_id: str, **update) -> None:
    rows = [json.loads(x) for x in (data_dir / "manifest.jsonl").read_text().splitlines()]
    for r in rows:
        if r["sample_id"] == sample_id:
            r.update(update)
    (data_dir / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


# --------------------------------------------------------------------------- the verifier is exact


def test_pixels_check_the_exact_frame(data: Path) -> None:
    """A real rendered video, its trace shifted (times and frames together) by one frame: the pixels (a blink's
    onset, a state change) refuse it, and so does the timing check against the sample's schedule. Before issue
    32 the verifier allowed +-1 frame here; putting that tolerance back makes this test fail."""
    for s in load_samples(data):
        path, domain = data / s.video.path, s.params["domain"]
        assert check_video(domain, path, s.trace, 30.0) == [], s.sample_id
        assert check_sample(s, data) == [], s.sample_id
        for k in (-1, 1, 2):
            problems = check_video(domain, path, shifted(s.trace, k), 30.0)
            assert problems and "events not at their frames" in problems[0], (s.sample_id, k)
            problems = check_sample(s.model_copy(update={"trace": shifted(s.trace, k)}), data)
            assert problems and "the sample's schedule puts it at" in problems[0], (s.sample_id, k)


def test_frame_must_agree_with_t(data: Path) -> None:
    s = load_samples(data)[0]
    times = exact_schedule(s, dataset_render(data))
    assert times and timing_problems(s.trace, 30.0, s.video.n_frames, times=times) == []
    for k in (-1, 1, 2, 30):
        problems = timing_problems(shifted(s.trace, k, move_t=False), 30.0, times=times)
        assert len(problems) == len(s.trace.events)
        assert problems[0].startswith("event 1 ") and f"off by {k:+d}" in problems[0]
    # the frame whose interval [i/fps, (i+1)/fps) holds t is one before the first frame at or after t: refused
    mid = Trace(events=(Event(t=1.01, frame=30, type="blink", count=1),))
    assert "is 31 at 30 fps (off by -1)" in timing_problems(mid, 30.0)[0]
    late = Trace(events=(Event(t=1.01, frame=31, type="blink", count=1),))
    assert timing_problems(late, 30.0) == [] and timing_problems(late, 30.0, n_frames=10)  # outside the video
    # without a schedule, a written t on a frame boundary (to 9 decimals) allows either side of it
    edge = [Trace(events=(Event(t=6.666666667, frame=f, type="blink", count=1),)) for f in (199, 200, 201, 202)]
    assert [bool(timing_problems(x, 30.0)) for x in edge] == [True, False, False, True]
    # with its exact time (a rendered sample's schedule), only the first frame at or after it
    exact = [Fraction(20, 3)]
    assert [bool(timing_problems(x, 30.0, times=exact)) for x in edge] == [True, False, True, True]
    nan = Trace(events=(Event(t=math.nan, frame=30, type="blink", count=1),))
    assert "not a finite time" in timing_problems(nan, 30.0)[0]
    assert timing_problems(s.trace, 0.0)


def test_verify_refuses_a_dataset_without_rendered_pixels(data: Path, tmp_path: Path) -> None:
    """A dry run (no videos) and a set of real videos (counts annotated, no trace to render) are refused in one
    line, exit 2, before any video is opened; the unedited copy verifies."""
    d = copy_dataset(data, tmp_path / "copy")
    info = json.loads((d / "dataset.json").read_text())
    for edit, refusal in (
        ({"dry_run": True}, "is a dry run: it has no videos to verify"),
        ({"real_video": True}, "holds real videos with annotated counts; pixel verification applies to rendered"),
    ):
        (d / "dataset.json").write_text(json.dumps(info | edit))
        r = runner.invoke(app, ["verify", str(d), "--workers", "1"])
        assert r.exit_code == 2 and f"{d} {refusal}" in flat(r.output), r.output
    (d / "dataset.json").write_text(json.dumps(info))
    assert runner.invoke(app, ["verify", str(d), "--workers", "1"]).exit_code == 0


def test_verify_cli_fails_naming_the_sample(data: Path, tmp_path: Path) -> None:
    d = copy_dataset(data, tmp_path / "copy")
    r = runner.invoke(app, ["verify", str(d), "--workers", "1"])
    assert r.exit_code == 0, r.output
    victim, other = load_samples(d)
    # 1. a frame two off its t: named by the timing check, no pixels needed
    events = [e.model_dump() for e in victim.trace.events]
    events[1]["frame"] += 2
    rewrite(d, victim.sample_id, trace={"events": events})
    r = runner.invoke(app, ["verify", str(d), "--workers", "1"])
    assert r.exit_code == 1, r.output
    out = flat(r.output)
    assert f"MISMATCH {victim.sample_id}: event 2" in out and other.sample_id not in out
    assert "1 of 2 samples fail verification" in out
    # 2. times and frames moved together by 1 frame: consistent on its face, refused by the exact schedule
    rewrite(d, victim.sample_id, trace=shifted(victim.trace, 1).model_dump())
    r = runner.invoke(app, ["verify", str(d), "--workers", "1"])
    assert r.exit_code == 1 and f"MISMATCH {victim.sample_id}: event 1 says t=" in flat(r.output)
    # 3. an answer that disagrees with the trace
    rewrite(d, victim.sample_id, trace=victim.trace.model_dump(), answer=4)
    r = runner.invoke(app, ["verify", str(d), "--workers", "1"])
    assert r.exit_code == 1 and "answer is 4 but the trace executes to 3" in flat(r.output)


# --------------------------------------------------------------------------- answers against traces


def test_check_answers_names_samples_whose_answer_disagrees(data: Path) -> None:
    good = load_samples(data)
    check_answers(good)
    wrong = good[0].model_copy(update={"answer": 5})
    count_only = good[1].model_copy(
        update={"answer": 7, "params": {**good[1].params, "n_events": 7, "source": "repcount"}}
    )
    assert answer_problems(wrong) == ["answer is 5 but the trace executes to 3"]
    assert answer_problems(count_only) == []  # a real video's count is not checked against a partial trace
    assert answer_problems(good[0].model_copy(update={"answer": True}))
    assert answer_problems(good[0].model_copy(update={"params": {**good[0].params, "n_events": 2}}))
    with pytest.raises(DataError, match=wrong.sample_id):
        check_answers([wrong, count_only, good[1]])


# --------------------------------------------------------------------------- regenerating into a dataset


def test_generate_refuses_to_replace_a_different_dataset(data: Path, tmp_path: Path) -> None:
    d = copy_dataset(data, tmp_path / "d")
    before = (d / "manifest.jsonl").read_bytes()
    other_points = [GridPoint("blinking", 2, 1.0, 0)]
    with pytest.raises(ConfigError, match="2 removed.*1 added"):
        generate(other_points, d, SMALL, workers=1)
    with pytest.raises(ConfigError, match="changed"):  # same ids, other settings
        generate(POINTS, d, RenderSettings(duration_s=6.0, width=640), workers=1)
    with pytest.raises(ConfigError, match="changed"):
        generate(POINTS, d, RenderSettings(duration_s=6.0, fps=25.0), workers=1)
    assert (d / "manifest.jsonl").read_bytes() == before
    # the same content is fine, with or without --skip-existing
    again = generate(POINTS, d, SMALL, workers=1, skip_existing=True)
    assert (again.reused, again.rendered) == (2, 0) and (d / "manifest.jsonl").read_bytes() == before
    # --force replaces
    forced = generate(other_points, d, SMALL, workers=1, force=True)
    assert [s.sample_id for s in load_samples(d)] == [s.sample_id for s in forced.samples]


def test_dry_run_never_clobbers_rendered_videos(data: Path, tmp_path: Path) -> None:
    d = copy_dataset(data, tmp_path / "d")
    before = (d / "manifest.jsonl").read_bytes()
    with pytest.raises(ConfigError, match="rendered videos"):
        generate(POINTS, d, SMALL, dry_run=True)
    r = runner.invoke(
        app,
        [
            "generate",
            "counting",
            "--out",
            str(d),
            "--dry-run",
            "--domains",
            "blinking,state_machine",
            "--counts",
            "3",
            "--frequencies",
            "1",
            "--seeds",
            "1",
            "--duration",
            "6",
        ],
    )
    assert r.exit_code == 2 and "rendered videos" in flat(r.output), r.output
    assert (d / "manifest.jsonl").read_bytes() == before
    # a dry run over a dry run of the same design is fine; over rendered videos with --force it replaces
    dry = tmp_path / "dry"
    generate(POINTS, dry, SMALL, dry_run=True)
    generate(POINTS, dry, SMALL, dry_run=True)
    generate(POINTS, d, SMALL, dry_run=True, force=True)
    assert all(s.video.sha256 is None for s in load_samples(d))


def test_generate_cli_refuses_then_forces(data: Path, tmp_path: Path) -> None:
    d = copy_dataset(data, tmp_path / "d")
    args = [
        "generate",
        "counting",
        "--out",
        str(d),
        "--domains",
        "blinking",
        "--counts",
        "2",
        "--frequencies",
        "1",
        "--seeds",
        "1",
        "--duration",
        "6",
        "--workers",
        "1",
        "--no-verify",
    ]
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and "already holds a dataset of 2 samples" in flat(r.output) and "--force" in r.output
    assert not isinstance(r.exception, Exception) or isinstance(r.exception, SystemExit)
    r = runner.invoke(app, [*args, "--force"])
    assert r.exit_code == 0, r.output
    assert [s.answer for s in load_samples(d)] == [2]


def test_unreadable_manifest_in_out_needs_force(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "manifest.jsonl").write_bytes(b"\xff\xfe garbage \x00\n")
    with pytest.raises(ConfigError, match="cannot be read"):
        generate(POINTS, d, SMALL, dry_run=True)
    generate(POINTS, d, SMALL, dry_run=True, force=True)
    assert len(load_samples(d)) == 2


def test_partial_log_cut_by_a_kill_is_skipped_on_resume(data: Path, tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    shutil.copytree(data / "videos", d / "videos")
    lines = (data / "manifest.jsonl").read_text().splitlines()
    (d / "manifest.partial.jsonl").write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    res = generate(POINTS, d, SMALL, workers=1, skip_existing=True)
    assert (res.reused, res.rendered) == (1, 1)


def test_repcount_refuses_a_different_dataset_unless_forced(tmp_path: Path) -> None:
    vdir = tmp_path / "videos"
    vdir.mkdir()

    def video(name: str, n: int) -> None:
        frames = (np.full((64, 64, 3), 40 * (i % 2), np.uint8) for i in range(12))
        write_video(vdir / name, frames, 10, 64, 64)

    video("a.mp4", 1)
    video("b.mp4", 1)
    head = "type,name,count,L1,L2,L3,L4\n"
    (tmp_path / "one.csv").write_text(head + "squat,a.mp4,1,2,5,,\n")
    (tmp_path / "two.csv").write_text(head + "squat,a.mp4,1,2,5,,\nsquat,b.mp4,2,1,3,4,6\n")
    out = tmp_path / "out"
    base = ["generate", "repcount", "--videos", str(vdir), "--out", str(out)]
    assert runner.invoke(app, [*base, "--csv", str(tmp_path / "one.csv")]).exit_code == 0
    assert runner.invoke(app, [*base, "--csv", str(tmp_path / "one.csv")]).exit_code == 0  # same content
    r = runner.invoke(app, [*base, "--csv", str(tmp_path / "two.csv")])
    assert r.exit_code == 2 and "1 added" in flat(r.output), r.output
    assert len(load_samples(out)) == 1
    r = runner.invoke(app, [*base, "--csv", str(tmp_path / "two.csv"), "--force"])
    assert r.exit_code == 0, r.output
    assert len(load_samples(out)) == 2


# --------------------------------------------------------------------------- messages, not tracebacks


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--duration", "nan"], "--duration must be a finite number"),
        (["--duration", "inf"], "--duration must be a finite number"),
        (["--duration", "-3"], "--duration must be a finite number"),
        (["--fps", "inf"], "--fps must be a finite number"),
        (["--fps", "nan"], "--fps must be a finite number"),
        (["--fps", "100000"], "--fps must be a finite number"),
        (["--duration", "0.01", "--fps", "30"], "less than one frame"),
        (["--frequencies", "nan"], "positive number of Hz"),
        (["--frequencies", "inf"], "positive number of Hz"),
    ],
)
def test_absurd_settings_exit_2_with_a_message(tmp_path: Path, args: list[str], msg: str) -> None:
    r = runner.invoke(app, ["generate", "counting", "--out", str(tmp_path / "o"), "--dry-run", *args])
    assert r.exit_code == 2, (r.output, r.exception)
    assert msg in flat(r.output), r.output
    assert not (tmp_path / "o" / "manifest.jsonl").exists()


@pytest.mark.parametrize(
    "line",
    [
        os.urandom(200).replace(b"\n", b"x"),
        b"\xff\xfe\xfd not utf-8",
        b"[" * 100_000,
        b"[1, 2, 3]",
        b'{"sample_id": 5}',
        b"",
    ],
    ids=["random-bytes", "bad-utf8", "deep", "not-an-object", "not-a-sample", "empty-line-only"],
)
def test_corrupt_manifest_line_is_a_data_error(data: Path, tmp_path: Path, line: bytes) -> None:
    d = copy_dataset(data, tmp_path / "d")
    with open(d / "manifest.jsonl", "ab") as f:
        f.write(line + b"\n")
    if line.strip():
        with pytest.raises(DataError, match=r"manifest.jsonl:3"):
            load_samples(d)
        for cmd in (
            ["verify", str(d)],
            [
                "run",
                "counting",
                "--data",
                str(d),
                "--model",
                "oracle",
                "--condition",
                "native",
                "--out",
                str(tmp_path / "run"),
            ],
        ):
            r = runner.invoke(app, cmd)
            assert r.exit_code == 2, (cmd, r.output, r.exception)
            assert "manifest.jsonl:3" in "".join(r.output.split())  # rich may wrap after the colon
    else:
        assert len(load_samples(d)) == 2


def test_corrupt_dataset_json_is_a_data_error(data: Path, tmp_path: Path) -> None:
    d = copy_dataset(data, tmp_path / "d")
    for junk in (b"\xff\xfe", b"{", b"[" * 100_000, b"[1]"):
        (d / "dataset.json").write_bytes(junk)
        r = runner.invoke(app, ["verify", str(d)])
        assert r.exit_code == 2 and "dataset.json" in "".join(r.output.split()), (junk[:5], r.output, r.exception)


def test_sample_with_nan_time_is_refused_by_verify(data: Path, tmp_path: Path) -> None:
    d = copy_dataset(data, tmp_path / "d")
    s = load_samples(d)[0]
    events = [e.model_dump() for e in s.trace.events]
    events[0]["t"] = float("nan")
    rewrite(d, s.sample_id, trace={"events": events})
    assert isinstance(load_samples(d)[0], Sample)
    r = runner.invoke(app, ["verify", str(d), "--workers", "1"])
    assert r.exit_code == 1 and "not a finite time" in flat(r.output), r.output


def test_the_fast_manifest_reader_gives_the_json_readers_samples_and_errors(data: Path, tmp_path: Path) -> None:
    """``load_samples`` validates lines from their bytes (pydantic's parser), else reads the file as before: the same
    samples (a lone surrogate, which only ``json`` reads, included), and the first JSON error before any sample's."""
    import json as _json

    from vidaudit.core.types import Sample as _Sample

    d = copy_dataset(data, tmp_path / "d")
    lines = (d / "manifest.jsonl").read_bytes().splitlines()
    by_json = [_Sample.model_validate(_json.loads(x)) for x in lines]
    got = load_samples(d)
    assert got == by_json and [s.model_dump_json() for s in got] == [s.model_dump_json() for s in by_json]
    row = _json.loads(lines[0])
    row["params"]["note"] = "\ud800"  # a lone surrogate: json writes it as \ud800 and reads it back
    (d / "manifest.jsonl").write_bytes(_json.dumps(row).encode() + b"\n" + lines[1] + b"\n")
    assert load_samples(d)[0].params["note"] == "\ud800"
    (d / "manifest.jsonl").write_bytes(lines[0] + b"\n" + b'{"sample_id": 5}\n' + b"{not json\n")
    with pytest.raises(DataError, match=r"manifest.jsonl:3: not valid JSON"):
        load_samples(d)
