"""Ray tasks behind the ``concurrent.futures.Executor`` interface, for rendering and perturbing.

A generator that renders with ``pool.submit(job, ...)`` and ``as_completed`` runs unchanged on a Ray
cluster: each job is a Ray task, its result comes back to the driver, and the driver alone writes the
manifest and the partial log (so a killed worker loses only the jobs in flight, and ``--skip-existing``
resumes). The jobs write their videos under the output directory, which on a real cluster must be on
storage every node mounts at the same path (docs/scale-out.md). Results are identical to a local run:
the same job, the same settings, the same encoder options.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from vidaudit.run.ray_cluster import RayOptions, connect, import_ray, wants_ray


def _run_with_init(init: Callable[[], None] | None, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    if init is not None:
        init()
    return fn(*args, **kwargs)


class RayTaskPool(Executor):
    """``submit(fn, *args)`` as a Ray task (``num_cpus`` each); ``initializer`` runs in the task first."""

    def __init__(
        self, address: str | None = None, *, num_cpus: float = 1.0, initializer: Callable[[], None] | None = None
    ) -> None:
        self._ray = import_ray()
        self._connected = connect(RayOptions(address=address))
        self._task = self._ray.remote(num_cpus=num_cpus, max_retries=2)(_run_with_init)
        self._init = initializer

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = self._task.remote(self._init, fn, *args, **kwargs).future()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self._connected and self._ray.is_initialized():
            self._ray.shutdown()
        self._connected = False


def pool_factory(executor: str, address: str | None = None) -> Callable[..., Executor] | None:
    """The ``--executor local|ray [--ray-address ADDR]`` of a generate command: None renders locally."""
    if not wants_ray(executor, address):
        return None

    def make(initializer: Callable[[], None] | None = None) -> Executor:
        return RayTaskPool(address, initializer=initializer)

    return make
