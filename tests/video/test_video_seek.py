"""The seeking reader returns exactly what decoding from the start returns, which is exactly what ffmpeg decodes.

``decode.Decoder`` may jump to a keyframe (``video/seek.py``) to skip groups of pictures that hold no frame asked for.
On every real-file fixture (tests/realvideos.py, tests/quirkvideos.py and tests/seekvideos.py: rotated, VFR, edit
lists, B-frames, open GOPs, interlaced fields, packed-B AVI, DTS-only AVI, MPEG-PS, MXF, SAR, two streams, no
Cues) random sets of frames read by the seeking reader are compared, byte for byte, with the frames decoded from
the start (displayed RGB) and with Debian's ffmpeg (the decoded planes, before conversion), and their numbers are
read back from their pixels. Then: where seeking must not be used (open GOPs, containers without clean entry
points) it is not, where it pays it is, and an index that disagrees with the file is caught and dropped.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import av
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quirkvideos import Quirk, make_quirks, pipe_encode
from realvideos import Player, frame_code, frame_image, make_all
from seekvideos import make_seekable
from vidaudit.core.errors import DataError
from vidaudit.video import decode
from vidaudit.video.decode import Decoder, iter_frames, iter_selected, seek_index
from vidaudit.video.display import to_rgb
from vidaudit.video.perturb.source import PlannedReader, open_source
from vidaudit.video.probe import probe
from vidaudit.video.seek import SEEK_MIN_SKIP, SeekIndex

#: fixture -> the frame numbers of its clean entry points (None: no index, decoded forward)
ENTRY_POINTS: dict[str, tuple[int, ...] | None] = {
    "gop_bframes.mp4": (0, 24, 48, 72),
    "gop_bframes.mkv": (0, 24, 48, 72),
    "gop_nocues.mkv": (0, 24, 48, 72),
    "open_gop.mp4": (0,),
    "hevc_cra.mp4": (0,),
    "intra_refresh.mp4": (0,),
    "vp9_gop.webm": (0, 24, 48),
    "editlist_gop.mp4": (0, 12, 36, 60),
    "rot90_vfr_gop.mp4": (0, 12, 24, 36),
    "rot90.mp4": (0,),
    "rot180.mp4": (0,),
    "rot270.mp4": (0,),
    "vfr_two_rates.mp4": (0,),
    "phone_vfr_rot180.mp4": (0,),
    "late_start.mp4": (0,),
    "hevc_editlist.mp4": (0,),
    "vp9.webm": (0,),
    "av1.mp4": (0,),
    "hevc.mp4": (0,),
    "odd_size.mp4": (0,),
    "kinetics_sar.mp4": (0,),
    "two_streams.mkv": (0,),
    "skipped_frame.avi": None,
    "paff.mts": None,
    "xvid_packed.avi": None,
    "h264_dts_only.avi": None,
    "mpeg2_ps.mpg": None,
    "mpeg1_aspect.mpg": None,
    "mxf_sar.mxf": None,
    "guessed_rate.asf": None,
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Quirk]:
    Player.required()
    d = tmp_path_factory.mktemp("seek")
    out = make_seekable(d / "seek")
    out.update({n: Quirk(m.path, m.codes, m.times, m.size, m.size) for n, m in make_all(d / "real").items()})
    out.update(make_quirks(d / "quirks"))
    return out


def planes(frame) -> bytes:
    """A decoded picture's planes, rows without their padding (8-bit formats): what ``ffmpeg -f rawvideo`` writes."""
    return b"".join(
        np.frombuffer(p, np.uint8).reshape(-1, p.line_size)[: p.height, : p.width].tobytes() for p in frame.planes
    )


_RAW: dict[Path, list[bytes]] = {}


def ffmpeg_planes(path: Path, stream: int, pix_fmt: str) -> list[bytes]:
    """Debian's ffmpeg's decoded pictures of the stream, stored (no rotation, no scaling), in presentation order."""
    if path not in _RAW:
        raw = subprocess.run(
            [
                "ffmpeg",
                "-v",
                "error",
                "-noautorotate",
                "-i",
                str(path),
                "-map",
                f"0:{stream}",
                "-fps_mode",
                "passthrough",
                "-f",
                "rawvideo",
                "-pix_fmt",
                pix_fmt,
                "pipe:",
            ],
            capture_output=True,
            check=True,
        ).stdout
        with Decoder(path, stream) as d:
            size = len(planes(d.frame(0)))
        _RAW[path] = [raw[k : k + size] for k in range(0, len(raw), size)]
    return _RAW[path]


