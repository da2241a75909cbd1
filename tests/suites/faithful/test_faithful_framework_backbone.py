"""The framework and the caption-only reference with a model backbone: a real local HTTP server speaking the
OpenAI API (tests/httpfake.py) answers every stage. Checks the caption-only reference makes one caption per
video, the per-stage accounting and the budget table in report.json, the budget-matching rule against the
backbone end to end, and the LLM-summarise and dense-captions ablations (and their offline refusal)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from httpfake import FakeServer, Recorded, Reply
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import Condition, ModelSpec, Presentation
from vidaudit.run.session import execute
from vidaudit.run.store.reader import StoreReader
from vidaudit.score.stage import score_store

CHAT = "/v1/chat/completions"
NATIVE = Condition(presentation=Presentation.NATIVE, fps=1.0, prompt="yes_no")
SMALL = "chunk_s=6,chunk_frames=5,answer_frames=2"  # a 12 s video: 2 chunks; 2 x 5 + 2 = 12 frames per question
WIDE = "chunk_s=6,chunk_frames=5,answer_frames=20"  # 30 frames per question: native@1 (12 frames) does not match it


def completion(text: str) -> dict:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "bb",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }


def _text(rec: Recorded) -> str:
    out = []
    for m in rec.json()["messages"]:
        c = m["content"]
        out += [c] if isinstance(c, str) else [p.get("text", "") for p in c if p.get("type") == "text"]
    return "\n".join(out)


def _images(rec: Recorded) -> int:
    return sum(
        1
        for m in rec.json()["messages"]
        if not isinstance(m["content"], str)
        for p in m["content"]
        if p.get("type") == "image_url"
    )


class Backbone:
    """Replies by the stage the prompt asks for; ``summarise`` is the reply to the summarise stage."""

    def __init__(self, summarise: str = "") -> None:
        self.summarise = summarise

    def __call__(self, rec: Recorded) -> Reply:
        t = _text(rec)
        if "[summarise v" in t:
            return Reply(json=completion(self.summarise))
        if "[caption v" in t:
            return Reply(json=completion("a red circle moves right; the ball is passed"))
        if "List every object that moves" in t:
            t0, t1 = map(float, re.search(r"from ([\d.]+) s to ([\d.]+) s", t).groups())
            obj = {
                "id": "o1",
                "category": "agent",
                "attributes": {"colour": "red", "shape": "circle"},
                "first_seen": t0,
                "last_seen": t0 + 1,
                "position": {"first": [0.2, 0.5], "last": [0.3, 0.5]},
                "states": [{"t": t0, "kind": "action", "predicate": "enters"}],
            }
            return Reply(json=completion(json.dumps({"objects": [obj]})))
        if "Describe this video" in t:
            return Reply(json=completion("a red circle and a blue square"))
        if "JSON list of the ids" in t:
            return Reply(json=completion('["T1"]' if '"T1"' in t else '["C1"]'))
        return Reply(json=completion("Answer: Yes"))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from vidaudit.suites.faithful.generate import generate, specs_for

    out = tmp_path_factory.mktemp("fb") / "data"
    # the smoke worlds before issue 23 (12 s: the chunk and frame counts below are for a 12 s video)
    generate(
        specs_for(
            "smoke", seeds=1, max_targets=2, agents=5, events=8, occlusions=1, lookalikes=1, repeats=0, duration_s=12.0
        ),
        out,
        workers=1,
    )
    return out


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-faithful")


def _n_samples(data: Path) -> int:
    return sum(1 for line in (data / "manifest.jsonl").read_text().splitlines() if line.strip())


def test_caption_only_captions_each_video_once_and_reuses_it(data: Path, tmp_path: Path) -> None:
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Backbone())
        url = f"{srv.url}/v1"
        spec = f"caption-only:captioner=openai:cap@{url},openai:ans@{url}"
        res = execute(
            data,
            tmp_path / "run",
            [ModelSpec.parse(spec, max_tokens=64)],
            [Condition(presentation=Presentation.FRAMES, n_frames=2, prompt="yes_no")],
            suite="faithful",
        )
        assert res.summary is not None and not res.summary.stopped_early
        sent = srv.requests_to(CHAT)
        caps = [r for r in sent if r.json()["model"] == "cap"]
        answers = [r for r in sent if r.json()["model"] == "ans"]
        n = _n_samples(data)
        assert len(caps) == 1 and _images(caps[0]) == 2  # one video: one caption, with the condition's frames
        assert len(answers) == n
        assert all(_images(r) == 0 and "a red circle and a blue square" in _text(r) for r in answers)
        with StoreReader(tmp_path / "run") as store:
            stages = store.stage_calls()
        assert sum(s.stage == "caption" for s in stages) == 1 and sum(s.stage == "answer" for s in stages) == n
        scored = score_store(tmp_path / "run")
        use = scored.stage_usage[spec.replace("caption-only:", "caption-only:", 1)]
        block = next(iter(use.values()))
        assert block["stages"]["caption"]["uses"] == n and block["stages"]["caption"]["calls"] == 1


def _framework_run(data: Path, out: Path, srv: FakeServer, *specs: str) -> None:
    res = execute(data, out, [ModelSpec.parse(s, max_tokens=64) for s in specs], [NATIVE], suite="faithful")
    assert res.summary is not None and not res.summary.stopped_early


def test_per_stage_accounting_and_budget_matching(data: Path, tmp_path: Path) -> None:
    from vidaudit.report.stage import report_run

    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Backbone())
        bb = f"openai:bb@{srv.url}/v1"
        oc, wide = f"object-centric:{SMALL},{bb}", f"object-centric:{WIDE},{bb}"
        _framework_run(data, tmp_path / "run", srv, oc, wide, bb)
        n = _n_samples(data)
        extract = [r for r in srv.requests_to(CHAT) if "List every object" in _text(r)]
        assert len(extract) == 2 and all(_images(r) == 5 for r in extract)  # built once for the video, both specs
        report_run(tmp_path / "run")
    results = json.loads((tmp_path / "run" / "report" / "report.json").read_text())["results"]
    cond = "native@1/yes_no"
    usage = results["stage_usage"][oc][cond]
    assert usage["n_trials"] == n
    st = usage["stages"]
    assert st["extract"] == {
        "uses": 2 * n,
        "calls": 2,
        "frames_used": 10 * n,
        "frames_sent": 10,
        "input_tokens_used": 200 * n,
        "output_tokens_used": 20 * n,
        "input_tokens_sent": 200,
        "output_tokens_sent": 20,
    }
    assert st["retrieve"]["uses"] == n and 1 <= st["retrieve"]["calls"] <= n and st["retrieve"]["frames_sent"] == 0
    assert st["answer"]["uses"] == n and st["answer"]["frames_used"] == 2 * n
    budget = {(s["model"], s["condition"]): s for s in results["budget"]["systems"]}
    f = budget[(oc, cond)]
    assert f["frames_used_per_question"] == 12 and f["calls_used_per_question"] == 4
    assert f["calls_spent_per_question"] == pytest.approx((2 + st["retrieve"]["calls"] + st["answer"]["calls"]) / n)
    assert budget[(bb, cond)]["frames_used_per_question"] == 12 and budget[(bb, cond)]["calls_used_per_question"] == 1
    comp = {c["framework"]: c for c in results["budget"]["comparisons"]}
    assert set(comp) == {oc, wide} and {c["end_to_end"] for c in comp.values()} == {bb}
    assert comp[oc]["budget_matched"] and comp[oc]["frames_ratio"] == pytest.approx(1.0)
    assert not comp[wide]["budget_matched"] and comp[wide]["frames_ratio"] == pytest.approx(12 / 30)
    assert comp[wide]["matching_condition"] == "frames#30"
    assert comp[oc]["calls_ratio"] == pytest.approx(1 / 4)
    md = (tmp_path / "run" / "report" / "report.md").read_text()
    assert "Budget per question" in md and "Per-stage accounting" in md


def test_llm_summarise_aggregator_is_a_stored_stage_and_invalid_output_is_an_outcome(
    data: Path, tmp_path: Path
) -> None:
    good = json.dumps(
        {
            "trajectories": [
                {
                    "id": "T1",
                    "category": "agent",
                    "attributes": {"colour": "red", "shape": "circle"},
                    "seen": [[0, 7]],
                    "states": [[0.0, "action", "enters", None, None]],
                }
            ]
        }
    )
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Backbone(summarise=good))
        oc = f"object-centric:{SMALL},aggregator=summarise,openai:bb@{srv.url}/v1"
        _framework_run(data, tmp_path / "ok", srv, oc)
        summ = [r for r in srv.requests_to(CHAT) if "[summarise v" in _text(r)]
        assert len(summ) == 1 and "Question" not in _text(summ[0])  # once per video, query-agnostic
        scored = score_store(tmp_path / "ok")
        assert all("trajectories=1" in t and "T1=red/circle/None" in t for t in scored.raw_text.values())
        answers = [r for r in srv.requests_to(CHAT) if "Answer" in _text(r) and '"states"' in _text(r)]
        assert answers and all('"id":"T1"' in _text(r) for r in answers)
        assert scored.stage_usage[oc]["native@1/yes_no"]["stages"]["summarise"]["calls"] == 1

        srv.clear()
        srv.script("POST", CHAT, default=Backbone(summarise='{"trajectories": [{"id": "T1"}]}'))
        _framework_run(data, tmp_path / "bad", srv, oc.replace("@", "@", 1))
        bad = score_store(tmp_path / "bad")
        assert all("trajectories=0" in t and "note=summarise_invalid" in t for t in bad.raw_text.values())
        answers = [r for r in srv.requests_to(CHAT) if "Object trajectories of the video" in _text(r)]
        assert answers and all("summarise stage's reply was invalid" in _text(r) for r in answers)


def test_dense_captions_replace_states_and_retrieval_is_lexical_over_captions(data: Path, tmp_path: Path) -> None:
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Backbone())
        oc = f"object-centric:{SMALL},states=captions,retrieval=lexical,openai:bb@{srv.url}/v1"
        _framework_run(data, tmp_path / "run", srv, oc)
        sent = srv.requests_to(CHAT)
        caps = [r for r in sent if "[caption v" in _text(r)]
        assert len(caps) == 2 and all("Question" not in _text(r) and _images(r) == 5 for r in caps)
        answers = [r for r in sent if r not in caps]
        assert answers and all("Captions of the video's chunks" in _text(r) for r in answers)  # no retrieve call
        assert not any('"states"' in _text(r) for r in answers)
        scored = score_store(tmp_path / "run")
        for sid, text in scored.raw_text.items():
            assert "captions=2" in text
        # a question naming red (the captions' colour) gets both captions, one naming no caption word gets none
        from vidaudit.suites.faithful.framework.captions import lexical

        caps_ = [{"id": "C1", "text": "a red circle moves"}, {"id": "C2", "text": "a blue square"}]
        assert lexical("Does the red circle enter before the blue square?", caps_) == ["C1", "C2"]
        assert lexical("Is the green hexagon lit?", caps_) == []


@pytest.mark.parametrize("opt", ["aggregator=summarise", "states=captions"])
def test_model_ablations_refuse_the_offline_backbone(opt: str) -> None:
    from vidaudit.suites.faithful.framework.spec import parse_spec

    with pytest.raises(ConfigError, match="offline backbone has none"):
        parse_spec(ModelSpec.parse(f"object-centric:{opt},offline"))
    with pytest.raises(ConfigError, match="states=captions has no trajectories"):
        parse_spec(ModelSpec.parse("object-centric:states=captions,order=shuffled,openai:gpt-4o"))


def test_each_stage_can_run_on_its_own_model(data: Path, tmp_path: Path) -> None:
    """The paper's Qwen configuration: E, R and G on three different models (extract=, retrieve=, answer=)."""
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Backbone())
        url = f"{srv.url}/v1"
        oc = (
            f"object-centric:{SMALL},extract=openai:ex@{url},retrieve=openai:rt@{url},answer=openai:an@{url},"
            f"openai:bb@{url}"
        )
        _framework_run(data, tmp_path / "run", srv, oc)
        sent = srv.requests_to(CHAT)
        by_model: dict[str, list[Recorded]] = {}
        for r in sent:
            by_model.setdefault(r.json()["model"], []).append(r)
        # one answer call per distinct question (the store caches a repeated question's identical request)
        n_questions = len(
            {
                json.loads(line)["question"]
                for line in (data / "manifest.jsonl").read_text().splitlines()
                if line.strip()
            }
        )
        assert set(by_model) == {"ex", "rt", "an"}  # the backbone itself runs no stage
        assert len(by_model["ex"]) == 2 and all("List every object" in _text(r) for r in by_model["ex"])
        assert all("JSON list of the ids" in _text(r) for r in by_model["rt"])
        assert len(by_model["an"]) == n_questions and all("Question:" in _text(r) for r in by_model["an"])
    with StoreReader(tmp_path / "run") as store:
        stages = {(s.stage, s.model.name) for s in store.stage_calls()}
    assert stages == {("extract", "ex"), ("retrieve", "rt"), ("answer", "an")}  # each stored under its own model
    # a stage model partly given falls back to the backbone for the others
    from vidaudit.suites.faithful.framework.spec import parse_spec

    o = parse_spec(ModelSpec.parse("object-centric:answer=openai:big,openai:small"))
    assert (o.stage_spec("extract"), o.stage_spec("retrieve"), o.stage_spec("answer")) == (
        "openai:small",
        "openai:small",
        "openai:big",
    )
    for bad in (
        "object-centric:answer=openai:big,offline",
        "object-centric:extract=offline,openai:x",
        "object-centric:retrieve=object-centric:offline,openai:x",
    ):
        with pytest.raises(ConfigError):
            parse_spec(ModelSpec.parse(bad))
