"""What vidaudit sends, analyses and perturbs is what a player shows, on real files of every awkward kind.

The fixtures (tests/realvideos.py) are real encoded files: rotated 90/180/270, two frame rates, a jittery
phone clip that is also upside down, a skipped frame in an MPEG-4 Part 2 AVI, a video that starts after its
audio, an HEVC edit list, millisecond-stamped VP9, AV1, HEVC, an odd size. Each frame carries its number as
bits, so a frame is identified by its pixels; the independent reader is ffmpeg (autorotate, edit lists,
passthrough timing), placed on the same clock a player uses.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clirun import invoke
from realvideos import Made, Player, frame_code, is_upright, make_all, make_unusable, write_video
from vidaudit.core.errors import DataError
from vidaudit.core.fileio import atomic_path, owner_token, sweep_stale_temporaries
from vidaudit.core.manifest import load_samples, write_manifest
from vidaudit.core.timeline import TABLE_SLACK, Timeline
from vidaudit.core.types import Sample, VideoRef
from vidaudit.video.decode import read_frames
from vidaudit.video.encode import VideoWriter
from vidaudit.video.probe import probe, video_ref
from vidaudit.video.sampling import at_fps, every_frame, uniform_count

VFR = {"vfr_two_rates.mp4", "phone_vfr_rot180.mp4", "skipped_frame.avi"}


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Made]:
    return make_all(tmp_path_factory.mktemp("real"))


@pytest.fixture(scope="module")
def player() -> Player:
    return Player.required()


NAMES = [
    "rot90.mp4",
    "rot180.mp4",
    "rot270.mp4",
    "vfr_two_rates.mp4",
    "phone_vfr_rot180.mp4",
    "skipped_frame.avi",
    "late_start.mp4",
    "hevc_editlist.mp4",
    "vp9.webm",
    "av1.mp4",
    "hevc.mp4",
    "odd_size.mp4",
]


@pytest.mark.parametrize("name", NAMES)
def test_probe_reads_what_a_player_shows(fixtures: dict[str, Made], name: str) -> None:
    m = fixtures[name]
    info = probe(m.path)
    assert info.n_frames == len(m.codes)
    assert info.rotation == m.rotation
    assert (info.width, info.height) == m.size  # displayed, not stored
    assert (info.frame_times is not None) == (name in VFR or name == "vp9.webm")
    clock = info.timeline
    assert [round(clock.time_of(i), 4) for i in range(info.n_frames)] == [round(t, 4) for t in m.times]
    assert clock.duration_s >= m.times[-1]


@pytest.mark.parametrize("name", NAMES)
def test_every_frame_is_upright_and_in_presentation_order(fixtures: dict[str, Made], player: Player, name: str) -> None:
    m = fixtures[name]
    frames = read_frames(m.path, list(range(len(m.codes))))
    assert [frame_code(f) for f in frames] == list(m.codes)
    assert all(is_upright(f) for f in frames)
    times, theirs = player.frames(m.path)
    assert [frame_code(f) for f in theirs] == list(m.codes)  # the player agrees with the truth
    assert np.allclose(times, m.times, atol=1e-3)
    for mine, ref in zip(frames, theirs, strict=True):
        assert mine.shape == ref.shape
        assert np.abs(mine.astype(int) - ref).mean() < 3.0  # two decoders, two colour conversions


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "rule", ["frames@1", "frames@4", "frames@7", "frames@15", "frames@30", "frames#16", "native@all"]
)
def test_the_frame_sent_at_t_is_the_frame_on_screen_at_t(
    fixtures: dict[str, Made], player: Player, name: str, rule: str
) -> None:
    m = fixtures[name]
    ref = video_ref(m.path.parent, m.path.name)
    clock = ref.timeline
    kind, _, arg = rule.replace("#", "@#").partition("@")
    sel = (
        every_frame(clock)
        if arg == "all"
        else uniform_count(clock, int(arg[1:]))
        if arg.startswith("#")
        else at_fps(clock, float(arg))
    )
    imgs = read_frames(m.path, list(sel.indices))
    p_times, p_imgs = player.frames(m.path)
    # frames@K picks at the exact time j / K and logs it to the microsecond; the others pick at the logged time
    exact = [j / float(arg) for j in range(len(sel))] if kind == "frames" and not arg.startswith("#") else sel.times
    assert all(abs(a - b) <= 5e-7 for a, b in zip(exact, sel.times))
    for t, img in zip(exact, imgs, strict=True):
        want = m.on_screen(t)
        assert frame_code(img) == want, f"{name} {rule}: at t={t} sent frame {frame_code(img)}, on screen: {want}"
        j = max(0, int(np.searchsorted(np.asarray(p_times), t + 1e-6, side="right")) - 1)  # ffprobe: 6 decimals
        assert frame_code(p_imgs[j]) == want
        assert is_upright(img)


@given(
    gaps=st.lists(st.floats(0.001, 2.0), min_size=1, max_size=60),
    start=st.floats(0.0, 5.0),
    probes=st.lists(st.floats(-1.0, 200.0), min_size=1, max_size=30),
)
def test_the_chosen_frame_is_the_one_whose_interval_contains_t(
    gaps: list[float], start: float, probes: list[float]
) -> None:
    times = [start]
    for g in gaps:
        times.append(times[-1] + g)
    times = [round(t, 6) for t in times]
    if any(b <= a for a, b in zip(times, times[1:])):
        return
    clock = Timeline(
        len(times), fps=len(times) / (times[-1] + 1), start_s=times[0], times=tuple(times), end_s=times[-1] + 1
    )
    for t in probes:
        i = clock.on_screen(t)
        if t < times[0]:
            assert i == 0  # before the first frame: it is held
        else:  # a table is kept to the microsecond: half of one is slack (TABLE_SLACK)
            assert times[i] <= t + TABLE_SLACK
            assert i == len(times) - 1 or t < times[i + 1] - TABLE_SLACK + 1e-12


@given(n=st.integers(1, 400), fps=st.sampled_from([10.0, 24.0, 25.0, 29.97, 30.0, 60.0]), t=st.floats(0, 50))
def test_a_constant_clock_agrees_with_its_table(n: int, fps: float, t: float) -> None:
    table = Timeline(n, fps, times=tuple(i / fps for i in range(n)), end_s=n / fps)
    assert Timeline.constant(n, fps).on_screen(t) == table.on_screen(t)


def test_perturbing_a_rotated_vfr_clip_keeps_what_the_player_shows(fixtures: dict[str, Made], tmp_path: Path) -> None:
    from vidaudit.core.types import PerturbationSpec
    from vidaudit.video.perturb.engine import apply

    for name in ("phone_vfr_rot180.mp4", "vfr_two_rates.mp4", "late_start.mp4", "rot90.mp4"):
        m = fixtures[name]
        res = apply(m.path, PerturbationSpec(name="reverse"), tmp_path / f"rev_{name}.mp4")
        out = probe(res.video)
        assert out.rotation == 0 and out.frame_times is None and out.start_s == 0  # upright, constant rate
        assert (out.width, out.height) == (m.size[0] - m.size[0] % 2, m.size[1] - m.size[1] % 2)
        frames = read_frames(res.video, list(range(out.n_frames)))
        assert all(is_upright(f) for f in frames)
        fps = res.meta.fps
        # the op sees the source at its nominal rate: op frame k is what a player shows at k / fps
        shown = [m.on_screen(k / fps) for k in range(out.n_frames)]
        assert [frame_code(f) for f in frames] == shown[::-1]
        src_frames = res.meta.map["source_frame"]
        assert [m.codes[i] for i in src_frames] == shown[::-1]
        if name != "rot90.mp4":  # converted: each output frame says which source frame and when
            assert res.meta.map["source_time_s"] == [round(m.times[i], 6) for i in src_frames]
            assert res.meta.source["converted_to_constant_rate"]["source_frames"] == len(m.codes)
        else:
            assert "source_time_s" not in res.meta.map


@pytest.fixture(scope="module")
def unusable(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_unusable(tmp_path_factory.mktemp("bad"))


@pytest.mark.parametrize(
    "kind, message",
    [
        ("audio_only", "no video stream"),
        ("zero_frames", "no video stream"),
        ("one_pixel", "too small"),
        ("truncated", "cannot decode"),
        ("not_a_video", "not a readable video"),
    ],
)
def test_unusable_files_are_one_line_data_errors(unusable: dict[str, Path], kind: str, message: str) -> None:
    with pytest.raises(DataError, match=message) as e:
        probe(unusable[kind])
    assert str(unusable[kind]) in str(e.value) and "\n" not in str(e.value)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "vidaudit.cli",
            "perturb",
            str(unusable[kind]),
            "--op",
            "reverse",
            "--out",
            str(unusable[kind].parent / f"{kind}_out.mp4"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and message in " ".join((r.stdout + r.stderr).split())
    assert not (unusable[kind].parent / f"{kind}_out.mp4").exists()


def test_one_frame_an_hour_is_read_and_perturbed(unusable: dict[str, Path], tmp_path: Path) -> None:
    from vidaudit.core.types import PerturbationSpec
    from vidaudit.video.perturb.engine import apply

    info = probe(unusable["one_frame_an_hour"])
    assert info.n_frames == 3 and math.isclose(info.fps, 1 / 3600, rel_tol=1e-6)
    assert info.timeline.on_screen(5000.0) == 1
    res = apply(unusable["one_frame_an_hour"], PerturbationSpec(name="reverse"), tmp_path / "r.mp4")
    assert [frame_code(f) for f in read_frames(res.video, [0, 1, 2])] == [2, 1, 0]


# --------------------------------------------------------------------------- manifests and runs


def _dataset(fixtures: dict[str, Made], root: Path, names: list[str]) -> list[Sample]:
    """A counting dataset of the user's own clips (as `generate repcount` writes one: answer = trace)."""
    import shutil

    (root / "videos").mkdir(parents=True, exist_ok=True)
    samples = []
    for name in names:
        shutil.copyfile(fixtures[name].path, root / "videos" / name)
        ref = video_ref(root, f"videos/{name}")
        samples.append(
            Sample(
                sample_id=name.replace(".", "_"),
                suite="counting",
                params={"domain": "real:clip", "n_events": 0, "frequency_hz": None},
                question="How many times did the object blink?",
                answer=0,
                video=ref,
            )
        )
    write_manifest(root, samples)
    return samples


