"""Stable content hashes and seeds.

Every random choice in vidaudit is drawn from ``numpy.random.default_rng`` seeded by a sha256 of
the thing's identity, never from Python's ``hash()`` (salted per process) or an unseeded draw
(``core.pcg64`` makes the first draws of such a generator in pure Python, where building one per draw is
the cost).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the byte form every id is hashed from."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(obj: Any) -> str:
    return sha256_text(canonical_json(obj))


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def seed_from(*parts: Any) -> int:
    """A 64-bit seed from the sha256 of the parts' canonical JSON (seed 0 is a seed like any other)."""
    digest = hashlib.sha256(canonical_json(list(parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def rng_from(*parts: Any) -> np.random.Generator:
    return np.random.default_rng(seed_from(*parts))
