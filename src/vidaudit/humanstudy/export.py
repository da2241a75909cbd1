"""``vidaudit human-study export``: the study page, its media, and the manifest that keeps the answers.

Videos are embedded in the page as data URIs when all the chosen clips together are at most
``EMBED_MAX_BYTES`` (16 MiB: a page that size still opens quickly from disk); above that they are copied
into a folder beside the page (``STEM_media/SHA256.mp4``) and referenced relatively, so the page still
works from ``file://`` as long as the folder travels with it. ``media`` forces either.

Written in this order, each file atomically: the media folder, the manifest (``STEM.json`` beside the
page, and ``RUN/human_studies/STUDY.json`` when exported from a run), then the page. Everything is built
and checked before the first file is written.
"""

from __future__ import annotations

import base64
import mimetypes
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vidaudit import __version__
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.fileio import atomic_path, write_json_atomic, write_text_atomic
from vidaudit.core.hashing import sha256_file
from vidaudit.humanstudy.items import StudyItem, has_statement, performance_item, quality_item, study_id
from vidaudit.humanstudy.page import render_page
from vidaudit.humanstudy.paths import STUDIES_DIR
from vidaudit.humanstudy.select import select
from vidaudit.humanstudy.source import StudySource, open_source

EMBED_MAX_BYTES = 16 << 20
KINDS = ("performance", "quality")
MEDIA = ("auto", "embed", "folder")
MANIFEST_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Exported:
    page: Path
    manifest: Path
    study: str
    n_items: int
    media: str
    run_copy: Path | None = None


def build_items(src: StudySource, kind: str) -> list[StudyItem]:
    """One item per sample: the model's question (performance) or the statement's (quality)."""
    if kind not in KINDS:
        raise ConfigError(f"--kind must be performance or quality, got {kind!r}")
    if kind == "quality":
        chosen = [s for s in src.samples if has_statement(s)]
        if not chosen:
            raise DataError(f"{src.data_dir}: no sample carries a statement (params.statement), so there is no "
                            "data-quality question to ask; use --kind performance")
        return [quality_item(s) for s in chosen]
    out = []
    for s in src.samples:
        prompt = src.suite.render_prompt(s, src.condition)
        out.append(performance_item(s, prompt.system, prompt.text))
    return out


def _video_files(src: StudySource, items: list[StudyItem]) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for it in items:
        path = src.data_dir / it.video_path
        if not path.is_file():
            raise DataError(f"the video of sample {it.sample_id} is missing: {path}; regenerate the dataset")
        files[it.item_id] = path
    return files


def export_study(source: str | Path, out: str | Path, *, sample: int | None = None, seed: int = 0,
                 kind: str = "performance", media: str = "auto") -> Exported:
    """Write the study page ``out``, its manifest beside it and (for a run) a copy into the run."""
    if media not in MEDIA:
        raise ConfigError(f"--media must be one of {', '.join(MEDIA)}, got {media!r}")
    out = Path(out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ConfigError(f"--out names the study page, an .html file; got {out}")
    src = open_source(source)
    items = select(build_items(src, kind), sample, seed)
    if not items:
        raise DataError(f"{source}: no samples to put in a study")
    files = _video_files(src, items)
    total = sum(p.stat().st_size for p in set(files.values()))
    mode = ("embed" if total <= EMBED_MAX_BYTES else "folder") if media == "auto" else media
    sid = study_id(kind, src.suite.name, items)
    srcs: dict[str, str] = {}
    copies: dict[Path, Path] = {}
    media_dir = out.parent / f"{out.stem}_media"
    for it in items:
        path = files[it.item_id]
        mime = mimetypes.guess_type(path.name)[0] or "video/mp4"
        if mode == "embed":
            srcs[it.item_id] = f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")
        else:
            name = f"{it.video_sha256 or sha256_file(path)}{path.suffix}"
            copies[media_dir / name] = path
            srcs[it.item_id] = f"{media_dir.name}/{name}"
    html = render_page(sid, kind, src.suite.name, items, srcs)
    manifest = _manifest(sid, kind, src, items, sample, seed, mode)
    for dest, path in copies.items():
        with atomic_path(dest) as tmp:
            shutil.copyfile(path, tmp)
    man_path = out.with_suffix(".json")
    write_json_atomic(man_path, manifest)
    run_copy = None
    if src.run_dir is not None:
        run_copy = src.run_dir / STUDIES_DIR / f"{sid}.json"
        write_json_atomic(run_copy, manifest)
    write_text_atomic(out, html)
    return Exported(page=out, manifest=man_path, study=sid, n_items=len(items), media=mode, run_copy=run_copy)


def _manifest(sid: str, kind: str, src: StudySource, items: list[StudyItem], sample: int | None, seed: int,
              mode: str) -> dict[str, Any]:
    return {"schema_version": MANIFEST_SCHEMA_VERSION, "study": sid, "kind": kind, "suite": src.suite.name,
            "vidaudit_version": __version__, "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "source": {"data_dir": str(src.data_dir), "run_dir": str(src.run_dir) if src.run_dir else None,
                       "prompt": src.condition.prompt},
            "selection": {"sample": sample, "seed": seed, "rule": "stratified over (probe, condition), "
                                                                  "equal allocation, seeded"},
            "media": mode, "items": [it.model_dump(mode="json") for it in items]}
