"""``--executor ray`` on a real local Ray cluster: a head started here and a second node joined by ``ray start``.

What is proved: a Ray run plans the same trials and stores the same responses as a local run (a tiny
real hf model, deterministic greedy decoding, its replica on the joined worker node) even when the
replica is SIGKILLed with a call in flight: Ray restarts it and re-sends the call, so the run
completes with no failed attempt and no repeated stored call; a replica Ray may not restart stops the
run with only its calls in flight failed, and a resume (here without Ray) finishes it; a driver
(``vidaudit run --executor ray``) killed mid-run resumes with no repeated stored call and the local
run's answers; a judged (composite) run keeps its stage calls on the driver (its model in two replicas
on the joined node); a worker whose adapter differs from the driver's is refused before any call.
One cluster for the session (``ray_cluster`` in tests/conftest.py): Ray takes ~10 s to start.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason='ray is not installed: pip install "vidaudit[ray]" to run the Ray tests')
pytest.importorskip("transformers", reason='the Ray tests run a tiny hf model: pip install "vidaudit[hf]"')
pytestmark = pytest.mark.xdist_group("ray")  # kept for --dist loadgroup; addopts uses loadfile (a module on one worker)

sys.path.insert(0, str(Path(__file__).parents[1]))
import tiny_models  # noqa: E402
from vidaudit.core.errors import ConfigError, DataError  # noqa: E402
from vidaudit.run.cli_support import resolve_run_request  # noqa: E402
from vidaudit.run.ray_cluster import RayOptions  # noqa: E402
from vidaudit.run.ray_executor import RayDispatch, dispatch_for  # noqa: E402
from vidaudit.run.request import RunRequest  # noqa: E402
from vidaudit.run.session import execute  # noqa: E402
from vidaudit.run.store.reader import StoreReader  # noqa: E402

SITE = str(Path(__file__).resolve().parents[1] / "plugin_site")  # the toy suite
CHAT = "/v1/chat/completions"
LIMIT = 4


@pytest.fixture(scope="module")
def cluster(ray_cluster: dict) -> dict:
    """The session's two-node cluster (tests/conftest.py), shared with the other Ray test modules."""
    return ray_cluster


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_models.build_qwen2_5_vl(tmp_path_factory.mktemp("tiny_ray") / "qwen2_5_vl")


def _request(data: Path, out: Path, model: str, **kw) -> RunRequest:
    return resolve_run_request(
        suite="counting",
        data=data,
        models=[model],
        conditions=["frames@2"],
        prompts=[],
        timestamps=True,
        config=None,
        out=out,
        resume=None,
        temperature=0.0,
        max_output_tokens=6,
        seed=None,
        max_attempts=3,
        max_cost_usd=None,
        max_tokens=None,
        limit=LIMIT,
        **kw,
    )


def _stored(run: Path) -> tuple[dict[str, str], Counter[str], Counter[str]]:
    """(trial id -> ok text, ok attempts per trial, failed attempts per trial)."""
    texts: dict[str, str] = {}
    ok: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    with StoreReader(run) as store:
        for row in store.trial_rows():
            for a in store.attempts(row.trial_id):
                if a.status.value == "ok":
                    ok[a.trial_id] += 1
                    texts[a.trial_id] = a.response.text
                else:
                    failed[a.trial_id] += 1
    return texts, ok, failed


