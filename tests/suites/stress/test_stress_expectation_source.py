"""``vidaudit generate stress --probe expectation --source DIR`` on a folder of real clips (rotated, variable
rate, a skipped frame, a late start, an edit list, VP9 / HEVC / AV1 / MPEG-4, an odd size): the reversed,
gapped and anomalous videos, read back by an independent player (ffmpeg), show the original's frames
(by their frame codes) in the order each op's map says, upright."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from realvideos import Made, Player, frame_code, is_upright, make_all
from vidaudit.cli import app
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.manifest import load_samples
from vidaudit.suites.stress.datasets import clips_from_source
from vidaudit.suites.stress.expectation.generate import ANOMALIES
from vidaudit.suites.stress.sources import read_steps

#: clips with labelled actions (steps.csv): enough for a temporal gap
STEPS = {
    "vfr_two_rates.mp4": [(0.0, 0.6, "open the door"), (0.6, 1.2, "walk in"), (1.2, 2.0, "sit down")],
    "rot90.mp4": [(0.0, 0.3, "pick up the cup"), (0.3, 0.6, "drink"), (0.6, 1.0, "put the cup down")],
}
#: ops whose pixels cover the frame code inside their window (checked outside it)
COVERING = ("noise", "insert_object")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Made]]:
    d = tmp_path_factory.mktemp("clips")
    clips = make_all(d)
    with open(d / "steps.csv", "w", encoding="utf-8") as f:
        f.write("clip,start_s,end_s,label\n")
        for clip, rows in STEPS.items():
            f.writelines(f"{clip},{a},{b},{label}\n" for a, b, label in rows)
    return d, clips


@pytest.fixture(scope="module")
def dataset(made, tmp_path_factory: pytest.TempPathFactory) -> Path:
    src, _ = made
    out = tmp_path_factory.mktemp("exp") / "data"
    r = CliRunner().invoke(
        app, ["generate", "stress", "--probe", "expectation", "--source", str(src), "--out", str(out)]
    )
    assert r.exit_code == 0, r.output
    return out


def _codes(player: Player, path: Path) -> tuple[list[int], list[bool]]:
    _, frames = player.frames(path)
    return [frame_code(f) for f in frames], [is_upright(f) for f in frames]


def test_every_clip_gives_reversed_and_anomalous_videos_and_labelled_ones_a_gap(made, dataset: Path) -> None:
    _, clips = made
    samples = load_samples(dataset)
    by_clip: dict[str, set[str]] = {}
    for s in samples:
        by_clip.setdefault(s.params["source_clip"], set()).add(s.params["task"])
    assert {Path(c).name for c in by_clip} == set(clips)
    for clip, tasks in by_clip.items():
        labelled = Path(clip).name in STEPS
        assert tasks == (
            {"direction", "describe", "gap_mcq", "gap_summary", "anomaly"} if labelled else {"direction", "anomaly"}
        ), clip
    anomalies = {(s.params["source_clip"], s.params["anomaly"]) for s in samples if s.params["task"] == "anomaly"}
    assert len(anomalies) == len(clips) * len(ANOMALIES)
    gap = [s for s in samples if s.params["task"] == "gap_mcq"]
    assert sorted(s.params["missing_action"] for s in gap) == ["drink", "walk in"]
    info = json.loads((dataset / "dataset.json").read_text())
    assert info["source"] == "clips"


def test_an_independent_player_confirms_the_frames(made, dataset: Path) -> None:
    """Each output's frame codes, read by ffmpeg, are the original clip's codes on screen at the copy's frame
    times, in the order the op's map gives; reversal reverses the forward clip, the gap drops exactly the
    removed action's frames."""
    player = Player.required()
    _, clips = made
    samples = load_samples(dataset)
    by_name = {s.params["source_name"]: Path(s.params["source_clip"]).name for s in samples}
    checked = 0
    forward: dict[str, list[int]] = {}
    for s in samples:
        if s.params["task"] == "direction" and s.params["direction"] == "forward":
            codes, upright = _codes(player, dataset / s.video.path)
            truth = clips[by_name[s.params["source_name"]]]
            assert codes == [truth.on_screen(k / s.video.fps) for k in range(len(codes))], s.sample_id
            assert all(upright), s.sample_id
            forward[s.params["source_name"]] = codes
    assert len(forward) == len(clips)
    seen = set()
    for s in samples:
        if s.video.path in seen or s.params.get("perturbation") is None:
            continue
        seen.add(s.video.path)
        path = dataset / s.video.path
        meta = json.loads(path.with_suffix(".json").read_text())
        codes, upright = _codes(player, path)
        assert len(codes) == meta["n_frames"]
        src = forward[s.params["source_name"]]
        other = forward.get(s.params.get("mixed_with") or "")
        op = meta["op"]
        affected = meta["map"].get("affected") or [False] * len(codes)
        for j, k in enumerate(meta["map"]["source_frame"]):
            if k is None or (op in COVERING and affected[j]):
                continue
            which = (meta["map"].get("source_video") or ["source"] * len(codes))[j]
            want = src[k] if which == "source" else other[k]
            assert codes[j] == want, f"{s.sample_id} frame {j}: code {codes[j]}, map says {want}"
            assert upright[j], f"{s.sample_id} frame {j} is not upright"
            checked += 1
        if op == "reverse" and s.params["task"] == "direction":
            assert codes == src[::-1]
        if op == "temporal_gap":
            a, b = meta["info"]["removed"]["frames"]
            assert codes == src[:a] + src[b:] and b > a
    assert checked > 500