_FORWARD: dict[Path, list[np.ndarray]] = {}


def forward(path: Path) -> list[np.ndarray]:
    """Every frame, displayed, decoded from the start without an index (the reader as it was)."""
    if path not in _FORWARD:
        with Decoder(path) as d:
            assert not d.seeking
            _FORWARD[path] = [d.rgb(f) for _, f in d]
    return _FORWARD[path]


# --------------------------------------------------------------------------- the fixtures have their structure


def ffprobe_packets(path: Path) -> list[tuple[int, str]]:
    out = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-select_streams",
            "v:0",
            "-show_entries",
            "packet=pts,flags",
            "-of",
            "csv=p=0",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [(int(p), f) for p, f in (line.split(",")[:2] for line in out.split())]


def leading_pictures(packets: list[tuple[int, str]]) -> int:
    """Packets stored after a keyframe but shown before it (an open GOP's leading pictures)."""
    return sum(1 for k, (p, f) in enumerate(packets) if "K" in f and k for q, _ in packets[k + 1 : k + 8] if q < p)


def test_the_seek_fixtures_have_their_structure(files: dict[str, Quirk]) -> None:
    """What makes each file easy or hard to seek in, as Debian's ffprobe reports it."""
    closed = ffprobe_packets(files["gop_bframes.mp4"].path)
    assert sum("K" in f for _, f in closed) == 4 and leading_pictures(closed) == 0
    assert any(b < a for (a, _), (b, _) in zip(closed, closed[1:]))  # B-frames: stored out of order
    for name in ("open_gop.mp4", "hevc_cra.mp4"):
        assert leading_pictures(ffprobe_packets(files[name].path)) >= 2, name
    refresh = ffprobe_packets(files["intra_refresh.mp4"].path)
    assert [k for k, (_, f) in enumerate(refresh) if "K" in f] == [0, 24, 48, 72]
    with av.open(str(files["intra_refresh.mp4"].path)) as c:  # entered there, the decoder shows wrong pictures
        c.seek(refresh[48][0], stream=c.streams.video[0])
        assert frame_code(to_rgb(next(c.decode(video=0)))) not in (48, 49, 50)
    assert b"\x1c\x53\xbb\x6b" in files["gop_bframes.mkv"].path.read_bytes()  # the Cues element
    assert b"\x1c\x53\xbb\x6b" not in files["gop_nocues.mkv"].path.read_bytes()
    cut = ffprobe_packets(files["editlist_gop.mp4"].path)
    assert len(cut) == 96 and sum("D" in f for _, f in cut) == 12  # 12 decoded, never shown


def test_entry_points_are_the_clean_keyframes(files: dict[str, Quirk]) -> None:
    """An index only where packets are frames; an entry point only at a keyframe that starts afresh and has no
    leading pictures (not an open GOP's I-frame, not a CRA with RASL pictures, not an intra-refresh recovery
    point)."""
    for name, want in ENTRY_POINTS.items():
        info = probe(files[name].path)
        idx = seek_index(files[name].path, info.stream)
        assert (None if idx is None else idx.points) == want, name
        if idx is not None:
            assert idx.n_frames == info.n_frames, name


# --------------------------------------------------------------------------- the same frames, byte for byte


READABLE = [n for n in ENTRY_POINTS]


@pytest.mark.parametrize("name", READABLE)
@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_seeking_reads_the_same_frames_as_decoding_from_the_start(
    files: dict[str, Quirk], name: str, data: st.DataObject
) -> None:
    m = files[name]
    n = len(m.codes)
    want = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=10), label="frames")
    got = dict(iter_selected(m.path, want))
    everything = forward(m.path)
    for i in set(want):
        assert got[i].tobytes() == everything[i].tobytes(), (name, i)  # displayed RGB, byte for byte
        assert frame_code(got[i]) == m.codes[i], (name, i)  # the frame a player numbers i
    stream = probe(m.path).stream
    with Decoder(m.path, stream) as d:  # the decoded planes: ffmpeg's bytes
        d.index()
        pictures = {i: planes(d.frame(i)) for i in sorted(set(want))}
        fmt = d.frame(sorted(set(want))[-1]).format.name
    theirs = ffmpeg_planes(m.path, stream, fmt)
    assert len(theirs) == n
    assert all(pictures[i] == theirs[i] for i in pictures), name


