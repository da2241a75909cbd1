"""Shared fixtures: a rendered smoke set (once per session), the CLI runner, and a local Ray cluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _hypothesis_profiles() -> None:
    """One Hypothesis profile for the whole suite: no per-example deadline (a loaded 2-core machine runs
    an example 10x slower than an idle one, and Hypothesis' default 200 ms deadline then fails a property
    that holds), and no too_slow health check for the same reason. A test's own ``@settings`` still wins
    for what it sets (``max_examples``). ``HYPOTHESIS_PROFILE=dev`` keeps the defaults when you want the
    deadline as a speed alarm."""
    from hypothesis import HealthCheck, settings

    settings.register_profile("vidaudit", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("dev", settings.get_profile("default"))
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "vidaudit"))


_hypothesis_profiles()


#: names a failing or timed-out test the moment it fails (tests/failnames.py)
pytest_plugins = ["failnames"]


@pytest.fixture(scope="session")
def smoke_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The counting smoke preset, rendered and verified by the generator itself."""
    from vidaudit.suites.counting.generate import generate
    from vidaudit.suites.counting.grid import preset

    out = tmp_path_factory.mktemp("smoke")
    generate(preset("smoke"), out, workers=2, verify=True)
    return out


SRC = str(Path(__file__).resolve().parents[1] / "src")
SITE = str(Path(__file__).resolve().parent / "plugin_site")  # the toy suite, found by every Ray worker too


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory):
    """A head with 2 CPUs in this process, and a worker node (2 CPUs, resource ``worker_node``) in another.

    One per xdist worker that runs a Ray module (``--dist loadfile``: a module runs whole on one worker).
    """
    ray = pytest.importorskip("ray", reason='ray is not installed: pip install "vidaudit[ray]" to run the Ray tests')
    os.environ["PYTHONPATH"] = os.pathsep.join([SRC, SITE, os.environ.get("PYTHONPATH", "")])  # workers import these
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    env = dict(os.environ)  # after init: it carries the cluster's auth mode to the joining node and the CLI runs
    address = ray.get_runtime_context().gcs_address
    ray_cli = str(Path(sys.executable).parent / "ray")
    log = tmp_path_factory.mktemp("ray_worker") / "ray_start.log"
    worker = subprocess.Popen(
        [
            ray_cli,
            "start",
            f"--address={address}",
            "--num-cpus=2",
            '--resources={"worker_node": 4}',
            "--block",
            "--disable-usage-stats",
        ],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 90
    while sum(n["Alive"] for n in ray.nodes()) < 2:
        if time.monotonic() > deadline or worker.poll() is not None:
            raise RuntimeError(f"the worker node did not join the cluster: {log.read_text()[-2000:]}")
        time.sleep(0.5)
    head = ray.get_runtime_context().get_node_id()
    try:
        yield {"address": address, "head": head, "env": env}
    finally:
        ray.shutdown()
        os.killpg(worker.pid, signal.SIGKILL)  # the node's raylet and workers are in its process group
        worker.wait(30)
