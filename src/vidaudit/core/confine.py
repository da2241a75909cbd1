"""Names read from files a user did not write stay inside the folder they belong to.

A release, an annotation file, a manifest or a folder listing names files by relative path. Such a name is
untrusted: an absolute path, a ``..`` component or a symlink would make a loader read, link, overwrite or
delete a file anywhere on the machine (a STRAND release naming ``/etc/passwd`` once made ``vidaudit import
strand`` delete it). Every importer and loader joins such names through :func:`confined`, which refuses
them with a ``DataError`` naming the file it came from, before anything is opened or written.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath

from vidaudit.core.errors import DataError

#: longer names are refused: no real dataset needs them, and a path past the OS limit fails late and vaguely
MAX_NAME_CHARS = 1024


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a relative path inside a folder (``None``: it can), from its text alone."""
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a string"
    if not name or not name.strip():
        return "is empty"
    if len(name) > MAX_NAME_CHARS:
        return f"is {len(name)} characters long (at most {MAX_NAME_CHARS})"
    if any(c in name for c in ("\x00", "\n", "\r")):
        return "holds a NUL or line break"
    if any(0xD800 <= ord(c) <= 0xDFFF for c in name):
        return "holds a lone surrogate (not valid text)"
    if name.startswith(("/", "\\")) or PureWindowsPath(name).drive or PurePosixPath(name).is_absolute():
        return "is absolute"
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        return "holds a '..' component"
    return None


def escape_problem(root: str | Path, name: object) -> str | None:
    """Why ``root / name`` is not a place inside ``root`` (None: it is), read from the text and then from the
    file system (symlinks followed): the one rule :func:`confined` and ``video.facts.resolve_video`` share."""
    problem = name_problem(name)
    if problem is not None:
        return problem
    assert isinstance(name, str)
    top = Path(root)
    try:
        real, real_top = Path(os.path.realpath(top / name)), Path(os.path.realpath(top))
    except (OSError, ValueError) as e:  # a symlink loop, or a name the OS cannot hold
        return f"cannot be resolved ({e})"
    if real == real_top or not real.is_relative_to(real_top):
        return f"leads outside the folder (to {real}; a symlink out of it counts as outside)"
    return None


def confined(root: str | Path, name: object, *, what: str = "name", source: str = "") -> Path:
    """``root / name``, refused unless it names a place inside ``root`` (symlinks followed, ``root`` included).

    ``what`` says what the name is (``video_name``), ``source`` where it was read (a file and line); both go
    into the error, with the fix. The path returned is ``root / name`` as written (not resolved), so a caller
    that links or copies writes where the user expects.
    """
    where = f"{source}: " if source else ""
    problem = escape_problem(root, name)
    if problem is not None:
        raise DataError(
            f"{where}{what} {name!r} {problem}; a {what} must be a plain relative path naming a file "
            f"inside {root} (fix or drop that entry)"
        )
    return Path(root) / str(name)
