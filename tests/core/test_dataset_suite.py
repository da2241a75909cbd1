"""A dataset names its suite; no shared layer falls back to one (``core.manifest.dataset_suite``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from vidaudit.core.errors import DataError
from vidaudit.core.manifest import MANIFEST, dataset_suite

sys.path.insert(0, str(Path(__file__).parents[1] / "plugin_site"))  # its dist-info registers the toy suite
from toysuite import generate_toy  # noqa: E402


def test_the_suite_comes_from_dataset_json_else_from_the_samples(tmp_path: Path) -> None:
    data = tmp_path / "toy"
    generate_toy(data, seeds=1)
    assert dataset_suite(data) == "toy"
    assert dataset_suite(data, {"suite": "named"}) == "named"  # dataset.json, already read, wins
    (data / "dataset.json").unlink()
    assert dataset_suite(data) == "toy"  # no dataset.json: the samples' one suite


def test_a_dataset_mixing_suites_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "toy"
    generate_toy(data, seeds=1)
    (data / "dataset.json").unlink()
    lines = (data / MANIFEST).read_text(encoding="utf-8").splitlines()
    other = json.loads(lines[0]) | {"suite": "other", "sample_id": "other-0"}
    (data / MANIFEST).write_text("\n".join([*lines, json.dumps(other)]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="samples of 2 suites"):
        dataset_suite(data)


def test_score_responses_scores_with_the_manifests_own_suite(tmp_path: Path) -> None:
    """No suite named: the toy manifest is scored by the toy suite (not refused as 'not counting')."""
    from vidaudit.score.stage import score_responses

    data = tmp_path / "toy"
    generate_toy(data, seeds=1)
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"sample_id": "toy-red-0", "response": "\\boxed{red}"}) + "\n", encoding="utf-8")
    scored = score_responses(data / MANIFEST, responses)  # plugin_site (on sys.path above) registers "toy"
    assert scored.suite.name == "toy" and scored.records[0].correct is True


def test_vidaudit_run_without_a_suite_runs_the_datasets_own_with_its_default_prompt(tmp_path: Path) -> None:
    """``vidaudit run --data DIR`` (no suite argument): the toy dataset runs the toy suite and its own
    default prompt, not counting's ``structured_trace``."""
    from vidaudit.core.errors import ConfigError
    from vidaudit.run.cli_support import resolve_run_request

    data = tmp_path / "toy"
    generate_toy(data, seeds=1)
    common = {
        "models": ["oracle"],
        "conditions": ["frames@1"],
        "prompts": [],
        "timestamps": True,
        "config": None,
        "out": tmp_path / "run",
        "resume": None,
        "temperature": None,
        "max_output_tokens": None,
        "seed": None,
        "max_attempts": 3,
        "max_cost_usd": None,
        "max_tokens": None,
        "limit": None,
    }
    request = resolve_run_request(suite=None, data=data, **common)
    from toysuite import SUITE

    assert request.suite == "toy"
    assert [c.prompt for c in request.conditions] == [SUITE.default_prompt]
    with pytest.raises(ConfigError, match="no data"):
        resolve_run_request(suite=None, data=None, **common)
