"""The audit's generated datasets under ``--data-root``: locked while made or used, and certified when done.

Several audits may share one data root (``--data-root``), so each dataset folder ``ROOT/NAME`` has two
``flock`` locks beside it, in ``ROOT/.locks/`` (they die with their process, so a killed audit leaves none):

- ``NAME.generate``, exclusive, held only while an audit checks the folder and, if need be, (re)generates
  it. A second audit that wants the same folder meanwhile **waits** (it says so, naming the process) and
  then finds the folder done and reuses it: the data is rendered once.
- ``NAME.use``, shared, held by every audit that runs on the folder, until it ends. Deleting a folder
  (to generate it again) needs it exclusively and never waits: a damaged folder that another audit is
  running on is refused with a message instead of being pulled from under it.

A folder is done when its marker ``audit-dataset.json`` exists, written only once the generation finished
and every video the manifest names is there with its sha256. The marker records the content key and what
it certifies: every file of the folder with its size and sha256. Before reuse the folder is checked
against it (every listed file present with its size; ``manifest.jsonl`` and ``dataset.json`` by sha256;
the run then checks each video's sha256 against the manifest before any call). A folder that fails (files
deleted, the manifest cut short or edited) is generated again, with a line saying why. A marker written
before markers listed files is checked the long way once (every video of the manifest by sha256) and
rewritten.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from vidaudit import __version__
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.fileio import write_json_atomic
from vidaudit.core.hashing import sha256_file
from vidaudit.core.manifest import load_samples
from vidaudit.video.facts import resolve_video

#: written into a dataset dir once its generation finished: the dir is reused only when this matches
MARKER = "audit-dataset.json"
#: the marker's format: 2 lists the files it certifies (1, unversioned, named only the key)
MARKER_FORMAT = 2
#: files whose bytes are checked on every reuse (what a run plans from); the videos are checked by the run
HASHED_ON_REUSE = ("manifest.jsonl", "dataset.json")
LOCKS_DIR = ".locks"

Log = Callable[[str], None]


def _lock_file(data_dir: Path, kind: str) -> int:
    locks = data_dir.parent / LOCKS_DIR
    locks.mkdir(parents=True, exist_ok=True)
    return os.open(locks / f"{data_dir.name}.{kind}", os.O_RDWR | os.O_CREAT, 0o666)


def _holder(fd: int) -> str:
    return os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "another process"


@contextlib.contextmanager
def generation_lock(data_dir: Path, *, log: Log, label: str) -> Iterator[None]:
    """Exclusive while the folder is checked or made; waits (saying so) for an audit that holds it."""
    fd = _lock_file(data_dir, "generate")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(
                f"data  {label}: waiting for process {_holder(fd)}, which is generating or checking {data_dir} "
                "(another audit on the same --data-root)"
            )
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock


class UseLock:
    """Shared while an audit runs on the folder; exclusive (never waited for) to delete it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._fd: int | None = _lock_file(data_dir, "use")

    def share(self) -> None:
        assert self._fd is not None
        fcntl.flock(self._fd, fcntl.LOCK_SH)

    def exclusive_now(self, why: str) -> None:
        """The folder to ourselves, or a ConfigError: another audit runs on it."""
        assert self._fd is not None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(
                f"{self.data_dir} must be generated again ({why}), but another audit is running on it; "
                "let it finish and run this audit again (or give this one another --data-root)"
            ) from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def folder_files(data_dir: Path) -> dict[str, dict[str, Any]]:
    """Every file under ``data_dir`` but the marker: relative path -> size and sha256."""
    out: dict[str, dict[str, Any]] = {}
    for dirpath, dirnames, filenames in os.walk(data_dir):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath) / name
            rel = p.relative_to(data_dir).as_posix()
            if rel != MARKER:
                out[rel] = {"size": p.stat().st_size, "sha256": sha256_file(p)}
    return out


def write_marker(data_dir: Path, key: str, identity: dict[str, Any]) -> None:
    """Certify a finished folder: its key and every file it holds (written last, atomically)."""
    write_json_atomic(
        data_dir / MARKER,
        {
            "format": MARKER_FORMAT,
            "key": key,
            "identity": identity,
            "vidaudit": __version__,
            "files": folder_files(data_dir),
        },
    )