def test_steps_csv_errors_name_the_line(tmp_path: Path) -> None:
    p = tmp_path / "steps.csv"
    p.write_text("clip,start_s,end_s,label\na.mp4,0,1,x\na.mp4,0.5,2,y\nb.mp4,2,1,z\nc.mp4,0,1,w\na.mp4,3,4,\n")
    with pytest.raises(DataError) as e:
        read_steps(p, ["a.mp4", "b.mp4"])
    msg = str(e.value)
    assert "line 3" in msg and "overlaps" in msg and "line 4" in msg and "line 5" in msg and "line 6" in msg
    p.write_text("clip,start,end,label\n")
    with pytest.raises(DataError, match="header"):
        read_steps(p, ["a.mp4"])


def test_source_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a folder"):
        clips_from_source(tmp_path / "nope")
    with pytest.raises(DataError, match="no video file"):
        clips_from_source(tmp_path)
    with pytest.raises(ConfigError, match="unknown dataset"):
        clips_from_source(tmp_path, "kinetics")
    (tmp_path / "a.txt").write_text("x")
    r = CliRunner().invoke(
        app, ["generate", "stress", "--probe", "expectation", "--source", str(tmp_path), "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 2 and "no video file" in r.output and "Traceback" not in r.output


def test_one_clip_is_refused(made, tmp_path: Path) -> None:
    src, _ = made
    d = tmp_path / "one"
    d.mkdir()
    shutil.copy(src / "rot90.mp4", d / "rot90.mp4")
    r = CliRunner().invoke(
        app, ["generate", "stress", "--probe", "expectation", "--source", str(d), "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 2 and "at least two clips" in r.output


def test_generate_says_what_it_made_and_what_each_part_needs(made, tmp_path: Path) -> None:
    """From one's own clips without steps.csv: the line names the counts read back from the manifest, the tasks
    that need --judge, and the gap task that the clips could not give."""
    src, _ = made
    d = tmp_path / "clips"
    d.mkdir()
    for name in list(STEPS)[:2]:
        shutil.copy(src / name, d / name)
    r = CliRunner().invoke(
        app, ["generate", "stress", "--probe", "expectation", "--source", str(d), "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 0, r.output
    samples = load_samples(tmp_path / "o")
    tasks = {t: sum(s.params["task"] == t for s in samples) for t in ("direction", "anomaly")}
    assert set(s.params["task"] for s in samples) == set(tasks)  # no steps: no gap and no description task
    line = " ".join(r.output.split())
    assert (
        f"{len(samples)} samples: {tasks['direction']} direction, {tasks['anomaly']} anomaly (need --judge); "
        "no temporal-gap task: the clips have no labelled steps (the gap task needs DIR/steps.csv"
    ) in line, line
