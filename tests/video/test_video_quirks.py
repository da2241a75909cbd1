"""Every file a player plays, read as the player shows it: field-coded H.264, packed B-frames and decode-order
stamps in AVI, MPEG program streams, MXF, non-square pixels, two video streams, a cut-off MKV, a guessed rate.

The fixtures (tests/quirkvideos.py) are real files in their real formats, each with its quirk checked here with
Debian's ffprobe before anything else; the independent player is Debian's ffmpeg (``realvideos.Player``: its own
stream choice, its best-effort frame times, woven field pairs, ``scale=iw*sar:ih``). On each fixture, every frame
``vidaudit run`` sends, every frame the stress ``--source`` import copies, every still camera_motion picks and
every frame ``perturb`` writes is the frame ffmpeg shows at its time, at the displayed aspect, in order.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from quirkvideos import Quirk, make_agreed, make_quirks, pipe_encode
from realvideos import Player, frame_code, frame_image, is_upright
from vidaudit.core.errors import DataError
from vidaudit.core.manifest import write_manifest
from vidaudit.core.types import PerturbationSpec, Sample, VideoRef
from vidaudit.video.decode import iter_constant_rate, iter_frames, read_frames
from vidaudit.video.probe import probe, video_ref
from vidaudit.video.sampling import at_fps
from vidaudit.video.streams import best_effort, displayed_size

READABLE = [
    "paff.mts",
    "xvid_packed.avi",
    "h264_dts_only.avi",
    "mpeg2_ps.mpg",
    "mpeg1_aspect.mpg",
    "mxf_sar.mxf",
    "kinetics_sar.mp4",
    "two_streams.mkv",
    "guessed_rate.asf",
]


@pytest.fixture(scope="module")
def quirks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Quirk]:
    Player.required()
    return make_quirks(tmp_path_factory.mktemp("quirks"))


_SEEN: dict[Path, tuple[list[float], list[np.ndarray]]] = {}


def shown(path: Path) -> tuple[list[float], list[np.ndarray]]:
    """ffmpeg's frames of ``path`` and their times (memoised: one decode per file)."""
    if path not in _SEEN:
        _SEEN[path] = Player.required().frames(path)
    return _SEEN[path]


def at(path: Path, t: float) -> np.ndarray:
    times, imgs = shown(path)
    return imgs[max(0, int(np.searchsorted(np.asarray(times), t + 1e-6, side="right")) - 1)]


def ffprobe(path: Path, *args: str) -> dict:
    return json.loads(
        subprocess.run(
            ["ffprobe", "-v", "error", *args, "-of", "json", str(path)], capture_output=True, text=True, check=True
        ).stdout
    )


# --------------------------------------------------------------------------- the fixtures have their quirks


def test_each_fixture_has_its_quirk(quirks: dict[str, Quirk]) -> None:
    """What makes each file hard, as Debian's ffprobe reports it (so a fixture that lost its quirk fails here)."""
    paff = quirks["paff.mts"].path
    packets = ffprobe(paff, "-select_streams", "v", "-show_packets")["packets"]
    frames = ffprobe(paff, "-select_streams", "v", "-show_frames", "-show_entries", "frame=interlaced_frame")["frames"]
    assert len(packets) == 24 and len(frames) == 12  # two field packets per frame
    assert all(f["interlaced_frame"] == 1 for f in frames)
    stream = ffprobe(paff, "-show_streams")["streams"][0]
    assert stream["field_order"] == "tt" and stream["r_frame_rate"] == "50/1"

    xvid = ffprobe(quirks["xvid_packed.avi"].path, "-show_packets")["packets"]
    assert sum(int(p["size"]) < 10 for p in xvid) >= 5  # the packed bitstream's N-VOP placeholders
    for name in ("xvid_packed.avi", "h264_dts_only.avi", "mpeg2_ps.mpg"):
        fr = ffprobe(quirks[name].path, "-show_frames", "-show_entries", "frame=pts")["frames"]
        assert any("pts" not in f for f in fr), name  # frames without a presentation stamp

    for name, sar in (("mpeg1_aspect.mpg", "49:33"), ("mxf_sar.mxf", "16:15"), ("kinetics_sar.mp4", "64:51")):
        assert ffprobe(quirks[name].path, "-show_streams")["streams"][0]["sample_aspect_ratio"] == sar
    assert ffprobe(quirks["mxf_sar.mxf"].path, "-show_format")["format"]["format_name"] == "mxf"
    assert ffprobe(quirks["mpeg2_ps.mpg"].path, "-show_format")["format"]["format_name"] == "mpeg"

    two = ffprobe(quirks["two_streams.mkv"].path, "-show_streams")["streams"]
    assert [(s["codec_type"], s["width"]) for s in two] == [("video", 64), ("video", 96)]

    asf = ffprobe(quirks["guessed_rate.asf"].path, "-show_streams", "-show_format")
    assert asf["streams"][0]["avg_frame_rate"] == "0/0" and asf["streams"][0]["r_frame_rate"] == "25/1"
    assert asf["format"]["format_name"] == "asf"

    cut = ffprobe(quirks["cut.mkv"].path, "-show_format", "-show_packets")
    assert float(cut["format"]["duration"]) == 20.0 and 5 < len(cut["packets"]) < 40