def _run(
    data: Path, out: Path, *extra: str, model: str = "oracle", condition: str = "frames@4", env: dict | None = None
) -> subprocess.CompletedProcess:
    """``vidaudit run counting`` through the CLI's entry point in this process (tests/clirun.py; ``env`` is added
    to the environment); the unusable files' refusals above run ``vidaudit perturb`` as real processes."""
    return invoke(
        "run",
        "counting",
        "--data",
        str(data),
        "--model",
        model,
        "--condition",
        condition,
        "--out",
        str(out),
        *extra,
        env=env,
    )


def _rewrite(data: Path, edit) -> None:
    rows = [json.loads(x) for x in (data / "manifest.jsonl").read_text().splitlines() if x.strip()]
    edit(rows[0])
    (data / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("fps", 0, "fps must be in"),
        ("fps", float("nan"), "finite number"),
        ("n_frames", 10**12, "n_frames must be"),
        ("duration_s", float("inf"), "finite number"),
        ("rotation", 45, "rotation must be"),
        ("frame_times", [0.0, 0.1], "frame_times has 2 entries"),
        ("sar", [0, 1], "sar must be two positive integers"),
        ("stream", -1, "stream must be a stream index"),
        ("stored_size", [0, 64], "stored_size is out of range"),
    ],
)
def test_hostile_manifest_numbers_are_one_line_errors(
    fixtures: dict[str, Made], tmp_path: Path, field: str, value: object, message: str
) -> None:
    data = tmp_path / "data"
    _dataset(fixtures, data, ["rot90.mp4"])
    _rewrite(data, lambda r: r["video"].__setitem__(field, value))
    t0 = time.time()
    r = _run(data, tmp_path / "run")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and message in " ".join((r.stdout + r.stderr).split())
    assert time.time() - t0 < 60
    assert not (tmp_path / "run" / "store.sqlite").exists()


