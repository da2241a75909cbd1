"""``--source`` folders and the dataset loaders on real data (issue 31, "Folders and loaders that take real data").

- A folder holding every container a player plays (MP4, MKV, WebM, AVI, MOV, AVCHD ``.mts`` / ``.m2ts``,
  MPEG-TS, MPEG-PS ``.mpg`` / ``.vob``, MXF, FLV, WMV / ASF, 3GP, M4V, Ogg Theora), written here with PyAV and
  Debian's ffmpeg, beside files that are not clips: every clip is used, everything else is named with its
  reason (printed, and in the written ``dataset.json``).
- Clips of very different lengths: ``scene_mix`` splices in a partner that is long enough (read back by
  ffmpeg: the spliced frames are the partner's), or is left out for that clip with the reason; never the end
  of the folder.
- A real-format Charades excerpt (``tests/data/charades``: the release's columns, actions past ``length``, an
  inverted action, rows without a video, quoted fields holding commas and line breaks) with tiny videos
  written here: the loader clamps, drops and counts, says so, and generation goes through.
- Hostile names in every annotation format (``../``, absolute, a symlink out): refused or skipped with the
  reason, and nothing outside the folder is read.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from realvideos import Player, frame_code, frame_image, mux_silence, write_video
from vidaudit.cli import app
from vidaudit.core.errors import DataError
from vidaudit.core.manifest import load_samples
from vidaudit.suites.stress.datasets import charades, ego4d, find_video, rtime, ssv2
from vidaudit.suites.stress.sources import SourceLog

DATA = Path(__file__).parents[2] / "data" / "charades"
CHARADES_HEADER = "id,subject,scene,quality,relevance,verified,script,objects,descriptions,actions,length\n"

#: name -> (container format, codec, fps); written 64x48 (3GP's H.263 needs 128x96), about 1.2 s each
CONTAINERS = {
    "phone.mp4": ("mp4", "libx264", 10),
    "screen.mkv": ("matroska", "libx264", 10),
    "web.webm": ("webm", "libvpx-vp9", 10),
    "old.avi": ("avi", "mpeg4", 10),
    "camera.mov": ("mov", "libx264", 10),
    "avchd.mts": ("mpegts", "libx264", 10),
    "bluray.m2ts": ("mpegts", "libx264", 10),
    "broadcast.ts": ("mpegts", "mpeg2video", 25),
    "vcd.mpg": ("mpeg", "mpeg1video", 25),
    "dvd.mpeg": ("vob", "mpeg2video", 25),
    "dvd.vob": ("vob", "mpeg2video", 25),
    "studio.mxf": ("mxf", "mpeg2video", 25),
    "flash.flv": ("flv", "flv", 10),
    "windows.wmv": ("asf", "wmv2", 10),
    "stream.asf": ("asf", "wmv2", 10),
    "mobile.3gp": ("3gp", "h263", 10),
    "itunes.m4v": ("ipod", "libx264", 10),
}


def _generate(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, ["generate", "stress", *args])
    return r.exit_code, r.output


def _info(out: Path) -> dict:
    return json.loads((out / "dataset.json").read_text())


def _clip(path: Path, codes: list[int], fps: int = 5, size: tuple[int, int] = (64, 48), **kw) -> None:
    """A clip whose frame k shows code ``codes[k]`` (``realvideos.frame_code`` reads it back)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    c = av.open(str(path), "w", format=kw.get("fmt"))
    s = c.add_stream(kw.get("codec", "libx264"), rate=fps)
    s.width, s.height, s.pix_fmt = size[0], size[1], "yuv420p"
    for k, code in enumerate(codes):
        f = av.VideoFrame.from_ndarray(frame_image(code, *size), format="rgb24")
        f.pts = k
        for p in s.encode(f):
            c.mux(p)
    for p in s.encode():
        c.mux(p)
    c.close()


def _seconds(path: Path, seconds: float, fps: int = 2) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_video(path, list(range(round(seconds * fps))), Fraction(1, fps), rate=fps, size=(64, 48))


