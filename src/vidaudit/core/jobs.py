"""The one job runner: per-video jobs run serially, on a local process pool, or on any executor a factory makes.

Every generator that renders has the same shape, and so has ``vidaudit perturb --batch``: plan every job first
(ids, parameters, seeds), run one job per video whose output depends only on its arguments, and let the driver
alone write what the dataset is made of (manifest, partial log, ``dataset.json``) from the jobs' results.
``pool`` is the ``pool(initializer=...)`` factory of ``--executor`` (``run.ray_pool.pool_factory``: None runs
locally), so one call covers the three ways to run:

- ``pool`` given: the jobs run on the executor it makes (Ray tasks for ``--executor ray``);
- else ``workers`` > 1 (None: the machine's cores): a local process pool started from a clean forkserver
  (``core.parallel.worker_pool``: its workers die with this process);
- else serially in this process (no pool started; ``initializer`` is not run, it is for worker processes).

The jobs must be top-level functions with picklable arguments and results. The results are the same
whichever way they ran; only the order they *complete* in differs, which ``iter_completed`` gives with each
job's index and ``run_jobs`` hides (results in submission order). This module imports no stage and no suite.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Executor, Future, as_completed
from typing import Any

from vidaudit.core.errors import ConfigError
from vidaudit.core.parallel import worker_pool

__all__ = ["PoolFactory", "iter_completed", "run_jobs", "worker_count"]

#: the factory of ``--executor``: ``pool(initializer=...)`` -> an Executor the jobs are submitted to
PoolFactory = Callable[..., Executor]


def worker_count(workers: int | None, n_jobs: int) -> int:
    """Processes a local pool gets: ``workers`` (None: the cores), never more than there are jobs, at least 1."""
    if workers is not None and workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    return max(1, min(workers or os.cpu_count() or 1, n_jobs or 1))


def _executor(
    n_jobs: int, workers: int | None, pool: PoolFactory | None, initializer: Callable[[], None] | None
) -> Executor | None:
    if pool is not None:
        return pool(initializer=initializer)
    n = worker_count(workers, n_jobs)
    if n == 1:
        return None
    return worker_pool(n, initializer)


def iter_completed(
    fn: Callable[..., Any],
    jobs: Sequence[tuple[Any, ...]],
    *,
    workers: int | None = None,
    pool: PoolFactory | None = None,
    initializer: Callable[[], None] | None = None,
    lost: Callable[[Exception], Any] | None = None,
) -> Generator[tuple[int, Any], None, None]:
    """``(index, fn(*jobs[index]))`` of every job as it completes (in order when run serially).

    A job that raised (or whose worker was lost: a process died, Ray gave up) gives ``lost(error)`` as its
    result where ``lost`` is given (a perturb batch records the job as failed and goes on); otherwise its
    error is raised here, in the driver, once the jobs already running have ended, and the jobs not yet
    started are cancelled. Stopping the iteration early (an interrupt, or ``close()`` on the iterator) cancels
    the jobs not yet started and returns at once: what the jobs already wrote is reused by the next run.
    """
    jobs = list(jobs)
    if not jobs:
        return
    ex = _executor(len(jobs), workers, pool, initializer)
    if ex is None:
        for i, args in enumerate(jobs):
            yield i, _result(fn, args, lost)
        return
    ended = "stopped"  # "done" once every job has ended, "failed" when a job's error is raised here
    try:
        futures: dict[Future[Any], int] = {ex.submit(fn, *args): i for i, args in enumerate(jobs)}
        for fut in as_completed(futures):
            try:
                res = fut.result()
            except Exception as e:
                if lost is None:
                    ended = "failed"
                    raise
                res = lost(e)
            yield futures[fut], res
        ended = "done"
    finally:
        ex.shutdown(wait=ended != "stopped", cancel_futures=ended != "done")


def _result(fn: Callable[..., Any], args: tuple[Any, ...], lost: Callable[[Exception], Any] | None) -> Any:
    if lost is None:
        return fn(*args)
    try:
        return fn(*args)
    except Exception as e:
        return lost(e)


def run_jobs(
    fn: Callable[..., Any],
    jobs: Sequence[tuple[Any, ...]],
    *,
    workers: int | None = None,
    pool: PoolFactory | None = None,
    initializer: Callable[[], None] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[Any]:
    """``[fn(*args) for args in jobs]``, run as ``iter_completed`` runs them; ``on_progress(done, total)``
    after each job ends (and once with 0 before the first)."""
    jobs = list(jobs)
    results: list[Any] = [None] * len(jobs)
    if on_progress:
        on_progress(0, len(jobs))
    for done, (i, res) in enumerate(
        iter_completed(fn, jobs, workers=workers, pool=pool, initializer=initializer), start=1
    ):
        results[i] = res
        if on_progress:
            on_progress(done, len(jobs))
    return results
