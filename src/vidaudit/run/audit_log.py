"""The append-only JSONL audit log kept beside the SQLite store (``attempts.jsonl``).

One line per stored attempt, fsync'd after each write, so the record of every call made survives
independently of the database. A process killed mid-write leaves at most a torn last line: readers
tolerate and report it; the writer cuts it off and re-appends, from the database, whatever the log
is missing (marked ``"recovered": true``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidaudit.core.errors import DataError

LOG_NAME = "attempts.jsonl"


@dataclass(frozen=True)
class AuditLogRead:
    """What a tolerant read of the log found."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    torn_tail: bytes | None = None   # the unterminated, unparseable last line, if any
    valid_bytes: int = 0             # length of the prefix made of complete lines

    @property
    def keys(self) -> set[tuple[str, int]]:
        return {(r["attempt"]["trial_id"], int(r["attempt"]["attempt"])) for r in self.rows if "attempt" in r}


def read_audit_log(path: str | Path) -> AuditLogRead:
    """Read every complete line; a torn last line is reported, a corrupt earlier line is a DataError."""
    p = Path(path)
    if not p.exists():
        return AuditLogRead()
    data = p.read_bytes()
    rows: list[dict[str, Any]] = []
    pos = 0
    lineno = 0
    while pos < len(data):
        lineno += 1
        nl = data.find(b"\n", pos)
        if nl < 0:  # unterminated last line: a torn write unless it happens to parse
            tail = data[pos:]
            try:
                rows.append(json.loads(tail))
            except (json.JSONDecodeError, UnicodeDecodeError):
                return AuditLogRead(rows, torn_tail=tail, valid_bytes=pos)
            return AuditLogRead(rows, valid_bytes=pos)
        line = data[pos:nl]
        if line.strip():
            try:
                rows.append(json.loads(line))
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise DataError(f"{p}:{lineno}: corrupt audit-log line in the middle of the file ({e}); "
                                f"the log is append-only, so this was edited by hand: restore it or remove "
                                f"that line") from e
        pos = nl + 1
    return AuditLogRead(rows, valid_bytes=pos)


class AuditLog:
    """Append-only writer; each ``append`` writes one line and fsyncs before returning."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def cut_torn_tail(self, read: AuditLogRead) -> None:
        """Drop a torn last line so the next append starts on a fresh line."""
        if read.torn_tail is not None:
            os.ftruncate(self._fd, read.valid_bytes)
            os.fsync(self._fd)

    def append(self, row: dict[str, Any]) -> None:
        line = (json.dumps(row, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        view = memoryview(line)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
