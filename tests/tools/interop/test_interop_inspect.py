"""vidaudit's inspect_ai tasks run by the real inspect_ai with its built-in mock model (`mockllm/model`),
and their eval logs imported back through inspect's own log reader.

The mock is given a callable that answers each sample differently (it recognises the video or frames it
was sent) and sets token usage itself: without usage, mockllm counts tokens with tiktoken, which fetches
its encoding from the network.
"""

from __future__ import annotations

import base64
import hashlib
import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from test_interop_support import canned_answer, comparable, plugin_env, run_py, small_dataset
from vidaudit.core.errors import DataError
from vidaudit.core.manifest import load_samples
from vidaudit.core.registry import get_suite
from vidaudit.tools.interop.logs import import_responses

inspect_ai = pytest.importorskip(
    "inspect_ai", reason="the interop extra is not installed (pip install 'vidaudit[interop]')"
)

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import read_eval_log, write_eval_log  # noqa: E402
from inspect_ai.model import (  # noqa: E402
    ContentImage,
    ContentReasoning,
    ContentVideo,
    ModelOutput,
    ModelUsage,
    get_model,
)

from vidaudit.tools.interop.inspect_ai_tasks import vidaudit_task  # noqa: E402

MODEL = "mockllm/model"


def _fingerprint(messages) -> str:
    """What identifies a sample in the messages the model receives: its video's bytes or its first frame."""
    user = [m for m in messages if m.role == "user"][-1]
    for c in user.content:
        if isinstance(c, ContentVideo):
            data = c.video
            raw = base64.b64decode(data.split(",", 1)[1]) if data.startswith("data:") else Path(data).read_bytes()
            return "video:" + hashlib.sha256(raw).hexdigest()
        if isinstance(c, ContentImage):
            return "image:" + hashlib.sha256(c.image.encode()).hexdigest()
    raise AssertionError("no video or image in the request")


def mock(task, answer, fail: set[str] = frozenset(), thought_out: set[str] = frozenset()):
    """mockllm answering ``answer(sample_id)`` for each sample of ``task`` (raising for those in ``fail``; for
    those in ``thought_out``, reasoning only and ``max_tokens``: the budget spent before any answer text)."""
    by_print = {_fingerprint(s.input): str(s.id) for s in task.dataset}
    sent: dict[str, str] = {}

    def respond(messages, tools, tool_choice, config) -> ModelOutput:
        sid = by_print[_fingerprint(messages)]
        if sid in fail:
            raise RuntimeError("the provider is down")
        sent[sid] = answer(sid)
        if sid in thought_out:
            thinking = [ContentReasoning(reasoning="Counting the events one by one... " * 40)]
            out = ModelOutput.from_content(model="mockllm", content=thinking, stop_reason="max_tokens")
            out.usage = ModelUsage(input_tokens=10, output_tokens=2048, total_tokens=2058)
            return out
        out = ModelOutput.from_content(model="mockllm", content=sent[sid])
        out.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
        return out

    return get_model(MODEL, custom_outputs=respond), sent


def run(task, model, log_dir: Path, **kw) -> Path:
    (log,) = inspect_eval(task, model=model, log_dir=str(log_dir), display="none", **kw)
    (f,) = log_dir.glob("*.eval")
    return f


def own_scores(manifest: Path, texts: dict[str, str | None], condition: str, tmp: Path) -> list:
    from vidaudit.score.stage import score_responses

    f = tmp / "responses.jsonl"
    f.write_text(
        "".join(
            json.dumps(
                {
                    "sample_id": k,
                    "response": v,
                    "model": MODEL,
                    "condition": condition,
                    **({"status": "api_error"} if v is None else {}),
                }
            )
            + "\n"
            for k, v in texts.items()
        )
    )
    return score_responses(manifest, f, suite="counting").records


