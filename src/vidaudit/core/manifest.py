"""Datasets on disk: ``DIR/manifest.jsonl`` (one Sample per line) and ``DIR/dataset.json``.

Reading never trusts the bytes: any line that is not UTF-8, not JSON or not a sample is a DataError
naming its line. Writing a dataset over another (``guard_replace``) needs matching samples or ``force``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.fileio import write_json_atomic, write_jsonl_atomic
from vidaudit.core.types import Sample

MANIFEST = "manifest.jsonl"
DATASET = "dataset.json"


def dataset_dir(out: str | Path) -> Path:
    """``out`` as the directory a generator writes a dataset into; a ConfigError when it is a file."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; pass a directory for the dataset")
    return out


def write_manifest(root: str | Path, samples: Iterable[Sample]) -> Path:
    path = Path(root) / MANIFEST
    write_jsonl_atomic(path, (s.model_dump(mode="json") for s in samples))
    return path


def _read(manifest: Path) -> bytes:
    try:
        return manifest.read_bytes()
    except OSError as e:
        raise DataError(f"cannot read {manifest}: {e.strerror}") from None


def _row(manifest: Path, i: int, raw: bytes) -> Any:
    """The JSON value of line ``i``; a line that is not UTF-8 or not JSON is a DataError."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(
            f"{manifest}:{i}: not UTF-8 text ({e.reason} at byte {e.start}); the manifest is "
            "corrupt: regenerate it, or remove that line"
        ) from None
    try:
        return json.loads(line)
    except json.JSONDecodeError as e:
        raise DataError(f"{manifest}:{i}: not valid JSON ({e.msg}); fix or remove that line") from None
    except RecursionError:
        raise DataError(f"{manifest}:{i}: JSON nested too deeply to be a sample; fix or remove that line") from None


def _rows(manifest: Path) -> list[tuple[int, Any]]:
    """(line number, JSON value) of every non-blank line; a line that is not UTF-8 or not JSON is a DataError."""
    return [(i, _row(manifest, i, raw)) for i, raw in enumerate(_read(manifest).split(b"\n"), 1) if raw.strip()]


def _sample(manifest: Path, i: int, row: Any) -> Sample:
    if not isinstance(row, dict):
        raise DataError(f"{manifest}:{i}: a manifest line is a JSON object (one sample), got {type(row).__name__}")
    try:
        return Sample.model_validate(row)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(map(str, first["loc"])) or "the sample"
        raise DataError(f"{manifest}:{i}: not a valid sample: {first['msg']} at {where}") from None
    except RecursionError:
        raise DataError(f"{manifest}:{i}: a sample nested too deeply to read") from None


def load_samples(path: str | Path) -> list[Sample]:
    """Samples from a dataset dir or a manifest file; every line is validated (any bytes give a DataError).

    Lines are first validated from their bytes by pydantic's own JSON parser (``model_validate_json``: about twice
    as fast as ``json.loads`` then ``model_validate``, and the same samples: it reads JSON as ``json`` does, floats
    rounded alike, the last of a repeated key); if it refuses a line (a lone surrogate, which ``json`` reads, or
    any bad line), the whole file takes the ``json`` path (every line read as JSON, then validated), whose samples
    or first error stand."""
    p = Path(path)
    manifest = p / MANIFEST if p.is_dir() else p
    if not manifest.is_file():
        raise DataError(f"no manifest at {manifest}; generate one with `vidaudit generate counting --out DIR`")
    try:
        samples = [Sample.model_validate_json(raw) for raw in _read(manifest).split(b"\n") if raw.strip()]
    except (ValueError, RecursionError):  # a ValidationError is a ValueError: the json path, its result or error
        samples = [_sample(manifest, i, row) for i, row in _rows(manifest)]
    seen: set[str] = set()
    for s in samples:
        if s.sample_id in seen:
            raise DataError(f"{manifest}: sample_id {s.sample_id!r} appears more than once")
        seen.add(s.sample_id)
    return samples


def existing_samples(root: str | Path) -> list[Sample] | None:
    """The samples of ``root``'s manifest, or None when it has none (no file, or no sample in it)."""
    if not (Path(root) / MANIFEST).is_file():
        return None
    return load_samples(root) or None


