"""``RUN/samples.jsonl``: the samples a run's trials were planned on, as they were.

A trial id covers what the model receives (video, prompt, frames), not the ground truth it is scored
against (answer, trace). The snapshot closes that gap: scoring compares every stored trial's sample
with the dataset as it is now and refuses, naming them, when a video, question, answer, trace or
parameter changed (``--allow-changed`` scores the current data anyway and says so in the report).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from vidaudit.core.errors import ConfigError
from vidaudit.core.fileio import read_jsonl, write_jsonl_atomic
from vidaudit.core.hashing import sha256_json
from vidaudit.core.types import Sample

SNAPSHOT = "samples.jsonl"


def sample_digest(sample: Sample) -> str:
    """The content of a sample that scoring depends on (everything but where its video file lies)."""
    data = sample.model_dump(mode="json")
    data["video"].pop("path", None)
    return sha256_json(data)


def read_snapshot(run_dir: str | Path) -> dict[str, Sample] | None:
    path = Path(run_dir) / SNAPSHOT
    if not path.is_file():
        return None
    return {s.sample_id: s for s in (Sample.model_validate(r) for r in read_jsonl(path))}


def changed_samples(before: Mapping[str, Sample], now: Mapping[str, Sample], ids: Iterable[str]) -> list[str]:
    """Sample ids (of ``ids``) whose content differs between the snapshot and the dataset now."""
    return sorted(i for i in set(ids) if i in before and i in now and sample_digest(before[i]) != sample_digest(now[i]))


def update_snapshot(run_dir: str | Path, samples: Iterable[Sample]) -> None:
    """Add this session's samples; a sample that changed since an earlier session is refused."""
    samples = list(samples)
    old = read_snapshot(run_dir) or {}
    now = {s.sample_id: s for s in samples}
    changed = changed_samples(old, now, now)
    if changed:
        raise ConfigError(
            f"{len(changed)} sample(s) changed since this run dir was started (e.g. "
            f"{', '.join(changed[:5])}): the dataset was regenerated or edited. Use a new run dir "
            "for the new data, or point --data at the data this run was made with"
        )
    merged = {**old, **now}
    if merged != old:
        write_jsonl_atomic(Path(run_dir) / SNAPSHOT, (s.model_dump(mode="json") for s in merged.values()))