@pytest.fixture(scope="module")
def small(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_dataset(smoke_dir, tmp_path_factory.mktemp("inspect") / "data")


@pytest.fixture(scope="module")
def native_log(small: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    samples = {s.sample_id: s for s in load_samples(small)}
    task = vidaudit_task("counting", str(small))
    model, sent = mock(task, lambda sid: canned_answer(samples[sid]))
    return run(task, model, tmp_path_factory.mktemp("ilog")), sent


def test_native_round_trip(native_log: tuple[Path, dict[str, str]], small: Path, tmp_path: Path) -> None:
    log_file, sent = native_log
    scored = import_responses("inspect", log_file, small / "manifest.jsonl")
    assert len(scored.records) == 5 and {r.condition for r in scored.records} == {"native/structured_trace"}
    assert comparable(scored.records) == comparable(
        own_scores(small / "manifest.jsonl", sent, "native/structured_trace", tmp_path)
    )
    # inside inspect, the scorer returned vidaudit's record and its scalar metrics
    log = read_eval_log(str(log_file))
    assert log.eval.task == "vidaudit/counting" and log.eval.model == MODEL
    by_id = {r.sample_id: r for r in scored.records}
    for s in log.samples:
        sc = s.scores["vidaudit_scorer"]
        rec = by_id[str(s.id)]
        assert sc.metadata["vidaudit_record"] == rec.model_dump(mode="json")
        assert sc.value["correct"] == float(rec.correct)
        f1 = rec.metrics["f1"]
        assert (sc.value["f1"] != sc.value["f1"]) if f1 is None else sc.value["f1"] == f1  # NaN where undefined
    metrics = {m.name: m for m in log.results.scores[0].metrics.values()}
    assert metrics["accuracy"].value == pytest.approx(sum(r.correct for r in scored.records) / 5)
    f1s = [r.metrics["f1"] for r in scored.records if r.metrics["f1"] is not None]
    f1_metric = next(sc for sc in log.results.scores if sc.name == "f1").metrics["vidaudit/defined_mean"].value
    assert f1_metric == pytest.approx(sum(f1s) / len(f1s))


def test_prompt_is_the_suites(small: Path) -> None:
    from vidaudit.core.types import Condition

    task = vidaudit_task("counting", str(small), prompt="role_prompting")
    suite = get_suite("counting")
    samples = {s.sample_id: s for s in load_samples(small)}
    for s in task.dataset:
        p = suite.render_prompt(samples[str(s.id)], Condition(prompt="role_prompting"))
        assert s.input[0].role == "system" and s.input[0].content == p.system
        assert s.input[1].content[-1].text == p.text and isinstance(s.input[1].content[0], ContentVideo)


def test_frames_match_vidaudits_own_run(small: Path, tmp_path: Path) -> None:
    """frames@1: the same frames, timestamps and scores as `vidaudit run` with the oracle."""
    from vidaudit.cli import app
    from vidaudit.score.stage import score_store

    r = CliRunner().invoke(
        app,
        [
            "run",
            "counting",
            "--data",
            str(small),
            "--model",
            "oracle",
            "--condition",
            "frames@1",
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert r.exit_code == 0, r.output
    own = score_store(tmp_path / "run")
    suite = get_suite("counting")
    samples = {s.sample_id: s for s in load_samples(small)}
    task = vidaudit_task("counting", str(small), condition="frames@1")
    first = next(iter(task.dataset))
    texts = [c.text for c in first.input[-1].content if getattr(c, "text", None)]
    assert texts[:2] == ["t=0.00s", "t=1.00s"]
    assert sum(isinstance(c, ContentImage) for c in first.input[-1].content) == 24
    model, _ = mock(task, lambda sid: suite.baselines.oracle_answer(samples[sid]))
    scored = import_responses("inspect", run(task, model, tmp_path / "log"), small)
    theirs = {r.sample_id: r for r in scored.records}
    for rec in own.records:
        t = theirs[rec.sample_id]
        assert (t.condition, t.correct, t.parse, t.metrics) == (rec.condition, rec.correct, rec.parse, rec.metrics)
        assert scored.frames[t.trial_id] == own.frames[rec.trial_id]  # the frames sent, index and time


def test_frame_mentions_use_the_frames_sent(small: Path, tmp_path: Path) -> None:
    samples = {s.sample_id: s for s in load_samples(small)}
    task = vidaudit_task("counting", str(small), condition="frames#8", timestamps=False)
    first = next(iter(task.dataset))
    assert not any(getattr(c, "text", "").startswith("t=") for c in first.input[-1].content)
    model, _ = mock(task, lambda sid: "- frame 3: an event (count 1)\n\\boxed{1}")
    scored = import_responses("inspect", run(task, model, tmp_path / "log"), small)
    for r in scored.records:
        times = [t for _, t in scored.frames[r.trial_id]]
        assert len(times) == 8 and r.metrics["reported_times"] == [pytest.approx(times[2])], r.sample_id
        assert r.condition == "frames#8/structured_trace/nots"
        assert samples[r.sample_id].video.duration_s > times[-1]


def test_errored_sample_is_an_api_error(small: Path, tmp_path: Path) -> None:
    samples = {s.sample_id: s for s in load_samples(small)}
    task = vidaudit_task("counting", str(small))
    down = next(iter(samples))
    model, sent = mock(task, lambda sid: canned_answer(samples[sid]), fail={down})
    scored = import_responses("inspect", run(task, model, tmp_path / "log", fail_on_error=False), small)
    bad = next(r for r in scored.records if r.sample_id == down)
    assert (bad.status, bad.correct, bad.metrics) == ("api_error", None, {})
    assert comparable(scored.records) == comparable(
        own_scores(small / "manifest.jsonl", {**sent, down: None}, "native/structured_trace", tmp_path)
    )


def test_budget_spent_thinking_is_truncated_not_a_wrong_answer(small: Path, tmp_path: Path) -> None:
    """A reasoning model that spends max_tokens thinking leaves an empty completion: `vidaudit run` records that
    as `truncated` (not scored), and so do the import and the scorer inside inspect (both scored it as an empty,
    wrong answer)."""
    samples = {s.sample_id: s for s in load_samples(small)}
    task = vidaudit_task("counting", str(small))
    spent = next(iter(samples))
    model, sent = mock(task, lambda sid: canned_answer(samples[sid]), thought_out={spent})
    log_file = run(task, model, tmp_path / "log")
    scored = import_responses("inspect", log_file, small)
    bad = next(r for r in scored.records if r.sample_id == spent)
    assert (bad.status, bad.correct, bad.metrics) == ("truncated", None, {})
    sent.pop(spent)
    others = [r for r in scored.records if r.sample_id != spent]
    assert comparable(others) == comparable(
        own_scores(small / "manifest.jsonl", sent, "native/structured_trace", tmp_path)
    )
    inside = next(s for s in read_eval_log(str(log_file)).samples if str(s.id) == spent).scores["vidaudit_scorer"]
    assert (
        inside.metadata["vidaudit_record"] == bad.model_dump(mode="json") and inside.explanation == "status truncated"
    )


def test_tasks_are_found_by_name_for_every_suite(small: Path, tmp_path: Path) -> None:
    """`vidaudit/<suite>` resolves through the inspect_ai entry point in a fresh process, the toy plugin suite
    included; a toy log is then refused against the counting manifest."""
    toy = tmp_path / "toy"
    r = run_py(
        f"from pathlib import Path\nfrom toysuite import generate_toy\ngenerate_toy(Path({str(toy)!r}))",
        env=plugin_env(),
    )
    assert r.returncode == 0, r.stderr
    code = textwrap.dedent(f"""
        from inspect_ai import eval
        from inspect_ai.model import ModelOutput, ModelUsage, get_model
        def answer(*args):
            out = ModelOutput.from_content(model="mockllm", content="\\\\boxed{{red}} \\\\boxed{{3}}")
            out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            return out
        model = get_model("mockllm/model", custom_outputs=answer)
        for name, data, logs in (("vidaudit/counting", {str(small)!r}, {str(tmp_path / "lc")!r}),
                                 ("vidaudit/toy", {str(tmp_path / "toy")!r}, {str(tmp_path / "lt")!r})):
            (log,) = eval(name, task_args={{"data": data}}, model=model, log_dir=logs, display="none")
            print(name, log.status, log.eval.task, len(log.samples))
    """)
    r = run_py(code, env=plugin_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "vidaudit/counting success vidaudit/counting 5" in r.stdout
    assert "vidaudit/toy success vidaudit/toy 6" in r.stdout
    (toy_log,) = (tmp_path / "lt").glob("*.eval")
    with pytest.raises(DataError, match="inspect log of suite toy, but .* holds counting samples"):
        import_responses("inspect", toy_log, small)
    (counting_log,) = (tmp_path / "lc").glob("*.eval")
    assert all(r.parse.value == 3 for r in import_responses("inspect", counting_log, small).records)


def test_refusals_name_what_they_found(native_log: tuple[Path, dict[str, str]], small: Path, tmp_path: Path) -> None:
    log_file, _ = native_log

    def rewritten(name: str, edit) -> Path:
        log = read_eval_log(str(log_file))
        edit(log)
        out = tmp_path / f"{name}.eval"
        write_eval_log(log, str(out))
        return out

    # a log written in a format version this inspect (and so vidaudit) does not know
    as_json = tmp_path / "log.json"
    write_eval_log(read_eval_log(str(log_file)), str(as_json), format="json")
    assert len(import_responses("inspect", as_json, small).records) == 5  # the JSON format reads too
    data = json.loads(as_json.read_text())
    data["version"] = 3
    (tmp_path / "v3.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match="inspect_ai log format version 3, which this vidaudit .* does not know"):
        import_responses("inspect", tmp_path / "v3.json", small)

    def unknown(log):
        log.samples[0].id = "counting-nope-1"

    with pytest.raises(DataError, match="1 of 5 rows .* lacks .*: counting-nope-1"):
        import_responses("inspect", rewritten("u", unknown), small)

    def meta(log):
        log.samples[1].metadata["vidaudit"]["format"] = 7

    with pytest.raises(DataError, match="vidaudit metadata format 7"):
        import_responses("inspect", rewritten("m", meta), small)
    (tmp_path / "junk.eval").write_bytes(b"not a zip")
    with pytest.raises(DataError, match="not readable as an inspect_ai eval log"):
        import_responses("inspect", tmp_path / "junk.eval", small)
