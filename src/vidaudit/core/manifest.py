"""Datasets on disk: ``DIR/manifest.jsonl`` (one Sample per line) and ``DIR/dataset.json``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vidaudit.core.errors import DataError
from vidaudit.core.fileio import read_jsonl, write_json_atomic, write_jsonl_atomic
from vidaudit.core.types import Sample

MANIFEST = "manifest.jsonl"
DATASET = "dataset.json"


def write_manifest(root: str | Path, samples: Iterable[Sample]) -> Path:
    path = Path(root) / MANIFEST
    write_jsonl_atomic(path, (s.model_dump(mode="json") for s in samples))
    return path


def load_samples(path: str | Path) -> list[Sample]:
    """Samples from a dataset dir or a manifest file; every line is validated."""
    p = Path(path)
    manifest = p / MANIFEST if p.is_dir() else p
    if not manifest.is_file():
        raise DataError(f"no manifest at {manifest}; generate one with `vidaudit generate counting --out DIR`")
    samples = []
    for i, row in enumerate(read_jsonl(manifest), 1):
        try:
            samples.append(Sample.model_validate(row))
        except ValidationError as e:
            raise DataError(f"{manifest}:{i}: not a valid sample: {e.errors()[0]['msg']} at "
                            f"{'.'.join(map(str, e.errors()[0]['loc']))}") from e
    ids = [s.sample_id for s in samples]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise DataError(f"{manifest}: sample_id {dup!r} appears more than once")
    return samples


def write_dataset_info(root: str | Path, info: dict[str, Any]) -> Path:
    path = Path(root) / DATASET
    write_json_atomic(path, info)
    return path


def read_dataset_info(root: str | Path) -> dict[str, Any]:
    path = Path(root) / DATASET
    if not path.is_file():
        raise DataError(f"no {DATASET} in {root}; is this a directory written by `vidaudit generate`?")
    return json.loads(path.read_text(encoding="utf-8"))


def video_path(root: str | Path, sample: Sample) -> Path:
    return Path(root) / sample.video.path