# --------------------------------------------------------------------------- every container a player plays


@pytest.fixture(scope="module")
def every_container(tmp_path_factory: pytest.TempPathFactory) -> Path:
    player = Player.required()
    root = tmp_path_factory.mktemp("containers")
    d = root / "clips"
    for name, (fmt, codec, fps) in CONTAINERS.items():
        size = (128, 96) if codec == "h263" else (64, 48)
        _clip(d / name, list(range(round(1.2 * fps))), fps=fps, size=size, fmt=fmt, codec=codec)
    assert player.ffmpeg is not None  # Ogg Theora: PyAV's FFmpeg has no Theora encoder, Debian's has
    subprocess.run(
        [
            player.ffmpeg,
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=64x48:rate=10",
            "-t",
            "1.2",
            "-c:v",
            "libtheora",
            str(d / "theora.ogv"),
        ],
        check=True,
    )
    (d / "notes.txt").write_text("shot list: take 3 is the good one\n")
    cv2_png = np.zeros((48, 64, 3), np.uint8)
    c = av.open(str(d / "cover.png"), "w", format="image2")
    s = c.add_stream("png")
    s.width, s.height, s.pix_fmt = 64, 48, "rgb24"
    for p in s.encode(av.VideoFrame.from_ndarray(cv2_png, format="rgb24")):
        c.mux(p)
    c.close()
    c = av.open(str(d / "voice.m4a"), "w", format="mp4")
    mux_silence(c, c.add_stream("aac", rate=8000), 8)
    c.close()
    (d / "extras").mkdir()
    _clip(d / "extras" / "deeper.mp4", list(range(6)))
    _clip(root / "outside.mp4", list(range(6)))  # a clip outside the folder, reached by a link
    (d / "linked.mp4").symlink_to(root / "outside.mp4")
    return d


NOT_CLIPS = {
    "notes.txt": "not a readable video",
    "cover.png": "a still image",
    "voice.m4a": "no video stream",
    "extras": "a folder",
    "linked.mp4": "leads outside",
}


def test_every_container_a_player_plays_is_used_and_the_rest_is_named(every_container: Path, tmp_path: Path) -> None:
    out = tmp_path / "data"
    code, output = _generate("--probe", "expectation", "--source", str(every_container), "--out", str(out))
    assert code == 0, output
    used = {Path(s.params["source_clip"]).name for s in load_samples(out)}
    assert used == set(CONTAINERS) | {"theora.ogv"}
    log = _info(out)["source_log"]
    skipped = {x["name"]: x["reason"] for x in log["skipped"]}
    assert set(skipped) == set(NOT_CLIPS) and log["n_skipped"] == len(NOT_CLIPS)
    for name, why in NOT_CLIPS.items():
        assert why in skipped[name], (name, skipped[name])
        assert f"skipped: {name}: {skipped[name]}" in output  # printed, one line each
    assert set(os.listdir(every_container)) == used | set(skipped)  # nothing ignored without a word
    assert all(str(every_container) in s.params["source_clip"] for s in load_samples(out))


def test_sycophancy_pairs_takes_every_container_and_names_the_rest(every_container: Path, tmp_path: Path) -> None:
    from vidaudit.suites.stress.sycophancy.pairs_generate import generate_pairs_requests

    lines: list[str] = []
    out = generate_pairs_requests(tmp_path / "gen", every_container, ("TR",), log=SourceLog(say=lines.append))
    keys = {s.params["video_key"] for s in load_samples(out.parent)}
    assert keys == {Path(n).stem for n in CONTAINERS} - {"dvd"} | {"dvd-mpeg", "dvd-vob", "theora"}
    info = _info(out.parent)
    assert {x["name"] for x in info["source_log"]["skipped"]} == set(NOT_CLIPS)
    assert sorted(lines) == sorted(f"skipped: {x['name']}: {x['reason']}" for x in info["source_log"]["skipped"])


