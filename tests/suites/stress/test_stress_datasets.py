"""Loaders of the Reveal datasets in their published annotation formats (Charades CSV, Something-Something v2
JSON, RTime JSON, Ego4D narrations), on small fixtures written here in those exact layouts; nothing is
downloaded. End to end: the expectation probe on each, and an Ego4D window confirmed by an independent player."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from realvideos import Player, frame_code, write_video
from vidaudit.cli import app
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.manifest import load_samples
from vidaudit.suites.stress.datasets import (
    EGO4D_MAX_S,
    EGO4D_MIN_S,
    EGO4D_MIN_STEPS,
    chain,
    charades,
    clips_from_source,
    ego4d,
    ego4d_windows,
    narration_text,
    rtime,
    ssv2,
)
from vidaudit.suites.stress.sources import SourceLog, Step

CHARADES_HEADER = "id,subject,scene,quality,relevance,verified,script,objects,descriptions,actions,length\n"


def _clip(path: Path, seconds: float, fps: int = 10) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_video(path, list(range(int(seconds * fps))), Fraction(1, fps), rate=fps)


@pytest.fixture
def charades_dir(tmp_path: Path) -> Path:
    d = tmp_path / "charades"
    (d / "Charades_v1_480").mkdir(parents=True)
    (d / "Charades_v1_classes.txt").write_text(
        "c000 Holding some clothes\nc001 Putting clothes somewhere\nc002 Taking some clothes from somewhere\n"
    )
    (d / "Charades_v1_test.csv").write_text(
        CHARADES_HEADER + 'YSKX3,HR43,Kitchen,6,7,Yes,"A person holds clothes, then puts them away.",clothes;table,'
        '"A person is holding clothes and puts them on the table.",c000 0.00 1.00;c001 0.90 1.50;c002 1.60 2.40,2.5\n'
        + "ABCDE,HR44,Bedroom,5,6,Yes,A person takes clothes.,clothes,A person takes some clothes.,"
        "c002 0.60 1.00;c000 0.00 0.50;c001 1.10 1.60,1.8\n" + "NOVID,HR45,Garage,5,6,Yes,x,y,z,c000 0.0 1.0,3.0\n"
    )
    _clip(d / "Charades_v1_480" / "YSKX3.mp4", 2.5)
    _clip(d / "Charades_v1_480" / "ABCDE.mp4", 1.8)
    return d


def test_charades(charades_dir: Path) -> None:
    clips = charades(charades_dir)
    assert [c.extra["dataset_id"] for c in clips] == ["YSKX3", "ABCDE"]  # NOVID has no video: skipped
    a = clips[0]
    assert a.description == "A person is holding clothes and puts them on the table."
    # c001 0.90-1.50 overlaps c000 0.00-1.00: dropped from the chain, kept in the raw actions
    assert [s.label for s in a.steps] == ["Holding some clothes", "Taking some clothes from somewhere"]
    assert len(a.extra["actions"]) == 3
    assert [s.label for s in clips[1].steps] == [
        "Holding some clothes",
        "Taking some clothes from somewhere",
        "Putting clothes somewhere",
    ]  # sorted by start


def test_charades_errors(charades_dir: Path) -> None:
    p = charades_dir / "Charades_v1_test.csv"
    p.write_text(CHARADES_HEADER + "YSKX3,a,b,1,1,Yes,s,o,d,c999 0 1,2.5\n")
    with pytest.raises(DataError, match="line 2.*c999"):
        charades(charades_dir)
    p.write_text(CHARADES_HEADER + "YSKX3,a,b,1,1,Yes,s,o,d,c000 zero 1,2.5\n")
    with pytest.raises(DataError, match="line 2"):
        charades(charades_dir)
    p.write_text("video,label\n")
    with pytest.raises(DataError, match="no column id"):
        charades(charades_dir)


def test_charades_lost_separator_and_classes_file_quirks(charades_dir: Path) -> None:
    """An actions field that lost a ';' used to drop its second action silently; a classes file saved by a
    Windows editor (BOM, CRLF) is read; one code with two names is refused (either name would be a guess)."""
    csv_path, classes = charades_dir / "Charades_v1_test.csv", charades_dir / "Charades_v1_classes.txt"
    csv_path.write_text(CHARADES_HEADER + "YSKX3,a,b,1,1,Yes,s,o,d,c000 0.00 1.00 c001 1.10 2.00,2.5\n")
    with pytest.raises(DataError, match=r"line 2: action 'c000 0.00 1.00 c001 1.10 2.00' is not 'cNNN start end'"):
        charades(charades_dir)
    csv_path.write_text(CHARADES_HEADER + "YSKX3,a,b,1,1,Yes,s,o,d,c000 0.00 1.00;c001 1.10 2.00,2.5\n")
    classes.write_bytes(
        b"\xef\xbb\xbfc000 Holding some clothes\r\nc001 Putting clothes somewhere\r\n"
        b"c002 Taking some clothes from somewhere\r\n"
    )
    [clip] = charades(charades_dir)
    assert [(s.label, s.start_s, s.end_s) for s in clip.steps] == [
        ("Holding some clothes", 0.0, 1.0),
        ("Putting clothes somewhere", 1.1, 2.0),
    ]
    classes.write_text("c000 Holding some clothes\nc001 Putting clothes somewhere\nc000 Holding a book\n")
    with pytest.raises(DataError, match=r"line 3: class c000 is 'Holding some clothes' on line 1 and 'Holding a book'"):
        charades(charades_dir)


def test_ssv2(tmp_path: Path) -> None:
    d = tmp_path / "ssv2"
    for vid in ("78687", "42326"):  # SSv2 ships VP9 WebM
        (d / "20bn-something-something-v2").mkdir(parents=True, exist_ok=True)
        write_video(
            d / "20bn-something-something-v2" / f"{vid}.webm",
            list(range(12)),
            Fraction(1, 12),
            codec="libvpx-vp9",
            rate=12,
            fmt="webm",
        )
    (d / "something-something-v2-validation.json").write_text(
        json.dumps(
            [
                {
                    "id": "78687",
                    "label": "holding potato next to vicks vaporub bottle",
                    "template": "Holding [something] next to [something]",
                    "placeholders": ["potato", "vicks vaporub bottle"],
                },
                {
                    "id": "42326",
                    "label": "putting a pen into a cup",
                    "template": "Putting [something] into [something]",
                    "placeholders": ["a pen", "a cup"],
                },
                {"id": "1", "label": "absent", "template": "x", "placeholders": []},
            ]
        )
    )
    (d / "something-something-v2-labels.json").write_text(json.dumps({"Holding [something] next to [something]": "0"}))
    clips = ssv2(d)
    assert [c.description for c in clips] == ["holding potato next to vicks vaporub bottle", "putting a pen into a cup"]
    assert clips[0].extra["placeholders"] == ["potato", "vicks vaporub bottle"] and clips[0].steps == ()
    # an id listed again (a user's merged train + validation) is one clip, the repeat named in the source log
    val = json.loads((d / "something-something-v2-validation.json").read_text())
    (d / "something-something-v2-train.json").write_text(json.dumps([{**val[1], "label": "putting a pen down"}]))
    log = SourceLog()
    assert [c.description for c in ssv2(d, log)] == [
        "putting a pen down",
        "holding potato next to vicks vaporub bottle",
    ]
    assert [s["name"] for s in log.skipped] == ["42326"]
    assert log.skipped[0]["reason"] == (
        "something-something-v2-validation.json entry 1: listed a second time (first: "
        "something-something-v2-train.json entry 0); the first listing is kept"
    )
    (d / "something-something-v2-train.json").unlink()
    (d / "something-something-v2-validation.json").write_text(json.dumps({"id": "1"}))
    with pytest.raises(DataError, match="list"):
        ssv2(d)


def test_rtime(tmp_path: Path) -> None:
    d = tmp_path / "rtime"
    for vid in ("33176965", "1105771335"):
        _clip(d / "videos" / f"{vid}.mp4", 1.0)
    (d / "test.json").write_text(
        json.dumps(
            {
                "33176965": {
                    "temporal": True,
                    "reverse": True,
                    "forward_captions": ["The view moves from bottom to top."],
                    "reverse_captions": ["The view moves from top to bottom."],
                    "forward_rewrites": [],
                    "reverse_rewrites": [],
                    "url": "https://example.invalid/1",
                },
                "1105771335": {
                    "temporal": True,
                    "reverse": False,
                    "forward_captions": ["A woman stands up."],
                    "reverse_captions": ["A woman sits."],
                    "url": "https://example.invalid/2",
                },
            }
        )
    )
    clips = rtime(d)
    assert [c.extra["dataset_id"] for c in clips] == ["33176965"]
    assert clips[0].description == "The view moves from bottom to top."
    assert clips[0].extra["reverse_caption"] == "The view moves from top to bottom."
    # the release's types are JSON booleans and lists of strings: "false" as a string would be truthy (the
    # entry kept as reversible), a string caption would give its first character as the description
    good = json.loads((d / "test.json").read_text())
    # a video listed again (here in a second split file) is one clip: kept once, the repeat named in the log
    (d / "valid.json").write_text(json.dumps({"33176965": good["33176965"]}))
    log = SourceLog()
    assert [c.extra["dataset_id"] for c in rtime(d, log)] == ["33176965"]
    (skip,) = log.skipped  # the splits are read train, valid, test: the valid.json listing is the first
    assert skip["name"] == "33176965" and skip["reason"].startswith("test.json video 33176965: listed a second time")
    assert "(first: valid.json video 33176965); the first listing is kept" in skip["reason"]
    (d / "valid.json").unlink()
    for key, value, says in (
        ("reverse", "false", "'reverse' is 'false'; it must be true or false"),
        ("temporal", 1, "'temporal' is 1; it must be true or false"),
        ("forward_captions", "The view moves.", "'forward_captions' must be a list of strings"),
    ):
        (d / "test.json").write_text(json.dumps({"1105771335": {**good["1105771335"], key: value}}))
        with pytest.raises(DataError) as e:
            rtime(d)
        assert f"video 1105771335: {says}, as in RTime's release" in str(e.value)


def _ego4d_dir(tmp_path: Path) -> Path:
    d = tmp_path / "ego4d"
    _clip(d / "v1" / "full_scale" / "001e3e4e-2743-47fc-8564-d5efd11f9e90.mp4", 22.0, fps=5)
    narr = [
        (0.5, "#C C picks a bag"),
        (2.5, "#C C opens the bag"),
        (4.0, "#unsure C looks"),
        (5.5, "#C C puts a cup in the bag"),
        (7.0, "#O A man waves"),
        (12.0, "#C C closes the bag"),
        (16.0, "#C C walks"),
        (17.0, "#C C sits"),
        (19.0, "#C C stands"),
        (20.5, "#C C leaves"),
    ]
    (d / "narration.json").write_text(
        json.dumps(
            {
                "001e3e4e-2743-47fc-8564-d5efd11f9e90": {
                    "narration_pass_1": {
                        "narrations": [
                            {
                                "timestamp_sec": t,
                                "timestamp_frame": int(t * 30),
                                "narration_text": x,
                                "annotation_uid": "u",
                            }
                            for t, x in narr
                        ],
                        "summaries": [],
                    }
                },
                "ffffffff-0000-0000-0000-000000000000": {"narration_pass_1": {"narrations": []}},
            }
        )
    )
    return d


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -2.0])
def test_ego4d_refuses_a_timestamp_that_is_not_a_time(tmp_path: Path, bad: float) -> None:
    """Python's JSON reads NaN and Infinity; a NaN sorted among the narrations used to drop the actions around it
    silently, a negative time started a window before the video: each is refused naming the narration."""
    d = _ego4d_dir(tmp_path)
    data = json.loads((d / "narration.json").read_text())
    data["001e3e4e-2743-47fc-8564-d5efd11f9e90"]["narration_pass_1"]["narrations"][1]["timestamp_sec"] = bad
    (d / "narration.json").write_text(json.dumps(data))
    with pytest.raises(
        DataError, match=rf"video 001e3e4e-2743-47fc-8564-d5efd11f9e90 narration 1: timestamp_sec {bad}"
    ):
        ego4d(d)


def test_ego4d_windows(tmp_path: Path) -> None:
    clips = ego4d(_ego4d_dir(tmp_path))
    assert [(c.start_s, c.end_s) for c in clips] == [(0.5, 12.0), (12.0, 20.5)]  # the empty video gives none
    assert [s.label for s in clips[1].steps] == [
        "The camera wearer closes the bag",
        "The camera wearer walks",
        "The camera wearer sits",
        "The camera wearer stands",
    ]
    c = clips[0]
    assert [s.label for s in c.steps] == [
        "The camera wearer picks a bag",
        "The camera wearer opens the bag",
        "The camera wearer puts a cup in the bag",
        "A person A man waves",
    ]
    assert c.steps[0] == Step(0.0, 2.0, "The camera wearer picks a bag")
    assert narration_text("#C C opens the drawer") == "The camera wearer opens the drawer"
    assert [c.name for c in clips] == ["ego4d-001e3e4e-0", "ego4d-001e3e4e-1"]


def test_ego4d_videos_whose_uids_share_eight_characters_keep_apart(tmp_path: Path) -> None:
    """Windows are named by the uid's first 8 characters, the whole uid where two uids of the file share them
    (their windows once shared names: the dataset failed on a duplicate sample id after every video was made)."""
    d = _ego4d_dir(tmp_path)
    data = json.loads((d / "narration.json").read_text())
    twin = "001e3e4e-ffff-4000-8000-000000000000"
    data[twin] = data["001e3e4e-2743-47fc-8564-d5efd11f9e90"]
    (d / "narration.json").write_text(json.dumps(data))
    _clip(d / "v1" / "full_scale" / f"{twin}.mp4", 22.0, fps=5)
    names = [c.name for c in ego4d(d)]
    assert names == [
        "ego4d-001e3e4e-2743-47fc-8564-d5efd11f9e90-0",
        "ego4d-001e3e4e-2743-47fc-8564-d5efd11f9e90-1",
        f"ego4d-{twin}-0",
        f"ego4d-{twin}-1",
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 200, allow_nan=False), min_size=0, max_size=40, unique=True))
def test_ego4d_window_rules(times: list[float]) -> None:
    wins = ego4d_windows([(t, f"a{i}") for i, t in enumerate(times)])
    last_end = -1.0
    for a, b, steps in wins:
        assert EGO4D_MIN_S <= b - a <= EGO4D_MAX_S and len(steps) >= EGO4D_MIN_STEPS and a >= last_end
        assert all(0 <= s.start_s < s.end_s <= b - a + 1e-6 for s in steps)
        last_end = b


@given(st.lists(st.tuples(st.floats(0, 50), st.floats(0.01, 10)), max_size=20))
def test_chain_never_overlaps(spans: list[tuple[float, float]]) -> None:
    out = chain(Step(a, a + d, "x") for a, d in spans)
    assert all(s.end_s <= t.start_s for s, t in zip(out, out[1:]))
    if spans:
        assert out and out[0].start_s == min(a for a, _ in spans)


def test_unknown_dataset_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="choose from folder, charades, ssv2, rtime, ego4d"):
        clips_from_source(tmp_path, "kinetics")
    for name, what in (
        ("charades", "Charades_v1"),
        ("ssv2", "something-something-v2"),
        ("rtime", "RTime"),
        ("ego4d", "narration.json"),
    ):
        with pytest.raises(DataError, match=what):
            clips_from_source(tmp_path, name)


def test_expectation_on_charades_and_ego4d(charades_dir: Path, tmp_path: Path) -> None:
    """The probe on two datasets through the CLI; the Ego4D window's gapped video, read by ffmpeg, is the
    window's frames less the removed action."""
    r = CliRunner().invoke(
        app,
        [
            "generate",
            "stress",
            "--probe",
            "expectation",
            "--source",
            str(charades_dir),
            "--set",
            "dataset=charades",
            "--out",
            str(tmp_path / "c"),
        ],
    )
    assert r.exit_code == 0, r.output
    samples = load_samples(tmp_path / "c")
    assert {s.params["dataset"] for s in samples} == {"charades"}
    assert {s.params["task"] for s in samples if s.params["dataset_id"] == "ABCDE"} == {
        "direction",
        "describe",
        "gap_mcq",
        "gap_summary",
        "anomaly",
    }  # 3 chained actions: a gap
    assert {s.params["task"] for s in samples if s.params["dataset_id"] == "YSKX3"} == {
        "direction",
        "describe",
        "anomaly",
    }  # 2: no gap
    # Ego4D needs a second clip for scene mixing: a second video with its own window
    d = _ego4d_dir(tmp_path)
    data = json.loads((d / "narration.json").read_text())
    uid2 = "22222222-0000-0000-0000-000000000000"
    _clip(d / "v1" / "full_scale" / f"{uid2}.mp4", 8.0, fps=5)
    data[uid2] = {
        "narration_pass_1": {
            "narrations": [
                {"timestamp_sec": t, "narration_text": f"#C C step {i}"} for i, t in enumerate((0.0, 2.0, 4.0, 6.0))
            ]
        }
    }
    (d / "narration.json").write_text(json.dumps(data))
    r = CliRunner().invoke(
        app,
        [
            "generate",
            "stress",
            "--probe",
            "expectation",
            "--source",
            str(d),
            "--set",
            "dataset=ego4d",
            "--out",
            str(tmp_path / "e"),
        ],
    )
    assert r.exit_code == 0, r.output
    samples = load_samples(tmp_path / "e")
    player = Player.required()
    gap = next(s for s in samples if s.params["task"] == "gap_mcq" and s.params["dataset_id"].startswith("001e"))
    fwd = next(
        s
        for s in samples
        if s.params["task"] == "direction"
        and s.params["direction"] == "forward"
        and s.params["dataset_id"].startswith("001e")
    )
    _, frames = player.frames(tmp_path / "e" / fwd.video.path)
    codes = [frame_code(f) for f in frames]
    assert codes == [2 + k for k in range(len(codes))]  # on screen at 0.5 + k / 5 s: frame floor(2.5 + k)
    assert len(codes) == round((12.0 - 0.5) * 5)
    meta = json.loads((tmp_path / "e" / gap.video.path).with_suffix(".json").read_text())
    a, b = meta["info"]["removed"]["frames"]
    _, gframes = player.frames(tmp_path / "e" / gap.video.path)
    assert [frame_code(f) for f in gframes] == codes[:a] + codes[b:]
    assert gap.params["missing_action"] in [s for s in gap.params["canonical"]]
