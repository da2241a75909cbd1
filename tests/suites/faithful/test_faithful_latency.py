"""The latency split as the median of N runs (STRAND D.7 / H.1: medians over 10 runs), on the local fake
OpenAI-compatible server as the backbone, whose replies are slowed by a different delay in each run: the
reported figure is each run's figure's median (the middle run's), not a mean, with its quartiles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from httpfake import FakeServer, Recorded, Reply
from test_faithful_framework_backbone import CHAT, SMALL, Backbone, data  # noqa: F401 - the dataset fixture
from vidaudit.core.types import ModelSpec
from vidaudit.suites.faithful.framework.latency import latency_over_runs, run_latency


class Slow(Backbone):
    """The backbone, each reply held ``delay`` seconds."""

    delay = 0.0

    def __call__(self, rec: Recorded) -> Reply:
        return Reply(json=super().__call__(rec).json, delay_s=self.delay)


def test_latency_is_the_median_over_runs(data: Path, tmp_path: Path) -> None:  # noqa: F811
    from test_faithful_framework_backbone import NATIVE
    from vidaudit.run.session import execute

    slow = Slow()
    dirs = []
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=slow)
        bb = f"openai:bb@{srv.url}/v1"
        framework = f"object-centric:{SMALL},{bb}"
        # the middle figure comes from the third run; the delays lie far apart so that a loaded machine's own
        # slowness (tenths of a second at load 10 on 2 cores) cannot reorder the runs
        for k, delay in enumerate((0.02, 0.6, 0.25)):
            slow.delay = delay
            out = tmp_path / f"run-{k}"
            res = execute(
                data,
                out,
                [ModelSpec.parse(s, max_tokens=64) for s in (framework, bb)],
                [NATIVE],
                suite="faithful",
                limit=4,
            )
            assert res.summary is not None and not res.summary.stopped_early
            dirs.append(out)
    each = [run_latency(d) for d in dirs]
    res = latency_over_runs(dirs)
    assert res["n_runs"] == 3
    systems = {s["model"]: s for s in res["systems"]}
    assert set(systems) == {framework, bb}
    for model, s in systems.items():
        key = (model, s["condition"])
        per_query = [e[key]["per_query_s"] for e in each]
        assert s["per_query_s"]["values"] == sorted(per_query)
        assert s["per_query_s"]["median"] == per_query[2]  # the run with the middle delay
        assert per_query[0] < per_query[2] < per_query[1]
        for stage, fig in s["median_s_per_call"].items():
            assert fig["median"] == sorted(e[key]["median_s_per_call"][stage] for e in each)[1]
            assert fig["median"] >= 0.25  # every call waited at least the delay
    pre = systems[framework]["preprocessing_s_per_video"]
    assert pre is not None and pre["q1"] <= pre["median"] <= pre["q3"]
    assert systems[bb]["preprocessing_s_per_video"]["median"] == 0.0  # end to end: nothing built per video
    assert "extract" in systems[framework]["median_s_per_call"] and "direct" in systems[bb]["median_s_per_call"]


def test_the_benchmark_refuses_a_used_run_directory(tmp_path: Path) -> None:
    (tmp_path / "out" / "run-00").mkdir(parents=True)
    r = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve().parents[3] / "benchmarks" / "faithful_latency.py"),
            "--data",
            str(tmp_path),
            "--out",
            str(tmp_path / "out"),
            "--model",
            "oracle",
            "--runs",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode != 0 and "is timed once" in r.stderr
