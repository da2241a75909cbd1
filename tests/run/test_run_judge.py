"""``vidaudit run --judge SPEC``: answers a suite cannot parse go to a judge model, through a real local
HTTP server speaking the OpenAI API; judge calls are stored stage calls (cached, resumed, costed), the
verdict reaches the suite's score and the viewer, and an unparseable verdict is never a pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from httpfake import FakeServer, Reply
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import Condition, ModelSpec, Presentation
from vidaudit.run.session import execute
from vidaudit.run.store.reader import StoreReader
from vidaudit.score.stage import score_store

SITE = Path(__file__).parents[1] / "plugin_site"
CHAT = "/v1/chat/completions"


def completion(text: str) -> dict:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "judge-1",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
    }


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(SITE))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-judge")
    from toysuite import generate_toy

    generate_toy(tmp_path / "data", seeds=1)
    return tmp_path


def _judged_run(root: Path, srv: FakeServer, *models: str, out: str = "run"):
    judge = ModelSpec.parse(f"openai:judge-1@{srv.url}/v1", temperature=0.0, max_tokens=64)
    return execute(
        root / "data",
        root / out,
        [ModelSpec.parse(m) for m in models],
        [Condition(presentation=Presentation.FRAMES, n_frames=2, prompt="plain")],
        suite="toy",
        judge=judge,
    )


def test_free_text_answers_are_judged_and_stored(toy: Path) -> None:
    with FakeServer() as srv:
        # three samples (red, green, blue) answered "the screen looks red": the judge says yes, no, prose
        srv.script(
            "POST",
            CHAT,
            Reply(json=completion('{"names_colour": true}')),
            Reply(json=completion('```json\n{"names_colour": false, "explanation": "says red"}\n```')),
            Reply(json=completion("I think it is probably fine, no issues.")),
        )
        res = _judged_run(toy, srv, "constant:the screen looks red", "oracle")
        assert res.summary is not None and not res.summary.stopped_early
        judged = srv.requests_to(CHAT)
        assert len(judged) == 3  # the oracle's boxed answers need no judge
        sent = [json.loads(r.body) for r in judged]
        assert all(
            s["model"] == "judge-1" and "the screen looks red" in s["messages"][-1]["content"][0]["text"] for s in sent
        )
        assert all(s["messages"][0] == {"role": "system", "content": "You grade answers."} for s in sent)

        with StoreReader(toy / "run") as store:
            stages = store.stage_calls()
        assert sorted({s.stage for s in stages}) == ["answer", "judge"]
        assert sum(s.stage == "judge" for s in stages) == 3

        scored = score_store(toy / "run")
        const = sorted((r for r in scored.records if r.model.startswith("constant")), key=lambda r: r.sample_id)
        methods = {r.sample_id: (r.parse.method if r.parse else None, r.correct) for r in const}
        verdicts = set(scored.judgements.values())
        assert len(scored.judgements) == 3 and any("names_colour" in v for v in verdicts)
        # exactly one true verdict, one false, one prose (unparseable -> never a pass)
        assert sorted(m for m, _ in methods.values()) == ["judge_unparseable", "judged", "judged"]
        assert sum(c is True for _, c in methods.values()) == 1
        assert all(c is False for m, c in methods.values() if m == "judge_unparseable")
        assert all(r.correct for r in scored.records if r.model == "oracle")

        from vidaudit.report.stage import viewer_trials

        facts = [dict(t.facts) for t in viewer_trials(scored) if t.model.startswith("constant")]
        assert facts and all("judge verdict" in f for f in facts)

        # resume: nothing is called again, judge included
        again = _judged_run(toy, srv, "constant:the screen looks red", "oracle")
        assert again.summary is not None and len(srv.requests_to(CHAT)) == 3


def test_a_failed_judge_call_is_retried_and_the_answer_is_not_repeated(toy: Path) -> None:
    with FakeServer() as srv:
        srv.script(
            "POST",
            CHAT,
            Reply(status=500, json={"error": {"message": "boom"}}),
            default=Reply(json=completion('{"names_colour": true}')),
        )
        res = _judged_run(toy, srv, "constant:red, I think")
        assert res.summary is not None and not res.summary.stopped_early
        scored = score_store(toy / "run")
        assert all(r.status == "ok" and r.correct for r in scored.records)
        with StoreReader(toy / "run") as store:
            stages = store.stage_calls()
        answers = [s for s in stages if s.stage == "answer"]
        assert len(answers) == 3  # one answer per sample, reused by the retried attempt
        assert sum(s.stage == "judge" and s.status.value != "ok" for s in stages) == 1


def test_the_judge_is_part_of_the_trial_id(toy: Path) -> None:
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Reply(json=completion('{"names_colour": true}')))
        _judged_run(toy, srv, "oracle", out="a")
        execute(
            toy / "data",
            toy / "b",
            [ModelSpec.parse("oracle")],
            [Condition(presentation=Presentation.FRAMES, n_frames=2, prompt="plain")],
            suite="toy",
        )
    ids = []
    for d in ("a", "b"):
        with StoreReader(toy / d) as store:
            ids.append({r.trial_id for r in store.trial_rows()})
    assert ids[0] and ids[0].isdisjoint(ids[1])


def test_a_suite_that_parses_its_answers_refuses_a_judge() -> None:
    # (the stress suite judges since its expectation probe: its parsed probes answer judge_prompt with None)
    from vidaudit.core.contract.suite import Suite
    from vidaudit.run.session import with_judge

    class Parsing(Suite):
        name = "parsing"

    with pytest.raises(ConfigError, match="asks no judge"):
        with_judge({}, ModelSpec.parse("oracle"), suite=Parsing(), samples={}, model_options=None)


def test_judge_refused_on_stress_data_whose_probes_parse_their_answers(tmp_path: Path) -> None:
    from vidaudit.suites.stress.camera_motion.generate import generate
    from vidaudit.suites.stress.probe import GenerateOptions

    generate(tmp_path / "data", GenerateOptions(seeds=1))
    with pytest.raises(ConfigError, match="asks no judge for these samples"):
        execute(
            tmp_path / "data",
            tmp_path / "run",
            [ModelSpec.parse("oracle")],
            [Condition(presentation=Presentation.FRAMES, n_frames=2, prompt="mcq")],
            suite="stress",
            judge=ModelSpec.parse("oracle"),
        )
    assert not (tmp_path / "run" / "store.sqlite").exists()


def test_free_text_human_answers_go_through_the_runs_judge_once(toy: Path) -> None:
    from vidaudit.core.manifest import load_samples
    from vidaudit.core.registry import get_suite
    from vidaudit.tools.humanstudy.judging import judge_for_run

    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Reply(json=completion('{"names_colour": true}')))
        _judged_run(toy, srv, "oracle")
        assert not srv.requests_to(CHAT)  # boxed answers: no judge call
        suite = get_suite("toy")
        sample = next(s for s in load_samples(toy / "data") if s.answer == "red")
        judge = judge_for_run(toy / "run")
        assert judge is not None
        ts = judge(suite, sample, "it is red")
        assert ts.correct is True and ts.parse is not None and ts.parse.method == "judged"
        assert judge(suite, sample, "\\boxed{red}").parse.method == "boxed"  # parsed, never judged
        again = judge_for_run(toy / "run")(suite, sample, "it is red")
        assert again.correct is True and len(srv.requests_to(CHAT)) == 1  # the verdict is kept
    execute(
        toy / "data",
        toy / "plain",
        [ModelSpec.parse("oracle")],
        [Condition(presentation=Presentation.FRAMES, n_frames=2, prompt="plain")],
        suite="toy",
    )
    assert judge_for_run(toy / "plain") is None
