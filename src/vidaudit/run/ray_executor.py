"""Ray for running trials: local models run as Ray actors, the driver keeps the loop and the store.

``vidaudit run ... --executor ray [--ray-address ADDR]`` runs the same executor as a local run
(``run.executor.run_trials``: retries, budgets, composites' stage calls and their cache, every store
and audit-log write) on the driver. Only the adapter call moves: each local model (``capabilities.local``:
``hf``, ``vllm``, the baselines and pixel observers) is built again inside ``replicas`` Ray actors,
and the executor is handed an adapter-shaped proxy (``RayReplicas``) whose ``generate`` /
``generate_batch`` send the request to the least busy replica. Network clients (OpenAI, Gemini,
Anthropic, and any ``@BASE_URL`` server) stay on the driver: their work is waiting on the network,
their rate limits are per key, and their keys stay in one process.

Perturbed conditions: the perturbed videos the plan needs are rendered as Ray tasks into
``RUN/perturbed/`` before any trial is dispatched (``RayDispatch.prerender``, the session's hook); the
driver checks each entry against the plan and builds the requests from them as a local run does.

Composites (``--judge``) stay on the driver too, so their stage calls are cached and stored there;
their plain sub-adapters (any attribute holding one) are swapped for the proxies of those adapters.

Why the results are a local run's: the plan (trial ids) is made on the driver before any actor
exists; each replica checks, before the first call, that the adapter it built has the driver's spec,
capabilities, request options and vidaudit version (a worker node with another install is refused).

Durability: a replica whose process dies is restarted by Ray (``max_restarts``) and its call in
flight is sent again (``max_task_retries``); nothing of that call was stored, so the run's store is
the one a local run writes. When Ray gives up (the restarts are spent, the node is gone) the call
fails with ``RayWorkerLost``, an unclassified error: the executor stores that attempt and stops the
run, and the calls in flight are stored as they end; resume never repeats a stored call. A killed
driver takes its actors with it (they are owned by the driver) and loses at most its calls in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, replace
from typing import Any

from vidaudit import __version__
from vidaudit.core.errors import ConfigError
from vidaudit.core.registry import get_suite
from vidaudit.core.types import ErrorKind, ModelSpec, Request, Response
from vidaudit.models.base import ModelCallError, is_composite, request_options, role_of
from vidaudit.models.factory import make_adapter
from vidaudit.run.perturbed import prerender
from vidaudit.run.ray_cluster import RayOptions, connect, import_ray, wants_ray
from vidaudit.run.ray_pool import RayTaskPool

#: providers that are network clients: they stay on the driver, whatever their ``capabilities.local``
NETWORK_PROVIDERS = frozenset({"openai", "gemini", "anthropic"})
#: providers whose replicas ask Ray for one GPU each by default
GPU_PROVIDERS = frozenset({"vllm"})


class RayWorkerLost(RuntimeError):
    """Ray could not bring a replica back (restarts spent, node gone): the run stops; resume it."""


def gpus_for(spec: ModelSpec, options: Mapping[str, Any] | None, asked: float | None) -> float:
    """The GPUs a replica of ``spec`` asks for: ``asked`` if given, else 1 for GPU models, else 0."""
    if asked is not None:
        return float(asked)
    if spec.provider in GPU_PROVIDERS:
        return 1.0
    device = str((options or {}).get("device", "cpu"))
    return 1.0 if spec.provider == "hf" and device.startswith("cuda") else 0.0


def identity(adapter: Any) -> dict[str, Any]:
    """What must match between the driver's adapter and a replica's for their trials to be the same."""
    return {
        "vidaudit": __version__,
        "spec": adapter.spec.model_dump(mode="json"),
        "capabilities": asdict(adapter.capabilities),
        "request_options": request_options(adapter),
        "role": role_of(adapter),
    }


def runs_remotely(adapter: Any) -> bool:
    """Plain local models go to Ray; network clients (an API, or a server at ``@BASE_URL`` even when
    ``capabilities.local`` says it costs nothing) and composites stay on the driver."""
    spec = adapter.spec
    return (
        not is_composite(adapter)
        and bool(getattr(adapter.capabilities, "local", False))
        and spec.provider not in NETWORK_PROVIDERS
        and not spec.base_url
    )


# --------------------------------------------------------------------------- failures across processes


@dataclass(frozen=True)
class _Failure:
    """A replica's exception, carried as data (``ModelCallError``'s keyword ``__init__`` does not unpickle)."""

    kind: str | None
    message: str
    type_name: str
    status_code: int | None = None
    retry_after: float | None = None
    response: Response | None = None

    @classmethod
    def of(cls, e: BaseException) -> _Failure:
        if isinstance(e, ModelCallError):
            return cls(e.kind.value, e.message, type(e).__name__, e.status_code, e.retry_after, e.response)
        return cls(None, str(e), type(e).__name__)

    def error(self) -> BaseException:
        if self.kind is not None:
            return ModelCallError(
                ErrorKind(self.kind),
                self.message,
                status_code=self.status_code,
                retry_after=self.retry_after,
                response=self.response,
            )
        return RemoteAdapterError(f"{self.type_name}: {self.message}")


class RemoteAdapterError(RuntimeError):
    """An adapter on a replica raised something other than ``ModelCallError`` (a bug, as locally)."""


# --------------------------------------------------------------------------- the replica actor


class Replica:
    """One replica of a local model, built in its Ray worker from the same spec and options as the driver's."""

    def __init__(
        self,
        spec: ModelSpec,
        suite: str | None,
        samples: Mapping[str, Any] | None,
        options: Mapping[str, Any] | None,
        expected: dict[str, Any],
    ) -> None:
        self.problem: str | None = None
        self.adapter: Any = None
        try:
            self.adapter = make_adapter(
                spec, samples=samples, suite=get_suite(suite) if suite else None, options=options
            )
            got = identity(self.adapter)
            if got != expected:
                diff = sorted(k for k in expected if got.get(k) != expected[k])
                self.problem = (
                    f"the replica of {spec.label} differs from the driver's in {', '.join(diff)} "
                    f"(driver {[expected[k] for k in diff]}, worker {[got.get(k) for k in diff]}); "
                    "install the same vidaudit and model files on every node"
                )
        except Exception as e:  # reported by check() on the driver, before any trial
            self.problem = f"building {spec.label} on a Ray worker failed: {type(e).__name__}: {e}"

    def check(self) -> tuple[str | None, int, str]:
        """(problem or None, worker pid, node id)."""
        import ray

        return self.problem, os.getpid(), ray.get_runtime_context().get_node_id()

    async def generate(self, request: Request) -> tuple[bool, Any]:
        try:
            return True, await self.adapter.generate(request)
        except Exception as e:
            return False, _Failure.of(e)

    async def generate_batch(self, requests: list[Request]) -> tuple[bool, Any]:
        try:
            return True, list(await self.adapter.generate_batch(requests))
        except Exception as e:
            return False, _Failure.of(e)

    async def aclose(self) -> None:
        await self.adapter.aclose()


