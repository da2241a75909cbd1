"""`vidaudit export hf`: the real `datasets` library loads the export; its typed rows are the samples."""

from __future__ import annotations

import json
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from realvideos import frame_image, write_video
from test_interop_support import small_dataset
from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.manifest import load_samples, read_dataset_info, write_dataset_info, write_manifest
from vidaudit.video.decode import read_frames
from vidaudit.video.probe import video_ref

datasets = pytest.importorskip("datasets", reason="the interop extra is not installed: pip install 'vidaudit[interop]'")

from vidaudit.tools.interop.hf import export_hf  # noqa: E402


@pytest.fixture(scope="module")
def small(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_dataset(smoke_dir, tmp_path_factory.mktemp("hf") / "data")


@pytest.fixture(scope="module")
def exported(small: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hfout") / "ds"
    res = export_hf(small, out, verify=True)
    assert res.out == out and res.n_samples == 5
    return out


def test_load_from_disk_gives_typed_samples(small: Path, exported: Path) -> None:
    ds = datasets.load_from_disk(str(exported))
    samples = {s.sample_id: s for s in load_samples(small)}
    assert len(ds) == len(samples)
    f = ds.features
    assert f["answer"] == datasets.Value("int64")
    assert f["params"]["frequency_hz"] == datasets.Value("float64")
    assert f["params"]["domain"] == datasets.Value("string") and f["params"]["n_events"] == datasets.Value("int64")
    assert f["trace"].feature["t"] == datasets.Value("float64")
    assert f["trace"].feature["count"] == datasets.Value("int64")
    assert isinstance(f["video"], datasets.Video) and not f["video"].decode
    for row in ds:
        s = samples[row["sample_id"]]
        assert row["answer"] == s.answer and row["params"] == s.params and row["question"] == s.question
        assert row["trace"] == [e.model_dump(mode="json") for e in s.trace.events]
        assert row["video_sha256"] == s.video.sha256 and row["n_frames"] == s.video.n_frames
        # the video bytes are embedded and are the file alongside
        assert row["video"]["bytes"] == (exported / row["video_path"]).read_bytes()
        assert sha256_file(exported / row["video_path"]) == s.video.sha256
        assert "\\boxed{}" in row["prompt"] and row["prompt_system"] is None


def test_export_is_also_a_vidaudit_dataset(small: Path, exported: Path) -> None:
    again = {s.sample_id: s for s in load_samples(exported)}
    for s in load_samples(small):
        t = again[s.sample_id]
        assert t.model_copy(update={"video": s.video}) == s and t.video.sha256 == s.video.sha256
        assert sha256_file(exported / t.video.path) == s.video.sha256
    info = read_dataset_info(exported)
    assert info["suite"] == "counting" and info["exported"]["to"] == "huggingface"


def test_card_names_suite_paper_grid_verification_licence(exported: Path) -> None:
    from vidaudit.core.registry import get_suite

    card = (exported / "README.md").read_text()
    suite = get_suite("counting")
    assert card.startswith('---\nlicense: "apache-2.0"')
    assert "**Suite**: `counting`" in card and f"**Paper**: {suite.paper}" in card
    assert "| `n_events` | 0, 1, 3, 12 |" in card and '| `domain` | "blinking", "bounce_ball" |' in card
    assert "**Verification**: verified at export" in card and "all 5 videos show their trace" in card
    assert "| `trace` | list<struct{t: float64" in card


def test_real_videos_need_a_licence_and_a_new_directory(small: Path, tmp_path: Path) -> None:
    info = read_dataset_info(small)
    real = tmp_path / "real"
    real.mkdir()
    (real / "manifest.jsonl").write_text((small / "manifest.jsonl").read_text())
    (real / "videos").symlink_to(small / "videos")
    write_dataset_info(real, {**info, "real_video": True, "source": "repcount", "external_videos": True})
    with pytest.raises(ConfigError, match="--license"):
        export_hf(real, tmp_path / "o1")
    res = export_hf(real, tmp_path / "o2", license="cc-by-nc-4.0")
    card = (res.out / "README.md").read_text()
    assert 'license: "cc-by-nc-4.0"' in card and "not applicable: real videos" in card
    row = datasets.load_from_disk(str(res.out))[0]
    assert row["video"]["bytes"] == (res.out / row["video_path"]).read_bytes()
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("keep me")
    with pytest.raises(ConfigError, match="not empty"):
        export_hf(small, tmp_path / "busy")
    assert (tmp_path / "busy" / "x").read_text() == "keep me"


def test_untypable_column_is_json_text(small: Path, tmp_path: Path) -> None:
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    rows = [json.loads(x) for x in (small / "manifest.jsonl").read_text().splitlines()]
    rows[0]["params"]["note"] = "text"
    rows[1]["params"]["note"] = 3  # a string in one sample, a number in another: no single type
    (mixed / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (mixed / "videos").symlink_to(small / "videos")
    write_dataset_info(mixed, {**read_dataset_info(small), "external_videos": True})  # videos shared by a symlink
    res = export_hf(mixed, tmp_path / "out")
    ds = datasets.load_from_disk(str(res.out))
    assert "params_json" in ds.features and "params" not in ds.features
    assert json.loads(ds[0]["params_json"])["note"] == "text"
    assert "Stored as JSON text" in (res.out / "README.md").read_text()


@pytest.mark.parametrize(
    "values",
    [(1.5, 2**60 + 1), (2**63, 3)],
    ids=["int past 2**53 beside a float", "int past int64"],
)
def test_a_whole_number_the_column_would_not_hold_exactly_is_json_text(
    small: Path, tmp_path: Path, values: tuple[float, int]
) -> None:
    """Beside floats a column is float64, which holds whole numbers exactly only up to 2**53: 2**60 + 1 came back
    as 1.152921504606847e18, silently another number. Such a column (and one past int64) is JSON text, exact."""
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    rows = [json.loads(x) for x in (small / "manifest.jsonl").read_text().splitlines()]
    for r, v in zip(rows, values, strict=False):
        r["params"]["big"] = v
    (mixed / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (mixed / "videos").symlink_to(small / "videos")
    write_dataset_info(mixed, {**read_dataset_info(small), "external_videos": True})
    ds = datasets.load_from_disk(str(export_hf(mixed, tmp_path / "out").out))
    assert [json.loads(ds[i]["params_json"])["big"] for i in range(2)] == list(values)


def test_any_suite_exports(tmp_path: Path) -> None:
    """A plugin suite (the tests' toy suite, string answers, no trace) exports for the Hub and for lmms-eval."""
    from test_interop_support import plugin_env, run_py

    code = (
        f"from pathlib import Path\nfrom toysuite import generate_toy\nfrom vidaudit.tools.interop.hf import export_hf\n"
        f"from vidaudit.tools.interop.lmms_eval import export_lmms_eval\nroot = Path({str(tmp_path)!r})\n"
        "generate_toy(root / 'toy')\nexport_hf(root / 'toy', root / 'hf')\n"
        "print(export_lmms_eval(root / 'toy', root / 'task').metrics)"
    )
    r = run_py(code, env=plugin_env())
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['vidaudit_correct']"  # the toy suite has no scalar metrics of its own
    ds = datasets.load_from_disk(str(tmp_path / "hf"))
    assert ds.features["answer"] == datasets.Value("string") and sorted(set(ds["answer"])) == ["blue", "green", "red"]
    assert ds[0]["trace"] == [] and ds[0]["params"] == {"colour": "red", "seed": 0}
    assert "# vidaudit: toy" in (tmp_path / "hf" / "README.md").read_text()


def test_same_file_name_without_sha256_keeps_each_video(small: Path, tmp_path: Path) -> None:
    """Three external videos named alike in different folders, with no sha256 in the manifest (it is optional):
    each row, and the exported manifest, keeps its own video (the later samples were given the first one's
    file)."""
    rows = [json.loads(x) for x in (small / "manifest.jsonl").read_text().splitlines()][:3]
    for i, r in enumerate(rows):
        (tmp_path / f"src{i}").mkdir()
        target = tmp_path / f"src{i}" / "clip.mp4"
        target.write_bytes((small / r["video"]["path"]).read_bytes())
        r["video"]["path"], r["video"]["sha256"] = str(target), None
    data = tmp_path / "data"
    data.mkdir()
    (data / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_dataset_info(data, {**read_dataset_info(small), "external_videos": True, "n_samples": 3})
    res = export_hf(data, tmp_path / "out")
    by_id = {r["sample_id"]: r for r in datasets.load_from_disk(str(res.out))}
    rows_by_id = {r["sample_id"]: r for r in rows}
    for r in rows:
        assert by_id[r["sample_id"]]["video"]["bytes"] == Path(r["video"]["path"]).read_bytes(), r["sample_id"]
    assert len({row["video_path"] for row in by_id.values()}) == 3
    for s in load_samples(res.out):
        assert (res.out / s.video.path).read_bytes() == Path(rows_by_id[s.sample_id]["video"]["path"]).read_bytes()


def test_rows_say_how_each_video_was_read(small: Path, tmp_path: Path) -> None:
    """A dataset on a rotated clip (display matrix 90) and on a file with two video streams (ffmpeg picks the
    second, the larger): each row carries the rotation and the stream vidaudit read, as ffprobe/ffmpeg report
    them, and turning that stream's stored picture by ``rotation`` gives the frame vidaudit scored (a reader
    that takes the first stream unturned gets another picture). Clips of the rendered kind keep 0 and nulls."""
    ffmpeg, ffprobe = shutil.which("ffmpeg"), shutil.which("ffprobe")
    if not (ffmpeg and ffprobe):
        pytest.skip("ffmpeg/ffprobe not found: apt-get install -y ffmpeg")
    data = tmp_path / "data"
    shutil.copytree(small, data)
    (data / "videos" / "odd").mkdir()
    write_video(data / "videos/odd/rotated.mp4", list(range(12)), Fraction(1, 12), rate=12, rotation=90)
    parts = []
    for i, (w, h) in enumerate(((64, 48), (96, 64))):
        part = tmp_path / f"part{i}.mp4"
        with av.open(str(part), "w") as c:
            st = c.add_stream("libx264", rate=10)
            st.width, st.height, st.pix_fmt = w, h, "yuv420p"
            for k in range(10):
                f = av.VideoFrame.from_ndarray(frame_image(100 * (1 - i) + k, w, h), format="rgb24")
                f.pts = k
                for pk in st.encode(f):
                    c.mux(pk)
            for pk in st.encode():
                c.mux(pk)
        parts.append(str(part))
    two = data / "videos/odd/two_streams.mkv"
    subprocess.run(
        [ffmpeg, "-v", "error", "-i", parts[0], "-i", parts[1], "-map", "0:v", "-map", "1:v", "-c", "copy", str(two)],
        check=True,
    )
    samples = load_samples(data)
    rel = {samples[0].sample_id: "videos/odd/rotated.mp4", samples[1].sample_id: "videos/odd/two_streams.mkv"}
    moved = [
        s.model_copy(update={"video": video_ref(data, rel[s.sample_id])}) if s.sample_id in rel else s for s in samples
    ]
    write_manifest(data, moved)
    res = export_hf(data, tmp_path / "out")
    ds = datasets.load_from_disk(str(res.out))
    assert ds.features["rotation"] == datasets.Value("int64") and ds.features["stream"] == datasets.Value("int64")
    rows = {r["sample_id"]: r for r in ds}

    def probe(path: Path, what: str) -> str:
        return subprocess.run(
            [ffprobe, "-v", "error", "-select_streams", "v:0", "-show_entries", what, "-of", "csv=p=0", str(path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    rot = rows[samples[0].sample_id]
    assert rot["rotation"] == int(float(probe(data / rel[samples[0].sample_id], "stream_side_data=rotation"))) == 90
    assert rot["stream"] is None and rot["sar"] is None and rot["start_s"] == 0.0 and rot["frame_times"] is None
    mapping = subprocess.run(
        [ffmpeg, "-v", "info", "-nostats", "-i", str(two), "-frames:v", "1", "-f", "null", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    assert "Stream #0:1 -> #0:0" in mapping  # ffmpeg picks the second stream
    pair = rows[samples[1].sample_id]
    assert pair["stream"] == 1 and pair["rotation"] == 0 and (pair["width"], pair["height"]) == (96, 64)
    for row in (rot, pair):
        path = res.out / row["video_path"]
        with av.open(str(path)) as c:
            naive = next(c.decode(c.streams.video[0])).to_ndarray(format="rgb24")  # first stream, unturned
        with av.open(str(path)) as c:
            stored = next(c.decode(c.streams.video[row["stream"] or 0])).to_ndarray(format="rgb24")
        shown = np.rot90(stored, row["rotation"] // 90)
        scored = read_frames(path, [0], stream=row["stream"])[0]
        assert shown.shape == scored.shape and np.abs(shown.astype(int) - scored.astype(int)).mean() < 3
        assert naive.shape != scored.shape
    for sid, row in rows.items():
        if sid not in rel:
            assert (row["rotation"], row["stream"], row["sar"], row["stored_size"]) == (0, None, None, None)