def test_camera_motion_leaves_out_what_it_cannot_use_and_goes_on(tmp_path: Path) -> None:
    src = tmp_path / "stills"
    src.mkdir()
    big = np.zeros((120, 200, 3), np.uint8)
    big[:60, :100] = 220
    c = av.open(str(src / "room.png"), "w", format="image2")
    s = c.add_stream("png")
    s.width, s.height, s.pix_fmt = 200, 120, "rgb24"
    for p in s.encode(av.VideoFrame.from_ndarray(big, format="rgb24")):
        c.mux(p)
    c.close()
    (src / "broken.png").write_bytes(b"\x89PNG not really")
    _clip(src / "tiny.mts", list(range(10)), fmt="mpegts")  # 64x48: too small for a 160x96 move
    (src / "notes.txt").write_text("x")
    out = tmp_path / "data"
    code, output = _generate("--probe", "camera_motion", "--source", str(src), "--out", str(out))
    assert code == 0, output
    assert {s.params["source_image"] for s in load_samples(out)} == {"room.png"}
    skipped = {x["name"]: x["reason"] for x in _info(out)["source_log"]["skipped"]}
    assert set(skipped) == {"broken.png", "tiny.mts", "notes.txt"}
    assert "cannot be read as an image" in skipped["broken.png"] and "too small" in skipped["tiny.mts"]
    assert all(f"skipped: {n}: " in output for n in skipped)


# --------------------------------------------------------------------------- clips of very different lengths