@pytest.fixture(scope="module")
def local_run(smoke_dir: Path, model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    run = tmp_path_factory.mktemp("local") / "run"
    res = execute(_request(smoke_dir, run, f"hf:{model_dir}"))
    assert res.summary is not None and res.summary.ok == res.summary.planned == LIMIT
    return _stored(run)[0]


def test_a_ray_run_with_a_replica_killed_mid_call_stores_what_a_local_run_stores(
    cluster, smoke_dir: Path, model_dir: Path, local_run: dict[str, str], tmp_path: Path
) -> None:
    dispatch = RayDispatch(RayOptions(resources={"worker_node": 1}))
    killed: list[int] = []

    def on_progress(event) -> None:  # on the driver's loop: after the first stored trial, kill a busy replica
        if event.kind == "attempt" and not killed:
            (proxy,) = dispatch.proxies.values()
            busy = next(i for i, n in enumerate(proxy._busy) if n > 0)  # a call is in flight there
            pid = proxy.placements[busy][0]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    res = execute(_request(smoke_dir, tmp_path / "run", f"hf:{model_dir}"), dispatch=dispatch, on_progress=on_progress)
    assert killed, "no replica was killed"
    assert res.summary is not None and res.summary.ok == LIMIT and res.summary.calls == LIMIT
    texts, ok, failed = _stored(tmp_path / "run")
    assert texts == local_run  # same trial ids, same answers
    assert set(ok.values()) == {1} and not failed  # the killed call was re-sent, nothing stored twice or failed
    ((pid, node),) = dispatch.placements[f"hf:{model_dir}"]
    assert node != cluster["head"] and pid != os.getpid()  # it ran on the joined node


def _ok_so_far(run: Path) -> int:
    try:
        return len(_stored(run)[1])
    except (DataError, sqlite3.Error, OSError):  # the driver is still creating the store
        return 0


def test_a_killed_driver_resumes_with_no_repeated_call_and_the_local_answers(
    cluster, smoke_dir: Path, model_dir: Path, local_run: dict[str, str], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "vidaudit.cli",
        "run",
        "counting",
        "--data",
        str(smoke_dir),
        "--model",
        f"hf:{model_dir}",
        "--condition",
        "frames@2",
        "--limit",
        str(LIMIT),
        "--max-output-tokens",
        "6",
        "--temperature",
        "0",
        "--out",
        str(run),
        "--executor",
        "ray",
        "--ray-address",
        cluster["address"],
    ]
    first = subprocess.Popen(cmd, env=cluster["env"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not _ok_so_far(run):
        assert first.poll() is None, first.stderr.read().decode() if first.stderr else ""
        assert time.monotonic() < deadline, "no trial was stored in time"
        time.sleep(0.2)
    first.kill()
    first.wait(30)
    before = _stored(run)[0]
    assert 0 < len(before) <= LIMIT
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "vidaudit.cli",
            "run",
            "--resume",
            str(run),
            "--executor",
            "ray",
            "--ray-address",
            cluster["address"],
        ],
        env=cluster["env"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    texts, ok, _ = _stored(run)
    assert texts == local_run and set(ok.values()) == {1}
    assert {k: texts[k] for k in before} == before


def test_a_replica_ray_cannot_restart_stops_the_run_and_a_resume_finishes_it(
    cluster, smoke_dir: Path, tmp_path: Path
) -> None:
    from vidaudit.run.executor import AdapterError

    run, limit = tmp_path / "run", 8
    dispatch = RayDispatch(RayOptions(max_restarts=0))
    killed: list[int] = []

    def on_progress(event) -> None:
        if event.kind == "attempt" and not killed:
            (proxy,) = dispatch.proxies.values()
            killed.append(proxy.placements[0][0])
            os.kill(killed[0], signal.SIGKILL)

    request = _request(smoke_dir, run, "oracle").model_copy(update={"limit": limit})
    with pytest.raises(AdapterError, match="RayWorkerLost") as stopped:
        execute(request, dispatch=dispatch, on_progress=on_progress)
    summary = stopped.value.summary
    assert summary is not None and 1 <= summary.ok < limit
    texts, ok, failed = _stored(run)
    assert sum(failed.values()) <= dispatch.proxies["oracle"].local.capabilities.concurrency  # only calls in flight
    res = execute(request)  # resumed here, without Ray
    assert (
        res.summary is not None
        and res.summary.skipped_already_ok == len(texts)
        and res.summary.ok == limit - len(texts)
    )
    after, ok, _ = _stored(run)
    assert set(ok.values()) == {1} and {k: after[k] for k in texts} == texts  # no stored call repeated
    reference = tmp_path / "local"
    execute(_request(smoke_dir, reference, "oracle").model_copy(update={"limit": limit}))
    assert after == _stored(reference)[0]


def test_a_judged_run_keeps_its_stage_calls_on_the_driver_and_its_model_on_ray(
    cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from httpfake import FakeServer, Reply
    from vidaudit.core.types import Condition, ModelSpec, Presentation

    monkeypatch.syspath_prepend(SITE)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-judge")
    from toysuite import generate_toy

    generate_toy(tmp_path / "data", seeds=1)
    reply = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "judge-1",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '{"names_colour": true}'}}
        ],
        "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
    }
    runs = {}
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Reply(json=reply))
        judge = ModelSpec.parse(f"openai:judge-1@{srv.url}/v1", temperature=0.0, max_tokens=64)
        for name, dispatch in (
            ("local", None),
            ("ray", RayDispatch(RayOptions(replicas=2, resources={"worker_node": 1}))),
        ):
            res = execute(
                tmp_path / "data",
                tmp_path / name,
                [ModelSpec.parse("constant:the screen looks red")],
                [Condition(presentation=Presentation.FRAMES, n_frames=2, prompt="plain")],
                suite="toy",
                judge=judge,
                dispatch=dispatch,
            )
            assert res.summary is not None and not res.summary.stopped_early
            with StoreReader(tmp_path / name) as store:
                runs[name] = sorted((c.trial_id, c.stage, c.call_key, c.response.text) for c in store.stage_calls())
            if dispatch is not None:
                assert list(dispatch.placements) == ["constant:the screen looks red"]  # the judge stays here
                replicas = dispatch.placements["constant:the screen looks red"]
                assert len({pid for pid, _ in replicas}) == 2 and {n for _, n in replicas} != {cluster["head"]}
        assert len(srv.requests_to(CHAT)) == 6  # three judge calls per run, all made by the driver
    assert runs["ray"] == runs["local"] and {s for _, s, _, _ in runs["ray"]} == {"answer", "judge"}


