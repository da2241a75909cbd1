"""The append-only JSONL audit log kept beside the SQLite store (``attempts.jsonl``).

One line per stored record, fsync'd after each write, so the record of every call made survives
independently of the database. Three kinds of line, each a JSON object with one of these keys:

- ``{"trial": {...}, "trial_id": ..., "created_at": ...}``: a trial was registered (written once, when
  it is new), so that the store can be rebuilt from the log alone;
- ``{"attempt": {...}}`` (plus ``"stages": [...]`` for a composite model): a trial's attempt ended;
- ``{"stage_call": {...}}``: one call of a composite model's stage ended.

A process killed mid-write leaves at most a torn last line: readers tolerate and report it; the
writer cuts it off and re-appends, from the database, whatever the log is missing (marked
``"recovered": true``).

Text is lossless, for any Python ``str``. A line is UTF-8 JSON. A line holding a string that UTF-8
cannot encode -- a lone surrogate such as ``"\\ud800"``, which a model's JSON body may contain, or
``"\\udcff"`` from bytes decoded with ``surrogateescape`` -- is written as ASCII JSON (``ensure_ascii``:
``"\\ud800"`` escapes), which any JSON reader reads back to the same string. The one case JSON cannot
express -- a lone high surrogate directly followed by a lone low one, which a JSON reader joins into
one character -- is written as the line's ``surrogatepass`` UTF-8 bytes (a 3-byte sequence per
surrogate, never the 4-byte form of the joined character); ``read_audit_log`` decodes every line with
``errors="surrogatepass"``, so it reads back exactly too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidaudit.core.errors import DataError

LOG_NAME = "attempts.jsonl"


@dataclass(frozen=True)
class AuditLogRead:
    """What a tolerant read of the log found."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    torn_tail: bytes | None = None  # the unterminated, unparseable last line, if any
    valid_bytes: int = 0  # length of the prefix made of complete lines

    @property
    def keys(self) -> set[tuple[str, int]]:
        """(trial id, attempt number) of every attempt line."""
        return {(r["attempt"]["trial_id"], int(r["attempt"]["attempt"])) for r in self.rows if "attempt" in r}

    @property
    def trial_ids(self) -> set[str]:
        return {str(r["trial_id"]) for r in self.rows if "trial" in r}

    @property
    def stage_keys(self) -> set[tuple[str, str, int]]:
        """(trial id, stage, attempt number) of every stage-call line."""
        return {
            (r["stage_call"]["trial_id"], r["stage_call"]["stage"], int(r["stage_call"]["attempt"]))
            for r in self.rows
            if "stage_call" in r
        }

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """The lines of one kind (``trial``, ``attempt`` or ``stage_call``), in log order."""
        return [r for r in self.rows if kind in r]


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
                rows.append(_parse_line(tail))
            except (json.JSONDecodeError, UnicodeDecodeError):
                return AuditLogRead(rows, torn_tail=tail, valid_bytes=pos)
            return AuditLogRead(rows, valid_bytes=pos)
        line = data[pos:nl]
        if line.strip():
            try:
                rows.append(_parse_line(line))
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise DataError(
                    f"{p}:{lineno}: corrupt audit-log line in the middle of the file ({e}); "
                    f"the log is append-only, so this was edited by hand: restore it or remove "
                    f"that line"
                ) from e
        pos = nl + 1
    return AuditLogRead(rows, valid_bytes=pos)


@dataclass(frozen=True)
class AuditLogScan:
    """Lines per kind and the last complete line of each, found without parsing the log (``scan_audit_log``)."""

    counts: dict[str, int] = field(default_factory=dict)
    last: dict[str, bytes] = field(default_factory=dict)
    torn_tail: bytes | None = None
    valid_bytes: int = 0
    unknown: int = 0  # lines that start as no kind does: the caller reads the log in full instead


#: how a line of each kind starts (keys are sorted, so ``recovered`` precedes ``stage_call``)
_PREFIXES = (
    (b'{"attempt": ', "attempt"),
    (b'{"created_at": ', "trial"),
    (b'{"stage_call": ', "stage_call"),
    (b'{"recovered": true, "stage_call": ', "stage_call"),
)


def scan_audit_log(path: str | Path, chunk: int = 1 << 22) -> AuditLogScan:
    """Count the log's lines per kind by how they start, reading it in chunks: what a writer opening a
    large run needs to see that the log and the database agree, without holding or parsing the log. A
    last line without its newline is the torn tail unless it parses."""
    p = Path(path)
    if not p.exists():
        return AuditLogScan()
    counts = {"attempt": 0, "trial": 0, "stage_call": 0}
    last: dict[str, bytes] = {}
    unknown = 0
    pos = 0
    rest = b""
    with open(p, "rb") as fh:
        while block := fh.read(chunk):
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            for line in lines:
                pos += len(line) + 1
                if not line.strip():
                    continue
                for prefix, kind in _PREFIXES:
                    if line.startswith(prefix):
                        counts[kind] += 1
                        last[kind] = line
                        break
                else:
                    unknown += 1
    torn = None
    if rest:
        try:
            _parse_line(rest)
        except (json.JSONDecodeError, UnicodeDecodeError):
            torn = rest
        else:
            unknown += 1  # a complete last line without its newline: let the full read handle it
    return AuditLogScan(counts, last, torn, pos, unknown)


def line_json(value: Any) -> str:
    """A value as a log line writes it (sorted keys, UTF-8 text, no NaN): ``encode_line``'s JSON, and the one
    ``run.plan`` splices trial lines from."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


def encode_line(row: dict[str, Any]) -> bytes:
    """One log line: UTF-8 JSON; with lone surrogates, ASCII JSON if it reads back equal, else WTF-8 bytes."""
    text = line_json(row) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    escaped = json.dumps(row, sort_keys=True, ensure_ascii=True, allow_nan=False)
    if json.loads(escaped) == row:  # every lone surrogate stays lone when read back
        return (escaped + "\n").encode("ascii")
    return text.encode("utf-8", "surrogatepass")  # a high+low pair that JSON would join into one character


def _parse_line(line: bytes) -> Any:
    return json.loads(line.decode("utf-8", "surrogatepass"))


class AuditLog:
    """Append-only writer; each ``append`` / ``append_many`` writes whole lines and fsyncs before returning."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def cut_torn_tail(self, read: AuditLogRead | AuditLogScan) -> None:
        """Drop a torn last line so the next append starts on a fresh line."""
        if read.torn_tail is not None:
            os.ftruncate(self._fd, read.valid_bytes)
            os.fsync(self._fd)

    def append(self, row: dict[str, Any] | bytes) -> None:
        self.append_many([row])

    def append_many(self, rows: Iterable[dict[str, Any] | bytes]) -> None:
        """Append several lines with one write loop and one fsync (every line is encoded first; a line given
        as bytes is ``encode_line``'s output already, e.g. ``run.log_lines``')."""
        data = b"".join(r if isinstance(r, bytes) else encode_line(r) for r in rows)
        if not data:
            return
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