@pytest.fixture(scope="module")
def lengths(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("lengths")
    _clip(d / "a_long.mp4", list(range(40)))  # 8 s at 5 fps, codes 0-39
    _clip(d / "b_short.mp4", list(range(100, 107)))  # 1.4 s: less than a quarter of 8 s
    _clip(d / "c_long.mp4", list(range(150, 190)))  # 8 s, codes 150-189
    return d


def test_a_short_clip_beside_long_ones_does_not_stop_the_folder(lengths: Path, tmp_path: Path) -> None:
    """Each clip's scene_mix splices in the next clip long enough: a_long's (which needs 2 s) is c_long, not the
    1.4 s b_short; ffmpeg confirms the spliced frames are c_long's and the rest a_long's own."""
    player = Player.required()
    out = tmp_path / "data"
    code, output = _generate("--probe", "expectation", "--source", str(lengths), "--out", str(out))
    assert code == 0, output
    mixes = {s.params["source_name"]: s for s in load_samples(out) if s.params.get("anomaly") == "scene_mix"}
    assert {k: s.params["mixed_with"] for k, s in mixes.items()} == {
        "a_long": "c_long",
        "b_short": "c_long",
        "c_long": "a_long",
    }
    assert _info(out)["source_log"]["skipped"] == []
    s = mixes["a_long"]
    a, b = s.params["anomaly_info"]["mixed"]["frames"]
    _, frames = player.frames(out / s.video.path)
    codes = [frame_code(f) for f in frames]
    assert b - a == 10 and all(150 <= c < 190 for c in codes[a:b]), codes
    assert codes[:a] + codes[b:] == [k for k in range(40) if k < a or k >= b]


def test_an_anomaly_no_partner_fits_is_left_out_for_that_clip_with_the_reason(lengths: Path, tmp_path: Path) -> None:
    two = tmp_path / "two"
    two.mkdir()
    for n in ("a_long.mp4", "b_short.mp4"):
        shutil.copy(lengths / n, two / n)
    out = tmp_path / "data"
    code, output = _generate("--probe", "expectation", "--source", str(two), "--out", str(out))
    assert code == 0, output
    got = {(s.params["source_name"], s.params["anomaly"]) for s in load_samples(out) if s.params["task"] == "anomaly"}
    assert ("a_long", "scene_mix") not in got and ("b_short", "scene_mix") in got and len(got) == 13
    [skip] = _info(out)["source_log"]["skipped"]
    assert skip["name"] == "a_long.mp4" and "scene_mix" in skip["reason"] and "1.4 s" in skip["reason"]
    assert f"skipped: a_long.mp4: {skip['reason']}" in output


def test_a_clip_that_does_not_decode_is_named_and_the_rest_go_on(lengths: Path, tmp_path: Path) -> None:
    d = tmp_path / "mixed"
    d.mkdir()
    for n in ("a_long.mp4", "c_long.mp4"):
        shutil.copy(lengths / n, d / n)
    (d / "broken.mts").write_bytes((lengths / "b_short.mp4").read_bytes()[:300])  # a cut-off download
    out = tmp_path / "data"
    code, output = _generate("--probe", "expectation", "--source", str(d), "--out", str(out))
    assert code == 0, output
    assert {s.params["source_name"] for s in load_samples(out)} == {"a_long", "c_long"}
    [skip] = _info(out)["source_log"]["skipped"]
    assert skip["name"] == "broken.mts" and skip["reason"] and "skipped: broken.mts: " in output


def test_a_dataset_video_that_does_not_import_is_named_and_the_rest_go_on(lengths: Path, tmp_path: Path) -> None:
    """SSv2's loader reads no video: the one that does not decode is found at import, named, and left out."""
    root = tmp_path / "ssv2"
    videos = root / "20bn-something-something-v2"
    videos.mkdir(parents=True)
    shutil.copy(lengths / "a_long.mp4", videos / "101.mp4")
    shutil.copy(lengths / "c_long.mp4", videos / "102.mp4")
    (videos / "103.webm").write_bytes(b"\x1aE\xdf\xa3 a cut-off download")
    (root / "something-something-v2-validation.json").write_text(
        json.dumps(
            [
                {
                    "id": str(i),
                    "label": f"moving thing {i}",
                    "template": "Moving [something]",
                    "placeholders": ["thing"],
                }
                for i in (101, 102, 103)
            ]
        )
    )
    out = tmp_path / "data"
    code, output = _generate(
        "--probe", "expectation", "--source", str(root), "--set", "dataset=ssv2", "--out", str(out)
    )
    assert code == 0, output
    assert {s.params["dataset_id"] for s in load_samples(out)} == {"101", "102"}
    [skip] = _info(out)["source_log"]["skipped"]
    assert skip["name"] == "103.webm" and "cannot decode 103.webm" in skip["reason"]
    assert f"skipped: 103.webm: {skip['reason']}" in output


# --------------------------------------------------------------------------- Charades, in its release's format


#: the videos this test holds of the excerpt (the others are absent, as for a user holding a subset): seconds
CHARADES_VIDEOS = {"9GS13": 21.5, "0A8CF": 15.0, "YA10L": 18.0, "QE4YE": 20.5}


@pytest.fixture
def charades_root(tmp_path: Path) -> Path:
    root = tmp_path / "charades"
    root.mkdir()
    for f in DATA.iterdir():
        shutil.copy(f, root / f.name)
    for vid, seconds in CHARADES_VIDEOS.items():
        _seconds(root / "Charades_v1_480" / f"{vid}.mp4", seconds)
    (root / "Charades_v1_480" / "L8O02.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 then nothing")
    return root


def test_the_excerpt_is_shaped_like_the_release() -> None:
    with open(DATA / "Charades_v1_train.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == CHARADES_HEADER.strip().split(",") and len(rows) == 20
    acts = [(r, a.split()) for r in rows for a in r["actions"].split(";") if a]
    assert sum(any(float(b[2]) > float(r["length"]) for rr, b in acts if rr is r) for r in rows) >= 12
    assert sum(float(b[2]) < float(b[1]) for _, b in acts) == 1
    assert any("\n" in r["descriptions"] and "," in r["descriptions"] for r in rows)
    assert any('"' in r["script"] for r in rows) and any(not r["actions"] for r in rows)


def test_charades_clamps_drops_and_counts(charades_root: Path) -> None:
    lines: list[str] = []
    log = SourceLog(say=lines.append)
    clips = {c.extra["dataset_id"]: c for c in charades(charades_root, log)}
    assert set(clips) == set(CHARADES_VIDEOS)
    a = clips["9GS13"]  # c011 10.30-21.70 and c016 14.80-22.40 end after the 21.5 s video
    assert [(s.label, s.start_s, s.end_s) for s in a.steps] == [
        ("Opening a door", 0.0, 4.1),
        ("Putting a phone/camera somewhere", 5.2, 9.9),
        ("Sitting at a table", 10.3, 21.5),
    ]
    assert ["Playing with a phone/camera", 14.8, 21.5] in a.extra["actions"] and a.extra["actions_clamped"] == 2
    b = clips["0A8CF"]  # c003 13.40-11.20 is inverted; c000 31.00-33.50 starts after the 15 s video
    assert {x[0] for x in b.extra["actions"]} == {
        "Holding some clothes",
        "Tidying some clothes",
        "Putting clothes somewhere",
    } and len(b.extra["actions"]) == 3
    assert clips["YA10L"].steps == () and clips["QE4YE"].description.startswith(
        "A person washes some clothes in a washer,\nthen closes the door."
    )
    assert log.counts == {
        "rows": 20,
        "entries_without_video": 15,
        "actions_past_length": 3,
        "actions_clamped": 3,
        "actions_after_video": 1,
        "actions_inverted": 1,
    }
    assert log.skipped == [{"name": "L8O02.mp4", "reason": log.skipped[0]["reason"]}]
    assert "cannot decode" in log.skipped[0]["reason"]
    said = "\n".join(lines)
    assert "15 annotated entries have no video" in said and "3 actions in 2 videos" in said
    assert "0A8CF 'Throwing clothes somewhere' 13.40-11.20 s" in said
    assert "0A8CF 'Holding some clothes' 31.00-33.50 s (the video lasts 15 s)" in said
    assert lines[0] == f"skipped: L8O02.mp4: {log.skipped[0]['reason']}"


def test_expectation_generates_from_the_charades_excerpt(charades_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "data"
    code, output = _generate(
        "--probe", "expectation", "--source", str(charades_root), "--set", "dataset=charades", "--out", str(out)
    )
    assert code == 0, output
    samples = load_samples(out)
    assert {s.params["dataset_id"] for s in samples} == set(CHARADES_VIDEOS)
    gap = [s for s in samples if s.params["task"] == "gap_mcq"]
    assert [s.params["dataset_id"] for s in gap] == ["9GS13"]  # the one chain of three actions
    forward = {s.params["dataset_id"]: s.video for s in samples if s.params.get("direction") == "forward"}
    for s in samples:
        assert all(end <= forward[s.params["dataset_id"]].duration_s + 1e-6 for _, _, end in s.params["actions"])
    log = _info(out)["source_log"]
    assert log["counts"]["actions_clamped"] == 3 and log["counts"]["entries_without_video"] == 15
    assert log["skipped"][0]["name"] == "L8O02.mp4" and "skipped: L8O02.mp4: cannot decode" in output
    assert "clamped to its end" in output and "end before they start" in output


def test_charades_without_its_classes_file_is_refused_with_the_fix(charades_root: Path) -> None:
    (charades_root / "Charades_v1_classes.txt").unlink()
    with pytest.raises(DataError, match=r"no Charades_v1_classes.txt.*'c008, then c109'.*Copy it"):
        charades(charades_root)


# --------------------------------------------------------------------------- hostile names


HOSTILE_IDS = ["../outside", "../../outside", "sub/../../outside", "a/b", "..", "/", "a\nb", " "]


@pytest.fixture
def world(tmp_path: Path) -> Path:
    """``root`` (a dataset folder) beside valid videos that a hostile id would reach: ``outside.mp4`` next to it
    and ``root/outside.mp4`` (outside its videos folders), plus a symlink out named like a video id."""
    root = tmp_path / "root"
    for d in ("Charades_v1_480", "20bn-something-something-v2", "videos", "v1/full_scale"):
        (root / d).mkdir(parents=True)
    _seconds(tmp_path / "outside.mp4", 8.0)
    _seconds(root / "outside.mp4", 8.0)
    _seconds(root / "Charades_v1_480" / "GOOD1.mp4", 8.0)
    (root / "Charades_v1_480" / "LINK1.mp4").symlink_to(tmp_path / "outside.mp4")
    return root


def _hostile(tmp_path: Path) -> list[str]:
    return [*HOSTILE_IDS, str(tmp_path / "outside"), "LINK1"]


def _inside(root: Path, clips) -> None:
    for c in clips:
        assert Path(os.path.realpath(c.path)).is_relative_to(os.path.realpath(root)), c.path
        assert Path(c.path).name != "outside.mp4"


def test_charades_ids_never_reach_outside(world: Path, tmp_path: Path) -> None:
    (world / "Charades_v1_classes.txt").write_text("c000 Holding some clothes\n")
    w = csv.writer(open(world / "Charades_v1_train.csv", "w", newline="", encoding="utf-8"))
    w.writerow(CHARADES_HEADER.strip().split(","))
    for vid in ["GOOD1", *_hostile(tmp_path)]:
        w.writerow([vid, "S", "Kitchen", "5", "5", "Yes", "s", "o", "d", "c000 0.0 1.0", "8.0"])
    del w
    log = SourceLog()
    clips = charades(world, log)
    assert [c.extra["dataset_id"] for c in clips] == ["GOOD1"]
    _inside(world / "Charades_v1_480", clips)
    skipped = {x["name"] for x in log.skipped}
    assert {
        "../outside",
        "../../outside",
        "sub/../../outside",
        "a/b",
        "..",
        "/",
        "a\\nb",
        str(tmp_path / "outside"),
        "LINK1",
    } <= skipped
    assert log.counts["rows_without_id"] == 1  # " " is no id


def test_ssv2_rtime_ego4d_ids_never_reach_outside(world: Path, tmp_path: Path) -> None:
    shutil.copy(world / "Charades_v1_480" / "GOOD1.mp4", world / "20bn-something-something-v2" / "GOOD1.webm")
    shutil.copy(world / "Charades_v1_480" / "GOOD1.mp4", world / "videos" / "GOOD1.mp4")
    shutil.copy(world / "Charades_v1_480" / "GOOD1.mp4", world / "v1" / "full_scale" / "GOOD1.mp4")
    for d in ("20bn-something-something-v2", "videos", "v1/full_scale"):
        (world / d / "LINK1.mp4").symlink_to(tmp_path / "outside.mp4")
    ids = ["GOOD1", *_hostile(tmp_path)]
    (world / "something-something-v2-validation.json").write_text(
        json.dumps([{"id": i, "label": "x", "template": "x", "placeholders": []} for i in ids])
    )
    (world / "test.json").write_text(json.dumps({i: {"reverse": True, "forward_captions": ["f"]} for i in ids}))
    narr = {
        "narration_pass_1": {
            "narrations": [{"timestamp_sec": t, "narration_text": f"#C C does {t}"} for t in (0.0, 1.5, 3.0, 4.5, 6.0)]
        }
    }
    (world / "narration.json").write_text(json.dumps({i: narr for i in ids}))
    for loader in (ssv2, rtime, ego4d):
        log = SourceLog()
        clips = loader(world, log)
        assert {c.extra["dataset_id"] for c in clips} == {"GOOD1"}, loader
        _inside(world, clips)
        assert {"../outside", "../../outside", str(tmp_path / "outside"), "LINK1"} <= {x["name"] for x in log.skipped}


def test_youcook2_and_nextqa_ids_never_reach_outside(world: Path, tmp_path: Path) -> None:
    from vidaudit.suites.stress.cross_frame.nextqa import load_items
    from vidaudit.suites.stress.shortcuts.youcook2 import load_youcook2

    for vid in ("GOOD1", "GOOD2"):
        shutil.copy(world / "Charades_v1_480" / "GOOD1.mp4", world / "videos" / f"{vid}.mp4")
    (world / "videos" / "LINK1.mp4").symlink_to(tmp_path / "outside.mp4")
    ids = ["GOOD1", "GOOD2", *_hostile(tmp_path)]
    anns = [{"id": j, "segment": [j, j + 1], "sentence": f"step {j}"} for j in range(4)]
    (world / "youcook2_annotations.json").write_text(json.dumps({"database": {i: {"annotations": anns} for i in ids}}))
    log = SourceLog()
    sources = load_youcook2(world, log)
    assert [s.name for s in sources] == ["GOOD1", "GOOD2"]
    assert all(Path(s.video).parent == world / "videos" for s in sources)
    assert {"../outside", "../../outside", str(tmp_path / "outside"), "LINK1"} <= {x["name"] for x in log.skipped}
    with open(world / "q.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["video", "question", "a0", "a1", "a2", "a3", "a4", "answer", "type", "qid"])
        for n, vid in enumerate(ids):  # an empty video is an error of the row, and this CSV is read by line
            if vid.strip() and "\n" not in vid:
                w.writerow([vid, "What is shown?", "a", "b", "c", "d", "e", "0", "TN", str(n)])
    log = SourceLog()
    items = load_items(world, "q.csv", log)
    assert [i.video for i in items] == ["GOOD1", "GOOD2"]
    assert {"../outside", str(tmp_path / "outside"), "LINK1"} <= {x["name"] for x in log.skipped}


def test_lane_change_refuses_a_clip_outside_its_folder(tmp_path: Path) -> None:
    root = tmp_path / "drive"
    root.mkdir()
    _seconds(root / "ok.mp4", 4.0)
    _seconds(tmp_path / "outside.mp4", 4.0)
    (root / "link.mp4").symlink_to(tmp_path / "outside.mp4")
    rows = [
        "ok.mp4,no_change",
        "../outside.mp4,lane_change",
        f"{tmp_path / 'outside.mp4'},lane_change",
        "link.mp4,lane_change",
    ]
    (root / "annotations.csv").write_text("clip,label\n" + "\n".join(rows) + "\n")
    out = tmp_path / "data"
    code, output = _generate("--probe", "lane_change", "--source", str(root), "--out", str(out))
    assert code == 2 and "line 3" in output and "line 4" in output and "line 5" in output and "line 2" not in output
    assert not (out / "manifest.jsonl").exists()


def test_lane_change_leaves_out_a_clip_that_does_not_decode(tmp_path: Path) -> None:
    root = tmp_path / "drive"
    root.mkdir()
    _seconds(root / "ok.mp4", 4.0)
    (root / "bad.mts").write_bytes(b"G" * 376)
    (root / "annotations.csv").write_text("clip,label\nok.mp4,no_change\nbad.mts,lane_change\n")
    out = tmp_path / "data"
    code, output = _generate("--probe", "lane_change", "--source", str(root), "--out", str(out))
    assert code == 0, output
    assert [s.params["clip"] for s in load_samples(out)] == ["ok.mp4"]
    [skip] = _info(out)["source_log"]["skipped"]
    assert skip["name"] == "bad.mts" and skip["reason"].startswith("line 3: ") and "skipped: bad.mts: " in output


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.lists(
        st.sampled_from(["..", ".", "", "/", "\\", "a", "LINK1", "outside", "GOOD1", "\x00", "\n"]),
        min_size=1,
        max_size=5,
    ).map("/".join)
    | st.text(alphabet=st.sampled_from("./\\aGOD1\x00:"), max_size=12)
)
def test_find_video_never_answers_outside_its_folder(world: Path, name: str) -> None:
    """Whatever the id, ``find_video`` answers a file inside one of the folders it searches, None, or a DataError."""
    dirs = ("Charades_v1_480", ".")
    try:
        found = find_video(world, dirs, name, source="hostile.csv line 2")
    except DataError as e:
        assert "hostile.csv line 2" in str(e)
        return
    if found is not None:
        real = Path(os.path.realpath(found))
        assert (
            real.is_relative_to(os.path.realpath(world))
            and real.is_file()
            and real.name != "outside.mp4"
            or real == Path(os.path.realpath(world / "outside.mp4"))
        ), found