def test_a_replica_that_differs_from_the_driver_is_refused_before_any_call(cluster) -> None:
    from vidaudit.core.registry import get_suite
    from vidaudit.core.types import ModelSpec
    from vidaudit.models.factory import make_adapter
    from vidaudit.run.ray_executor import Replica, identity

    spec = ModelSpec.parse("oracle")
    expected = identity(make_adapter(spec, samples={}, suite=get_suite("counting")))
    expected["request_options"] = {"jpeg_quality": 1}  # what a different install would report
    handle = ray.remote(Replica).remote(spec, "counting", {}, {}, expected)
    problem, _, _ = ray.get(handle.check.remote())
    assert problem is not None and "request_options" in problem and "same vidaudit" in problem
    ray.kill(handle)


def test_executor_options_are_checked() -> None:
    assert dispatch_for("local") is None
    assert isinstance(dispatch_for("ray", "127.0.0.1:1", 2), RayDispatch)
    with pytest.raises(ConfigError, match="--executor must be one of local, ray"):
        dispatch_for("dask")
    with pytest.raises(ConfigError, match="--ray-address needs --executor ray"):
        dispatch_for("local", "127.0.0.1:1")
    with pytest.raises(ConfigError, match="--ray-replicas must be an integer >= 1"):
        RayOptions(replicas=0)


def test_generate_counting_on_ray_writes_the_local_bitstreams(cluster, tmp_path: Path) -> None:
    """Rendering as Ray tasks (the driver writes the manifest) gives byte-identical videos and samples."""
    from vidaudit.core.manifest import load_samples
    from vidaudit.run.ray_pool import RayTaskPool, pool_factory
    from vidaudit.suites.counting import grid as g
    from vidaudit.suites.counting.generate import generate
    from vidaudit.suites.counting.scene import RenderSettings

    points = g.grid(["blinking", "bounce_ball"], [2], [1.0], range(2))
    settings = RenderSettings(duration_s=3.0, fps=10.0, width=320, height=240)
    generate(points, tmp_path / "local", settings, workers=1)
    make = pool_factory("ray")  # the module's cluster is connected: the pool joins it and leaves it up
    assert make is not None
    res = generate(points, tmp_path / "ray", settings, pool=make)
    assert res.rendered == len(points)
    local = {s.sample_id: s.model_dump() for s in load_samples(tmp_path / "local")}
    remote = {s.sample_id: s.model_dump() for s in load_samples(tmp_path / "ray")}
    assert local == remote and all(s["video"]["sha256"] for s in remote.values())
    with pytest.raises(ConfigError, match="--ray-address needs --executor ray"):
        pool_factory("local", "auto")
    with pytest.raises(ConfigError, match="--executor must be one of local, ray"):
        pool_factory("dask")
    pool = make()
    assert isinstance(pool, RayTaskPool)
    pool.shutdown()
    assert ray.is_initialized()  # a pool that joined a cluster never shuts it down