@pytest.mark.parametrize(
    "name", ["gop_bframes.mp4", "gop_nocues.mkv", "editlist_gop.mp4", "rot90_vfr_gop.mp4", "hevc_cra.mp4"]
)
@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_perturbations_read_any_order_exactly(files: dict[str, Quirk], name: str, data: st.DataObject) -> None:
    """The perturbation reader goes back and forth by the same index: every frame is the one decoded from the
    start."""
    m = files[name]
    order = data.draw(st.lists(st.integers(0, len(m.codes) - 1), min_size=1, max_size=40), label="order")
    src = open_source(m.path)
    everything = forward(m.path)
    got = [f.tobytes() for f in PlannedReader(src, order, budget_bytes=src.width * src.height * 3 * 3)]
    assert got == [everything[i].tobytes() for i in order]


# --------------------------------------------------------------------------- seeking where it pays, and only there


def read_cost(path: Path, want: list[int]) -> tuple[int, int]:
    """(pictures decoded, seeks) for reading ``want`` the way ``iter_selected`` does."""
    with Decoder(path) as d:
        d.index()
        for i in want:
            d.frame(i)
        return d.decoded, d.seeks


def test_seeking_skips_groups_that_hold_no_frame_asked_for(files: dict[str, Quirk]) -> None:
    path = files["gop_bframes.mp4"].path
    assert read_cost(path, [1, 80]) == (2 + 9, 1)  # frames 0-1, then the group from 72 to 80
    assert read_cost(path, [50]) == (3, 1)  # straight to the keyframe at 48
    assert read_cost(path, [1, 20]) == (21, 0)  # one group: decoding on
    assert read_cost(path, [20, 26]) == (27, 0)  # the next group's keyframe is 3 frames on
    assert 24 - 21 <= SEEK_MIN_SKIP
    assert read_cost(path, [1, 26]) == (2 + 3, 1)  # it is 22 frames on: seek
    for name in ("gop_bframes.mkv", "gop_nocues.mkv", "vp9_gop.webm", "rot90_vfr_gop.mp4"):
        decoded, seeks = read_cost(files[name].path, [1, 40])
        assert seeks == 1 and decoded < 41, name
    # an edit list that starts mid-group shifts the demuxer's seek clock by a few frames: the seek for entry point
    # 60 lands on the one before (36), which is as exact, only dearer
    decoded, seeks = read_cost(files["editlist_gop.mp4"].path, [70])
    assert seeks == 1 and decoded in (70 - 60 + 1, 70 - 36 + 1)


def test_no_seek_into_an_open_gop_or_a_container_without_entry_points(files: dict[str, Quirk]) -> None:
    """Open GOPs (leading B-frames need the group before) and AVI/MPEG-PS/MXF/TS are decoded from the start."""
    for name in ("open_gop.mp4", "hevc_cra.mp4"):
        assert read_cost(files[name].path, [90]) == (91, 0), name
    for name in ("xvid_packed.avi", "mpeg2_ps.mpg", "mxf_sar.mxf", "paff.mts"):
        n = len(files[name].codes)
        assert read_cost(files[name].path, [n - 1]) == (n, 0), name


# --------------------------------------------------------------------------- an index that disagrees is dropped


def _with_index(monkeypatch: pytest.MonkeyPatch, index: SeekIndex) -> None:
    monkeypatch.setattr(decode, "seek_index", lambda path, stream: index)