class RayReplicas:
    """Adapter-shaped proxy of one local model: the executor sees the driver's adapter, calls go to replicas.

    ``capabilities.concurrency`` is the driver adapter's times the number of replicas, so the executor
    keeps every replica busy; everything that enters a trial id (spec, request options, the rest of the
    capabilities) is the driver adapter's own.
    """

    def __init__(self, local: Any, handles: list[Any], placements: list[tuple[int, str]]) -> None:
        self.local = local
        self.spec: ModelSpec = local.spec
        self.capabilities = replace(local.capabilities, concurrency=local.capabilities.concurrency * len(handles))
        self.role = role_of(local)
        self.handles = handles
        #: (pid, node id) of each replica when it was checked
        self.placements = placements
        self._busy = [0] * len(handles)

    def request_options(self) -> dict[str, object]:
        return request_options(self.local)

    async def generate(self, request: Request) -> Response:
        response: Response = await self._call("generate", request)
        return response

    async def generate_batch(self, requests: list[Request]) -> list[Response]:
        responses: list[Response] = await self._call("generate_batch", list(requests))
        return responses

    async def _call(self, method: str, arg: Any) -> Any:
        import ray

        i = min(range(len(self.handles)), key=self._busy.__getitem__)
        self._busy[i] += 1
        try:
            ok, value = await getattr(self.handles[i], method).remote(arg)
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as e:
            raise RayWorkerLost(
                f"replica {i} of {self.spec.label} is gone and Ray could not restart it "
                f"({type(e).__name__}); the call was not stored: bring the workers back and "
                "resume with the same command"
            ) from None
        finally:
            self._busy[i] -= 1
        if not ok:
            raise value.error()
        return value

    async def aclose(self) -> None:
        """Close each replica's adapter (the driver's own adapter is closed by the session)."""
        import ray

        for h in self.handles:
            with contextlib.suppress(ray.exceptions.RayError):  # a replica that is gone has nothing left to close
                await h.aclose.remote()


# --------------------------------------------------------------------------- connecting and dispatching


