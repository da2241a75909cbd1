"""The trace viewer's trials: inline in the page when they are small, else in side files loaded lazily.

At the paper's scale the viewer keeps a few thousand trials, each with up to 24 JPEG thumbnails:
well over 100 MB, which no single page should hold. Above ``INLINE_MAX_BYTES`` the page keeps only
an index (what the trial list and its filters read: ids, model, condition, group, outcome, columns)
and the details of each trial (facts, timeline, thumbnails, raw text) go to ``viewer/NNN.js`` files
of about ``CHUNK_BYTES`` each, next to ``report.html``. They are ``<script>`` files, not JSON,
because a page opened from ``file://`` may add a script tag but may not ``fetch`` a file; the page's
script adds the tag when a trial of that chunk is first opened. Each file holds strict JSON (with
``< > & /`` escaped, as in the page) passed to one callback together with a token of the index it
belongs to, so a chunk left over from another report is refused rather than shown.

The Content-Security-Policy of a chunked page adds ``'strict-dynamic'``: only scripts that the
page's own (hashed) script inserts may run; nothing can be fetched or connected to. Below the
threshold the page is one self-contained file, each distinct thumbnail stored once (``"thumbs"``, which
the trials' frames index: models and conditions shown the same frame share it).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from vidaudit.core.contract.report import ViewerSpec, ViewerTrial
from vidaudit.core.errors import DataError
from vidaudit.core.fileio import replace_together, stage_dir
from vidaudit.report.embed import script_json
from vidaudit.report.viewer import viewer_payload

#: above this many bytes of trial JSON the details leave the page (5.3 MB held ~108 trials)
INLINE_MAX_BYTES = 8 << 20
#: target size of one side file; one is read when a trial in it is opened
CHUNK_BYTES = 2 << 20
#: the folder next to report.html that holds the side files
VIEWER_DIR = "viewer"
#: what the page's index keeps of each trial: enough to list, filter and title it
INDEX_KEYS = ("trial_id", "sample_id", "model", "condition", "group", "status", "correct", "columns")
#: the global function a side file calls (the page's script defines it)
CALLBACK = "vidauditViewerChunk"
_CHUNK_NAME = re.compile(r"^\d{3,}\.js$")


def chunk_name(n: int) -> str:
    """``000.js``, ``001.js``, ...: the page's script builds the same name from the number."""
    return f"{n:03d}.js"


@dataclass
class ViewerData:
    """What the page's JSON block holds, and the side files to write (none when inline)."""

    data_json: Markup
    n_trials: int
    chunks: list[str] = field(default_factory=list)
    token: str | None = None

    @property
    def chunked(self) -> bool:
        return bool(self.chunks)


