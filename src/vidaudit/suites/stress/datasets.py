"""Where a probe's ``--source DIR`` clips come from: a plain folder, or one of the paper's datasets in its
published annotation format (``--set dataset=NAME``). Every loader returns ``sources.Clip``s (file, name,
label, labelled actions); the probe imports them (``sources.import_clips``). Formats and where each is
documented: docs/stress.md, "Sources: a folder of clips and the paper's datasets".
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from vidaudit.core.errors import ConfigError
from vidaudit.suites.stress.sources import Clip, folder_clips

#: dataset name -> loader of ``DIR``
LOADERS: dict[str, Callable[[Path], list[Clip]]] = {"folder": folder_clips}


def clips_from_source(folder: Path, dataset: str | None = None) -> list[Clip]:
    """The clips of ``--source DIR``: a folder of clips by default, else the named dataset's layout."""
    name = (dataset or "folder").strip().lower()
    if name not in LOADERS:
        raise ConfigError(f"unknown dataset {dataset!r} for --set dataset=; choose from {', '.join(LOADERS)}")
    if not Path(folder).is_dir():
        raise ConfigError(f"--source {folder} is not a folder; pass the folder of clips (or the dataset's root)")
    return LOADERS[name](Path(folder))