def _read_marker(data_dir: Path) -> dict[str, Any] | None:
    try:
        got = json.loads((data_dir / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return got if isinstance(got, dict) else None


def whole_problem(data_dir: Path) -> str | None:
    """Why the folder is not whole (None: it is): every video its manifest names there, with the manifest's sha256.
    Checked before a marker is written, and once for a folder certified by an old marker (key only)."""
    try:
        samples = load_samples(data_dir)
        for s in samples:
            path = resolve_video(data_dir, s.video.path, who=s.sample_id)
            if not path.is_file():
                return f"{s.video.path} is missing"
            if s.video.sha256 is None or sha256_file(path) != s.video.sha256:
                return f"{s.video.path} does not match the manifest's sha256"
    except DataError as e:
        return str(e)
    return None if samples else "its manifest holds no samples"


def marker_problem(data_dir: Path, key: str, identity: dict[str, Any]) -> str | None:
    """Why the folder cannot be reused as the dataset of ``key`` (None: it can)."""
    marker = _read_marker(data_dir)
    if marker is None:
        return "no finished generation is marked there" if data_dir.exists() else "it does not exist yet"
    if marker.get("key") != key or marker.get("identity", identity) != identity:
        return f"its marker names another dataset (key {str(marker.get('key'))[:12]})"
    files = marker.get("files")
    if files is None:
        problem = whole_problem(data_dir)
        if problem is None:
            write_marker(data_dir, key, identity)  # checked the long way once; the new marker lists the files
        return problem
    if not isinstance(files, dict) or not files:
        return "its marker lists no files"
    for rel, want in sorted(files.items()):
        p = data_dir / rel
        if not isinstance(want, dict) or ".." in Path(rel).parts or Path(rel).is_absolute():
            return f"its marker's entry {rel!r} is not a file of the folder"
        try:
            size = p.stat().st_size
        except OSError:
            return f"{rel} is missing"
        if size != want.get("size"):
            return f"{rel} is {size} bytes, the marker says {want.get('size')}"
        if rel in HASHED_ON_REUSE and sha256_file(p) != want.get("sha256"):
            return f"{rel} changed since the folder was generated"
    return None


def _remove(data_dir: Path) -> None:
    try:
        shutil.rmtree(data_dir)
    except FileNotFoundError:
        pass
    except OSError as e:
        if e.errno != errno.ENOENT:
            raise DataError(
                f"cannot remove the damaged dataset {data_dir} ({e.strerror or e}); remove it by hand "
                "and run the audit again"
            ) from None


def ensure(
    data_dir: Path,
    key: str,
    identity: dict[str, Any],
    generate: Callable[[], Any],
    *,
    log: Log,
    label: str,
    hold: contextlib.ExitStack | None = None,
) -> Path:
    """The folder, reused when its marker certifies it, else generated (again) under the generation lock.

    ``hold``: the use lock (shared) is kept on it until ``hold`` closes (the audit's runs); without it the
    lock is released on return."""
    use = UseLock(data_dir)
    try:
        with generation_lock(data_dir, log=log, label=label):
            problem = marker_problem(data_dir, key, identity)
            if problem is None:
                use.share()
                log(f"data  {label}: reused {data_dir}")
            else:
                use.exclusive_now(problem)
                if data_dir.exists():
                    log(f"data  {label}: {data_dir} cannot be reused ({problem}); generating it again")
                    _remove(data_dir)
                generate()
                problem = whole_problem(data_dir)
                if problem is not None:  # never certified unless whole
                    raise DataError(
                        f"{data_dir} was generated but is not whole ({problem}); nothing was marked "
                        "done: run the audit again (it generates the folder anew)"
                    )
                write_marker(data_dir, key, identity)
                use.share()  # others may reuse it now; nobody may delete it while this audit runs on it
    except BaseException:
        use.close()
        raise
    if hold is not None:
        hold.callback(use.close)
    else:
        use.close()
    return data_dir
