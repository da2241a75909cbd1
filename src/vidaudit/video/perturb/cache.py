"""The content cache: a perturbed video is addressed by what it is made of, never by a path.

``cached(source, source_sha256, spec, seed, cache_dir)`` returns ``CACHE/ab/<key>.mp4`` and ``.json`` where
``key = cache_key(...)`` is the sha256 of (source sha256, canonical spec JSON with defaults filled in,
seed, op version, engine version, the x264 settings, and the second video's sha256 for ops that take
one). An entry is used when its JSON parses, records the same key, and its mp4 has the recorded size
(``verify=True`` also re-hashes the mp4). Anything else is rebuilt. Two processes that build the same
entry at once both write complete files under temporary names; the last rename wins and both are
identical (x264 runs single-threaded, so the bytes do not depend on the machine).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vidaudit.core.errors import DataError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.types import PerturbationSpec
from vidaudit.video.perturb.engine import PerturbResult, _unlink, apply, cache_key


def cache_paths(cache_dir: str | Path, key: str) -> tuple[Path, Path]:
    d = Path(cache_dir) / key[:2]
    return d / f"{key}.mp4", d / f"{key}.json"


def lookup(cache_dir: str | Path, key: str, *, verify: bool = False) -> PerturbResult | None:
    """The cached entry for ``key`` if it is complete and consistent, else None."""
    mp4, js = cache_paths(cache_dir, key)
    return complete_entry(mp4, js, key, verify=verify)


def complete_entry(mp4: Path, js: Path, key: str, *, verify: bool = False) -> PerturbResult | None:
    """The perturbed video ``mp4`` described by ``js`` when both exist, ``js`` records content key ``key``
    and ``mp4`` has the size it records (with ``verify``, its sha256 too), else None."""
    if not js.is_file() or not mp4.is_file():
        return None
    try:
        res = PerturbResult.load(js)
    except DataError:
        return None
    if res.meta.cache_key != key or mp4.stat().st_size != res.meta.size_bytes:
        return None
    if verify and sha256_file(mp4) != res.meta.sha256:
        return None
    return res


def cached(
    source: str | Path,
    source_sha256: str,
    spec: PerturbationSpec | dict[str, Any],
    seed: int,
    cache_dir: str | Path,
    *,
    second_source: str | Path | None = None,
    second_sha256: str | None = None,
    verify: bool = False,
    source_stream: int | None = None,
) -> PerturbResult:
    """The perturbed video for (source content, spec, seed), built once into ``cache_dir``.

    ``source_sha256`` is the caller's record of the source's content (e.g. ``Sample.video.sha256``); on a
    miss it is checked against the file's bytes, and a mismatch is a ``DataError`` (nothing is cached)."""
    if second_source is not None and second_sha256 is None:
        second_sha256 = sha256_file(second_source)
    key = cache_key(source_sha256, spec, seed, second_sha256, source_stream)
    hit = lookup(cache_dir, key, verify=verify)
    if hit is not None:
        return hit
    mp4, js = cache_paths(cache_dir, key)
    actual = sha256_file(source)
    if actual != source_sha256:
        raise DataError(
            f"{source}: its sha256 is {actual[:12]}..., not the {source_sha256[:12]}... it was "
            "recorded with; the video changed since it was listed - regenerate it or fix the manifest"
        )
    res = apply(
        source,
        spec,
        mp4,
        seed=seed,
        second_source=second_source,
        source_sha256=actual,
        second_sha256=second_sha256,
        source_stream=source_stream,
    )
    if res.meta.cache_key != key:  # pragma: no cover - apply and cache_key share one definition
        _unlink(mp4)
        _unlink(js)
        raise AssertionError("cache key mismatch")
    return res


def cached_chain(
    source: str | Path,
    source_sha256: str,
    specs: Sequence[PerturbationSpec],
    seed: int,
    cache_dir: str | Path,
    source_stream: int | None = None,
) -> list[PerturbResult]:
    """A condition's ``perturbations``, applied in order: each step's output (by its sha256) is the next
    step's source, so every intermediate video is cached too. Every step gets the same ``seed`` (each op
    draws from its own stream). Ops that need a second video cannot be chained this way. ``source_stream``:
    the source's video stream (the outputs have one)."""
    out: list[PerturbResult] = []
    path, sha, stream = Path(source), source_sha256, source_stream
    for spec in specs:
        res = cached(path, sha, spec, seed, cache_dir, source_stream=stream)
        out.append(res)
        path, sha, stream = res.video, res.sha256, None
    return out
