"""Budgets matched by frames, calls or tokens (the paper's Table 8), with the local fake OpenAI-compatible server as
the backbone: the single pass (``chunks=1``, no R) is call-matched to the backbone end to end, the 12-frame framework
is frame-matched, ``memory_tokens=K`` caps G's memory, and the comparison table names the matching and a recipe."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from httpfake import FakeServer, Recorded, Reply
from test_faithful_framework_backbone import (
    CHAT,
    SMALL,
    Backbone,
    _framework_run,
    _images,
    _n_samples,
    _text,
    completion,
    data,  # noqa: F401 - the module's dataset fixture
)
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ModelSpec
from vidaudit.suites.faithful.framework.budget import TOL, budgets
from vidaudit.suites.faithful.framework.memory import HEADER, read, render, tokens_of, truncate
from vidaudit.suites.faithful.framework.spec import parse_spec


class Metered(Backbone):
    """The backbone, reporting input tokens as a real server would: 256 per image plus the text's tokens."""

    def __call__(self, rec: Recorded) -> Reply:
        reply = super().__call__(rec)
        body = dict(reply.json)
        body["usage"] = {
            "prompt_tokens": 256 * _images(rec) + math.ceil(len(_text(rec)) / 4),
            "completion_tokens": 10,
            "total_tokens": 0,
        }
        return Reply(json=body)


