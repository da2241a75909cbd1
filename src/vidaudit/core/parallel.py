"""Process pools that are safe to start from a process that already runs threads, and die with it.

Forking a process whose decoder or encoder threads hold locks can deadlock the child, so worker
pools start from a clean forkserver process instead (spawn where forkserver does not exist).

A worker outlives a driver killed with SIGKILL unless told otherwise: its parent is the forkserver, not
the driver, and the jobs already queued keep rendering into the dataset, then the worker waits forever.
So every pool made here runs :func:`die_with` in each worker first: a daemon thread that waits on the
driver (a pidfd on Linux, else a poll) and kills the worker the moment the driver is gone.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import select
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.context import BaseContext

from vidaudit.core.fileio import pid_alive

#: how often a worker looks whether its driver still runs, where a pidfd cannot wait on it
POLL_S = 0.5


def pool_context() -> BaseContext:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def die_with(driver: int) -> None:
    """End this process (SIGKILL: no job half-finished into a dataset after its driver is gone) when ``driver`` ends.

    Waits on a pidfd where Linux has one (no polling), else checks every :data:`POLL_S` seconds."""
    try:
        fd: int | None = os.pidfd_open(driver)
    except (AttributeError, OSError):  # no pidfd (not Linux 5.3+), or the driver is already gone
        fd = None
        if not pid_alive(driver):
            os.kill(os.getpid(), signal.SIGKILL)

    def wait() -> None:
        if fd is not None:
            select.select([fd], [], [])  # readable once the driver has exited
        else:
            while pid_alive(driver) and os.getppid() != 1:
                time.sleep(POLL_S)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=wait, name="vidaudit-die-with-driver", daemon=True).start()


def _start_worker(driver: int, initializer: Callable[[], None] | None) -> None:
    die_with(driver)
    if initializer is not None:
        initializer()


def worker_pool(n: int, initializer: Callable[[], None] | None = None) -> ProcessPoolExecutor:
    """A local pool of ``n`` processes (:func:`pool_context`) whose workers die with this process."""
    return ProcessPoolExecutor(
        n, mp_context=pool_context(), initializer=functools.partial(_start_worker, os.getpid(), initializer)
    )
