"""``--source DIR`` as a plain folder of real clips for the probes that perturb a source (camera_motion,
shortcuts): the frames used are the frames a player shows, checked with an independent reader (ffmpeg,
``realvideos.Player``) on rotated, variable-rate, late-starting, edit-listed and odd-sized files."""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
from realvideos import Made, Player, frame_code, is_upright, make_all

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.manifest import load_samples
from vidaudit.suites.stress.camera_motion.generate import fit_image
from vidaudit.suites.stress.camera_motion.generate import generate as generate_camera
from vidaudit.suites.stress.sources import frame_on_screen
from vidaudit.video.io import probe


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
    generate_camera(out, "smoke", source=src, settings={"size": "48x32"})
    samples = load_samples(out)
    names = sorted(made)
    assert len(samples) == 6 * len(names)
    for scene, name in enumerate(names):
        m = made[name]
        mine = [s for s in samples if s.params["scene"] == scene]
        assert {s.params["motion"] for s in mine} == {"zoom_in", "zoom_out", "pan_left", "pan_right", "tilt_up",
                                                      "tilt_down"}
        p = mine[0].params
        assert p["source_clip"] == name and "source_image" not in p
        t = p["source_frame_s"]
        assert t == round(probe(m.path).timeline.duration_s / 2, 6)    # the middle of the clip's clock
        assert p["source_frame"] == list(m.times).index(max(x for x in m.times if x <= t + 1e-6))
        still = cv2.cvtColor(cv2.imread(str(out / "scenes" / f"user-{scene}-48x32.png")), cv2.COLOR_BGR2RGB)
        shown = fit_image(player.at(m.path, t), 48, 32, m.path)      # the independent player's frame, fitted
        assert np.abs(still.astype(int) - shown.astype(int)).mean() < 4, name
        if m.size == (96, 64):                                        # same aspect: the code survives the fit
            assert frame_code(still) == m.on_screen(t), name
            assert is_upright(still), name
    # frame_s picks another moment of every clip; a time past a clip is refused, naming it
    generate_camera(tmp_path / "d2", "smoke", source=_folder(made, tmp_path / "two", ["rot90.mp4", "late_start.mp4"]),
                    settings={"size": "48x32", "frame_s": "0.6"})
    for s in load_samples(tmp_path / "d2"):
        m = made[s.params["source_clip"]]
        assert s.params["source_frame_s"] == 0.6
        assert s.params["source_frame"] == list(m.times).index(max(x for x in m.times if x <= 0.6 + 1e-6))
    with pytest.raises(DataError, match="late_start.mp4: no frame at 5 s"):
        generate_camera(tmp_path / "d3", "smoke", source=tmp_path / "two", settings={"size": "48x32", "frame_s": "5"})
    with pytest.raises(ConfigError, match="frame_s"):
        generate_camera(tmp_path / "d4", "smoke", source=tmp_path / "two", settings={"frame_s": "-1"})
    assert not (tmp_path / "d3" / "manifest.jsonl").exists()
