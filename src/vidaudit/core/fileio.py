"""Atomic file writes: a killed process never leaves a half-written file under its final name."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vidaudit.core.errors import DataError
from vidaudit.core.untrusted import distinct_keys


def _umask() -> int:
    """The process umask, read without changing it where Linux says it (os.umask would race threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _host() -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in socket.gethostname()) or "host"


def owner_token() -> str:
    """Who writes a temporary: this host and process, so that a later run can tell a dead writer's leftovers."""
    return f"{_host()}~{os.getpid()}"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host still runs (one we may not signal counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _temporary_owner(name: str, final_name: str) -> str | None:
    """The ``HOST~PID`` that wrote ``name`` if it is a temporary of ``final_name``: ``.FINAL.HOST~PID.*``, or a
    temporary of such a temporary (``..FINAL.HOST~PID.*``: a writer that stages its output under a temporary name
    through another atomic writer, as the perturbation engine does through ``VideoWriter``)."""
    for depth in (1, 2):
        prefix = "." * depth + final_name + "."
        if name.startswith(prefix):
            owner = name[len(prefix) :].split(".", 1)[0]
            return owner if "~" in owner else None
    return None


def sweep_stale_temporaries(final: str | Path) -> list[Path]:
    """Remove the temporaries of ``final`` that a killed writer left behind (``.NAME.HOST~PID.*``, files or
    folders, and temporaries of those, ``..NAME.HOST~PID.*``).

    Only those of a process of this host that no longer runs: a writer still at work (another worker, a
    parallel run) keeps its file. Returns what was removed.
    """
    final = Path(final)
    removed: list[Path] = []
    try:
        siblings = list(final.parent.iterdir())
    except OSError:
        return removed
    for p in siblings:
        owner = _temporary_owner(p.name, final.name)
        if owner is None:
            continue
        host, _, pid = owner.rpartition("~")
        if host == _host() and pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            try:
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p)
                else:
                    p.unlink()
                removed.append(p)
            except OSError:
                pass
    return removed


def stage_dir(final: str | Path) -> Path:
    """A new empty folder beside ``final`` (``.NAME.HOST~PID.XXXX.tmp``, umask honoured) to fill and then rename
    onto ``final`` (or hand to :func:`replace_together`); a killed writer's leftovers of ``final`` are swept
    first, and the next writer of ``final`` sweeps this one if the process dies before the rename."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temporaries(final)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.{owner_token()}.", suffix=".tmp", dir=final.parent))
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700
    return tmp


@contextmanager
def atomic_path(final: str | Path, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``final``; rename it onto ``final`` only if the block succeeds.

    The temporary is named after this host and process, and leftovers of a killed writer of the same
    ``final`` are removed first, so a rerun never leaves (or reuses) a partial file.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temporaries(final)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{final.name}.{owner_token()}.", suffix=suffix or f".tmp{final.suffix}", dir=final.parent
    )
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a dataset or report must honour the umask
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp_path, final)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def stage_text(final: str | Path, text: str) -> Path:
    """``text`` in a temporary file beside ``final`` (fsynced, umask honoured), for :func:`replace_together`."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temporaries(final)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.{owner_token()}.", suffix=f".tmp{final.suffix}", dir=final.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            fd = -1
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        if fd >= 0:
            os.close(fd)
        remove_path(Path(tmp))
        raise
    return Path(tmp)


def remove_path(path: Path) -> None:
    """Remove a file or a folder (best effort: used to clean up after a failure)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def replace_together(staged: Sequence[tuple[Path | None, Path]]) -> None:
    """Put every staged file or folder under its final name, or none of them.

    ``staged`` holds ``(temporary, final)`` pairs made beside their final names (``temporary`` None:
    remove ``final``). Each final name that exists is first moved aside; if any rename fails, the new
    paths are taken away and the old ones moved back, so a reader finds the old set or the new set,
    never a mix. The temporaries are removed whatever happens.
    """
    aside: list[tuple[Path, Path]] = []  # (backup, final)
    placed: list[Path] = []
    try:
        for tmp, final in staged:
            if final.exists() or final.is_symlink():
                backup = (
                    Path(tempfile.mkdtemp(prefix=f".{final.name}.{owner_token()}.", suffix=".old", dir=final.parent))
                    / final.name
                )
                os.replace(final, backup)
                aside.append((backup, final))
            if tmp is not None:
                os.replace(tmp, final)
                placed.append(final)
    except BaseException:
        for final in reversed(placed):
            remove_path(final)
        for backup, final in reversed(aside):
            os.replace(backup, final)
            backup.parent.rmdir()
        raise
    finally:
        for tmp, _ in staged:
            if tmp is not None and (tmp.exists() or tmp.is_symlink()):
                remove_path(tmp)
    for backup, _ in aside:
        remove_path(backup.parent)


@contextmanager
def written_together(what: str, kept: str, fix: str) -> Iterator[list[tuple[Path | None, Path]]]:
    """Collect ``(temporary, final)`` pairs (``stage_text`` ...) and put them in place together on leaving
    (:func:`replace_together`). An ``OSError`` while staging or renaming (a full disk, an unwritable folder)
    removes the temporaries and is a one-line ``DataError``: "could not write WHAT (reason); the KEPT already
    there are unchanged. Free some space (or fix the folder's permissions) and FIX"."""
    staged: list[tuple[Path | None, Path]] = []
    try:
        yield staged
        replace_together(staged)
    except OSError as e:
        for tmp, _ in staged:
            if tmp is not None:
                remove_path(tmp)
        raise DataError(
            f"could not write {what} ({e.strerror or e}{f': {e.filename}' if e.filename else ''}); "
            f"the {kept} already there are unchanged. Free some space (or fix the folder's "
            f"permissions) and {fix}"
        ) from e


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(path: str | Path, obj: Any) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_jsonl_atomic(path: str | Path, rows: Iterable[Any]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: not valid JSON ({e.msg}); fix or remove that line") from e
    return rows


def read_jsonl_objects(path: Path, what: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-empty line of a JSONL file; anything else is a DataError naming it."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise DataError(f"cannot read {what} {path}: {e}") from e
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        lineno = data[: e.start].count(b"\n") + 1
        raise DataError(f"{path}:{lineno}: not UTF-8 text ({e.reason}); save {what} as UTF-8 JSONL") from None
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line, object_pairs_hook=distinct_keys)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{i}: not valid JSON ({e.msg}); fix or remove that line") from e
        except DataError as e:
            raise DataError(f"{path}:{i}: {e}") from None
        except RecursionError:
            raise DataError(f"{path}:{i}: JSON nested too deeply to read; fix or remove that line") from None
        if not isinstance(row, dict):
            raise DataError(f"{path}:{i}: a line of {what} is a JSON object, got {type(row).__name__}")
        rows.append((i, row))
    return rows
