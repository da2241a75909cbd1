"""The API around every op: metadata frame by frame, clear errors, atomic writes, the content cache, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_perturb_fixtures import make_dot_still, make_video
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.types import PerturbationSpec
from vidaudit.video.perturb.cache import cache_paths, cached, cached_chain
from vidaudit.video.perturb.cli import parse_sets, perturb_command, summary_lines
from vidaudit.video.perturb.engine import PerturbResult, apply, cache_key, preview
from vidaudit.video.perturb.registry import canonical_spec, get_op, op_names
from vidaudit.video.probe import probe

#: Small parameters for every registered op on the 24-frame, 12 fps, 64x48 test video.
EVERY_OP = {
    "reverse": {},
    "shuffle_frames": {},
    "shuffle_segments": {"segments": [[0, 0.5], [0.5, 1.25], [1.5, 2.0]]},
    "cut": {"duration_s": 0.5},
    "temporal_gap": {"start_s": 0.5, "end_s": 1.0, "label": "pours"},
    "scene_mix": {"duration_s": 0.5},
    "speed": {"factor": 0.5},
    "colour_shift": {"duration_s": 1.0},
    "noise": {"duration_s": 1.0},
    "insert_object": {"duration_s": 1.0},
    "blank": {"duration_s": 1.5},
    "noise_video": {"duration_s": 0.5},
    "unrelated": {},
    "strip_mask": {"S": 16, "v": 3},
    "mosaic": {},
    "mosaic_spatial": {},
    "camera_2d": {"motion": "tilt_up"},
}


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("api")
    return make_video(d / "src.mp4", n=24, fps=12.0), make_video(d / "second.mp4", n=20, fps=10.0, second=True)


def test_the_table_covers_every_registered_op() -> None:
    assert set(EVERY_OP) == set(op_names())
    assert {get_op(n).kind for n in op_names()} == {"temporal", "spatial", "integration", "camera"}


@pytest.mark.parametrize("name", sorted(EVERY_OP))
def test_every_op_describes_its_output_frame_by_frame(name: str, videos: tuple[Path, Path], tmp_path: Path) -> None:
    src, second = videos
    op = get_op(name)
    r = apply(
        src,
        PerturbationSpec(name=name, params=EVERY_OP[name]),
        tmp_path / "out.mp4",
        seed=7,
        second_source=second if op.needs_second else None,
    )
    back = probe(r.video)
    m = r.meta
    assert (m.n_frames, m.fps, m.width, m.height, m.duration_s) == (
        back.n_frames,
        back.fps,
        back.width,
        back.height,
        back.duration_s,
    )
    assert m.map["source_frame"] and all(len(col) == back.n_frames for col in m.map.values()), {
        k: len(v) for k, v in m.map.items()
    }
    on_disk = json.loads(r.meta_path.read_text())
    assert r.meta_path == tmp_path / "out.json"
    for key in ("op", "params", "seed", "source_sha256", "fps", "n_frames", "map"):
        assert key in on_disk
    assert on_disk["op"] == name and on_disk["seed"] == 7 and on_disk["source_sha256"] == sha256_file(src)
    assert set(on_disk["params"]) == set(op.Params.model_fields)  # defaults filled in
    assert on_disk["sha256"] == sha256_file(r.video) and on_disk["size_bytes"] == r.video.stat().st_size
    assert PerturbResult.load(r.meta_path).meta == r.meta
    if op.needs_second:
        assert on_disk["second_sha256"] == sha256_file(second)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "out.mp4"]  # no temporary left behind


# --------------------------------------------------------------------------- errors


def test_bad_specs_fail_with_the_allowed_values(videos: tuple[Path, Path], tmp_path: Path) -> None:
    src, second = videos
    cases = [
        (PerturbationSpec(name="wobble"), "unknown perturbation 'wobble'; known: blank, camera_2d"),
        (
            PerturbationSpec(name="reverse", params={"speed": 2}),
            "reverse has no parameter 'speed'; its parameters: start_s, end_s",
        ),
        (PerturbationSpec(name="strip_mask", params={"k": 0}), r"k must be an integer in \[1, 64\]"),
        (PerturbationSpec(name="speed", params={"factor": 20}), r"factor must be a number in \[0.125, 8\]"),
        (PerturbationSpec(name="camera_2d", params={"motion": "dolly"}), "motion must be one of pan_left, pan_right"),
        (PerturbationSpec(name="temporal_gap", params={"start_s": 1.0}), "temporal_gap needs end_s"),
        (PerturbationSpec(name="cut", params={"duration_s": 5.0}), r"duration_s must be at most 1\.833"),
    ]
    for sp, msg in cases:
        with pytest.raises(ConfigError, match=msg):
            apply(src, sp, tmp_path / "x.mp4")
    with pytest.raises(ConfigError, match="needs a second video"):
        apply(src, PerturbationSpec(name="unrelated"), tmp_path / "x.mp4")
    with pytest.raises(ConfigError, match="takes no second video"):
        apply(src, PerturbationSpec(name="reverse"), tmp_path / "x.mp4", second_source=second)
    with pytest.raises(ConfigError, match=r"must be an \.mp4"):
        apply(src, PerturbationSpec(name="reverse"), tmp_path / "x.avi")
    with pytest.raises(ConfigError, match="seed must be an integer"):
        apply(src, PerturbationSpec(name="reverse"), tmp_path / "x.mp4", seed="1")  # type: ignore[arg-type]
    still = make_dot_still(tmp_path / "dot.png")
    with pytest.raises(ConfigError, match="reverse needs a video; dot.png is a still image"):
        apply(still, PerturbationSpec(name="reverse"), tmp_path / "x.mp4")
    assert not list(tmp_path.glob("x.*"))


def test_sources_that_do_not_decode_are_data_errors(tmp_path: Path) -> None:
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video at all" * 100)
    with pytest.raises(DataError, match="cannot decode"):
        apply(junk, PerturbationSpec(name="reverse"), tmp_path / "x.mp4")
    with pytest.raises(DataError, match="not found"):
        apply(tmp_path / "missing.mp4", PerturbationSpec(name="reverse"), tmp_path / "x.mp4")
    bad_png = tmp_path / "bad.png"
    bad_png.write_bytes(b"\x89PNG nope")
    with pytest.raises(DataError, match="cannot decode"):
        apply(bad_png, PerturbationSpec(name="mosaic"), tmp_path / "x.mp4")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.png", "junk.mp4"]


def test_a_failure_mid_render_leaves_nothing_half_written(
    videos: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, _ = videos
    out = tmp_path / "o.mp4"
    good = apply(src, PerturbationSpec(name="reverse"), out)
    before = (out.read_bytes(), good.meta_path.read_text())
    op = get_op("shuffle_frames")
    calls = {"n": 0}
    real = type(op).frame

    def boom(self, i, frame, state):  # noqa: ANN001, ANN202
        calls["n"] += 1
        if calls["n"] > 5:
            raise RuntimeError("disk on fire")
        return real(self, i, frame, state)

    monkeypatch.setattr(type(op), "frame", boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        apply(src, PerturbationSpec(name="shuffle_frames"), out)
    assert (out.read_bytes(), good.meta_path.read_text()) == before  # the old pair is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.json", "o.mp4"]
    with pytest.raises(RuntimeError):
        apply(src, PerturbationSpec(name="shuffle_frames"), tmp_path / "fresh.mp4")
    assert not list(tmp_path.glob("*fresh*"))


# --------------------------------------------------------------------------- the cache


def test_cache_is_keyed_by_content_and_canonical_spec(videos: tuple[Path, Path], tmp_path: Path) -> None:
    src, second = videos
    sha = sha256_file(src)
    bare, full = (
        PerturbationSpec(name="strip_mask", params={"S": 16, "v": 3}),
        PerturbationSpec(name="strip_mask", params={"S": 16, "v": 3, "k": 4, "orientation": "vertical", "delta": None}),
    )
    assert canonical_spec(bare) == canonical_spec(full)
    assert canonical_spec(bare).id == "strip_mask(S=16,delta=None,k=4,orientation=vertical,v=3)"
    assert cache_key(sha, bare, 0) == cache_key(sha, full, 0)
    assert (
        len(
            {
                cache_key(sha, bare, 0),
                cache_key(sha, bare, 1),
                cache_key("f" * 64, bare, 0),
                cache_key(sha, PerturbationSpec(name="strip_mask", params={"S": 16, "v": 4}), 0),
            }
        )
        == 4
    )
    speed = {"factor": 2}
    assert cache_key(sha, PerturbationSpec(name="speed", params=speed), 0) == cache_key(
        sha, PerturbationSpec(name="speed", params={"factor": 2.0}), 0
    )  # 2 and 2.0 are one value

    cache = tmp_path / "cache"
    r1 = cached(src, sha, bare, 0, cache)
    assert (r1.video, r1.meta_path) == cache_paths(cache, r1.meta.cache_key)
    stamp = r1.video.stat().st_mtime_ns
    r2 = cached(src, sha, full, 0, cache)
    assert r2.video == r1.video and r2.video.stat().st_mtime_ns == stamp and r2.meta == r1.meta  # a hit
    r1.meta_path.write_text("{ torn")
    r3 = cached(src, sha, bare, 0, cache)  # a torn entry is rebuilt
    assert r3.sha256 == r1.sha256  # the same bytes (deterministic)
    with pytest.raises(DataError, match="the video changed"):
        cached(src, "e" * 64, bare, 0, cache)
    assert not any(p.exists() for p in cache_paths(cache, cache_key("e" * 64, bare, 0)))  # nothing cached
    data = bytearray(r3.video.read_bytes())
    data[-10] ^= 0xFF
    r3.video.write_bytes(bytes(data))  # same size, other bytes
    trusted = cached(src, sha, bare, 0, cache)  # unverified: trusted by its size
    assert trusted.video == r3.video and sha256_file(trusted.video) != trusted.sha256
    fixed = cached(src, sha, bare, 0, cache, verify=True)  # verified: rebuilt
    assert sha256_file(fixed.video) == fixed.sha256 == r1.sha256
    mixed = cached(
        src, sha, PerturbationSpec(name="scene_mix", params={"duration_s": 0.5}), 0, cache, second_source=second
    )
    assert mixed.meta.second_sha256 == sha256_file(second)


def test_a_chain_feeds_each_output_to_the_next(videos: tuple[Path, Path], tmp_path: Path) -> None:
    src, _ = videos
    steps = cached_chain(
        src,
        sha256_file(src),
        [PerturbationSpec(name="reverse"), PerturbationSpec(name="reverse")],
        0,
        tmp_path / "cache",
    )
    assert steps[1].meta.source_sha256 == steps[0].sha256
    m0, m1 = steps[0].meta.map["source_frame"], steps[1].meta.map["source_frame"]
    assert [m0[j] for j in m1] == list(range(24))


# --------------------------------------------------------------------------- the command line


def test_perturb_command_types_values_from_the_schema(videos: tuple[Path, Path], tmp_path: Path) -> None:
    src, second = videos
    assert parse_sets("strip_mask", ["S=16", "v=3", "orientation=horizontal", "delta=null"]) == {
        "S": 16,
        "v": 3,
        "orientation": "horizontal",
        "delta": None,
    }
    assert parse_sets("temporal_gap", ["label=123", "start_s=0.5", "end_s=1"]) == {
        "label": "123",
        "start_s": 0.5,
        "end_s": 1,
    }  # text stays text
    assert parse_sets("noise", ["region=[0,0,0.5,0.5]"]) == {"region": [0, 0, 0.5, 0.5]}
    assert parse_sets("unrelated", ["loop=false"]) == {"loop": False}
    with pytest.raises(ConfigError, match="write KEY=VALUE"):
        parse_sets("reverse", ["start_s"])
    with pytest.raises(ConfigError, match="reverse has no parameter 'fps'; its parameters: start_s, end_s"):
        parse_sets("reverse", ["fps=3"])
    with pytest.raises(ConfigError, match="given twice"):
        parse_sets("speed", ["factor=2", "factor=3"])
    with pytest.raises(ConfigError, match=r"factor must be a number in \[0.125, 8\]"):
        perturb_command(src, "speed", ["factor=fast"], 0, tmp_path / "x.mp4")
    r = perturb_command(src, "strip_mask", ["S=16", "v=3", "k=2"], 3, tmp_path / "dst.mp4")
    on_disk = json.loads((tmp_path / "dst.json").read_text())
    assert on_disk["params"] == {"S": 16, "v": 3, "k": 2, "orientation": "vertical", "delta": None}
    assert on_disk["info"]["delta"] >= 1  # the value the null stood for
    assert on_disk["seed"] == 3 and on_disk["n_frames"] == 48 == len(on_disk["map"]["visible_strips"])
    assert on_disk["fps"] == 24.0 and on_disk["source_sha256"] == sha256_file(src)
    assert "strip_mask: 48 frames at 24 fps" in summary_lines(r)[0]
    mix = perturb_command(src, "scene_mix", ["duration_s=0.5"], 0, tmp_path / "mix.mp4", second=second)
    assert "second" in mix.meta.map["source_video"]


def test_preview_equals_what_apply_records(videos: tuple[Path, Path], tmp_path: Path) -> None:
    src, _ = videos
    sp = PerturbationSpec(name="cut", params={"duration_s": 0.5})
    pv = preview(src, sp, seed=11)
    r = apply(src, sp, tmp_path / "c.mp4", seed=11)
    assert (pv["map"], pv["info"], pv["n_frames"], pv["params"]) == (
        r.meta.map,
        r.meta.info,
        r.meta.n_frames,
        r.meta.params,
    )
    assert not list(tmp_path.glob("*.part*"))


def test_vidaudit_perturb_command(tmp_path: Path) -> None:
    """The CLI: writes DST.mp4 and DST.json; --list names the ops; a bad op exits 2 naming it."""
    import json

    import numpy as np
    from typer.testing import CliRunner

    from vidaudit.cli import app
    from vidaudit.video.encode import write_video

    src = tmp_path / "src.mp4"
    frames = [np.full((48, 64, 3), 10 * i, np.uint8) for i in range(12)]
    write_video(src, frames, 12.0, 64, 48)
    runner = CliRunner()
    r = runner.invoke(app, ["perturb", str(src), "--op", "reverse", "--out", str(tmp_path / "r.mp4")])
    assert r.exit_code == 0, r.output
    meta = json.loads((tmp_path / "r.json").read_text())
    assert meta["op"] == "reverse" and meta["map"]["source_frame"] == list(range(11, -1, -1))
    assert "strip_mask" in runner.invoke(app, ["perturb", "--list"]).stdout
    r = runner.invoke(app, ["perturb", str(src), "--op", "melt", "--out", str(tmp_path / "m.mp4")])
    assert r.exit_code == 2 and "melt" in r.output and not (tmp_path / "m.mp4").exists()


def test_perturb_on_a_file_that_is_not_a_video_names_it_and_what_to_do(tmp_path: Path) -> None:
    """The user's own non-video file (text, audio): a one-line error naming the file, exit 2, no FFmpeg errno,
    and no advice to regenerate a file vidaudit never made."""
    import wave

    from typer.testing import CliRunner

    from vidaudit.cli import app

    text = tmp_path / "notes.mp4"
    text.write_text("not a video, just my notes\n")
    audio = tmp_path / "tone.wav"
    with wave.open(str(audio), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(bytes(16000))
    runner = CliRunner()
    for src, why in ((text, "not a readable video (invalid data"), (audio, "has no video stream")):
        r = runner.invoke(app, ["perturb", str(src), "--op", "reverse", "--out", str(tmp_path / "out.mp4")])
        msg = " ".join(r.output.split())
        assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
        assert str(src) in msg and why in msg.lower(), msg
        assert "Errno" not in msg and "corrupt" not in msg and "Traceback" not in msg
        assert "video file" in msg or "file with video" in msg  # what to give instead
    assert not (tmp_path / "out.mp4").exists()