def test_a_seek_that_lands_on_another_frame_than_the_index_says_falls_back(
    files: dict[str, Quirk], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index whose stamps are one frame off names the picture a seek lands on wrongly: caught at the landing
    (the picture is not an entry point), the index is dropped and the frames come from decoding the start."""
    path = files["gop_bframes.mp4"].path
    real = seek_index(path, 0)
    assert real is not None
    step = real.pts[1] - real.pts[0]
    off = SeekIndex((real.pts[0] - step, *real.pts[:-1]), real.points)  # frame i named by frame i-1's stamp
    _with_index(monkeypatch, off)
    got = dict(iter_selected(path, [40, 80]))
    assert [frame_code(got[i]) for i in (40, 80)] == [40, 80]
    assert not off.usable  # nobody seeks on it again
    assert got[80].tobytes() == forward(path)[80].tobytes()


def test_a_picture_after_a_seek_out_of_the_index_order_falls_back(
    files: dict[str, Quirk], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a good landing, each picture must carry the next frame's stamp: an index with one stamp too many
    inside the group (which would number every later picture one too high) is caught at the picture after it."""
    path = files["gop_bframes.mp4"].path
    real = seek_index(path, 0)
    assert real is not None
    extra = SeekIndex((*real.pts[:73], real.pts[72] + 1, *real.pts[73:-1]), real.points)
    _with_index(monkeypatch, extra)
    got = dict(iter_selected(path, [1, 74]))
    assert [frame_code(got[i]) for i in (1, 74)] == [1, 74]
    assert not extra.usable


def test_stamps_that_disagree_from_the_start_turn_seeking_off(
    files: dict[str, Quirk], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = files["gop_bframes.mp4"].path
    real = seek_index(path, 0)
    assert real is not None
    shuffled = SeekIndex((real.pts[0], real.pts[2], real.pts[1], *real.pts[3:]), real.points)
    _with_index(monkeypatch, shuffled)
    with Decoder(path) as d:
        assert d.index()
        assert frame_code(d.rgb(d.frame(1))) == 1 and not d.seeking  # frame 1's stamp is not the index's
        assert frame_code(d.rgb(d.frame(80))) == 80 and d.seeks == 0  # so it decodes on instead of seeking
    assert not shuffled.usable


def test_an_index_of_another_length_is_not_used(files: dict[str, Quirk]) -> None:
    path = files["gop_bframes.mp4"].path
    with Decoder(path) as d:
        assert not d.index(95) and not d.seeking
        assert d.index(96) and d.seeking


def test_a_file_replaced_after_it_was_indexed_is_indexed_again(tmp_path: Path) -> None:
    """The index is kept per file (path, inode, size, time): the same path with other bytes is read afresh, and
    seeks by its own keyframes."""
    path = tmp_path / "clip.mp4"
    pipe_encode(
        path,
        [frame_image(k, 64, 48) for k in range(96)],
        24,
        ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "24", "-sc_threshold", "0"],
    )
    assert [frame_code(f) for _, f in iter_selected(path, [5, 90])] == [5, 90]
    new = tmp_path / "new.mp4"
    pipe_encode(
        new,
        [frame_image(100 - k, 64, 48) for k in range(60)],
        24,
        ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "10", "-sc_threshold", "0"],
    )
    os.replace(new, path)
    assert [frame_code(f) for _, f in iter_selected(path, [5, 55])] == [95, 45]
    assert read_cost(path, [5, 55]) == (6 + 6, 1)  # from its own keyframe at 50
    with pytest.raises(DataError, match="do not exist"):
        dict(iter_selected(path, [5, 90]))


# --------------------------------------------------------------------------- threads only where they pay


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads through /proc")
def test_picking_frames_decodes_on_the_calling_thread(tmp_path: Path) -> None:
    """Readers that pick frames never start FFmpeg's threads; a whole-clip decode of 720p pictures does."""
    path = tmp_path / "hd.mp4"
    pipe_encode(
        path,
        [frame_image(k, 1280, 720) for k in range(12)],
        24,
        ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "ultrafast"],
    )
    before = _threads()
    seen = [_threads() for _ in iter_selected(path, [0, 5, 11])]
    assert max(seen) == before
    frames = iter_frames(path)
    next(frames)
    assert _threads() > before  # decode.threads_pay: a whole clip of 720p pictures
    frames.close()
    small = tmp_path / "small.mp4"
    pipe_encode(small, [frame_image(k, 320, 240) for k in range(12)], 24, ["-c:v", "libx264", "-pix_fmt", "yuv420p"])
    frames = iter_frames(small)
    next(frames)
    assert _threads() == before
    frames.close()
