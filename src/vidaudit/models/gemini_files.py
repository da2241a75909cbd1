"""Which videos are already uploaded to the Gemini Files API: a cache keyed by the video's sha256.

Uploading the same 24 s clip once per condition would multiply upload time and quota, so an upload
is remembered in memory and in a JSON file (written atomically) until shortly before the file
expires on the server (48 h on the Gemini API). Entries live under a namespace (endpoint plus a
fingerprint of the key: files belong to one project), never under a path or a row number.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from vidaudit.core.fileio import write_json_atomic

#: Forget an upload this long before the server says it expires, so a call never races the expiry.
EXPIRY_MARGIN_S = 3600.0
#: Lifetime assumed when the server does not say (the Gemini API keeps uploads for 48 h).
DEFAULT_TTL_S = 48 * 3600.0


@dataclass(frozen=True)
class CachedFile:
    name: str
    uri: str
    mime_type: str
    expires_at: float


def default_cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vidaudit" / "gemini_files.json"


class FileCache:
    """sha256 -> uploaded file, in memory and (when ``path`` is given) on disk."""

    def __init__(self, path: Path | None, namespace: str, *, margin_s: float = EXPIRY_MARGIN_S) -> None:
        self.path = path
        self.namespace = namespace
        self.margin_s = margin_s
        self._lock = threading.Lock()
        self._mem: dict[str, CachedFile] = {}
        if path is not None:
            self._mem.update(self._read_disk().get(namespace, {}))

    def _read_disk(self) -> dict[str, dict[str, CachedFile]]:
        if self.path is None or not self.path.is_file():
            return {}
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return {
                ns: {sha: CachedFile(**entry) for sha, entry in entries.items()}
                for ns, entries in raw.items()
                if isinstance(entries, dict)
            }
        except (OSError, ValueError, TypeError):
            return {}  # a corrupt cache only costs a re-upload

    def _write_disk(self) -> None:
        if self.path is None:
            return
        now = time.time()
        data = self._read_disk()
        mine = {**data.get(self.namespace, {}), **self._mem}
        data[self.namespace] = {sha: f for sha, f in mine.items() if f.expires_at > now}
        if not data[self.namespace]:
            data.pop(self.namespace)
        write_json_atomic(
            self.path, {ns: {sha: asdict(f) for sha, f in entries.items()} for ns, entries in data.items()}
        )

    def get(self, sha256: str, now: float | None = None) -> CachedFile | None:
        with self._lock:
            entry = self._mem.get(sha256)
        if entry is None:
            return None
        if entry.expires_at - self.margin_s <= (time.time() if now is None else now):
            self.drop(sha256)
            return None
        return entry

    def put(self, sha256: str, entry: CachedFile) -> None:
        with self._lock:
            self._mem[sha256] = entry
            self._write_disk()

    def drop(self, sha256: str) -> None:
        with self._lock:
            if self._mem.pop(sha256, None) is None:
                return
            if self.path is not None:
                data = self._read_disk()
                data.get(self.namespace, {}).pop(sha256, None)
                write_json_atomic(
                    self.path, {ns: {sha: asdict(f) for sha, f in entries.items()} for ns, entries in data.items()}
                )