# --------------------------------------------------------------------------- the reader


@pytest.mark.parametrize("name", READABLE)
def test_probe_and_every_frame_are_what_ffmpeg_shows(quirks: dict[str, Quirk], name: str) -> None:
    m = quirks[name]
    info = probe(m.path)
    times, theirs = shown(m.path)
    assert info.n_frames == len(m.codes) == len(theirs)  # pictures, not packets
    assert [frame_code(f) for f in theirs] == list(m.codes)  # the player agrees with the truth
    assert np.allclose(times, m.times, atol=1e-3)
    clock = info.timeline
    assert np.allclose([clock.time_of(i) for i in range(info.n_frames)], times, atol=1e-3)
    assert (info.width, info.height) == m.shown == theirs[0].shape[1::-1]
    assert info.stored_size == m.stored and info.sar == m.sar and info.stream == m.stream
    mine = read_frames(m.path, list(range(info.n_frames)))
    assert [frame_code(f) for f in mine] == list(m.codes)
    for a, b in zip(mine, theirs, strict=True):
        assert a.shape == b.shape and np.abs(a.astype(int) - b).mean() < 3.0
        assert is_upright(a)


def test_a_field_pair_is_one_woven_frame_as_ffmpeg_shows_it(quirks: dict[str, Quirk]) -> None:
    """The comb block is bright on the top field's rows and dark on the bottom's: woven, not deinterlaced."""
    m = quirks["paff.mts"]
    mine = read_frames(m.path, [0, 5])
    for img, ref in zip(mine, [shown(m.path)[1][0], shown(m.path)[1][5]], strict=True):
        for picture in (img, ref):
            block = picture[8:32, 32:48].mean(axis=(1, 2))
            assert (block[0::2] > 200).all() and (block[1::2] < 60).all()


def test_the_displayed_width_is_ffmpegs_scale_iw_times_sar() -> None:
    assert displayed_size(340, 256, Fraction(64, 51)) == (426, 256)
    assert displayed_size(720, 576, Fraction(16, 15)) == (768, 576)
    assert displayed_size(720, 480, Fraction(8, 9)) == (640, 480)
    assert displayed_size(96, 64, Fraction(1)) == (96, 64)


def test_a_turned_anamorphic_clip_is_squared_then_turned(tmp_path: Path) -> None:
    """Stored 120x96 at SAR 4:3 with a display matrix turning it 90 degrees (PyAV-written): vidaudit squares the
    stored pixels (160x96), then turns the picture (96x160), which is Debian's ffmpeg's ``-noautorotate -vf
    scale=iw*sar:ih,transpose=cclock`` frame for frame. ffmpeg's own autorotate turns first (its transpose inverts
    the SAR to 3:4), so its ``-vf scale=iw*sar:ih`` narrows instead: 72x120, the same upright picture at the same
    aspect, 3/4 the size (docs/running-models.md, "The displayed shape")."""
    import av

    path = tmp_path / "turned_anamorphic.mp4"
    with av.open(str(path), "w") as c:
        st_ = c.add_stream("libx264", rate=10)
        st_.width, st_.height, st_.pix_fmt = 120, 96, "yuv420p"
        st_.codec_context.sample_aspect_ratio = Fraction(4, 3)
        st_.set_display_rotation(90)
        for k in range(6):
            squared = np.ascontiguousarray(np.rot90(frame_image(k, 96, 160), -1))  # 160x96, turned back
            stored = cv2.resize(squared, (120, 96), interpolation=cv2.INTER_AREA)
            f = av.VideoFrame.from_ndarray(stored, format="rgb24")
            f.pts = k
            for pk in st_.encode(f):
                c.mux(pk)
        for pk in st_.encode():
            c.mux(pk)
    facts = ffprobe(path, "-show_streams")["streams"][0]
    assert facts["sample_aspect_ratio"] == "4:3" and (facts["width"], facts["height"]) == (120, 96)
    info = probe(path)
    assert (info.width, info.height, info.rotation, info.sar, info.stored_size) == (
        96,
        160,
        90,
        Fraction(4, 3),
        (120, 96),
    )
    mine = read_frames(path, list(range(6)))

    def ffmpeg_rgb(*args: str) -> np.ndarray:
        raw = subprocess.run(
            ["ffmpeg", "-v", "error", *args, "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:"],
            capture_output=True,
            check=True,
        ).stdout
        return np.frombuffer(raw, np.uint8)

    squared_then_turned = ffmpeg_rgb(
        "-noautorotate", "-i", str(path), "-vf", "scale=iw*sar:ih,setsar=1,transpose=cclock"
    ).reshape(6, 160, 96, 3)
    autorotated = ffmpeg_rgb("-i", str(path), "-vf", "scale=iw*sar:ih,setsar=1").reshape(6, 120, 72, 3)
    assert mine.shape == squared_then_turned.shape == (6, 160, 96, 3)
    diff = np.abs(mine.astype(int) - squared_then_turned.astype(int))
    assert diff.mean() < 2 and np.percentile(diff, 99) <= 24, (diff.mean(), np.percentile(diff, 99))
    for k in range(6):
        assert is_upright(mine[k]) and frame_code(mine[k]) == k == frame_code(autorotated[k])
        small = cv2.resize(mine[k], (72, 120), interpolation=cv2.INTER_AREA).astype(int)
        assert np.abs(small - autorotated[k].astype(int)).mean() < 3


