"""Budgets matched by frames, calls or tokens (the paper's Table 8), with the local fake OpenAI-compatible server as
the backbone: the single pass (``chunks=1``, no R) is call-matched to the backbone end to end, the 12-frame framework
is frame-matched, ``memory_tokens=K`` caps G's memory, and the comparison table names the matching and a recipe."""

from __future__ import annotations

import json
import math
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
        body["usage"] = {"prompt_tokens": 256 * _images(rec) + math.ceil(len(_text(rec)) / 4),
                         "completion_tokens": 10, "total_tokens": 0}
        return Reply(json=body)


def _memory_of(text: str) -> str:
    """The trajectory memory inside a G request's text: its header, notes and trajectory lines."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line == HEADER)
    out = [lines[start]]
    for line in lines[start + 1:]:
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
    assert sys_[single]["calls_per_question"] == pytest.approx((1 + n) / n)      # 1 + Q calls per video (H.12)
    assert sys_[framed]["calls_per_question"] == pytest.approx((2 + 2 * n) / n)   # M + 2Q
    assert sys_[bb]["calls_per_question"] == 1
    assert sys_[single]["frame_tokens_at_256_per_question"] == pytest.approx(256 * (6 + 2 * n) / n)
    comp = {c["framework"]: c for c in results["budget"]["comparisons"]}
    assert comp[single]["calls_h12_ratio"] == pytest.approx(n / (1 + n))
    assert "calls" in comp[single]["matched_by"] and "frames" not in comp[single]["matched_by"]
    assert "frames" in comp[framed]["matched_by"] and "calls" not in comp[framed]["matched_by"]
    for c in comp.values():   # matched_by is the rule applied to the figures beside it
        f, e = sys_[c["framework"]], sys_[c["end_to_end"]]
        for key, fig in (("frames", "frames_used_per_question"), ("calls", "calls_per_question"),
                         ("tokens", "input_tokens_per_question")):
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
    trajs = [{"id": "T1", "category": "agent", "attributes": {"colour": "red"}, "seen": [[0, 9]],
              "states": [[1.0, "action", "enters", None, None], [2.0, "action", "jumps", None, None],
                         [3.0, "relation", "passes_to", None, "T2"], [8.0, "action", "jumps", None, None]]},
             {"id": "T2", "category": "agent", "attributes": {"colour": "blue"}, "seen": [[0, 9]],
              "states": [[4.0, "action", "receives", None, None], [5.0, "action", "exits", None, None]]}]
    full = tokens_of(render(trajs, [], ()))
    same, dropped = truncate(trajs, [], (), "Does the red one pass before the blue one exits?", full)
    assert same == trajs and dropped == 0
    kept, dropped = truncate(trajs, [], (), "Does the red one pass before the blue one exits?", full - 5)
    left = [s[2] for t in kept for s in t["states"]]
    assert dropped >= 1 and "enters" not in left and "passes_to" in left and "exits" in left
    assert tokens_of(render(kept, [], (f"memory truncated to {full - 5} tokens (token-matched budget): "
                                       f"{dropped} states dropped",))) <= full - 5
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
