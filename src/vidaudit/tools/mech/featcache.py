"""Pooled features on disk, addressed by content, so re-training a probe never re-runs the model.

A clip's entry is ``DIR/<key>.npz`` holding one array per stage (``encoder``, ``projector``, ``llm3``, ...).
The key is the sha256 of: the model's fingerprint (``config.json``'s bytes and each weight file's name and
size, which is cheap even for 15 GB of weights), the exact request (video sha256, frame indices, prompt),
the stage list and ``POOLING_VERSION``. Entries are written to a temporary name and renamed, and are read
back one stage at a time (``stage_matrix``), so a probe holds one stage's features, never all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vidaudit.core.hashing import sha256_json

POOLING_VERSION = 1


def model_fingerprint(model_dir: str | Path) -> str:
    """sha256 of the config bytes and the weight files' names and sizes (a hub id: the name)."""
    p = Path(model_dir)
    if not p.is_dir():
        return sha256_json({"name": str(model_dir)})
    config = (p / "config.json").read_bytes() if (p / "config.json").is_file() else b""
    weights = sorted((f.name, f.stat().st_size) for f in p.iterdir() if f.suffix in (".safetensors", ".bin"))
    return sha256_json({"config": config.decode("utf-8", "replace"), "weights": weights})


def feature_key(
    fingerprint: str, video_sha256: str, frame_indices: Sequence[int], prompt: str, stages: Sequence[str]
) -> str:
    return sha256_json(
        {
            "model": fingerprint,
            "video": video_sha256,
            "frames": list(frame_indices),
            "prompt": prompt,
            "stages": list(stages),
            "pooling": POOLING_VERSION,
        }
    )


class FeatureCache:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0

    def path(self, key: str) -> Path:
        return self.root / f"{key}.npz"

    def has(self, key: str) -> bool:
        return self.path(key).is_file()

    def put(self, key: str, arrays: dict[str, np.ndarray]) -> None:
        final = self.path(key)
        tmp = final.with_name(f".{final.stem}.tmp.npz")
        # numpy's stub lets **kwds collide with allow_pickle: bool; the keys here are array names
        np.savez(tmp, **{k: np.asarray(v, np.float32) for k, v in arrays.items()})  # type: ignore[arg-type]
        tmp.replace(final)

    def stage_matrix(self, keys: Sequence[str], stage: str) -> np.ndarray:
        """(n clips, d) features of one stage, read one entry at a time."""
        rows = []
        for k in keys:
            with np.load(self.path(k)) as z:
                rows.append(np.asarray(z[stage]).reshape(-1))
        return np.stack(rows)
