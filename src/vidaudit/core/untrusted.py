"""Reading JSON a user did not write (a release, an annotation file, a model's answer) within stated caps.

``json.loads`` on such text can recurse until the interpreter gives up (a 100,000-deep array), hand back
strings no UTF-8 file can hold (a lone ``\\ud800`` escape), and a path can name a FIFO or an endless device
(``/dev/zero`` behind a symlink) that a plain ``read_text`` waits on or reads until memory runs out. Here a
file is read only when it is a regular file no larger than ``max_bytes``, and text is parsed into a value no
deeper than ``max_depth`` with only valid strings; anything else is a ``DataError`` naming the file and the
cap, which the CLI prints as one line.

Both ``json`` and PyYAML keep the last of two equal keys in one object without a word, so a hand-merged file
(a run config with ``conditions:`` twice, a labels file naming an item twice) would be read as half of what
it says. Every reader here refuses a key given twice with different values (the same value twice is one
value, read once); ``load_yaml`` does the same for the YAML a user writes.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from vidaudit.core.errors import DataError

#: a release file of the STRAND paper is a few KB; real annotation files reach tens of MB
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: no real annotation nests deeper than a handful of levels
DEFAULT_MAX_DEPTH = 64


def _shown(value: Any, limit: int = 40) -> str:
    """A value as a short printable excerpt for a one-line message."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def repeated_key(key: Any, first: Any, second: Any) -> str:
    """The message for a key given twice in one object with different values."""
    return (
        f"the key {_shown(key)} appears twice in one object, with different values ({_shown(first)} and "
        f"{_shown(second)}); keep the one you mean"
    )


def distinct_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json``'s ``object_pairs_hook``: the object, refused (``DataError``) when a key repeats with another value."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: dict[str, Any] = {}
        for k, v in pairs:
            if k in seen and seen[k] != v:
                raise DataError(repeated_key(k, seen[k], v))
            seen[k] = v
    return out


class _DistinctKeysLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types
    """PyYAML's safe loader, refusing a mapping that gives one key two different values."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        # keys merged in by ``<<`` may be overridden (that is what a merge is for); the mapping's own may not
        seen: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            value = self.construct_object(value_node, deep=True)
            try:
                repeated = key in seen and seen[key] != value
            except TypeError:  # an unhashable key: the base loader says so in its own words
                break
            if repeated:
                raise yaml.constructor.ConstructorError(
                    None, None, repeated_key(key, seen[key], value), key_node.start_mark
                )
            seen[key] = value
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def load_yaml(text: str) -> Any:
    """``yaml.safe_load(text)``, except that a key given twice with different values is a ``yaml.YAMLError``
    (PyYAML keeps the last one silently), so callers' existing ``except yaml.YAMLError`` names the file."""
    return yaml.load(text, Loader=_DistinctKeysLoader)  # noqa: S506 - a SafeLoader subclass


def _problem(value: Any, max_depth: int) -> str | None:
    """Why ``value`` breaks the caps (depth, lone surrogates), walked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            if any(0xD800 <= ord(c) <= 0xDFFF for c in v):
                return "holds a lone surrogate (\\ud800-\\udfff), which is not text"
            continue
        if isinstance(v, (dict, list)):
            if depth > max_depth:
                return f"nests deeper than {max_depth} levels"
            items = list(v.items()) if isinstance(v, dict) else [(None, x) for x in v]
            for k, x in items:
                if k is not None:
                    stack.append((k, depth + 1))
                stack.append((x, depth + 1))
    return None


def loads_untrusted(text: str | bytes, *, what: str, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """``json.loads(text)``, refused (``DataError``) when malformed, too deep, holding a lone surrogate or giving
    one key two values."""
    try:
        value = json.loads(text, object_pairs_hook=distinct_keys)
    except DataError as e:
        raise DataError(f"{what}: {e}") from None
    except RecursionError as e:
        raise DataError(f"{what} nests deeper than Python can parse (over {max_depth} levels allowed)") from e
    except (ValueError, UnicodeDecodeError) as e:
        raise DataError(f"{what} is not valid JSON ({e})") from e
    problem = _problem(value, max_depth)
    if problem is not None:
        raise DataError(f"{what} {problem}")
    return value


def read_regular_bytes(path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, what: str = "file") -> bytes:
    """The bytes of ``path`` when it is a regular file (symlinks followed) of at most ``max_bytes``.

    Opened without blocking, so that a FIFO never hangs the read, and checked on the open descriptor, so that
    the file cannot be swapped for a device between the check and the read.
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise DataError(f"{what} {p} cannot be opened ({e.strerror or e})") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DataError(f"{what} {p} is not a regular file (a FIFO, device or folder); point at the real file")
        if st.st_size > max_bytes:
            raise DataError(
                f"{what} {p} is {st.st_size:,} bytes, over the {max_bytes:,}-byte cap; is it the right file?"
            )
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise DataError(f"{what} {p} grew past the {max_bytes:,}-byte cap while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_json_file(
    path: str | Path, *, what: str = "file", max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH
) -> Any:
    """The JSON value of a regular UTF-8 file within the caps, else a ``DataError`` naming the file."""
    raw = read_regular_bytes(path, max_bytes=max_bytes, what=what)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(f"{what} {path} is not UTF-8 text ({e})") from e
    return loads_untrusted(text, what=f"{what} {path}", max_depth=max_depth)