def pool_thumbnails(payloads: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Each distinct thumbnail once: the payloads with every frame's ``jpeg_b64`` replaced by ``jpeg``, its
    index in the returned list. Models and conditions that were sent the same frame share its JPEG (the
    demo's 90 trials hold 2,160 thumbnails of 46 distinct images); the page's script puts them back."""
    index: dict[str, int] = {}
    out = []
    for p in payloads:
        frames = [
            {"index": f["index"], "t": f["t"], "jpeg": index.setdefault(f["jpeg_b64"], len(index))} for f in p["frames"]
        ]
        out.append({**p, "frames": frames})
    return out, list(index)


def resolve_thumbnails(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The inline page's trials with their thumbnails put back (what :func:`viewer_payload` made): the
    inverse of :func:`pool_thumbnails`, as the page's script does it; for tests and readers of the page."""
    thumbs = page.get("thumbs")
    if thumbs is None:
        return list(page["trials"])
    return [
        {**t, "frames": [{"index": f["index"], "t": f["t"], "jpeg_b64": thumbs[f["jpeg"]]} for f in t["frames"]]}
        for t in page["trials"]
    ]


def viewer_data(
    trials: Sequence[ViewerTrial],
    viewer: ViewerSpec,
    *,
    inline_max_bytes: float = INLINE_MAX_BYTES,
    chunk_bytes: int = CHUNK_BYTES,
) -> ViewerData:
    """The viewer's data for ``trials`` in list order: inline if it fits ``inline_max_bytes``, else chunked."""
    if not isinstance(viewer, ViewerSpec):
        raise DataError(f"render_html needs the suite's ViewerSpec, got {type(viewer).__name__}")
    if chunk_bytes < 1:
        raise DataError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    spec = str(script_json(viewer.model_dump(mode="json")))
    payloads = [viewer_payload(t) for t in trials]
    pooled, thumbs = pool_thumbnails(payloads)
    try:
        pooled_texts = [str(script_json(p)) for p in pooled]
    except ValueError as e:
        raise DataError(f"trials hold a value JSON cannot carry ({e}); use None for missing numbers") from e
    thumbs_text = str(script_json(thumbs))
    if sum(len(t) for t in pooled_texts) + len(thumbs_text) <= inline_max_bytes:
        # json.dumps({"spec": ..., "trials": [...], "thumbs": [...]}) with compact separators
        return ViewerData(
            Markup('{"spec":' + spec + ',"trials":[' + ",".join(pooled_texts) + '],"thumbs":' + thumbs_text + "}"),
            len(pooled_texts),
        )
    del pooled, pooled_texts, thumbs_text
    texts = [str(script_json(p)) for p in payloads]
    groups: list[list[int]] = [[]]
    size = 0
    for i, text in enumerate(texts):
        if groups[-1] and size + len(text) > chunk_bytes:
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += len(text)
    index = []
    for n, members in enumerate(groups):
        for i in members:
            entry = {k: payloads[i][k] for k in INDEX_KEYS}
            entry["chunk"] = n
            index.append(entry)
    del payloads
    index_text = str(script_json(index))
    token = hashlib.sha256((spec + index_text).encode("utf-8")).hexdigest()[:16]
    chunks = []
    for n, members in enumerate(groups):
        chunks.append(f'{CALLBACK}("{token}",{n},[' + ",".join(texts[i] for i in members) + "]);\n")
        for i in members:
            texts[i] = ""  # each trial's text lives in one place at a time: the peak stays ~1x the viewer
    meta = str(script_json({"dir": VIEWER_DIR, "count": len(chunks), "token": token}))
    return ViewerData(
        Markup('{"spec":' + spec + ',"trials":' + index_text + ',"chunks":' + meta + "}"),
        len(texts),
        chunks=chunks,
        token=token,
    )


def _check_ours(folder: Path) -> None:
    if not folder.is_dir():
        raise DataError(
            f"{folder} exists and is not a folder; the report writes its trace viewer's files there, move it away"
        )
    strangers = [p.name for p in folder.iterdir() if not (p.is_file() and _CHUNK_NAME.match(p.name))]
    if strangers:
        raise DataError(
            f"{folder} holds files the report did not write ({', '.join(sorted(strangers)[:5])}); "
            "move them away or write the report to another folder"
        )


def check_viewer_dir(out_dir: Path) -> None:
    """Fail before anything is written if ``out_dir/viewer`` holds anything but side files."""
    folder = Path(out_dir) / VIEWER_DIR
    if folder.exists() or folder.is_symlink():
        _check_ours(folder)


def stage_viewer_dir(out_dir: Path, data: ViewerData) -> Path | None:
    """``data``'s side files written into a temporary folder beside ``out_dir/viewer`` (None: inline, no
    files), for :func:`vidaudit.core.fileio.replace_together` to put in place with the other report files."""
    if not data.chunked:
        return None
    tmp = stage_dir(out_dir / VIEWER_DIR)  # named after this process: a killed report's folder is swept next time
    try:
        for n, text in enumerate(data.chunks):
            with open(tmp / chunk_name(n), "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def write_viewer_dir(out_dir: Path, data: ViewerData) -> Path | None:
    """Replace ``out_dir/viewer`` with ``data``'s side files (none: remove a stale folder).

    The new files are written into a temporary folder first; only when all are on disk does the
    old folder leave and the new one take its name, so a failure changes nothing.
    """
    out_dir = Path(out_dir)
    folder = out_dir / VIEWER_DIR
    check_viewer_dir(out_dir)
    tmp = stage_viewer_dir(out_dir, data)
    replace_together([(tmp, folder)])
    return folder if tmp is not None else None
