"""Atomic file writes: a killed process never leaves a half-written file under its final name."""

from __future__ import annotations

import json
import os
import socket
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_temporaries(final: str | Path) -> list[Path]:
    """Remove the temporaries of ``final`` that a killed writer left behind (``.NAME.HOST~PID.*``).

    Only those of a process of this host that no longer runs: a writer still at work (another worker, a
    parallel run) keeps its file. Returns what was removed.
    """
    final = Path(final)
    prefix = f".{final.name}."
    removed: list[Path] = []
    try:
        siblings = list(final.parent.iterdir())
    except OSError:
        return removed
    for p in siblings:
        if not p.name.startswith(prefix):
            continue
        host, sep, pid = p.name[len(prefix):].split(".", 1)[0].rpartition("~")
        if sep and host == _host() and pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            try:
                p.unlink()
                removed.append(p)
            except OSError:
                pass
    return removed


@contextmanager
def atomic_path(final: str | Path, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``final``; rename it onto ``final`` only if the block succeeds.

    The temporary is named after this host and process, and leftovers of a killed writer of the same
    ``final`` are removed first, so a rerun never leaves (or reuses) a partial file.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temporaries(final)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.{owner_token()}.", suffix=suffix or f".tmp{final.suffix}",
                               dir=final.parent)
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
                from vidaudit.core.errors import DataError

                raise DataError(f"{path}:{lineno}: not valid JSON ({e.msg}); fix or remove that line") from e
    return rows
