"""Names from files a user did not write never reach outside their folder (issue 36, item 1).

A STRAND release once made ``vidaudit import strand --videos DIR`` delete the file its ``video_name`` named (an
absolute path) or hard-link one from outside (``../``). Here hostile names are fed to ``core.confine.confined``
(a property test: whatever the name, the path returned resolves inside the folder, or a ``DataError`` is raised)
and to the importer itself, in process and through the CLI, and the whole temporary tree outside ``--out`` is
compared byte for byte before and after.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vidaudit.core.confine import MAX_NAME_CHARS, confined, name_problem
from vidaudit.core.errors import DataError
from vidaudit.core.untrusted import read_json_file
from vidaudit.suites.faithful.strand_import import import_strand
from vidaudit.suites.faithful.strand_validate import validate_strand

# no real system path here: a regression (or a mutant run) of the importer test would delete it
HOSTILE = [
    "/nonexistent-vidaudit/x.mp4",
    "//nonexistent-vidaudit/x.mp4",
    "../outside.mp4",
    "a/../../outside.mp4",
    "..",
    ".",
    "a/..",
    "",
    " ",
    "a\x00b.mp4",
    "a\nb.mp4",
    "a\rb.mp4",
    "x" * (MAX_NAME_CHARS + 1),
    "C:\\Windows\\x.mp4",
    "\\\\server\\share\\x.mp4",
    "..\\outside.mp4",
    "link/escaped.mp4",
    "link",
    "ok/\ud800.mp4",
]


def _tree(root: Path, skip: Path | None = None) -> dict[str, str]:
    """Every entry under ``root`` (but ``skip``): a file's sha256, a link's target, a folder's mark."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        if skip is not None and (d == skip or skip in d.parents):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = d / name
            if skip is not None and p == skip:
                continue
            if p.is_symlink():
                out[str(p)] = "-> " + os.readlink(p)
            elif p.is_file():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[str(p)] = "dir"
    return out


@pytest.fixture()
def world(tmp_path: Path) -> Path:
    """A folder ``root`` holding a symlink out of itself and a symlink loop, beside a sentinel file."""
    root = tmp_path / "root"
    (root / "ok").mkdir(parents=True)
    (root / "ok" / "a.mp4").write_bytes(b"inside")
    (tmp_path / "outside.mp4").write_bytes(b"sentinel")
    (tmp_path / "elsewhere").mkdir()
    (root / "link").symlink_to(tmp_path / "elsewhere")
    (root / "loop").symlink_to(root / "loop")
    return root


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused(world: Path, name: str) -> None:
    with pytest.raises(DataError) as e:
        confined(world, name, what="video_name", source="release file x.json")
    assert "video_name" in str(e.value) and "x.json" in str(e.value)


def test_absolute_names_of_real_files_are_refused(world: Path) -> None:
    target = world.parent / "outside.mp4"
    assert name_problem(str(target)) == "is absolute"
    with pytest.raises(DataError):
        confined(world, str(target))


def test_plain_names_pass_unchanged(world: Path) -> None:
    assert confined(world, "ok/a.mp4") == world / "ok" / "a.mp4"
    assert confined(world, "new/b.mp4") == world / "new" / "b.mp4"  # not there yet: still inside
    assert confined(world, "./ok/a.mp4") == world / "./ok/a.mp4"


_pieces = st.sampled_from(["..", ".", "", "/", "\\", "link", "loop", "ok", "a.mp4", "\x00", "\n", "~", "C:"])
_names = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(max_size=40),
    st.lists(_pieces, max_size=6).map("/".join),
    st.lists(_pieces, max_size=6).map("".join),
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=_names)
def test_whatever_the_name_the_path_stays_inside(world: Path, name: str) -> None:
    try:
        path = confined(world, name)
    except DataError:
        return
    real, top = Path(os.path.realpath(path)), Path(os.path.realpath(world))
    assert real != top and real.is_relative_to(top), (name, real)


# --------------------------------------------------------------------------- the importer


def _release(rel: Path, video_name: str) -> None:
    rel.mkdir(parents=True, exist_ok=True)
    obj = {
        "video_name": video_name,
        "questions": ["Did the person open the door?"],
        "answers": ["Yes"],
        "sub-questions": [["Is there a door?", "Is there a person?"]],
        "sub-answers": [["Yes", "Yes"]],
    }
    (rel / "sample_0001.json").write_text(json.dumps(obj), encoding="utf-8")


_CASES = itertools.count()


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.one_of(st.sampled_from(HOSTILE + ["../sentinel.mp4", "../../sentinel.mp4"]), _names))
def test_the_importer_changes_nothing_outside_out(tmp_path: Path, name: str) -> None:
    base = tmp_path / f"case{next(_CASES)}"
    # --videos and OUT/videos at the same depth: the layout in which a '../' name deleted the file
    videos, out, rel = base / "clips", base / "out", base / "release"
    videos.mkdir(parents=True)
    (base / "sentinel.mp4").write_bytes(b"sentinel")
    (videos / "clip.mp4").write_bytes(b"not a video")
    (videos / "link").symlink_to(base)
    if name.startswith(("/", "\\")) or os.path.isabs(name):
        name = str(base / "sentinel.mp4")  # an absolute name aims at this test's own sentinel, never the system
    try:
        _release(rel, name)
    except (UnicodeEncodeError, ValueError):
        return  # a name json cannot write is no release
    before = _tree(base, skip=out)
    try:
        import_strand(rel, out, videos=videos)
    except DataError:
        pass
    assert _tree(base, skip=out) == before, name


def test_cli_refuses_a_release_naming_a_file_outside(tmp_path: Path) -> None:
    (tmp_path / "clips").mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    for name in (str(victim), "../victim.txt"):
        _release(tmp_path / "release", name)
        before = _tree(tmp_path, skip=tmp_path / "out")
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "vidaudit.cli",
                "import",
                "strand",
                "--dir",
                str(tmp_path / "release"),
                "--videos",
                str(tmp_path / "clips"),
                "--out",
                str(tmp_path / "out"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert r.returncode == 2, r.stdout + r.stderr
        assert "Traceback" not in r.stderr and "video_name" in r.stderr
        assert victim.read_text() == "keep me"
        assert _tree(tmp_path, skip=tmp_path / "out") == before
        assert not list((tmp_path / "out").rglob("victim.txt"))


# --------------------------------------------------------------------------- release files that are not files


def test_release_files_beyond_the_caps_are_refused(tmp_path: Path) -> None:
    rel = tmp_path / "release"
    rel.mkdir()
    deep = rel / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataError, match="deeper"):
        validate_strand(rel)
    deep.unlink()
    (rel / "surrogate.json").write_text('{"video_name": "a\\ud800.mp4", "questions": []}')
    with pytest.raises(DataError, match="surrogate"):
        validate_strand(rel)
    (rel / "surrogate.json").unlink()
    (rel / "endless.json").symlink_to("/dev/zero")
    with pytest.raises(DataError, match="not a regular file"):
        validate_strand(rel)
    (rel / "endless.json").unlink()
    os.mkfifo(rel / "fifo.json")
    with pytest.raises(DataError, match="not a regular file"):  # opened without blocking: no hang
        validate_strand(rel)


def test_size_cap(tmp_path: Path) -> None:
    p = tmp_path / "big.json"
    p.write_text(json.dumps(["x" * 1000] * 20))
    with pytest.raises(DataError, match="cap"):
        read_json_file(p, max_bytes=1000)
    assert read_json_file(p, max_bytes=100_000)[0] == "x" * 1000
