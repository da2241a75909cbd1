"""A data root for ``vidaudit audit`` whose counting smoke folder is already made and certified, from the session's
rendered smoke set (``smoke_dir``, tests/conftest.py) instead of rendering the same 18 videos once more.

The counting part of a smoke audit renders exactly what ``smoke_dir`` holds (the same manifest and videos, byte for
byte; only dataset.json's ``created_at`` differs). A test whose subject is not that rendering seeds its data root with
a copy, certified by the audit's own ``ensure`` (vidaudit/audit/datasets.py); the audit then reuses the folder by its
content key, as it reuses a folder another audit made. tests/tools/audit/test_audit_datasets.py renders it through the
CLI.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def seed_counting_smoke(data_root: Path, smoke_dir: Path) -> Path:
    """The smoke audit's counting folder under ``data_root``: a copy of ``smoke_dir``, certified (its marker written)."""
    from vidaudit.tools.audit.datasets import ensure
    from vidaudit.tools.audit.session import plan_parts

    (p,) = plan_parts("smoke", data_root.parent / "unused", data_root=data_root, suites=["counting"])
    lines: list[str] = []
    ensure(
        p.data_dir,
        p.key,
        p.part.identity(p.suite.name),
        lambda: shutil.copytree(smoke_dir, p.data_dir),
        log=lines.append,
        label=p.label,
    )
    assert not any("reused" in x for x in lines), lines  # made here, not found
    return p.data_dir
