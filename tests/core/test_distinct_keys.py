"""A key given twice with different values in a file a user wrote is refused, never read as the last one.

``json`` and PyYAML both keep the last of two equal keys without a word: a run config listing ``conditions:``
twice ran only the second list, a labels file naming an item twice scored one label and dropped the other, a
responses line with two ``response`` fields scored the second. Each reader below is fed a real file of its
format and must refuse it with a message naming the key; the same value twice is one value and is read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.untrusted import load_yaml, loads_untrusted
from vidaudit.models.params import load_params
from vidaudit.run.cli_support import load_config
from vidaudit.score.agreement import read_human_labels
from vidaudit.tools.interop.vlmevalkit import read_table
from vidaudit.video.perturb.batch import load_jobs

runner = CliRunner()

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


def _object_with_key_twice(obj: dict[str, Any], key: str, first: Any, second: Any) -> str:
    """``obj`` as JSON text with ``key`` written twice (first, then second), as a hand-merged file has it."""
    body = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in obj.items() if k != key]
    body += [f"{json.dumps(key)}: {json.dumps(first)}", f"{json.dumps(key)}: {json.dumps(second)}"]
    return "{" + ", ".join(body) + "}"


@given(st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=4), st.text(max_size=4), JSON_VALUES, JSON_VALUES)
def test_a_key_twice_with_two_values_is_refused_and_with_one_value_read(
    obj: dict[str, Any], key: str, first: Any, second: Any
) -> None:
    text = _object_with_key_twice(obj, key, first, second)
    if first == second:
        assert loads_untrusted(text, what="x") == {**obj, key: first}
    else:
        with pytest.raises(DataError, match="appears twice in one object, with different values"):
            loads_untrusted(text, what="x")


@given(st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=5))
def test_an_object_without_a_repeated_key_reads_as_json_reads_it(obj: dict[str, Any]) -> None:
    text = json.dumps(obj)
    assert loads_untrusted(text, what="x") == json.loads(text)


def test_yaml_refuses_a_key_twice_but_keeps_merges_and_plain_documents() -> None:
    doc = "base: &b {fps: 1, frames: 8}\nrun:\n  <<: *b\n  fps: 4\nlist: [1, 2]\n"
    assert (
        load_yaml(doc)
        == yaml.safe_load(doc)
        == {
            "base": {"fps": 1, "frames": 8},
            "run": {"fps": 4, "frames": 8},
            "list": [1, 2],
        }
    )
    assert load_yaml("a: 1\na: 1\n") == {"a": 1}
    with pytest.raises(yaml.YAMLError, match=r'the key "fps" appears twice.*\(1 and 4\)'):
        load_yaml("run:\n  fps: 1\n  fps: 4\n")


def test_a_run_config_with_conditions_twice_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "run.yaml"
    cfg.write_text("models: [oracle]\nconditions: [native]\nprompts: [direct]\nconditions: [frames@1]\n")
    with pytest.raises(ConfigError, match=r'cannot read run config .*run\.yaml: the key "conditions" appears twice'):
        load_config(cfg)
    r = runner.invoke(app, ["run", str(tmp_path), "--config", str(cfg), "--out", str(tmp_path / "run")])
    assert r.exit_code == 2 and "appears twice" in r.output, r.output
    assert not (tmp_path / "run").exists()


def test_a_params_file_with_a_model_twice_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "params.yaml"
    p.write_text("models:\n  gpt-4o:\n    max_frames: 8\n  gpt-4o:\n    max_frames: 32\n")
    with pytest.raises(ConfigError, match=r'cannot read params file .*the key "gpt-4o" appears twice'):
        load_params(p)


def test_a_labels_file_naming_an_item_twice_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "labels.json"
    p.write_text('{"t1": "agree", "t2": "disagree", "t1": "disagree"}')
    with pytest.raises(DataError, match=r'labels\.json: the key "t1" appears twice .*\("agree" and "disagree"\)'):
        read_human_labels(p)
    p.write_text('{"labels": {"t1": "agree", "t1": "agree"}}')
    assert read_human_labels(p) == {"t1": "agree"}


def test_a_jobs_file_line_with_op_twice_is_refused(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"source": "a.mp4", "op": "reverse", "op": "speed", "seed": 0}\n')
    with pytest.raises(ConfigError, match=r'line 1: the key "op" appears twice'):
        load_jobs(jobs)


def test_a_responses_line_with_two_responses_is_refused(smoke_dir: Path, tmp_path: Path) -> None:
    from vidaudit.core.manifest import load_samples

    sid = load_samples(smoke_dir)[0].sample_id
    resp = tmp_path / "responses.jsonl"
    resp.write_text('{"sample_id": "%s", "response": "\\\\boxed{3}", "response": "\\\\boxed{4}"}\n' % sid)
    out = tmp_path / "scores.jsonl"
    args = ["score-responses", "--suite", "counting", "--samples", str(smoke_dir / "manifest.jsonl")]
    r = runner.invoke(app, [*args, "--responses", str(resp), "--out", str(out)])
    assert r.exit_code == 2 and 'responses.jsonl:1: the key "response" appears twice' in r.output, r.output
    assert not out.exists()


def test_a_vlmevalkit_json_row_with_prediction_twice_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "Model_Bench.json"
    p.write_text('[{"index": 0, "question": "q", "prediction": "A", "prediction": "B"}]')
    with pytest.raises(DataError, match=r'not a VLMEvalKit JSON prediction file .*"prediction" appears twice'):
        read_table(p)
