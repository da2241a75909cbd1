"""The framework on a real video with STRAND's open vocabulary (issue 23): ``object-centric:schema=open,openai:...``
against a local OpenAI-compatible server that answers extraction with open-vocabulary records (people with
free-text attributes, free predicates), on a small real H.264 video. The aggregator links the two chunks'
sightings of one player, and the answer is read from that linked trajectory; with linking off it is not there.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import numpy as np
import pytest

from httpfake import FakeServer, Recorded, Reply
from test_faithful_framework_backbone import _text, completion
from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.types import ModelSpec, Request, TextPart, VideoPart
from vidaudit.suites.faithful.framework.composite import ObjectCentricAdapter
from vidaudit.suites.faithful.framework.memory import read
from vidaudit.suites.faithful.framework.offline_eval import _MemoCall
from vidaudit.suites.faithful.framework.schema import InvalidExtraction, parse_chunk
from vidaudit.suites.faithful.framework.spec import parse_spec
from vidaudit.video.encode import write_video
from vidaudit.video.probe import probe

CHAT = "/v1/chat/completions"
QUESTION = "Does the player in the white jersey with number 24 dribble before passing to the player in blue?"


def _records(t0: float) -> dict:
    """STRAND-style open-vocabulary records of a chunk: the player in white (number 24) dribbles in the first
    chunk and passes to the player in blue (number 22) in the second; local ids differ across chunks."""
    white = {
        "category": "person",
        "attributes": {"clothing": "White jersey", "number": 24, "role": "forward"},
        "position": {"first": [0.3, 0.5], "last": [0.4, 0.5]},
    }
    if t0 < 1.0:
        return {
            "objects": [
                {
                    "id": "p1",
                    **white,
                    "first_seen": 0.1,
                    "last_seen": 1.9,
                    "states": [
                        {"t": 0.6, "kind": "action", "predicate": "dribbles"},
                        {"t": 1.2, "kind": "attribute", "predicate": "holding", "value": "ball"},
                    ],
                }
            ]
        }
    return {
        "objects": [
            {
                "id": "q7",
                **white,
                "attributes": {**white["attributes"], "clothing": "white  jersey"},
                "position": {"first": [0.42, 0.5], "last": [0.5, 0.5]},
                "first_seen": 2.0,
                "last_seen": 3.9,
                "states": [{"t": 2.8, "kind": "relation", "predicate": "passes_to", "object": "q8"}],
            },
            {
                "id": "q8",
                "category": "person",
                "attributes": {"clothing": "blue jersey", "number": 22},
                "first_seen": 2.5,
                "last_seen": 3.9,
                "position": {"first": [0.8, 0.5], "last": [0.7, 0.5]},
                "states": [{"t": 2.9, "kind": "action", "predicate": "receives"}],
            },
        ]
    }


def _server_reply(rec: Recorded) -> Reply:
    t = _text(rec)
    if "List every object that moves, changes or interacts" in t:
        t0 = float(re.search(r"from ([\d.]+) s to", t).group(1))
        return Reply(json=completion(json.dumps(_records(t0))))
    if "JSON list of the ids" in t:
        return Reply(json=completion(json.dumps(sorted(set(re.findall(r'"id":"(T\d+)"', t))))))
    # the answerer: Yes only when one trajectory holds both the dribble and the pass (a linked identity)
    linked = any({"dribbles", "passes_to"} <= {s[2] for s in tr["states"]} for tr in read(t))
    return Reply(json=completion("Answer: Yes" if linked else "Answer: No"))


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real 4 s H.264 clip (two 2 s chunks): a white disc moving right, a blue one entering."""
    frames = []
    for i in range(40):
        f = np.full((96, 128, 3), 40, np.uint8)
        x = 30 + i * 2
        f[40:56, x : x + 16] = 255
        if i >= 25:
            f[40:56, 100:116] = (40, 60, 220)
        frames.append(f)
    path = tmp_path_factory.mktemp("open") / "clip.mp4"
    write_video(path, frames, 10.0, 128, 96)
    return path


def _ask(spec: str, clip: Path, question: str = QUESTION, metadata: dict | None = None) -> str:
    """The framework's reply to one question about the clip (``metadata``: the request's, e.g. the dataset's schema)."""
    info = probe(clip)
    video = VideoPart(
        path=str(clip),
        sha256=sha256_file(clip),
        fps=1.0,
        duration_s=info.duration_s,
        n_frames=info.n_frames,
        source_fps=info.fps,
    )
    request = Request(
        trial_id="q1",
        parts=(video, TextPart(f"Question: {question}\nAnswer Yes or No.")),
        metadata=dict(metadata or {}),
    )

    async def go() -> str:
        adapter = ObjectCentricAdapter(ModelSpec.parse(spec, max_tokens=64))
        try:
            return (await adapter.run(request, _MemoCall())).text
        finally:
            await adapter.aclose()

    return asyncio.run(go())


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-faithful-open")


def test_open_vocabulary_records_are_linked_and_answered_from_the_trajectory(clip: Path) -> None:
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=_server_reply)
        url = f"{srv.url}/v1"
        opts = "chunk_s=2,chunk_frames=4,answer_frames=2,schema=open"
        on = _ask(f"object-centric:{opts},openai:vlm@{url}", clip)
        extracts = [r for r in srv.requests_to(CHAT) if "changes or interacts" in _text(r)]
        answers = [r for r in srv.requests_to(CHAT) if "Question:" in _text(r) and "JSON list" not in _text(r)]
        off = _ask(f"object-centric:{opts},linking=off,openai:vlm@{url}", clip)
    assert on.splitlines()[0].startswith("[object-centric] chunks=2 invalid_chunks=0 trajectories=2 ")
    assert on.rstrip().endswith("Answer: Yes")
    assert len(extracts) == 2 and all(
        sum(
            p.get("type") == "image_url"
            for m in r.json()["messages"]
            if not isinstance(m["content"], str)
            for p in m["content"]
        )
        == 4
        for r in extracts
    )
    memory = read(_text(answers[0]))
    player = next(t for t in memory if t["attributes"].get("number") == 24)
    assert player["category"] == "person" and len(player["seen"]) == 2  # one identity over both chunks
    assert [s[2] for s in player["states"]] == ["dribbles", "holding", "passes_to"]
    passee = next(t for t in memory if t["attributes"].get("number") == 22)
    assert player["states"][-1][4] == passee["id"]  # the relation points at a trajectory
    assert "trajectories=3 " in off.splitlines()[0] and off.rstrip().endswith("Answer: No")


def test_the_open_schema_accepts_free_vocabulary_and_still_refuses_broken_records() -> None:
    ok = parse_chunk(json.dumps(_records(0.0)), 0.0, 2.0, "open")
    assert ok.objects[0].attributes["clothing"] == "White jersey"
    with pytest.raises(InvalidExtraction, match="category"):
        parse_chunk(json.dumps(_records(0.0)), 0.0, 2.0)  # the synthetic schema: no clothing
    bad = _records(2.0)
    bad["objects"][0]["states"][0]["object"] = "nobody"
    with pytest.raises(InvalidExtraction, match="unknown object"):
        parse_chunk(json.dumps(bad), 2.0, 4.0, "open")
    with pytest.raises(ConfigError, match="schema=open"):
        parse_spec(ModelSpec.parse("object-centric:schema=open,offline"))
