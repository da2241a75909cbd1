"""Shared by the interop tests (small datasets, canned answers, the plugin site), and the tests of the
pieces every bridge uses: in-memory response rows scored exactly as ``score-responses`` scores a file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vidaudit.core.errors import DataError
from vidaudit.core.manifest import load_samples, read_dataset_info, write_dataset_info, write_manifest
from vidaudit.core.types import Sample
from vidaudit.score.stage import ResponseRow, score_responses, score_rows
from vidaudit.tools.interop.common import scalar_metric_names

PLUGIN_SITE = Path(__file__).parents[2] / "plugin_site"
#: one sample per count of the smoke grid's bounce_ball domain, plus a blinking one: 5 videos
PICK = (
    "counting-bounce_ball-N00-F1.0-s00",
    "counting-bounce_ball-N01-F0.5-s00",
    "counting-bounce_ball-N03-F2.0-s00",
    "counting-bounce_ball-N12-F0.5-s00",
)


def small_dataset(smoke_dir: Path, out: Path, n_extra: int = 1) -> Path:
    """A copy of a few smoke samples (and their videos) in ``out``: a complete vidaudit dataset."""
    samples = load_samples(smoke_dir)
    picks = [s for s in samples if s.sample_id in PICK]
    picks += [s for s in samples if s.params["domain"] == "blinking" and s.answer == 3][:n_extra]
    out.mkdir(parents=True, exist_ok=True)
    for s in picks:
        (out / s.video.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(smoke_dir / s.video.path, out / s.video.path)
    write_manifest(out, picks)
    write_dataset_info(out, {**read_dataset_info(smoke_dir), "n_samples": len(picks)})
    return out


def ledger(times: list[float], count: int) -> str:
    lines = [f"- at {t:.2f} s: event, running count {i}" for i, t in enumerate(times, 1)]
    return "\n".join(lines + [f"Final Answer: \\boxed{{{count}}}"])


def canned_answer(sample: Sample) -> str:
    """A different kind of answer per sample: faithful, right count with a wrong trace (ACR), wrong, unparseable."""
    n = int(sample.answer)
    times = sample.trace.times
    kind = sum(map(ord, sample.sample_id)) % 4
    if kind == 0:
        return ledger(times, n)
    if kind == 1:
        return ledger([t + 3.0 for t in times][: max(n - 1, 0)], n)
    if kind == 2:
        return ledger(times[:-1], max(n - 1, 0)) if n else ledger([5.0], 1)
    return "I could not tell from the video."


def plugin_env() -> dict[str, str]:
    """The environment of a subprocess that also sees the toy plugin suite."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN_SITE), os.environ.get("PYTHONPATH", "")])}


def run_py(
    code: str, *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: int = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env or dict(os.environ),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def comparable(records: list) -> list[dict]:
    """Records as dicts, sorted, for an equality check."""
    return sorted((r.model_dump(mode="json") for r in records), key=lambda d: (d["sample_id"], d["model"]))


# --------------------------------------------------------------------------- tests of the shared pieces


@pytest.fixture(scope="module")
def small(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_dataset(smoke_dir, tmp_path_factory.mktemp("support") / "data")


def test_score_rows_equals_score_responses(small: Path, tmp_path: Path) -> None:
    samples = {s.sample_id: s for s in load_samples(small)}
    rows = [
        ResponseRow(sample_id=sid, response=canned_answer(s), model="m", condition="c") for sid, s in samples.items()
    ]
    rows.append(
        ResponseRow(sample_id=next(iter(samples)), response=None, model="m2", condition="c", status="api_error")
    )
    f = tmp_path / "responses.jsonl"
    f.write_text("".join(json.dumps(r.as_json()) + "\n" for r in rows))
    ours = score_rows(samples, rows)
    theirs = score_responses(small / "manifest.jsonl", f, suite="counting")
    assert comparable(ours.records) == comparable(theirs.records)
    kinds = {(r.correct, r.parse.method if r.parse else None) for r in ours.records}
    assert (None, None) in kinds and (False, "unparseable") in kinds and (True, "boxed") in kinds, kinds


def test_score_rows_refuses_what_score_responses_refuses(small: Path) -> None:
    samples = {s.sample_id: s for s in load_samples(small)}
    sid = next(iter(samples))
    with pytest.raises(DataError, match="nope"):
        score_rows(samples, [ResponseRow(sample_id="nope", response="x")])
    with pytest.raises(DataError, match="status ok needs a response"):
        score_rows(samples, [ResponseRow(sample_id=sid, response=None)])
    with pytest.raises(DataError, match="status 'weird'"):
        score_rows(samples, [ResponseRow(sample_id=sid, response="x", status="weird")])
    two = [
        ResponseRow(sample_id=sid, response="\\boxed{1}", where="a:1"),
        ResponseRow(sample_id=sid, response="\\boxed{2}", where="a:2"),
    ]
    with pytest.raises(DataError, match="a:1 and a:2"):
        score_rows(samples, two)
    last = score_rows(samples, two, dedupe="last").records
    assert len(last) == 1 and last[0].parse.value == 2


def test_frame_times_reach_the_scorer(small: Path) -> None:
    samples = {s.sample_id: s for s in load_samples(small)}
    s = next(x for x in samples.values() if x.answer == 1)
    text = "- frame 3: contact, count 1\n\\boxed{1}"
    with_times = score_rows(
        samples,
        [ResponseRow(sample_id=s.sample_id, response=text, frame_times=(0.0, 1.0, 2.0), frame_indices=(0, 30, 60))],
    ).records[0]
    without = score_rows(samples, [ResponseRow(sample_id=s.sample_id, response=text)]).records[0]
    assert with_times.metrics["reported_times"] == [2.0]
    assert without.metrics["reported_times"] == []


def test_scalar_metric_names_are_the_numbers(small: Path) -> None:
    from vidaudit.core.registry import get_suite
    from vidaudit.core.types import Condition

    names = scalar_metric_names(get_suite("counting"), load_samples(small), Condition(prompt="structured_trace"))
    assert {"f1", "precision", "recall", "vor", "acr", "rfr", "n_matched"} <= set(names)
    assert not {"matches", "taxonomy", "tolerance", "parse_method", "reported_times", "correct"} & set(names)
