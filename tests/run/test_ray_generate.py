"""``vidaudit generate faithful|stress --executor ray`` on the session's two-node Ray cluster: each video a Ray
task, the driver alone writing the manifest, and the bytes those of a local (serial) run.

The tasks write under ``--out`` (here a local tmp dir both nodes see); the samples, their sha256 included,
and every video's bytes must equal the serial run's.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason='ray is not installed: pip install "vidaudit[ray]" to run the Ray tests')
pytestmark = pytest.mark.xdist_group("ray")  # kept for --dist loadgroup; addopts uses loadfile (a module on one worker)

from typer.testing import CliRunner  # noqa: E402

from vidaudit.cli import app  # noqa: E402
from vidaudit.run.ray_pool import pool_factory  # noqa: E402
from vidaudit.suites.stress import SUITE as STRESS  # noqa: E402
from vidaudit.suites.stress.probe import GenerateOptions  # noqa: E402


def _videos(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.mp4"))}


def test_faithful_and_expectation_on_ray_write_the_local_bytes(ray_cluster, tmp_path: Path) -> None:
    from vidaudit.suites.faithful.generate import generate, specs_for

    make = pool_factory("ray")  # the session's cluster is connected: the pool joins it and leaves it up
    assert make is not None
    specs = specs_for("smoke", 2)
    local = generate(specs, tmp_path / "f-local", workers=1)
    remote = generate(specs, tmp_path / "f-ray", pool=make)
    assert remote.manifest.read_bytes() == local.manifest.read_bytes()
    assert _videos(tmp_path / "f-ray") == _videos(tmp_path / "f-local")

    probe = STRESS.probe("expectation")  # two phases of jobs (sources, then perturbed videos) into a staging dir
    a = probe.generate(tmp_path / "e-local", GenerateOptions(seeds=1))
    b = probe.generate(tmp_path / "e-ray", GenerateOptions(seeds=1, pool=make))
    assert b.read_bytes() == a.read_bytes()
    assert _videos(tmp_path / "e-ray") == _videos(tmp_path / "e-local")
    assert ray.is_initialized()


def test_cli_generate_stress_on_ray(ray_cluster, tmp_path: Path) -> None:
    runner = CliRunner()
    args = [
        "generate",
        "stress",
        "--probe",
        "camera_motion",
        "--seeds",
        "1",
        "--set",
        "synthesis=both",
        "--set",
        "size=64x48",
    ]
    assert runner.invoke(app, [*args, "--out", str(tmp_path / "local")]).exit_code == 0
    r = runner.invoke(
        app, [*args, "--out", str(tmp_path / "ray"), "--executor", "ray", "--ray-address", ray_cluster["address"]]
    )
    assert r.exit_code == 0, r.output
    assert (tmp_path / "ray" / "manifest.jsonl").read_bytes() == (tmp_path / "local" / "manifest.jsonl").read_bytes()
    assert _videos(tmp_path / "ray") == _videos(tmp_path / "local")
    r = runner.invoke(
        app,
        [
            "generate",
            "stress",
            "--probe",
            "sycophancy",
            "--out",
            str(tmp_path / "syc"),
            "--executor",
            "ray",
            "--ray-address",
            ray_cluster["address"],
        ],
    )
    assert r.exit_code != 0 and "renders no video" in r.output and not (tmp_path / "syc").exists()
    assert ray.is_initialized()  # a pool that joined a cluster never shuts it down
