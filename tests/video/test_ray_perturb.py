"""Perturbing on Ray: ``perturb --batch --executor ray`` writes the local bytes and rows, and a
``vidaudit run --executor ray`` on a perturbed condition renders its videos as Ray tasks into
``RUN/perturbed/`` before any trial, storing the local run's trial ids and responses.

Uses the session's two-node cluster (``ray_cluster`` in tests/conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from test_perturb_batch import make_jobs, outputs

ray = pytest.importorskip("ray", reason='ray is not installed: pip install "vidaudit[ray]" to run the Ray tests')
pytestmark = pytest.mark.xdist_group("ray")

from vidaudit.core.errors import DataError  # noqa: E402
from vidaudit.core.types import ModelSpec  # noqa: E402
from vidaudit.run.conditions import parse_condition  # noqa: E402
from vidaudit.run.ray_executor import RayDispatch  # noqa: E402
from vidaudit.run.ray_pool import pool_factory  # noqa: E402
from vidaudit.run.session import execute  # noqa: E402
from vidaudit.run.store.reader import StoreReader  # noqa: E402
from vidaudit.video.perturb.batch import load_jobs, perturb_batch  # noqa: E402

MASK = "frames@24+strip_mask(S=128,k=4,orientation=vertical,v=24)"


def test_a_batch_on_ray_writes_the_local_files_and_rows(ray_cluster: dict, tmp_path: Path) -> None:
    jobs = load_jobs(make_jobs(tmp_path))
    local = perturb_batch(jobs, tmp_path / "local", workers=1)
    remote = perturb_batch(jobs, tmp_path / "ray", pool=pool_factory("ray"))
    assert (remote.rendered, remote.cached, remote.failed) == (3, 1, [])
    assert remote.rows == local.rows and outputs(tmp_path / "ray") == outputs(tmp_path / "local")
    assert ray.is_initialized()  # the pool joined the session's cluster and left it up


def _stored(run: Path) -> dict[str, str]:
    with StoreReader(run) as store:
        return {a.trial_id: a.response.text for row in store.trial_rows() for a in store.attempts(row.trial_id)}


def _cache(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted((run / "perturbed").rglob("*")) if p.is_file()}


def test_a_ray_run_renders_its_perturbed_videos_as_tasks_and_stores_the_local_run(
    ray_cluster: dict, tmp_path: Path
) -> None:
    from vidaudit.suites.stress.cross_frame.generate import generate
    from vidaudit.suites.stress.probe import GenerateOptions

    data = tmp_path / "data"
    generate(data, GenerateOptions(seeds=2))
    args = {"suite": "stress", "models": [ModelSpec(provider="oracle")], "conditions": [parse_condition(MASK, "mcq")]}
    local = execute(data, tmp_path / "local", **args)
    dispatch = RayDispatch()
    remote = execute(data, tmp_path / "ray", **args, dispatch=dispatch)
    assert remote.summary.ok == local.summary.ok == local.summary.planned > 0
    assert _stored(tmp_path / "ray") == _stored(tmp_path / "local")  # same trial ids, same responses
    assert _cache(tmp_path / "ray") == _cache(tmp_path / "local")  # the same perturbed bytes
    reports = dispatch.prerendered
    assert reports and all(r["ok"] and r["rendered"] and r["pid"] != os.getpid() for r in reports)
    assert len(reports) == len(list((tmp_path / "ray" / "perturbed").rglob("*.mp4")))  # one task per video
    again = RayDispatch()
    execute(data, tmp_path / "ray", **args, dispatch=again)  # a resume: every entry found cached
    assert again.prerendered and not any(r["rendered"] for r in again.prerendered)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "perturbed").write_text("a file where the cache should be")
    with pytest.raises(DataError, match="could not be rendered"):
        execute(data, tmp_path / "broken", **args, dispatch=RayDispatch())
    assert _stored(tmp_path / "broken") == {}  # no trial was dispatched
