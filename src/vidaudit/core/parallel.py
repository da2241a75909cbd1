"""Process pools that are safe to start from a process that already runs threads.

Forking a process whose decoder or encoder threads hold locks can deadlock the child, so worker
pools start from a clean forkserver process instead (spawn where forkserver does not exist).
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.context import BaseContext


def pool_context() -> BaseContext:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