class RayDispatch:
    """The session's ``dispatch`` hook for Ray: replicas up before the run, torn down after it.

    ``placements`` maps each remote model label to its replicas' (pid, node id), for audit and tests.
    """

    def __init__(self, options: RayOptions | None = None) -> None:
        self.options = options or RayOptions()
        self.placements: dict[str, list[tuple[int, str]]] = {}
        self.proxies: dict[str, RayReplicas] = {}
        #: the reports of the Ray tasks that rendered the run's perturbed videos (``prerender``)
        self.prerendered: list[dict[str, Any]] = []

    def prerender(self, planned: list[Any], builder: Any) -> None:
        """The session's hook, inside the dispatch: the plan's perturbed videos as Ray tasks into
        ``RUN/perturbed/`` (on a real cluster the run dir is on shared storage), checked before any trial."""
        if builder.perturb_cache is None or not any(p.perturbed is not None for p in planned):
            return
        pool = RayTaskPool(self.options.address)  # joins the connected cluster and leaves it up
        try:
            self.prerendered = prerender(planned, builder.data_dir, builder.perturb_cache, pool, builder.pixel_free)
        finally:
            pool.shutdown()

    def __call__(
        self,
        adapters: dict[str, Any],
        *,
        suite: str | None,
        samples: Mapping[str, Any],
        model_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Any:
        return self._session(adapters, suite=suite, samples=samples, model_options=model_options or {})

    @asynccontextmanager
    async def _session(
        self,
        adapters: dict[str, Any],
        *,
        suite: str | None,
        samples: Mapping[str, Any],
        model_options: Mapping[str, Mapping[str, Any]],
    ) -> AsyncIterator[dict[str, Any]]:
        ray = import_ray()
        connected = connect(self.options)
        proxies: dict[int, RayReplicas] = {}  # one proxy per adapter object (a judge shared by models)
        try:
            for a in _plain_adapters(adapters):
                if runs_remotely(a) and id(a) not in proxies:
                    proxies[id(a)] = await self._start(ray, a, suite, samples, model_options.get(a.spec.provider))
            self.proxies = {p.spec.label: p for p in proxies.values()}
            self.placements = {p.spec.label: p.placements for p in proxies.values()}
            yield {label: _swap(a, proxies) for label, a in adapters.items()}
        finally:
            for p in proxies.values():
                await p.aclose()
                for h in p.handles:
                    ray.kill(h, no_restart=True)
            if connected:
                ray.shutdown()

    async def _start(
        self, ray: Any, adapter: Any, suite: str | None, samples: Mapping[str, Any], options: Mapping[str, Any] | None
    ) -> RayReplicas:
        o = self.options
        cls = ray.remote(Replica).options(
            num_cpus=o.num_cpus,
            num_gpus=gpus_for(adapter.spec, options, o.num_gpus),
            resources=dict(o.resources) or None,
            max_restarts=o.max_restarts,
            max_task_retries=o.max_restarts,
            max_concurrency=max(1, adapter.capabilities.concurrency),
        )
        needs = getattr(type(adapter), "needs_samples", False)
        expected = identity(adapter)
        handles = [
            cls.remote(adapter.spec, suite, dict(samples) if needs else None, dict(options or {}), expected)
            for _ in range(o.replicas)
        ]
        checks = await asyncio.gather(*(h.check.remote() for h in handles))
        problems = [p for p, _, _ in checks if p is not None]
        if problems:
            for h in handles:
                ray.kill(h, no_restart=True)
            raise ConfigError(problems[0])
        return RayReplicas(adapter, handles, [(pid, node) for _, pid, node in checks])


def _plain_adapters(adapters: Mapping[str, Any]) -> list[Any]:
    """Every plain adapter of the run: the models, and the plain sub-adapters composites hold as attributes."""
    out: list[Any] = []
    for a in adapters.values():
        if is_composite(a):
            out.extend(v for v in vars(a).values() if _is_plain_adapter(v))
        else:
            out.append(a)
    return out


def _is_plain_adapter(v: Any) -> bool:
    return (
        not is_composite(v)
        and callable(getattr(v, "generate", None))
        and hasattr(v, "spec")
        and hasattr(v, "capabilities")
    )


def _swap(adapter: Any, proxies: Mapping[int, RayReplicas]) -> Any:
    """The adapter the executor calls: its proxy, or a shallow copy of a composite with proxied sub-adapters."""
    if id(adapter) in proxies:
        return proxies[id(adapter)]
    if not is_composite(adapter):
        return adapter
    swapped = {k: proxies[id(v)] for k, v in vars(adapter).items() if _is_plain_adapter(v) and id(v) in proxies}
    if not swapped:
        return adapter
    twin = copy.copy(adapter)
    for k, v in swapped.items():
        setattr(twin, k, v)
    return twin


def dispatch_for(executor: str, address: str | None = None, replicas: int = 1) -> RayDispatch | None:
    """The CLI's ``--executor local|ray [--ray-address ADDR] [--ray-replicas N]``: None runs locally."""
    if not wants_ray(executor, address):
        return None
    return RayDispatch(RayOptions(address=address, replicas=replicas))
