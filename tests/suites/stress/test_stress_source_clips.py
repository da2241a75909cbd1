"""``--source DIR`` as a plain folder of real clips for the probes that perturb a source (camera_motion,
shortcuts): the frames used are the frames a player shows, checked with an independent reader (ffmpeg,
``realvideos.Player``) on rotated, variable-rate, late-starting, edit-listed and odd-sized files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from realvideos import Made, Player, frame_code, is_upright, make_all
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.manifest import load_samples
from vidaudit.suites.stress.camera_motion.generate import generate as generate_camera
from vidaudit.suites.stress.camera_motion.stills import fit_image
from vidaudit.suites.stress.probe import GenerateOptions
from vidaudit.suites.stress.sources import frame_on_screen
from vidaudit.video.probe import probe


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Made]:
    return make_all(tmp_path_factory.mktemp("real_clips"))


def _folder(made: dict[str, Made], d: Path, names: list[str] | None = None) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for name, m in made.items():
        if names is None or name in names:
            shutil.copy(m.path, d / name)
    return d


# --------------------------------------------------------------------------- the one frame reader


def test_frame_on_screen_is_the_players_frame(made: dict[str, Made]) -> None:
    player = Player.required()
    for name, m in made.items():
        for t in (0.0, 0.26, m.times[-1] * 0.5, m.times[-1]):
            still = frame_on_screen(m.path, t)
            assert frame_code(still.image) == m.on_screen(t), (name, t)
            assert is_upright(still.image), name
            ref = player.at(m.path, t)
            assert ref.shape == still.image.shape, name
            assert np.abs(ref.astype(int) - still.image.astype(int)).mean() < 3, (name, t)
    with pytest.raises(DataError, match="no frame at 99 s; the clip lasts"):
        frame_on_screen(made["rot90.mp4"].path, 99.0)


# --------------------------------------------------------------------------- camera_motion


def test_camera_motion_moves_the_players_frame_of_each_clip(made: dict[str, Made], tmp_path: Path) -> None:
    player = Player.required()
    src = _folder(made, tmp_path / "clips")
    (src / "notes.txt").write_text("not a clip")
    out = tmp_path / "data"
    generate_camera(out, GenerateOptions(source=src, settings={"size": "48x32"}))
    samples = load_samples(out)
    names = sorted(made)
    assert len(samples) == 6 * len(names)
    for scene, name in enumerate(names):
        m = made[name]
        mine = [s for s in samples if s.params["scene"] == scene]
        assert {s.params["motion"] for s in mine} == {
            "zoom_in",
            "zoom_out",
            "pan_left",
            "pan_right",
            "tilt_up",
            "tilt_down",
        }
        p = mine[0].params
        assert p["source_clip"] == name and "source_image" not in p
        t = p["source_frame_s"]
        assert t == round(probe(m.path).timeline.duration_s / 2, 6)  # the middle of the clip's clock
        assert p["source_frame"] == list(m.times).index(max(x for x in m.times if x <= t + 1e-6))
        still = cv2.cvtColor(cv2.imread(str(out / "scenes" / f"user-{scene}-48x32.png")), cv2.COLOR_BGR2RGB)
        shown = fit_image(player.at(m.path, t), 48, 32, m.path)  # the independent player's frame, fitted
        assert np.abs(still.astype(int) - shown.astype(int)).mean() < 4, name
        if m.size == (96, 64):  # same aspect: the code survives the fit
            assert frame_code(still) == m.on_screen(t), name
            assert is_upright(still), name
    # frame_s picks another moment of every clip; a time past a clip is refused, naming it
    generate_camera(
        tmp_path / "d2",
        GenerateOptions(
            source=_folder(made, tmp_path / "two", ["rot90.mp4", "late_start.mp4"]),
            settings={"size": "48x32", "frame_s": "0.6"},
        ),
    )
    for s in load_samples(tmp_path / "d2"):
        m = made[s.params["source_clip"]]
        assert s.params["source_frame_s"] == 0.6
        assert s.params["source_frame"] == list(m.times).index(max(x for x in m.times if x <= 0.6 + 1e-6))
    with pytest.raises(DataError, match="late_start.mp4: no frame at 5 s"):
        generate_camera(
            tmp_path / "d3", GenerateOptions(source=tmp_path / "two", settings={"size": "48x32", "frame_s": "5"})
        )
    with pytest.raises(ConfigError, match="frame_s"):
        generate_camera(tmp_path / "d4", GenerateOptions(source=tmp_path / "two", settings={"frame_s": "-1"}))
    assert not (tmp_path / "d3" / "manifest.jsonl").exists()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "notes.mp4").write_text("these are my notes, not a video\n" * 20)
    with pytest.raises(DataError, match="notes.mp4"):
        generate_camera(tmp_path / "d5", GenerateOptions(source=broken, settings={"size": "48x32"}))
    assert not (tmp_path / "d5" / "manifest.jsonl").exists()


# --------------------------------------------------------------------------- shortcuts

#: four labelled actions on three clips (bounds on frame times of both rates), two on a fourth (left out)
SHORTCUT_STEPS = {
    "vfr_two_rates.mp4": [
        (0.0, 0.5, "open the box"),
        (0.5, 1.0, "take out the lid"),
        (1.0, 1.4, "fill the box"),
        (1.4, 2.0, "close the box"),
    ],
    "rot90.mp4": [
        (0.0, 0.2, "wet the brush"),
        (0.2, 0.5, "paint the wall"),
        (0.5, 0.7, "rinse the brush"),
        (0.7, 1.0, "dry the brush"),
    ],
    "late_start.mp4": [(0.5, 0.7, "crack the egg"), (0.7, 1.0, "whisk"), (1.0, 1.2, "pour"), (1.2, 1.5, "flip")],
    "hevc.mp4": [(0.0, 0.3, "one"), (0.3, 0.6, "two")],
}


def _label_of(steps: list[tuple[float, float, str]], truth: Made, code: int) -> str | None:
    """The action during which the original's frame ``code`` is on screen; None for a frame whose display
    interval comes within 50 ms (about one copy frame) of an action's bound: the importer samples the clip at
    its nominal rate and the op snaps a bound to the nearest copy frame, so an edge frame may go either way."""
    i = truth.codes.index(code)
    a = truth.times[i] - 0.05
    b = (truth.times[i + 1] if i + 1 < len(truth.times) else truth.times[i] + 1 / 30) + 0.05
    for start, end, label in steps:
        if start <= a and b <= end:
            return label
    return None


def test_shortcuts_on_a_folder_of_clips_reorders_the_players_frames(made: dict[str, Made], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from vidaudit.cli import app

    player = Player.required()
    src = _folder(made, tmp_path / "clips", [*SHORTCUT_STEPS, "vp9.webm"])
    with open(src / "steps.csv", "w", encoding="utf-8") as f:
        f.write("clip,start_s,end_s,label\n")
        for clip, rows in SHORTCUT_STEPS.items():
            f.writelines(f"{clip},{a},{b},{label}\n" for a, b, label in rows)
    out = tmp_path / "data"
    r = CliRunner().invoke(app, ["generate", "stress", "--probe", "shortcuts", "--source", str(src), "--out", str(out)])
    assert r.exit_code == 0, r.output
    samples = load_samples(out)
    info = json.loads((out / "dataset.json").read_text())
    assert info["source"] == "clips" and sorted(info["skipped_clips"]) == ["hevc.mp4", "vp9.webm"]
    assert {s.params["source_name"] for s in samples} == {"vfr_two_rates", "rot90", "late_start"}
    assert len(samples) == 3 * 3 * 3  # 3 clips x 3 conditions x 3 questions
    checked = 0
    for s in samples:
        name = s.params["source_name"] + (".mp4")
        steps, truth = SHORTCUT_STEPS[name], made[name]
        assert s.params["canonical"] == [label for _, _, label in steps]  # time order is canonical
        if s.params["video_condition"] != "reordered":
            continue
        _, frames = player.frames(out / s.video.path)
        labels = []
        for img in frames:
            assert is_upright(img), s.sample_id
            got = _label_of(steps, truth, frame_code(img))
            if got is not None and (not labels or labels[-1] != got):
                labels.append(got)
            checked += 1
        assert labels == s.params["shown"], (
            s.sample_id,
            labels,
            s.params["shown"],
        )  # the order the answer key was built on
        assert labels != s.params["canonical"]
    assert checked > 100
    # a folder where no clip has four actions is one line naming the fix
    bare = _folder(made, tmp_path / "bare", ["rot90.mp4", "hevc.mp4"])
    r = CliRunner().invoke(
        app, ["generate", "stress", "--probe", "shortcuts", "--source", str(bare), "--out", str(tmp_path / "d2")]
    )
    assert r.exit_code == 2 and "at least 4 labelled actions in steps.csv" in r.output and "Traceback" not in r.output


# --------------------------------------------------------------------------- cross_frame


def test_cross_frame_reads_a_folder_of_clips_with_a_csv_of_questions(made: dict[str, Made], tmp_path: Path) -> None:
    """The NExT-QA layout with the clips beside the CSV: every clip is imported on the player's clock, so the
    frames the masked and raw conditions sample are the frames a player shows."""
    from typer.testing import CliRunner

    from vidaudit.cli import app

    player = Player.required()
    names = ["rot90.mp4", "phone_vfr_rot180.mp4", "late_start.mp4", "vfr_two_rates.mp4"]
    src = _folder(made, tmp_path / "clips", names)
    (src / "questions.csv").write_text(
        "video,question,a0,a1,a2,a3,a4,answer,type\n"
        + "".join(
            f"{Path(n).stem},What is shown?,a,b,c,d,e,{i % 5},{'TN' if i % 2 else 'DO'}\n" for i, n in enumerate(names)
        )
    )
    out = tmp_path / "data"
    r = CliRunner().invoke(
        app, ["generate", "stress", "--probe", "cross_frame", "--source", str(src), "--out", str(out)]
    )
    assert r.exit_code == 0, r.output
    samples = load_samples(out)
    assert len(samples) == 2 * len(names)  # forced and with abstention
    for s in samples:
        truth = next(made[n] for n in names if Path(n).stem == s.params["video_name"])
        times, frames = player.frames(out / s.video.path)
        assert [frame_code(f) for f in frames] == [truth.on_screen(k / s.video.fps) for k in range(len(frames))]
        assert all(is_upright(f) for f in frames) and times[0] == 0.0
    bad = _folder(made, tmp_path / "bad", ["rot90.mp4"])
    (bad / "q.csv").write_text("video,question,a0,a1,a2,a3,a4,answer,type\nmissing,Q?,a,b,c,d,e,0,TN\n")
    r = CliRunner().invoke(
        app, ["generate", "stress", "--probe", "cross_frame", "--source", str(bad), "--out", str(tmp_path / "d2")]
    )
    assert r.exit_code == 2 and "none of its 1 videos was found" in r.output


def test_shortcuts_on_ego4d_windows(tmp_path: Path) -> None:
    """``--set dataset=ego4d``: each 5-15 s window with 4+ narrated actions is a procedure; its reordered videos
    show the original's frames of each narrated action in the order the answer key names (ffmpeg reads them)."""
    from typer.testing import CliRunner

    from test_stress_datasets import _ego4d_dir
    from vidaudit.cli import app
    from vidaudit.suites.stress.datasets import ego4d

    player = Player.required()
    root = _ego4d_dir(tmp_path)
    video = next((root / "v1" / "full_scale").iterdir())
    truth = Made(video, tuple(range(110)), tuple(k / 5 for k in range(110)))
    windows = {c.name: [(c.start_s + s.start_s, c.start_s + s.end_s, s.label) for s in c.steps] for c in ego4d(root)}
    out = tmp_path / "data"
    r = CliRunner().invoke(
        app,
        [
            "generate",
            "stress",
            "--probe",
            "shortcuts",
            "--source",
            str(root),
            "--set",
            "dataset=ego4d",
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    samples = load_samples(out)
    assert {s.params["source_name"] for s in samples} == set(windows) and len(windows) == 2
    assert {s.params["source"] for s in samples} == {"ego4d"}
    for s in samples:
        steps = windows[s.params["source_name"]]
        assert s.params["canonical"] == [label for _, _, label in steps]
        if s.params["video_condition"] != "reordered":
            continue
        labels: list[str] = []
        for img in player.frames(out / s.video.path)[1]:
            got = _label_of(steps, truth, frame_code(img))
            if got is not None and (not labels or labels[-1] != got):
                labels.append(got)
        assert labels == s.params["shown"], (s.sample_id, labels, s.params["shown"])
    r = CliRunner().invoke(
        app, ["generate", "stress", "--probe", "shortcuts", "--set", "dataset=ego4d", "--out", str(tmp_path / "d2")]
    )
    assert r.exit_code == 2 and "pass --source" in r.output