def test_a_manifest_whose_facts_disagree_with_its_file_is_refused(fixtures: dict[str, Made], tmp_path: Path) -> None:
    data = tmp_path / "data"
    _dataset(fixtures, data, ["vfr_two_rates.mp4"])
    _rewrite(data, lambda r: r["video"].pop("frame_times"))  # claims constant rate: frames would be mistimed
    r = _run(data, tmp_path / "run")
    assert r.returncode == 2 and "not the video its manifest describes" in " ".join(r.stderr.split())
    assert "a variable frame rate" in " ".join(r.stderr.split())


def test_video_paths_stay_inside_the_data_directory(fixtures: dict[str, Made], tmp_path: Path) -> None:
    data = tmp_path / "data"
    _dataset(fixtures, data, ["rot90.mp4"])
    outside = tmp_path / "outside.mp4"
    outside.write_bytes((data / "videos" / "rot90.mp4").read_bytes())
    (data / "videos" / "link.mp4").symlink_to(outside)
    for path in ("../outside.mp4", str(outside), "videos/link.mp4"):
        _rewrite(data, lambda r, p=path: r["video"].__setitem__("path", p))
        r = _run(data, tmp_path / f"run{abs(hash(path))}")
        assert r.returncode == 2, r.stdout + r.stderr
        assert "leads outside the data directory" in " ".join(r.stderr.split())
        ok = _run(data, tmp_path / f"ok{abs(hash(path))}", "--allow-external-videos")
        assert ok.returncode == 0, ok.stdout + ok.stderr


