"""``vidaudit generate stress --probe sycophancy_pairs --source VIDEOS --out GEN``: one generation sample per
(video x paper category), asking a model for a pair with the C.4 generator prompts.

``VIDEOS`` is a folder of video files (every file FFmpeg plays, whatever its suffix, sorted by name; anything
else is named with its reason, ``sources.list_clips``) or a dataset dir (its samples' videos, each once, their
paths confined to the dir). Videos are copied into ``GEN/videos/`` (sha256 kept). A video that does not decode
is left out with its reason (``SourceLog``: printed, and in ``dataset.json``), never the end of the folder.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from vidaudit.sdk import (
    MANIFEST,
    ConfigError,
    DataError,
    Sample,
    atomic_path,
    confined,
    dataset_dir,
    guard_replace,
    load_samples,
    probe,
    ref_from,
    sha256_file,
)
from vidaudit.suites.stress.probe import write_dataset
from vidaudit.suites.stress.sources import SourceLog, list_clips, reason_of
from vidaudit.suites.stress.sycophancy.categories import PAPER_CATEGORIES
from vidaudit.suites.stress.sycophancy.prompts import generator_prompt

PROBE = "sycophancy_pairs"


def _videos(source: Path, log: SourceLog) -> list[tuple[str, Path, str | None]]:
    """(key, path, known sha256) of each source video."""
    if (source / MANIFEST).is_file():
        seen: dict[str, tuple[str, Path, str | None]] = {}
        for s in load_samples(source):
            p = confined(source, s.video.path, what="video.path", source=f"{source / MANIFEST} sample {s.sample_id}")
            seen.setdefault(str(p), (Path(s.video.path).stem, p, s.video.sha256))
        return list(seen.values())
    files = list_clips(source, log, companions=())
    stems = [p.stem for p in files]  # the key; two files of one stem (clip.mp4, clip.mts) keep their suffix
    return [(p.stem if stems.count(p.stem) == 1 else p.name.replace(".", "-"), p, None) for p in files]


def generate_pairs_requests(
    out: Path,
    source: Path | None,
    categories: tuple[str, ...] = PAPER_CATEGORIES,
    *,
    force: bool = False,
    log: SourceLog | None = None,
) -> Path:
    if source is None:
        raise ConfigError(
            f"probe {PROBE} reads a user's videos: pass --source DIR (a folder of video files or a dataset dir)"
        )
    source = Path(source)
    if not source.is_dir():
        raise ConfigError(f"--source {source} is not a directory of videos")
    log = log if log is not None else SourceLog()
    vids = _videos(source, log)
    keys = [k for k, _, _ in vids]
    if len(set(keys)) != len(keys):
        raise DataError(f"--source {source}: two videos share a file name stem; rename them")
    out = dataset_dir(out)
    samples, copies = [], []
    used = 0
    for key, path, known in vids:
        sha = sha256_file(path)
        if known and sha != known:
            raise DataError(f"{path}: sha256 {sha[:12]} is not the manifest's {known[:12]}; the video changed")
        try:
            info = probe(path)
        except DataError as e:
            log.skip(path.name, reason_of(e, path))
            continue
        used += 1
        rel = f"videos/{key}{path.suffix.lower()}"
        copies.append((path, out / rel, sha))
        ref = ref_from(info, rel, sha)
        for cat in categories:
            samples.append(
                Sample(
                    sample_id=f"stress-{PROBE}-{key}-{cat}",
                    suite="stress",
                    params={"probe": PROBE, "category": cat, "video_key": key, "source_video": str(path)},
                    question=generator_prompt(cat),
                    answer=None,
                    video=ref,
                )
            )
    if not samples:
        raise DataError(f"--source {source}: no video decodes ({log.reasons()})")
    guard_replace(
        out,
        samples,
        force=force,
        key=lambda s: (s.params["category"], s.video.sha256),
        command=f"generate stress --probe {PROBE}",
    )
    (out / "videos").mkdir(parents=True, exist_ok=True)
    for src, dst, sha in copies:  # written under a temporary name and renamed
        if not dst.is_file() or sha256_file(dst) != sha:
            with atomic_path(dst, suffix=".part") as tmp:  # a killed copy is swept on the next run
                shutil.copyfile(src, tmp)
    return write_dataset(
        out,
        samples,
        PROBE,
        n_videos=used,
        categories=list(categories),
        source=str(source.resolve()),
        source_log=log,
    )