def guard_replace(
    root: str | Path,
    new: Sequence[Sample],
    *,
    force: bool,
    key: Callable[[Sample], Any] = lambda s: s,
    command: str = "generate",
) -> None:
    """Refuse to replace the non-empty manifest in ``root`` with different samples, unless ``force``.

    A run depends on the samples of the dataset it was planned on (ids, traces, answers, videos), so
    regenerating into a dataset dir must write the same ``key`` for the same ``sample_id``s. Raises a
    ConfigError naming what would change (samples removed, added, changed), or when the existing manifest
    cannot be read.
    """
    if force:
        return
    root = Path(root)
    try:
        old = existing_samples(root)
    except DataError as e:
        raise ConfigError(
            f"{root} holds a manifest that cannot be read ({e}); {command} will not replace it "
            "without --force. Pass --force, or choose another --out"
        ) from None
    if old is None:
        return
    before = {s.sample_id: key(s) for s in old}
    after = {s.sample_id: key(s) for s in new}
    removed = [sid for sid in before if sid not in after]
    added = [sid for sid in after if sid not in before]
    changed = [sid for sid in after if sid in before and before[sid] != after[sid]]
    if not (removed or added or changed):
        return
    parts = []
    for what, ids in (
        ("removed", removed),
        ("added", added),
        ("changed (trace, answer, params or video settings)", changed),
    ):
        if ids:
            parts.append(f"{len(ids)} {what}, e.g. {', '.join(ids[:3])}")
    raise ConfigError(
        f"{root} already holds a dataset of {len(before)} samples, and this {command} would replace it "
        f"with different ones: {'; '.join(parts)}. Runs planned on it would no longer find their "
        "samples or videos. Write to a new --out, or pass --force to replace it"
    )


def write_dataset_info(root: str | Path, info: dict[str, Any]) -> Path:
    path = Path(root) / DATASET
    write_json_atomic(path, info)
    return path


def read_dataset_info(root: str | Path) -> dict[str, Any]:
    path = Path(root) / DATASET
    if not path.is_file():
        raise DataError(f"no {DATASET} in {root}; is this a directory written by `vidaudit generate`?")
    try:
        info = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}); regenerate the dataset") from None
    except (json.JSONDecodeError, RecursionError) as e:
        raise DataError(
            f"{path}: not valid JSON ({getattr(e, 'msg', 'nested too deeply')}); regenerate the dataset"
        ) from None
    if not isinstance(info, dict):
        raise DataError(f"{path}: dataset.json holds a JSON object, got {type(info).__name__}; regenerate the dataset")
    return info


def dataset_suite(root: str | Path, info: dict[str, Any] | None = None) -> str:
    """The suite a dataset belongs to: its ``dataset.json``'s ``suite`` (``info``, when already read), else the
    one suite its samples name. No shared layer assumes a suite; a dataset says which it is."""
    if info is None and (Path(root) / DATASET).is_file():
        info = read_dataset_info(root)
    if info and info.get("suite"):
        return str(info["suite"])
    names = sorted({s.suite for s in load_samples(root)})
    if len(names) != 1:
        raise DataError(
            f"{root} holds samples of {len(names)} suites ({', '.join(names) or 'none'}); a dataset "
            "holds one suite's samples: name the suite (e.g. vidaudit run SUITE --data DIR)"
        )
    return names[0]


def video_path(root: str | Path, sample: Sample) -> Path:
    return Path(root) / sample.video.path


def external_videos_allowed(root: str | Path) -> bool:
    """Whether the dataset's own ``dataset.json`` opts in to videos outside its directory
    (``"external_videos": true``: importers that leave the user's videos where they are write it)."""
    try:
        return bool(read_dataset_info(root).get("external_videos", False))
    except DataError:
        return False