def _memory_of(text: str) -> str:
    """The trajectory memory inside a G request's text: its header, notes and trajectory lines."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line == HEADER)
    out = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith(("#", "{")):
            break
        out.append(line)
    return "\n".join(out)


def test_frames_calls_and_tokens_matching_with_recipes(data: Path, tmp_path: Path) -> None:  # noqa: F811
    from vidaudit.report.stage import report_run

    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Metered())
        bb = f"openai:bb@{srv.url}/v1"
        single = f"object-centric:chunks=1,chunk_frames=6,answer_frames=2,retrieval=all,{bb}"
        framed = f"object-centric:{SMALL},{bb}"
        capped = f"object-centric:{SMALL},retrieval=all,memory_tokens=60,{bb}"
        _framework_run(data, tmp_path / "run", srv, single, framed, capped, bb)
        extracts = [r for r in srv.requests_to(CHAT) if "List every object" in _text(r)]
        g_capped = [r for r in srv.requests_to(CHAT) if "Question:" in _text(r) and "truncated to 60" in _text(r)]
        report_run(tmp_path / "run")
    n = _n_samples(data)
    # the single pass extracts the whole 12 s video in one call of 6 frames
    assert sum(_images(r) == 6 and "from 0.00 s to 12.00 s" in _text(r) for r in extracts) == 1
    results = json.loads((tmp_path / "run" / "report" / "report.json").read_text())["results"]
    cond = "native@1/yes_no"
    sys_ = {s["model"]: s for s in results["budget"]["systems"] if s["condition"] == cond}
    assert sys_[single]["calls_per_question"] == pytest.approx((1 + n) / n)  # 1 + Q calls per video (H.12)
    assert sys_[framed]["calls_per_question"] == pytest.approx((2 + 2 * n) / n)  # M + 2Q
    assert sys_[bb]["calls_per_question"] == 1
    assert sys_[single]["frame_tokens_at_256_per_question"] == pytest.approx(256 * (6 + 2 * n) / n)
    comp = {c["framework"]: c for c in results["budget"]["comparisons"]}
    assert comp[single]["calls_h12_ratio"] == pytest.approx(n / (1 + n))
    assert "calls" in comp[single]["matched_by"] and "frames" not in comp[single]["matched_by"]
    assert "frames" in comp[framed]["matched_by"] and "calls" not in comp[framed]["matched_by"]
    for c in comp.values():  # matched_by is the rule applied to the figures beside it
        f, e = sys_[c["framework"]], sys_[c["end_to_end"]]
        for key, fig in (
            ("frames", "frames_used_per_question"),
            ("calls", "calls_per_question"),
            ("tokens", "input_tokens_per_question"),
        ):
            assert (key in c["matched_by"]) == (abs(e[fig] / f[fig] - 1) <= TOL + 1e-12)
        assert c["tokens_over"] == pytest.approx(f["input_tokens_per_question"] - e["input_tokens_per_question"])
        assert set(c["recipes"]) == {"frames", "calls", "tokens"} and "chunks=1" in c["recipes"]["calls"]
    assert comp[framed]["recipes"]["frames"] == "the end-to-end system under frames#12"
    # the capped memory: every G request of it says what was cut, and its memory fits in 60 estimated tokens
    # (or, when the header and the note alone exceed K, nothing but them: the floor)
    assert g_capped and all(tokens_of(m := _memory_of(_text(r))) <= 60 or "\n{" not in m for r in g_capped)
    md = (tmp_path / "run" / "report" / "report.md").read_text()
    assert "matched by" in md and "chunks=1" in md


def test_truncation_drops_states_the_question_does_not_use_first_oldest_first() -> None:
    trajs = [
        {
            "id": "T1",
            "category": "agent",
            "attributes": {"colour": "red"},
            "seen": [[0, 9]],
            "states": [
                [1.0, "action", "enters", None, None],
                [2.0, "action", "jumps", None, None],
                [3.0, "relation", "passes_to", None, "T2"],
                [8.0, "action", "jumps", None, None],
            ],
        },
        {
            "id": "T2",
            "category": "agent",
            "attributes": {"colour": "blue"},
            "seen": [[0, 9]],
            "states": [[4.0, "action", "receives", None, None], [5.0, "action", "exits", None, None]],
        },
    ]
    full = tokens_of(render(trajs, [], ()))
    same, dropped = truncate(trajs, [], (), "Does the red one pass before the blue one exits?", full)
    assert same == trajs and dropped == 0
    kept, dropped = truncate(trajs, [], (), "Does the red one pass before the blue one exits?", full - 5)
    left = [s[2] for t in kept for s in t["states"]]
    assert dropped >= 1 and "enters" not in left and "passes_to" in left and "exits" in left
    assert (
        tokens_of(
            render(
                kept, [], (f"memory truncated to {full - 5} tokens (token-matched budget): {dropped} states dropped",)
            )
        )
        <= full - 5
    )
    tiny, _ = truncate(trajs, [], (), "Does the red one pass?", 40)
    assert all(s[2] in ("passes_to",) for t in tiny for s in t["states"]) or not any(t["states"] for t in tiny)
    assert read(render(tiny, [], ())) == tiny


def test_the_budget_options_parse_and_refuse_bad_values() -> None:
    o = parse_spec(ModelSpec.parse("object-centric:chunks=1,memory_tokens=900,openai:gpt-4o"))
    assert (o.chunks, o.memory_tokens) == (1, 900)
    for bad in ("chunks=-1", "memory_tokens=-5", "chunks=x"):
        with pytest.raises(ConfigError):
            parse_spec(ModelSpec.parse(f"object-centric:{bad},openai:gpt-4o"))
    assert budgets(None)["comparisons"] == [] and "calls" in budgets(None)["rule"]


def _clip_frames(rec: Recorded) -> int:
    """Frames of the video clips a request carries (``video_url`` data URLs, decoded with PyAV)."""
    import base64
    import io

    import av

    n = 0
    for m in rec.json()["messages"]:
        for part in m["content"] if not isinstance(m["content"], str) else []:
            url = (part.get("video_url") or {}).get("url", "") if part.get("type") == "video_url" else ""
            if url.startswith("data:"):
                with av.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as c:
                    n += sum(1 for _ in c.decode(video=0))
    return n


class Crowded(Metered):
    """The metered backbone (a clip's frames metered like images) whose extraction lists six agents with ten
    states each: a memory of several hundred tokens, so that a cap on it can bring the framework down to an
    end-to-end budget."""

    def __call__(self, rec: Recorded) -> Reply:
        t = _text(rec)
        if "List every object that moves" not in t:
            reply = super().__call__(rec)
            body = dict(reply.json)
            body["usage"] = {**body["usage"], "prompt_tokens": body["usage"]["prompt_tokens"] + 256 * _clip_frames(rec)}
            return Reply(json=body)
        t0, t1 = map(float, re.search(r"from ([\d.]+) s to ([\d.]+) s", t).groups())
        objs = [
            {
                "id": f"o{k}",
                "category": "agent",
                "attributes": {"colour": c, "shape": "circle", "number": k + 1},
                "first_seen": t0,
                "last_seen": t1,
                "position": {"first": [0.1 * k, 0.5], "last": [0.1 * k, 0.5]},
                "states": [
                    {"t": round(t0 + (t1 - t0) * j / 10, 2), "kind": "action", "predicate": "jumps"} for j in range(10)
                ],
            }
            for k, c in enumerate(("red", "blue", "green", "yellow", "purple", "orange"))
        ]
        body = completion(json.dumps({"objects": objs}))
        body["usage"] = {
            "prompt_tokens": 256 * _images(rec) + math.ceil(len(t) / 4),
            "completion_tokens": 10,
            "total_tokens": 0,
        }
        return Reply(json=body)


def test_the_token_matched_budget_is_computed_and_matches_when_run(data: Path, tmp_path: Path) -> None:  # noqa: F811
    """The report computes K for memory_tokens=K from the run's measured tokens and each answer's memory size;
    running the spec it names gives the predicted tokens, within the 10% that makes it token-matched."""
    from vidaudit.core.types import Condition, Presentation
    from vidaudit.report.stage import report_run
    from vidaudit.run.session import execute

    cond = Condition(presentation=Presentation.NATIVE, fps=0.34, prompt="yes_no")  # 4 frames end to end

    def run(out: Path, *specs: str) -> dict:
        res = execute(data, out, [ModelSpec.parse(s, max_tokens=64) for s in specs], [cond], suite="faithful")
        assert res.summary is not None and not res.summary.stopped_early
        report_run(out)
        return json.loads((out / "report" / "report.json").read_text())["results"]["budget"]

    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Crowded())
        bb = f"openai:bb@{srv.url}/v1"
        framework = f"object-centric:chunk_s=6,chunk_frames=2,answer_frames=2,retrieval=all,{bb}"
        first = run(tmp_path / "run1", framework, bb)
        comp = next(c for c in first["comparisons"] if c["framework"] == framework)
        tm = comp["token_match"]
        sys1 = {s["model"]: s for s in first["systems"]}
        assert "tokens" not in comp["matched_by"]  # uncapped, the framework reads more than the backbone
        assert tm["spec"] == framework.replace(
            "object-centric:", f"object-centric:memory_tokens={tm['memory_tokens']},"
        )
        assert tm["memory_floor"] < tm["memory_tokens"] < tm["memory_size_max"]
        assert tm["predicted_input_tokens_per_question"] <= sys1[bb]["input_tokens_per_question"]
        assert tm["spec"] in comp["recipes"]["tokens"]
        second = run(tmp_path / "run2", tm["spec"], bb)
    sys2 = {s["model"]: s for s in second["systems"]}
    got = sys2[tm["spec"]]["input_tokens_per_question"]
    assert got == pytest.approx(tm["predicted_input_tokens_per_question"], rel=0.02)  # the prediction held
    comp2 = next(c for c in second["comparisons"] if c["framework"] == tm["spec"])
    assert "tokens" in comp2["matched_by"], (got, sys2[bb]["input_tokens_per_question"])
    assert comp2["token_match"]["note"].startswith("no cap") or comp2["token_match"]["memory_tokens"] is not None
