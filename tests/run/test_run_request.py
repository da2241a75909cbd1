"""RunRequest: one typed request per run session, built once from the flags, a run config YAML, ``--resume`` or
the Python keywords, and passed whole to ``execute``; a bad field is a one-line error, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ModelSpec
from vidaudit.run.cli_support import resolve_run_request
from vidaudit.run.conditions import parse_condition
from vidaudit.run.request import RunRequest
from vidaudit.run.runconfig import RunConfig
from vidaudit.run.session import execute


def _flags(**kw: object) -> dict:
    base = {
        "suite": None,
        "data": None,
        "models": [],
        "conditions": [],
        "prompts": [],
        "timestamps": True,
        "config": None,
        "out": None,
        "resume": None,
        "temperature": None,
        "max_output_tokens": None,
        "seed": None,
        "max_attempts": 3,
        "max_cost_usd": None,
        "max_tokens": None,
        "limit": None,
    }
    return base | kw


def _trial_ids(run: Path) -> set[str]:
    lines = [json.loads(line) for line in (run / "attempts.jsonl").read_text().splitlines()]
    return {x["attempt"]["trial_id"] for x in lines if "attempt" in x}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from vidaudit.suites.stress.probe import GenerateOptions
    from vidaudit.suites.stress.wireframe.generate import generate

    root = tmp_path_factory.mktemp("request") / "data"
    generate(root, GenerateOptions(seeds=1))
    return root


def test_flags_and_a_config_file_build_the_same_request(data: Path, tmp_path: Path) -> None:
    flags = resolve_run_request(
        **_flags(
            data=data,
            out=tmp_path / "run",
            models=["oracle", "chance"],
            conditions=["frames#4"],
            max_cost_usd=1.5,
            limit=3,
            retry_errors=True,
        )
    )
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "data": str(data),
                "out": str(tmp_path / "run"),
                "models": ["oracle", "chance"],
                "conditions": ["frames#4"],
                "max_cost_usd": 1.5,
                "limit": 3,
            }
        ),
        encoding="utf-8",
    )
    from_file = resolve_run_request(**_flags(config=cfg, retry_errors=True))
    assert isinstance(flags, RunRequest) and flags == from_file
    assert flags.suite == "stress" and [m.label for m in flags.models] == ["oracle", "chance"]
    assert [c.id for c in flags.conditions] == ["frames#4/mcq"] and flags.retry_errors


def test_a_run_is_resumed_from_the_request_its_run_json_stores(data: Path, tmp_path: Path) -> None:
    """execute(request) runs it; --resume rebuilds the same request from run.json (no flag repeated), and the
    keyword form execute(data, out, models, conditions, ...) is the same run."""
    out = tmp_path / "run"
    request = RunRequest(
        data=data,
        out=out,
        models=(ModelSpec.parse("oracle"),),
        conditions=(parse_condition("frames#4", "mcq"),),
        suite="stress",
        limit=2,
    )
    first = execute(request)
    assert first.summary is not None and first.summary.ok == first.summary.planned == 2
    assert RunConfig.load(out).options.get("limit") == 2
    resumed = resolve_run_request(**_flags(resume=out))
    assert resumed == request.model_copy(update={"suite": "stress"})
    again = execute(resumed)
    assert again.summary is not None and again.summary.skipped_already_ok == 2 and again.summary.called == 0
    keywords = execute(
        data,
        tmp_path / "kw",
        [ModelSpec.parse("oracle")],
        [parse_condition("frames#4", "mcq")],
        suite="stress",
        limit=2,
    )
    assert keywords.summary is not None and keywords.summary.ok == 2
    assert _trial_ids(tmp_path / "kw") == _trial_ids(out) and len(_trial_ids(out)) == 2
    with pytest.raises(TypeError, match="takes the RunRequest alone"):
        execute(request, out)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_attempts", 0, "--max-attempts must be an integer >= 1, got 0"),
        ("max_cost_usd", float("inf"), "--max-cost-usd must be a finite number >= 0, got inf"),
        ("max_tokens", -1, "--max-tokens must be a finite number >= 0, got -1"),
        ("rule", "wilson", "--rule wilson belongs to a sequential design"),
        ("limit", "three", "run request: limit: Input should be a valid integer"),
        ("models", ["oracle"], "run request: models.0: Input should be a valid dictionary or instance of ModelSpec"),
    ],
)
def test_a_bad_field_is_one_line(field: str, value: object, message: str, data: Path, tmp_path: Path) -> None:
    fields = {
        "data": data,
        "out": tmp_path / "run",
        "models": [ModelSpec.parse("oracle")],
        "conditions": [parse_condition("frames#4", "mcq")],
        field: value,
    }
    with pytest.raises(ConfigError) as e:
        RunRequest.build(**fields)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
    with pytest.raises(ConfigError):
        execute(**fields)
    assert not (tmp_path / "run").exists()
