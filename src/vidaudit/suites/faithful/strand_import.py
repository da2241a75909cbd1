"""``vidaudit import strand``: the validated release as faithful samples (one per target and per sub-question).

The release has no facts, probe types or domains: samples carry ``capabilities`` all False, so the
report prints the analyses that need them as "not available" instead of guessing. Items that fail
validation follow the policy (``strand_validate.POLICIES``); under ``keep-as-wrong`` a kept invalid
target carries ``params["invalid"]`` (the kinds) and is never right, and a sub-question whose
answer is invalid (or whose pairing with an answer is broken) likewise. With ``--videos`` each
video is hard-linked (else copied) into ``OUT/videos`` and probed (fps, frames, sha256); without it the manifest can
be scored with ``score-responses`` but not run (the samples have no video sha256). Every sample (and
``dataset.json``) says ``schema: open``: the object-centric framework extracts the real videos in the open
vocabulary without the spec saying so (``framework/vocabulary.py``).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidaudit.sdk import (
    DataError,
    Sample,
    VideoRef,
    __version__,
    confined,
    probe,
    ref_from,
    sha256_file,
    write_dataset_info,
    write_manifest,
)
from vidaudit.suites.faithful.samples import SUITE
from vidaudit.suites.faithful.strand_validate import (
    VALIDATION,
    ReleaseTarget,
    ValidationResult,
    validate_strand,
    write_validation,
)

CAPABILITIES = {"facts": False, "probe_types": False, "domains": False, "world_records": False}
SOURCE = "strand-release"
#: the release's videos are real (people, vehicles, animals): the framework extracts them in the open vocabulary
SCHEMA = "open"


@dataclass(frozen=True)
class ImportResult:
    validation: ValidationResult
    samples: list[Sample]
    manifest: Path
    validation_path: Path


def _link(src: Path, dst: Path, top: Path) -> None:
    """A hard link (no extra space) on one filesystem, else a copy: never a symlink, which ``vidaudit run``
    refuses as a path leading out of the dataset (the import would write a dataset that cannot run).

    ``dst`` lies inside ``top`` (``OUT/videos``): its folder is made there and checked to resolve there before
    an older entry of that name is replaced, so nothing outside the output is ever removed or written.
    """
    dst.parent.mkdir(parents=True, exist_ok=True)
    folder, real_top = os.path.realpath(dst.parent), os.path.realpath(top)
    if not Path(folder).is_relative_to(real_top):
        raise DataError(f"{dst.parent} resolves to {folder}, outside {top}; remove that symlink from the output")
    if dst.is_symlink() or dst.is_file():
        dst.unlink()  # an entry of OUT/videos (a symlink is removed itself, never its target)
    elif dst.exists():
        raise DataError(f"{dst} exists and is not a file; remove it, or import into a new --out")
    try:
        os.link(os.path.realpath(src), dst)
    except OSError:
        shutil.copy2(src, dst)


def _videos(kept: list[ReleaseTarget], videos: Path | None, out: Path) -> dict[str, VideoRef]:
    """The release's videos, each name confined to ``videos`` (where it is read) and ``OUT/videos`` (where it
    is linked): a name that is absolute, holds ``..`` or leads out through a symlink refuses the import before
    any file is touched."""
    names = sorted({t.video_name for t in kept})
    sources = {t.video_name: t.file for t in kept}
    for n in names:
        confined(out / "videos", n, what="video_name", source=f"release file {sources[n]}")
    if videos is None:
        return {
            n: VideoRef(path=f"videos/{n}", sha256=None, fps=0.0, width=0, height=0, n_frames=0, duration_s=0.0)
            for n in names
        }
    src = {n: confined(videos, n, what="video_name", source=f"release file {sources[n]}") for n in names}
    missing = [n for n in names if not src[n].is_file()]
    if missing:
        raise DataError(
            f"{len(missing)} video(s) named by the release are not in {videos}: {', '.join(missing[:10])}; "
            "add them, or import without --videos (scoring only)"
        )
    refs = {}
    for n in names:
        dst = out / "videos" / n
        _link(src[n], dst, out / "videos")
        info = probe(dst)
        refs[n] = ref_from(info, f"videos/{n}", sha256_file(dst))
    return refs


def samples_of(t: ReleaseTarget, video: VideoRef) -> list[Sample]:
    stem = Path(t.file).stem
    tid = f"t{t.index:03d}"
    tsid = f"{stem}-{tid}"
    base: dict[str, Any] = {
        "source": SOURCE,
        "file": t.file,
        "index": t.index,
        "video_id": stem,
        "video_name": t.video_name,
        "source_video_id": t.cluster,
        "domain": None,
        "capabilities": dict(CAPABILITIES),
        "schema": SCHEMA,
    }
    sub_ids = [f"{tsid}-s{j + 1}" for j in range(len(t.subs))]
    params = {
        **base,
        "role": "target",
        "target_id": tid,
        "target_sample_id": tsid,
        "probe_type": None,
        "polarity": None,
        "temporally_constrained": None,
        "sub_sample_ids": sub_ids,
        "subs": [
            {"sample_id": sid, "question": s.text, "answer": s.answer, "probe_type": None}
            for sid, s in zip(sub_ids, t.subs, strict=True)
        ],
    }
    if t.invalid:
        params["invalid"] = sorted(t.invalid)
    out = [Sample(sample_id=tsid, suite=SUITE, params=params, question=t.text, answer=t.answer, video=video)]
    for j, (sid, s) in enumerate(zip(sub_ids, t.subs, strict=True), 1):
        sp = {
            **base,
            "role": "sub",
            "target_id": tid,
            "target_sample_id": tsid,
            "probe_type": None,
            "sub_index": j,
            "target_question": t.text,
            "target_answer": t.answer,
        }
        if not s.valid:
            sp["invalid"] = ["non_yes_no" if s.text else "length_mismatch"]
        out.append(Sample(sample_id=sid, suite=SUITE, params=sp, question=s.text, answer=s.answer, video=video))
    return out


def import_strand(
    directory: str | Path,
    out: str | Path,
    *,
    videos: str | Path | None = None,
    on_invalid: str = "drop-target",
    cluster_by: str = "source",
) -> ImportResult:
    res = validate_strand(directory, on_invalid=on_invalid, cluster_by=cluster_by)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    refs = _videos(res.kept, Path(videos) if videos is not None else None, out)
    samples = [s for t in res.kept for s in samples_of(t, refs[t.video_name])]
    ids = [s.sample_id for s in samples]
    if len(set(ids)) != len(ids):
        raise DataError("two release files share a name stem; rename one")
    manifest = write_manifest(out, samples)
    vpath = write_validation(res, out / VALIDATION)
    write_dataset_info(
        out,
        {
            "suite": SUITE,
            "source": SOURCE,
            "vidaudit_version": __version__,
            "release_dir": str(directory),
            "videos": videos is not None,
            "policy": on_invalid,
            "cluster_by": cluster_by,
            "capabilities": CAPABILITIES,
            "schema": SCHEMA,
            "files": res.files,
            "targets_read": res.targets_read,
            "targets_kept": res.targets_kept,
            "counts": res.counts,
            "n_samples": len(samples),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )
    return ImportResult(res, samples, manifest, vpath)
