"""Every loader of a user's file joins the names it reads through one rule (issue 36, item 1's "one helper").

``video.facts.resolve_video`` (a manifest's video path) now follows ``core.confine``: absolute, ``..`` and a symlink
out of the data directory are refused. Here hostile names are fed to it as a property, and to each loader that
reads a name from a user's file and opens it: a RepCount CSV's video name, a human-study answers file's study id,
and a manifest's video path as ``vidaudit verify``, the mechanism probes' clip loader, the harness bridges and the
human-study export read it. Each refuses with a ``DataError`` (exit 2 through the CLI) and nothing outside the
temporary output changes. Every hostile path aims at a sentinel in ``tmp_path``, never at a real system file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_confine import HOSTILE, _names, _tree
from vidaudit.core.errors import DataError
from vidaudit.video.facts import resolve_video

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture()
def world(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    (root / "videos").mkdir(parents=True)
    (root / "videos" / "a.mp4").write_bytes(b"inside")
    (tmp_path / "sentinel.mp4").write_bytes(b"sentinel")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.mp4").write_bytes(b"outside")
    (root / "link").symlink_to(tmp_path / "elsewhere")
    return root


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=_names)
def test_resolve_video_keeps_every_path_inside(world: Path, name: str) -> None:
    try:
        path = resolve_video(world, name, who="s1")
    except DataError as e:
        assert "leads outside the data directory" in str(e) and "--allow-external-videos" in str(e)
        return
    real, top = Path(os.path.realpath(path)), Path(os.path.realpath(world))
    assert real != top and real.is_relative_to(top), (name, real)


@pytest.mark.parametrize("name", ["../sentinel.mp4", "link/x.mp4", "videos/../../sentinel.mp4", "/SENTINEL"])
def test_resolve_video_refuses_the_ways_out_and_allows_them_when_asked(world: Path, name: str) -> None:
    name = str(world.parent / "sentinel.mp4") if name == "/SENTINEL" else name
    with pytest.raises(DataError, match="leads outside the data directory"):
        resolve_video(world, name)
    assert resolve_video(world, name, allow_external=True) == world / name
    assert resolve_video(world, "videos/a.mp4") == world / "videos" / "a.mp4"


# --------------------------------------------------------------------------- a manifest naming a file outside


def _hostile_dataset(smoke_dir: Path, base: Path, path: str) -> Path:
    """A copy of the counting smoke data whose first sample's video path is ``path`` (the sentinel beside it)."""
    data = base / "data"
    shutil.copytree(smoke_dir, data, ignore=shutil.ignore_patterns("*.partial.jsonl"))
    first = json.loads((data / "manifest.jsonl").read_text().splitlines()[0])
    shutil.copyfile(data / first["video"]["path"], base / "sentinel.mp4")  # a real video, outside the data
    (base / "outside").mkdir()
    shutil.copyfile(data / first["video"]["path"], base / "outside" / "x.mp4")
    (data / "videos" / "out").symlink_to(base / "outside")
    lines = (data / "manifest.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["video"]["path"] = str(base / "sentinel.mp4") if path == "/SENTINEL" else path
    lines[0] = json.dumps(row)
    (data / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    return data


OUT_PATHS = ["../sentinel.mp4", "/SENTINEL", "videos/out/x.mp4"]


@pytest.mark.parametrize("path", OUT_PATHS)
def test_verify_refuses_a_video_path_outside_before_opening_anything(
    smoke_dir: Path, tmp_path: Path, path: str
) -> None:
    data = _hostile_dataset(smoke_dir, tmp_path, path)
    r = subprocess.run(
        [sys.executable, "-m", "vidaudit.cli", "verify", str(data)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "300"},
    )
    assert r.returncode == 2, r.stdout + r.stderr
    text = " ".join((r.stdout + r.stderr).split())
    assert "Traceback" not in text and "leads outside the data directory" in text and "verified" not in text


@pytest.mark.parametrize("path", OUT_PATHS)
def test_the_loaders_of_a_manifest_refuse_a_video_path_outside(smoke_dir: Path, tmp_path: Path, path: str) -> None:
    from vidaudit.tools.humanstudy.export import export_study
    from vidaudit.tools.interop.common import check_videos, load_data
    from vidaudit.tools.mech.data import load_clips

    data = _hostile_dataset(smoke_dir, tmp_path, path)
    before = _tree(tmp_path, skip=tmp_path / "study")
    with pytest.raises(DataError, match="leads outside the data directory"):
        load_clips(data)
    with pytest.raises(DataError, match="leads outside the data directory"):
        check_videos(load_data(data))  # what the hf, lmms-eval and inspect bridges call first
    with pytest.raises(DataError, match="leads outside the data directory"):
        export_study(data, tmp_path / "study" / "page.html", kind="performance", media="folder")
    assert _tree(tmp_path, skip=tmp_path / "study") == before
    assert not list((tmp_path / "study").rglob("*.mp4"))  # the outside video was never copied into the study


# --------------------------------------------------------------------------- a RepCount CSV's video names


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.one_of(st.sampled_from(HOSTILE + ["link/x.mp4", "../sentinel.mp4"]), _names))
def test_repcount_names_never_reach_outside_the_video_folder(world: Path, name: str) -> None:
    from vidaudit.suites.counting.repcount import scan_repcount

    vdir = world  # holds videos/a.mp4 and link -> a folder outside
    if name.startswith(("/", "\\")) or os.path.isabs(name):
        name = str(world.parent / "sentinel.mp4")
    if any(c in name for c in ',"\r\n\x00'):
        return  # not a CSV cell a row can hold as one name
    csv_path = world.parent / "ann.csv"
    csv_path.write_text(f"type,name,count,L1,L2\nsquat,{name},1,0,4\n", encoding="utf-8", errors="surrogatepass")
    before = _tree(world.parent)
    try:
        scan_repcount(csv_path, vdir)
    except DataError:
        pass
    else:  # a name accepted must be a file inside (none of these is a decodable video, so none is)
        raise AssertionError(name)
    assert _tree(world.parent) == before


def test_repcount_refuses_a_symlink_out_of_the_video_folder(world: Path) -> None:
    from vidaudit.suites.counting.repcount import scan_repcount

    csv_path = world.parent / "ann.csv"
    csv_path.write_text("type,name,count,L1,L2\nsquat,link/x.mp4,1,0,4\n", encoding="utf-8")
    with pytest.raises(
        DataError, match=r"ann.csv:2: video name 'link/x.mp4' leads outside the folder \(to .*elsewhere"
    ):
        scan_repcount(csv_path, world)


# --------------------------------------------------------------------------- a human-study answers file's study id


@pytest.mark.parametrize("study", ["../../evil", "/EVIL", "a/../../../evil", "x\x00y"])
def test_an_answers_file_names_a_study_never_a_path(tmp_path: Path, study: str) -> None:
    from vidaudit.tools.humanstudy.importing import find_manifest

    run = tmp_path / "run"
    (run / "human_studies").mkdir(parents=True)
    evil = tmp_path / "evil.json"  # a study manifest outside the run: never to be read
    evil.write_text(json.dumps({"study": "evil", "items": []}))
    study = str(tmp_path / "evil") if study == "/EVIL" else study
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"annotator": "a1", "study": study, "answers": {}}))
    with pytest.raises(DataError, match="study id") as e:
        find_manifest(run, [answers], None)
    assert "answers.json" in str(e.value)