def test_a_killed_writer_leaves_nothing_that_a_rerun_keeps(tmp_path: Path) -> None:
    final = tmp_path / "clip.mp4"
    host = owner_token().rpartition("~")[0]
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    stale = tmp_path / f".clip.mp4.{host}~{dead}.abcd1234.part.mp4"
    stale.write_bytes(b"x" * 1000)
    live = tmp_path / f".clip.mp4.{host}~{os.getppid()}.efgh5678.part.mp4"  # a writer still running
    live.write_bytes(b"y")
    with VideoWriter(final, 10, 16, 16) as w:
        w.write(np.zeros((16, 16, 3), np.uint8))
    assert final.is_file() and not stale.exists() and live.exists()
    assert sweep_stale_temporaries(final) == []
    with pytest.raises(RuntimeError), atomic_path(final) as tmp:  # a failed write removes its own temporary
        tmp.write_bytes(b"half")
        raise RuntimeError("killed")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([final.name, live.name])


def test_a_run_sends_what_a_player_shows(fixtures: dict[str, Made], player: Player, tmp_path: Path) -> None:
    """End to end: `vidaudit run` against a local OpenAI-compatible server that keeps every image it is sent."""
    import base64
    import re

    import cv2

    from httpfake import FakeServer, Recorded, Reply

    names = [
        "rot90.mp4",
        "phone_vfr_rot180.mp4",
        "skipped_frame.avi",
        "late_start.mp4",
        "hevc_editlist.mp4",
        "vp9.webm",
        "rot270.mp4",
    ]
    data = tmp_path / "data"
    _dataset(fixtures, data, names)

    def answer(rec: Recorded) -> Reply:
        return Reply(
            json={
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "\\boxed{0}"}}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    env = {"OPENAI_API_KEY": "sk-local-test"}
    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", default=answer)
        r = _run(data, tmp_path / "run", model=f"openai:fake@{srv.url}/v1", condition="frames@7", env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        sent = srv.requests_to("/v1/chat/completions")
    assert len(sent) == len(names)
    checked, seen = 0, set()
    for rec in sent:
        parts = rec.json()["messages"][-1]["content"]
        stamps = [
            float(m.group(1))
            for p in parts
            if p["type"] == "text"
            for m in [re.fullmatch(r"t=([0-9.]+)s", p["text"])]
            if m
        ]
        images = [
            cv2.cvtColor(
                cv2.imdecode(
                    np.frombuffer(base64.b64decode(p["image_url"]["url"].split(",", 1)[1]), np.uint8), cv2.IMREAD_COLOR
                ),
                cv2.COLOR_BGR2RGB,
            )
            for p in parts
            if p["type"] == "image_url"
        ]
        assert len(stamps) == len(images) > 0
        # which clip: the one whose frames on screen at j / 7 s are the images, in order
        matches = [
            name
            for name in names
            if images[0].shape[:2] == (fixtures[name].size[1], fixtures[name].size[0])
            and len(images) == len(at_fps(probe(fixtures[name].path).timeline, 7.0))
            and [frame_code(img) for img in images] == [fixtures[name].on_screen(j / 7) for j in range(len(images))]
        ]
        assert matches, f"the images match no clip's frames on screen at their times {stamps}"
        m = fixtures[matches[0]]
        assert stamps == [float(f"{j / 7:.2f}") for j in range(len(images))]  # each says when it is shown
        for j, img in enumerate(images):
            assert is_upright(img)
            ref = player.at(m.path, j / 7)
            assert np.abs(img.astype(int) - ref).mean() < 8.0  # JPEG on the wire
        seen.add(matches[0])
        checked += 1
    assert checked == len(names) and len(seen) >= len(names) - 2  # rot90/rot270 look alike at 1 fps


def test_report_refuses_a_video_changed_since_the_run(fixtures: dict[str, Made], tmp_path: Path) -> None:
    data = tmp_path / "data"
    _dataset(fixtures, data, ["rot90.mp4", "rot180.mp4"])
    run = tmp_path / "run"
    assert _run(data, run).returncode == 0
    edited = data / "videos" / "rot90.mp4"
    edited.write_bytes(fixtures["rot270.mp4"].path.read_bytes())  # edited in place, same name
    r = invoke("report", str(run))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "changed since the run" in " ".join(r.stderr.split()) and "Traceback" not in r.stderr


def test_rendered_manifests_are_unchanged_by_the_new_facts(tmp_path: Path) -> None:
    """A constant-rate upright clip from 0 writes no rotation, start or frame times: old manifests stay valid."""
    with VideoWriter(tmp_path / "v.mp4", 30, 32, 32) as w:
        for k in range(9):
            w.write(np.full((32, 32, 3), k * 20, np.uint8))
    ref = video_ref(tmp_path, "v.mp4")
    dumped = ref.model_dump(mode="json")
    assert set(dumped) == {"path", "sha256", "fps", "width", "height", "n_frames", "duration_s"}
    assert VideoRef.model_validate(dumped) == ref
    s = Sample(sample_id="a", suite="counting", params={}, question="q", answer=0, video=ref)
    write_manifest(tmp_path, [s])
    assert load_samples(tmp_path) == [s]


def test_importers_re_encode_a_user_clip_on_the_players_clock(fixtures: dict[str, Made]) -> None:
    """What the stress importers (cross_frame's import_video, lane_change's cut) re-encode a user's clip from."""
    from vidaudit.video.decode import iter_constant_rate

    for name in ("vfr_two_rates.mp4", "phone_vfr_rot180.mp4", "late_start.mp4", "skipped_frame.avi"):
        m = fixtures[name]
        fps = probe(m.path).fps
        frames = list(iter_constant_rate(m.path))
        assert [frame_code(f) for f in frames] == [m.on_screen(k / fps) for k in range(len(frames))]
        assert all(is_upright(f) for f in frames)
        cut = list(iter_constant_rate(m.path, 0.2, 0.5))
        assert [frame_code(f) for f in cut] == [m.on_screen(0.2 + k / fps) for k in range(len(cut))]
        assert len(cut) == math.ceil(0.3 * fps - 1e-9)


def test_verify_refuses_a_file_whose_clock_is_not_the_manifests(fixtures: dict[str, Made], tmp_path: Path) -> None:
    """A VFR file whose manifest says constant rate: its events would happen at other times than the trace says."""
    from vidaudit.suites.counting.verify import _verify_job

    data = tmp_path / "data"
    samples = _dataset(fixtures, data, ["vfr_two_rates.mp4"])
    row = samples[0].model_dump(mode="json")
    row["video"].pop("frame_times")
    sid, problems = _verify_job(row, str(data))
    assert len(problems) == 1 and "not the video its manifest describes" in problems[0]
    assert "a variable frame rate" in problems[0]


def test_encoding_the_av1_fixture_leaves_the_worker_at_normal_priority(tmp_path: Path) -> None:
    """SVT-AV1 (bundled with PyAV 18.1) moves the encoding thread to SCHED_FIFO when run as root; a test worker
    left there starts every later browser and subprocess at real-time priority (realvideos.scheduling_kept)."""
    before = os.sched_getscheduler(0), os.sched_getparam(0)
    write_video(
        tmp_path / "av1.mp4",
        list(range(5)),
        Fraction(1, 30),
        codec="libsvtav1",
        options={"svtav1-params": "log-level=0"},
    )
    assert (os.sched_getscheduler(0), os.sched_getparam(0)) == before