@given(
    st.lists(st.integers(1, 40), min_size=1, max_size=60), st.integers(0, 2), st.integers(0, 3), st.integers(0, 1000)
)
def test_best_effort_times_never_come_from_packet_order(gaps: list[int], swaps: int, missing: int, start: int) -> None:
    """Whatever the presentation stamps of reordered frames say, the times come out increasing and are the truth:
    complete increasing pts as they are; else the decode-order stamps, a missing tail one frame apart."""
    true = [start]
    for g in gaps:
        true.append(true[-1] + g)
    assert best_effort(true, [None] * len(true), 1) == true
    pts: list[int | None] = list(true)
    for k in range(min(swaps, len(pts) // 2)):  # a packed B-frame's stamp lands one frame late
        i = 2 * k
        if i + 1 < len(pts):
            pts[i], pts[i + 1] = pts[i + 1], pts[i]
    dts: list[int | None] = list(true)
    cut = min(missing, len(dts) - 1)
    for i in range(len(dts) - cut, len(dts)):
        dts[i] = None
    got = best_effort(pts, dts, 7)
    assert got is not None and all(b > a for a, b in zip(got, got[1:]))
    if pts != true:
        assert got[: len(true) - cut] == true[: len(true) - cut]
        assert got[len(true) - cut :] == [true[len(true) - cut - 1] + 7 * (j + 1) for j in range(cut)]


# --------------------------------------------------------------------------- quirks every player shows alike

AGREED = ["cover_art.mp4", "empty_edit_tmcd.mov", "negative_cts.mp4", "cut_mid_gop.ts", "soft_telecine.ts"]


@pytest.fixture(scope="module")
def agreed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Quirk]:
    Player.required()
    return make_agreed(tmp_path_factory.mktemp("agreed"))


def _edits(path: Path) -> list[list[tuple[int, int]]]:
    """Each track's edit list as (duration, media time) pairs, read from the file's ``elst`` boxes."""
    data, out, at = path.read_bytes(), [], 0
    while (at := data.find(b"elst", at + 1)) >= 0:
        wide = data[at + 4] == 1
        n, p, edits = int.from_bytes(data[at + 8 : at + 12], "big"), at + 12, []
        for _ in range(n):
            k = 8 if wide else 4
            edits.append(
                (int.from_bytes(data[p : p + k], "big"), int.from_bytes(data[p + k : p + 2 * k], "big", signed=True))
            )
            p += 2 * k + 4
        out.append(edits)
    return out


def test_each_agreed_fixture_has_its_quirk(agreed: dict[str, Quirk]) -> None:
    """What ffprobe reports for each file that players show alike (a fixture that lost its quirk fails here)."""
    cover = ffprobe(agreed["cover_art.mp4"].path, "-show_streams")["streams"]
    got = [(s["width"], s["height"], s["disposition"]["attached_pic"], s["disposition"]["default"]) for s in cover]
    assert got == [(96, 64, 0, 1), (2600, 2000, 1, 0)] and 2600 * 2000 > 96 * 64 + 5_000_000  # larger, default or not
    mov = agreed["empty_edit_tmcd.mov"].path
    facts = ffprobe(mov, "-show_streams", "-show_format")
    assert [s["codec_tag_string"] for s in facts["streams"]] == ["avc1", "tmcd"]
    assert float(facts["streams"][0]["start_time"]) == 0.5 and float(facts["format"]["start_time"]) == 0.0
    video, timecode = _edits(mov)
    assert [t for _, t in video] == [-1, 1024] and [t for _, t in timecode] == [0]  # an empty edit, then the media
    neg = agreed["negative_cts.mp4"].path
    packets = ffprobe(neg, "-select_streams", "v", "-show_packets")["packets"]
    assert float(packets[0]["dts_time"]) < 0 == float(packets[0]["pts_time"]) and _edits(neg) == []
    cut = agreed["cut_mid_gop.ts"].path
    packets = ffprobe(cut, "-select_streams", "v", "-show_packets")["packets"]
    frames = ffprobe(cut, "-select_streams", "v", "-show_frames")["frames"]
    assert "K" not in packets[0]["flags"] and len(frames) < len(packets)  # the leading pictures are lost
    soft = ffprobe(agreed["soft_telecine.ts"].path, "-show_streams", "-show_frames")
    assert soft["streams"][0]["avg_frame_rate"] == "30000/1001" and soft["streams"][0]["field_order"] == "progressive"
    assert [(f["top_field_first"], f["repeat_pict"]) for f in soft["frames"]] == [(1, 1), (0, 0), (0, 1), (1, 0)] * 6


@pytest.mark.parametrize("name", AGREED)
def test_files_players_agree_on_are_read_as_ffmpeg_shows_them(agreed: dict[str, Quirk], name: str) -> None:
    """The stream ffmpeg picks (never the cover art), its frames and their times on ffmpeg's clock (an empty edit
    before the video, a timecode track, negative decode stamps, a TS cut mid-GOP whose first pictures ffmpeg
    drops, soft telecine's 3:2 field cadence), every frame's picture."""
    m = agreed[name]
    info = probe(m.path)
    times, theirs = shown(m.path)
    assert info.n_frames == len(m.codes) == len(theirs) and info.stream == m.stream
    assert [frame_code(f) for f in theirs] == list(m.codes)
    if m.times:
        assert np.allclose(times, m.times, atol=1e-3)
    clock = info.timeline
    assert np.allclose([clock.time_of(i) for i in range(info.n_frames)], times, atol=1e-3)
    assert (info.width, info.height) == m.shown == theirs[0].shape[1::-1]
    mine = read_frames(m.path, list(range(info.n_frames)))
    assert [frame_code(f) for f in mine] == list(m.codes)
    for a, b in zip(mine, theirs, strict=True):
        assert a.shape == b.shape and np.abs(a.astype(int) - b).mean() < 3.0


# --------------------------------------------------------------------------- honest files


def perturb_is_refused(source: Path, tmp_path: Path, why: str) -> None:
    """``vidaudit perturb SOURCE --op reverse`` exits 2 with ``why`` in one message, no traceback, nothing written."""
    out = tmp_path / "r.mp4"
    cmd = [sys.executable, "-m", "vidaudit.cli", "perturb", str(source), "--op", "reverse", "--out", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and why in " ".join(r.stderr.split()) and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()


def test_a_cut_off_file_is_refused_in_one_line(quirks: dict[str, Quirk], tmp_path: Path) -> None:
    cut = quirks["cut.mkv"].path
    with pytest.raises(DataError, match=r"is cut off: its header promises 20 s of video but the file holds") as e:
        probe(cut)
    assert "\n" not in str(e.value) and "ffmpeg -i IN -c copy" in str(e.value)
    perturb_is_refused(cut, tmp_path, "is cut off")
    fixed = tmp_path / "remuxed.mkv"  # what the message says to do keeps the part present
    subprocess.run(["ffmpeg", "-v", "error", "-i", str(cut), "-c", "copy", str(fixed)], check=True)
    assert 10 < probe(fixed).n_frames < 40


def test_a_matroska_recording_that_starts_late_is_whole_and_a_cut_one_is_not(tmp_path: Path) -> None:
    """A broadcast recording (MPEG-TS, clock at 30 s) remuxed to MKV keeping its stamps (``-copyts``): the MKV's
    Duration is the end of its last block on that clock (ffprobe: start 31.4, duration 41.4), not a length; the
    file is whole and reads as ffmpeg shows it. The same file cut off after a tenth of its bytes is still refused."""
    rng = np.random.default_rng(1)
    frames = []
    for k in range(100):
        img = frame_image(k, 64, 48)
        img[4:20, 40:60] = rng.integers(0, 256, (16, 20, 3), dtype=np.uint8)  # a few kB a frame
        frames.append(img)
    ts, late = tmp_path / "recording.ts", tmp_path / "late.mkv"
    pipe_encode(ts, frames, 10, ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "10", "-output_ts_offset", "30"])
    subprocess.run(["ffmpeg", "-v", "error", "-copyts", "-i", str(ts), "-c", "copy", str(late)], check=True)
    fmt = ffprobe(late, "-show_format")["format"]
    assert (float(fmt["start_time"]), float(fmt["duration"])) == (31.4, 41.4)
    info = probe(late)
    assert (info.n_frames, info.start_s, info.duration_s) == (100, 0.0, 10.0)
    times, theirs = shown(late)
    assert np.allclose([info.timeline.time_of(i) for i in range(100)], times, atol=1e-3)
    assert [frame_code(f) for f in read_frames(late, [0, 57, 99])] == [frame_code(theirs[i]) for i in (0, 57, 99)]
    cut = tmp_path / "late_cut.mkv"
    cut.write_bytes(late.read_bytes()[: late.stat().st_size // 10])
    with pytest.raises(DataError, match=r"is cut off: its header promises 41.4 s of video but the file holds"):
        probe(cut)


def test_a_guessed_rate_never_multiplies_frames(quirks: dict[str, Quirk], tmp_path: Path) -> None:
    """20 frames over 6.2 s with no average rate and a guessed 25 fps: the rate is the frames' own (~3.1 fps), and
    a perturbation converts at it: about as many frames out as in (at 25 fps it would be 155), each the frame
    ffmpeg shows then."""
    from vidaudit.video.perturb.engine import apply

    m = quirks["guessed_rate.asf"]
    info = probe(m.path)
    assert info.fps == pytest.approx(19 / 6.16, rel=1e-3) and info.frame_times is not None
    res = apply(m.path, PerturbationSpec(name="reverse"), tmp_path / "r.mp4")
    assert 18 <= res.meta.n_frames <= 21
    fps = res.meta.fps
    want = [frame_code(at(m.path, k / fps)) for k in range(res.meta.n_frames)][::-1]
    assert [frame_code(f) for f in shown(res.video)[1]] == want


# --------------------------------------------------------------------------- the stream a player picks


def test_the_stream_ffmpeg_picks_is_read_and_recorded_and_another_can_be_named(
    quirks: dict[str, Quirk], tmp_path: Path
) -> None:
    from vidaudit.video.facts import facts_problems

    m = quirks["two_streams.mkv"]
    ref = video_ref(m.path.parent, m.path.name)
    assert ref.stream == 1 and (ref.width, ref.height) == (96, 64)
    assert ref.model_dump(mode="json")["stream"] == 1  # recorded in the manifest
    other = probe(m.path, stream=0)
    assert (other.width, other.height, other.stream) == (64, 48, 0)
    assert [frame_code(f) for f in read_frames(m.path, [0, 7], stream=0)] == [100, 107]
    unnamed = ref.model_copy(update={"stream": None})
    assert facts_problems(probe(m.path), unnamed) == [
        "2 video streams, the manifest names none (it records the one read)"
    ]
    with pytest.raises(DataError, match="stream 5 is not a video stream of the file; its video streams are 0"):
        probe(m.path, stream=5)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "vidaudit.cli",
            "perturb",
            str(m.path),
            "--op",
            "reverse",
            "--stream",
            "0",
            "--out",
            str(tmp_path / "s0.mp4"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert [frame_code(f) for f in shown(tmp_path / "s0.mp4")[1]] == [100 + k for k in range(19, -1, -1)]
    meta = json.loads((tmp_path / "s0.json").read_text())
    assert meta["source"]["stream"] == 0 and (meta["width"], meta["height"]) == (64, 48)


# --------------------------------------------------------------------------- what each path makes of them


def _dataset(quirks: dict[str, Quirk], root: Path, names: list[str], stream: int | None = None) -> None:
    import shutil

    (root / "videos").mkdir(parents=True, exist_ok=True)
    samples = []
    for name in names:
        shutil.copyfile(quirks[name].path, root / "videos" / name)
        samples.append(
            Sample(
                sample_id=re.sub(r"\W", "_", name),
                suite="counting",
                params={"domain": "real:clip", "n_events": 0, "frequency_hz": None},
                question="How many times did the object blink?",
                answer=0,
                video=video_ref(root, f"videos/{name}", stream),
            )
        )
    write_manifest(root, samples)


def test_a_stream_whose_picture_size_changes_is_refused_in_one_line(tmp_path: Path) -> None:
    """Two MPEG-TS segments of a capture joined byte for byte (as HLS segments are), the second at a quarter of the
    size: ffmpeg scales it to the first size, other players resize, and vidaudit read it as mixed-size pictures
    (``read_frames`` died in numpy, ``perturb`` with a traceback). It is refused in one line naming the frame where
    ffprobe sees the size change, and the command it gives makes a file that reads whole."""
    first, second, joined = tmp_path / "a.ts", tmp_path / "b.ts", tmp_path / "joined.ts"
    args = ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "5"]
    pipe_encode(first, [frame_image(k, 64, 48) for k in range(10)], 10, args)
    pipe_encode(second, [frame_image(k, 32, 24) for k in range(10, 20)], 10, [*args, "-output_ts_offset", "1.2"])
    joined.write_bytes(first.read_bytes() + second.read_bytes())
    frames = ffprobe(joined, "-show_frames", "-select_streams", "v")["frames"]
    assert np.allclose(np.diff([float(f["pts_time"]) for f in frames]), 0.1)  # otherwise a clean 10 fps clip
    sizes = [(f["width"], f["height"]) for f in frames]
    change = next(i for i, wh in enumerate(sizes) if wh != sizes[0])
    assert (len(sizes), change, sizes[0], sizes[change]) == (20, 10, (64, 48), (32, 24))
    assert [frame_code(f) for f in read_frames(joined, [0, 9])] == [0, 9]  # before the change: read as shown
    with pytest.raises(DataError) as e:
        read_frames(joined, [0, 12])
    msg = str(e.value)
    assert f"the picture size changes mid-stream, from 64x48 to 32x24 at frame {change}" in msg and "\n" not in msg
    perturb_is_refused(joined, tmp_path, "changes mid-stream")
    fixed = tmp_path / "OUT.mp4"  # the message's command, as written
    fix = msg.split("(ffmpeg ", 1)[1].rstrip(")").split()
    subprocess.run(["ffmpeg", "-v", "error", *fix], cwd=tmp_path, check=True)
    assert read_frames(fixed, list(range(20))).shape == (20, 48, 64, 3)


def test_a_stream_whose_pixel_aspect_changes_is_refused_in_one_line(tmp_path: Path) -> None:
    """A DVB capture switching 4:3 and 16:9 at one stored size: two H.264 TS segments (SAR 1:1, then 4:3, both
    96x64) joined byte for byte. ffmpeg keeps the first shape (96x64 throughout), other players widen the second
    half; vidaudit squared every picture by the first SAR, silently (the second half read squeezed). It is refused
    in one line at the frame where ffprobe sees the SAR change, and frames before it read as ffmpeg shows them."""
    first, second, joined = tmp_path / "a.ts", tmp_path / "b.ts", tmp_path / "joined.ts"
    args = ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "5", "-x264-params", "log-level=error"]
    pipe_encode(first, [frame_image(k, 96, 64) for k in range(10)], 10, [*args, "-vf", "setsar=1"])
    wide = [cv2.resize(frame_image(k, 128, 64), (96, 64), interpolation=cv2.INTER_AREA) for k in range(10, 20)]
    pipe_encode(second, wide, 10, [*args, "-vf", "setsar=4/3", "-output_ts_offset", "1.2"])
    joined.write_bytes(first.read_bytes() + second.read_bytes())
    frames = ffprobe(joined, "-show_frames", "-select_streams", "v")["frames"]
    assert {(f["width"], f["height"]) for f in frames} == {(96, 64)}  # one stored size: only the SAR changes
    sars = [f["sample_aspect_ratio"] for f in frames]
    change = next(i for i, s in enumerate(sars) if s != sars[0])
    assert (len(sars), change, sars[0], sars[change]) == (20, 10, "1:1", "4:3")
    assert np.allclose(np.diff([float(f["pts_time"]) for f in frames]), 0.1)  # otherwise a clean 10 fps clip
    before = list(range(change))
    times, theirs = shown(joined)
    assert [frame_code(f) for f in read_frames(joined, before)] == [frame_code(f) for f in theirs[:change]] == before
    with pytest.raises(DataError) as e:
        read_frames(joined, [0, change])
    msg = str(e.value)
    assert f"the pixel aspect ratio (SAR) changes mid-stream, from 1:1 to 4:3 at frame {change}" in msg
    assert "\n" not in msg
    perturb_is_refused(joined, tmp_path, "pixel aspect ratio (SAR) changes mid-stream")
    fixed = tmp_path / "OUT.mp4"  # the message's command, as written
    fix = msg.split("(ffmpeg ", 1)[1].rstrip(")").split()
    subprocess.run(["ffmpeg", "-v", "error", *fix], cwd=tmp_path, check=True)
    assert read_frames(fixed, list(range(20))).shape == (20, 64, 96, 3)


def _drops_a_picture(src: Path, dst: Path, frame: int) -> None:
    """``src`` with one bit of ``frame``'s packet flipped where the decoder then drops that picture without a
    decoding error (its slice header no longer parses): ffprobe counts one frame fewer than packets, and PyAV's
    newer FFmpeg decodes the file without an error too (where a flip makes either fail, the next is tried)."""
    with av.open(str(src)) as c:  # the packet holding the frame-th picture in presentation order
        pos = sorted((p.pts, p.pos) for p in c.demux(c.streams.video[0]) if p.size)[frame][1]
    data = src.read_bytes()

    def counts(path: Path) -> tuple[int, int]:
        s = ffprobe(path, "-count_frames", "-count_packets", "-show_entries", "stream=nb_read_frames,nb_read_packets")
        return int(s["streams"][0]["nb_read_frames"]), int(s["streams"][0]["nb_read_packets"])

    def pyav_decodes(path: Path) -> int | None:
        try:
            with av.open(str(path)) as c:
                return sum(1 for _ in c.decode(c.streams.video[0]))
        except av.error.FFmpegError:
            return None

    for at in range(5, 9):  # past the 4-byte NAL length and the NAL header
        for bit in range(8):
            hit = bytearray(data)
            hit[pos + at] ^= 1 << bit
            dst.write_bytes(bytes(hit))
            frames, packets = counts(dst)
            if frames == packets - 1 and pyav_decodes(dst) == frames:
                return
    raise AssertionError(f"no flip in frame {frame}'s packet makes the decoders drop it")


def test_a_picture_the_decoder_drops_is_refused_not_renumbered(tmp_path: Path) -> None:
    """An MP4 with one damaged packet whose picture the decoder drops without an error (as a bad sector or a broken
    download leaves it): ffmpeg shows 39 of its 40 frames, skipping 0.56 s. vidaudit counts 40 frames from the
    packets, and decoding numbered the picture after the gap as the dropped frame, so every later frame was sent
    one frame early against its own time (frame 15 at 0.60 s was the 0.64 s picture), silently, and a whole-clip
    read ended a frame short (a read that seeks past the gap names pictures by their stamps, and was right). A read
    that decodes through the gap is refused there in one line; frames before it read as ffmpeg shows."""
    src, bad = tmp_path / "src.mp4", tmp_path / "damaged.mp4"
    rng = np.random.default_rng(0)
    frames = [frame_image(k, 96, 64) for k in range(40)]
    for f in frames:  # noise keeps every packet a few hundred bytes, the slice header clear of the NAL start
        f[4:20, 40:60] = rng.integers(0, 256, (16, 20, 3), dtype=np.uint8)
    pipe_encode(src, frames, 25, ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "10", "-bf", "2"])
    _drops_a_picture(src, bad, 14)
    times, theirs = shown(bad)
    assert len(theirs) == 39 and 0.56 not in np.round(times, 3)  # ffmpeg skips frame 14's time
    info = probe(bad)
    assert info.n_frames == 40 and info.timeline.time_of(20) == pytest.approx(0.8)
    assert [frame_code(f) for f in read_frames(bad, list(range(14)))] == [frame_code(f) for f in theirs[:14]]
    assert frame_code(read_frames(bad, [30])[0]) == frame_code(at(bad, 1.2)) == 30  # a seek past it: by stamp
    for read in (lambda: read_frames(bad, [13, 15]), lambda: list(iter_frames(bad))):
        with pytest.raises(DataError) as e:
            read()
        assert "frame 14 does not decode" in str(e.value) and "\n" not in str(e.value)
    perturb_is_refused(bad, tmp_path, "frame 14 does not decode")
    fixed = tmp_path / "OUT.mp4"  # the message's command, as written: what decodes, re-encoded
    fix = str(e.value).split("(ffmpeg ", 1)[1].split(")")[0].split()
    subprocess.run(["ffmpeg", "-v", "error", *fix], cwd=tmp_path, check=True)
    mine = list(iter_frames(fixed))
    assert len(mine) == probe(fixed).n_frames == len(shown(fixed)[1])


def _sent_images(data: Path, out: Path, condition: str = "frames@7") -> list[list[np.ndarray]]:
    """Run ``data`` against a local OpenAI-compatible server that keeps every request; each request's images."""
    from httpfake import FakeServer, Recorded, Reply

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

    env = {**os.environ, "OPENAI_API_KEY": "sk-local-test"}
    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", default=answer)
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "vidaudit.cli",
                "run",
                "counting",
                "--data",
                str(data),
                "--model",
                f"openai:fake@{srv.url}/v1",
                "--condition",
                condition,
                "--out",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        sent = srv.requests_to("/v1/chat/completions")
    return [
        [
            cv2.cvtColor(
                cv2.imdecode(
                    np.frombuffer(base64.b64decode(p["image_url"]["url"].split(",", 1)[1]), np.uint8), cv2.IMREAD_COLOR
                ),
                cv2.COLOR_BGR2RGB,
            )
            for p in rec.json()["messages"][-1]["content"]
            if p["type"] == "image_url"
        ]
        for rec in sent
    ]


def test_a_manifest_naming_another_stream_is_sent_that_stream(quirks: dict[str, Quirk], tmp_path: Path) -> None:
    data = tmp_path / "data"
    _dataset(quirks, data, ["two_streams.mkv"], stream=0)
    assert json.loads((data / "manifest.jsonl").read_text())["video"]["stream"] == 0
    [images] = _sent_images(data, tmp_path / "run", "frames@4")
    assert [frame_code(i) for i in images] == [100 + 5 * j for j in range(4)]
    assert all(i.shape == (48, 64, 3) for i in images)


def test_a_run_sends_the_frames_ffmpeg_shows(quirks: dict[str, Quirk], tmp_path: Path) -> None:
    """`vidaudit run` against a local OpenAI-compatible server that keeps every image it is sent."""
    data = tmp_path / "data"
    _dataset(quirks, data, READABLE)
    manifest = [json.loads(x) for x in (data / "manifest.jsonl").read_text().splitlines()]
    kinetics = next(r["video"] for r in manifest if r["sample_id"] == "kinetics_sar_mp4")
    assert (kinetics["sar"], kinetics["stored_size"], kinetics["width"], kinetics["height"]) == (
        [64, 51],
        [340, 256],
        426,
        256,
    )
    assert next(r["video"] for r in manifest if r["sample_id"] == "two_streams_mkv")["stream"] == 1

    sent = _sent_images(data, tmp_path / "run")
    assert len(sent) == len(READABLE)
    by_shape: dict[tuple[int, int], list[str]] = {}
    for name in READABLE:
        by_shape.setdefault(quirks[name].shown, []).append(name)
    matched = set()
    for images in sent:
        candidates = [
            n
            for n in by_shape.get((images[0].shape[1], images[0].shape[0]), [])
            if len(at_fps(probe(quirks[n].path).timeline, 7.0)) == len(images)
            and [frame_code(i) for i in images] == [quirks[n].on_screen(j / 7) for j in range(len(images))]
        ]
        assert candidates, "the images match no clip's frames on screen at their times"
        name = candidates[0]
        for j, img in enumerate(images):  # JPEG on the wire
            assert np.abs(img.astype(int) - at(quirks[name].path, j / 7)).mean() < 8.0, (name, j)
        matched.add(name)
    assert len(matched) >= len(READABLE) - 2  # same-shaped, same-timed clips may match either name


@pytest.mark.parametrize("name", READABLE)
def test_perturb_writes_the_frames_ffmpeg_shows_in_the_maps_order(
    quirks: dict[str, Quirk], name: str, tmp_path: Path
) -> None:
    """reverse and shuffle_frames exit 0, and every frame written is the source frame ffmpeg shows at the time
    the map names for it: no swapped pairs, no frame outside the player's."""
    m = quirks[name]
    p_times, p_imgs = shown(m.path)
    for op in ("reverse", "shuffle_frames"):
        out = tmp_path / f"{op}.mp4"
        r = subprocess.run(
            [sys.executable, "-m", "vidaudit.cli", "perturb", str(m.path), "--op", op, "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        meta = json.loads(out.with_suffix(".json").read_text())
        w, h = m.shown[0] - m.shown[0] % 2, m.shown[1] - m.shown[1] % 2
        assert (meta["width"], meta["height"]) == (w, h)
        written = shown(out)[1]
        sf = meta["map"]["source_frame"]
        assert len(written) == meta["n_frames"] == len(sf)
        assert [frame_code(f) for f in written] == [m.codes[i] for i in sf]
        times = meta["map"].get("source_time_s") or [k / meta["fps"] for k in sf]
        for f, i, t in zip(written, sf, times, strict=True):
            ref = at(m.path, t)
            assert frame_code(ref) == m.codes[i] and p_times[i] <= t + 1e-6
            assert np.abs(f.astype(int) - ref[:h, :w]).mean() < 4.0
        if op == "reverse":
            fps = meta["fps"]
            assert [frame_code(f) for f in written] == [m.on_screen(k / fps) for k in range(len(sf))][::-1]
            assert all(b <= a for a, b in zip(sf, sf[1:]))  # no swapped pair


@pytest.mark.parametrize("name", READABLE)
def test_the_source_import_and_the_still_are_the_frames_ffmpeg_shows(
    quirks: dict[str, Quirk], name: str, tmp_path: Path
) -> None:
    """The stress ``--source`` import (``import_clips``) copies frame k as the frame on screen at k / fps; camera_motion
    takes the still on screen at the middle of the clip."""
    from vidaudit.suites.stress.sources import Clip, frame_on_screen, import_clips

    m = quirks[name]
    [src] = import_clips([Clip(m.path, "clip")], tmp_path)
    copy = shown(src.video)[1]
    fps = src.fps
    assert src.duration_s == pytest.approx(len(copy) / fps, abs=1e-6)
    w, h = m.shown[0] - m.shown[0] % 2, m.shown[1] - m.shown[1] % 2
    for k, f in enumerate(copy):
        ref = at(m.path, k / fps)
        assert frame_code(f) == frame_code(ref) and f.shape == (h, w, 3)
        assert np.abs(f.astype(int) - ref[:h, :w]).mean() < 4.0
    assert [frame_code(f) for f in iter_constant_rate(m.path)] == [frame_code(f) for f in copy]
    still = frame_on_screen(m.path)
    ref = at(m.path, still.t_s)
    assert still.image.shape == ref.shape and np.abs(still.image.astype(int) - ref).mean() < 3.0
    assert frame_code(still.image) == m.on_screen(still.t_s)


def test_square_pixel_single_stream_refs_write_no_new_keys(quirks: dict[str, Quirk]) -> None:
    """Only a file that needs them records sar / stored_size / stream: every other manifest line is unchanged."""
    plain = video_ref(quirks["paff.mts"].path.parent, "paff.mts").model_dump(mode="json")
    assert not {"sar", "stored_size", "stream"} & set(plain)
    sar = video_ref(quirks["mxf_sar.mxf"].path.parent, "mxf_sar.mxf")
    assert (sar.sar, sar.stored_size, sar.width, sar.height) == ((16, 15), (720, 576), 768, 576)
    assert VideoRef.model_validate(sar.model_dump(mode="json")) == sar
