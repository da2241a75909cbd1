"""Joining a Ray cluster: the optional ``ray`` import, where and how replicas run, and ``--executor``.

What the Ray executor (``run/ray_executor.py``: model replicas) and the Ray task pool (``run/ray_pool.py``:
rendering and perturbing) share. ``ray`` is an optional extra, imported only when ``--executor ray`` asks
for it (``import_ray``: a missing extra is a one-line ``MissingExtraError`` naming the install).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vidaudit.core.errors import ConfigError
from vidaudit.core.registry import missing_extra


def import_ray() -> Any:
    """``ray``, or the one-line ``MissingExtraError`` naming ``pip install "vidaudit[ray]"``."""
    try:
        import ray
    except ImportError as e:
        raise missing_extra("--executor ray", "ray", getattr(e, "name", None) or "ray") from None
    return ray


@dataclass(frozen=True)
class RayOptions:
    """Where and how the replicas run; every field has a CLI option or a documented default."""

    #: a running cluster (``ray start --head`` prints it; ``auto`` finds the local one); None starts one here
    address: str | None = None
    #: actors per local model; each serves ``capabilities.concurrency`` calls at once
    replicas: int = 1
    #: CPUs each replica holds
    num_cpus: float = 1.0
    #: GPUs each replica holds; None: 1 for vLLM and for ``hf`` with a CUDA device, else 0
    num_gpus: float | None = None
    #: custom resources each replica holds (pin replicas to labelled nodes)
    resources: Mapping[str, float] = field(default_factory=dict)
    #: restarts of a killed replica before its calls fail with ``RayWorkerLost``
    max_restarts: int = 2
    #: passed to ``ray.init`` when this process connects (e.g. ``{"py_modules": [...]}``)
    runtime_env: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.replicas, int) or self.replicas < 1:
            raise ConfigError(f"--ray-replicas must be an integer >= 1, got {self.replicas!r}")
        if self.num_cpus < 0 or (self.num_gpus is not None and self.num_gpus < 0):
            raise ConfigError("Ray replicas cannot ask for a negative number of CPUs or GPUs")
        if not isinstance(self.max_restarts, int) or self.max_restarts < 0:
            raise ConfigError(f"max_restarts must be an integer >= 0, got {self.max_restarts!r}")


def connect(options: RayOptions) -> bool:
    """Join (or start) the cluster unless this process already has; True if this call connected."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"log_to_driver": False}
    if options.runtime_env:
        kwargs["runtime_env"] = dict(options.runtime_env)
    if options.address is None:  # a fresh cluster in this process, never one found lying around
        kwargs["include_dashboard"] = False
    try:
        ray.init(address=options.address or "local", **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = f"the Ray cluster at {options.address}" if options.address else "a local Ray cluster"
        raise ConfigError(
            f"cannot connect to {where}: {e}; start the head node with `ray start --head` and "
            "pass the address it prints as --ray-address"
        ) from None
    return True


EXECUTORS = ("local", "ray")


def wants_ray(executor: str, address: str | None = None) -> bool:
    """Every command's ``--executor local|ray [--ray-address ADDR]``, checked: True for ray, whose extra is then
    imported, so that a missing one is reported before anything is planned or rendered."""
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if executor == "local":
        if address is not None:
            raise ConfigError("--ray-address needs --executor ray")
        return False
    import_ray()
    return True
