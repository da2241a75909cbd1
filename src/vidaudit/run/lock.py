"""One writer per run directory: an exclusive ``flock`` on ``RUN/.lock`` held for the whole session.

A second ``vidaudit run`` on the same directory refuses at once, before any call, naming the process
that holds it; the lock dies with its process (no stale lock after a SIGKILL).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from vidaudit.core.errors import ConfigError

LOCK_NAME = ".lock"


class RunLock:
    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "another process"
            os.close(fd)
            raise ConfigError(
                f"{self.path.parent} is in use by process {holder} (a `vidaudit run` on the same "
                "--out); wait for it to finish or use another run dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
