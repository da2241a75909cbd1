"""The schema comes from the dataset (issue 23): ``import strand`` data and open world records say ``open``, the
framework extracts in it without ``schema=open`` (the spec still overrides), and lexical retrieval and the
program answerer read questions in the dataset's vocabulary, not only the synthetic colour/shape words."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from httpfake import FakeServer
from test_faithful_framework_backbone import _text
from test_faithful_framework_open import CHAT, QUESTION, _ask, _server_reply, clip  # noqa: F401 - the clip fixture
from vidaudit.core.manifest import load_samples, read_dataset_info
from vidaudit.core.types import Request, Sample, TextPart, VideoRef
from vidaudit.suites.faithful.framework.answerer_program import ProgramAnswerer
from vidaudit.suites.faithful.framework.memory import render
from vidaudit.suites.faithful.framework.retrieval import lexical
from vidaudit.suites.faithful.framework.vocabulary import schema_of_record, stem, vocabulary_of_record
from vidaudit.suites.faithful.samples import schema_params
from vidaudit.suites.faithful.strand_import import import_strand
from vidaudit.suites.faithful.suite import FaithfulSuite
from vidaudit.suites.faithful.world import Entity, Fact, Observation, WorldRecord

#: a basketball memory in STRAND's open vocabulary: #1 blocks #10's shot at 5 s, #7 scores at 8 s, #10 shoots at 4 s
MEMORY = [
    {
        "id": "T1",
        "category": "person",
        "attributes": {"clothing": "white jersey", "number": 1},
        "seen": [[0, 10]],
        "states": [[5.0, "relation", "blocks", None, "T2"]],
    },
    {
        "id": "T2",
        "category": "person",
        "attributes": {"clothing": "red jersey", "number": 10},
        "seen": [[0, 10]],
        "states": [[4.0, "action", "shoots", None, None], [6.0, "action", "jumps", None, None]],
    },
    {
        "id": "T3",
        "category": "person",
        "attributes": {"clothing": "red jersey", "number": 7},
        "seen": [[0, 10]],
        "states": [[8.0, "action", "scores", None, None], [9.0, "action", "jumps", None, None]],
    },
    {
        "id": "T4",
        "category": "dog",
        "attributes": {"colour": "brown"},
        "seen": [[0, 10]],
        "states": [[2.0, "attribute", "door", "open", None], [3.0, "action", "barks", None, None]],
    },
]


def _answer(question: str, memory: list[dict] = MEMORY, vocabulary: dict | None = None) -> str:
    text = render(memory, []) + f"\nQuestion: {question}\nAnswer Yes or No."
    req = Request(trial_id="t", parts=(TextPart(text),), metadata={"vocabulary": vocabulary} if vocabulary else {})
    return asyncio.run(ProgramAnswerer().generate(req)).text.rsplit("Answer: ", 1)[-1]


@pytest.mark.parametrize(
    ("question", "gold"),
    [
        ("Does #1 block #10's shot before #7 scores?", "Yes"),
        ("Does #7 score before #1 blocks #10's shot?", "No"),
        ("Does #7 score after #1 blocks #10?", "Yes"),
        ("Does #1 block #7?", "No"),  # the relation's object is #10, not #7
        ("Does #10 shoot?", "Yes"),
        ("Does #7 shoot?", "No"),
        ("Has #10 already jumped when #7 scores?", "Yes"),
        ("Has #10 already shot when #1 blocks him?", "Yes"),
        ("Has #10 already jumped when #1 blocks him?", "No"),
        ("Does the dog bark before #10 shoots?", "Yes"),
        ("Does the dog bark after #7 does?", "No"),  # "does" repeats the first clause's verb
        ("Do exactly two people jump?", "Yes"),
        ("Do exactly three people jump?", "No"),
        ("Do exactly one dog bark?", "Yes"),
    ],
)
def test_the_program_answerer_reads_open_vocabulary_questions(question: str, gold: str) -> None:
    assert _answer(question) == gold


def test_a_question_with_no_known_verb_gets_no_answer() -> None:
    reply = _answer("Does #1 juggle before #7 scores?")
    assert "cannot read" in reply and "Yes" not in reply and "No" not in reply.split("(")[0]


def test_dataset_names_from_the_vocabulary_resolve_entities() -> None:
    """A name the world records use ("the keeper in red") denotes the trajectories whose attributes agree."""
    voc = {
        "names": {
            "the shooter": {"category": "person", "attributes": {"number": 10}},
            "the finisher": {"category": "person", "attributes": {"number": 7}},
        },
        "predicates": ["scores"],
    }
    assert _answer("Does the shooter jump before the finisher scores?", vocabulary=voc) == "Yes"
    assert _answer("Does the finisher jump before the shooter jumps?", vocabulary=voc) == "No"
    assert lexical("Does the shooter jump before the finisher scores?", MEMORY, voc) == ["T2", "T3"]


def test_lexical_retrieval_on_open_vocabulary_keeps_the_named_trajectories() -> None:
    assert lexical("Does #1 block #10's shot before #7 scores?", MEMORY) == ["T1", "T2", "T3"]
    assert lexical("Does the dog bark?", MEMORY) == ["T4"]
    assert lexical("Does the brown dog bark?", MEMORY) == ["T4"]
    assert lexical("Do exactly two people jump?", MEMORY) == ["T1", "T2", "T3"]
    assert lexical("Does the player in red jersey number 7 score?", MEMORY) == ["T3"]


@given(st.sampled_from(["pass", "shoot", "score", "dribble", "block", "receive", "jump"]))
def test_stems_agree_across_inflections(verb: str) -> None:
    third = verb + ("es" if verb.endswith("ss") else "s")
    forms = {verb, third, verb.rstrip("e") + "ed", verb.rstrip("e") + "ing"}
    assert len({stem(f) for f in forms}) == 1


def _open_world() -> WorldRecord:
    a = Entity(
        id="p24",
        category="person",
        attributes={"clothing": "white jersey", "number": 24},
        name="the player in white marked 24",
    )
    b = Entity(
        id="p22", category="person", attributes={"clothing": "blue jersey", "number": 22}, name="the player in blue"
    )
    facts = [
        Fact(id="f1", t=0.6, subject="p24", kind="action", predicate="dribbles"),
        Fact(id="f2", t=2.8, subject="p24", kind="relation", predicate="passes_to", object="p22"),
    ]
    return WorldRecord(
        video_id="v",
        source_video_id="v",
        duration_s=4.0,
        fps=10.0,
        domain="sports",
        entities=[a, b],
        facts=facts,
        key_timestamps=[0.6, 2.8],
        observations=[
            Observation(entity="p24", t_start=0.0, t_end=3.9),
            Observation(entity="p22", t_start=2.0, t_end=3.9),
        ],
    )


def test_world_records_say_which_schema_and_carry_their_vocabulary() -> None:
    w = _open_world()
    assert schema_of_record(w) == "open"
    voc = vocabulary_of_record(w)
    assert voc["categories"] == ["person"] and voc["predicates"] == ["dribbles", "passes_to"]
    assert voc["names"]["the player in blue"]["attributes"]["number"] == 22
    params = schema_params(w)
    assert params["schema"] == "open" and params["vocabulary"] == voc
    sample = Sample(
        sample_id="v-t1",
        suite="faithful",
        question="q?",
        answer="Yes",
        params={"role": "target", **params},
        video=VideoRef(path="videos/v.mp4", sha256=None, fps=10.0, width=128, height=96, n_frames=40, duration_s=4.0),
    )
    assert FaithfulSuite().request_metadata(sample) == {"role": "target", **params}
    # the synthetic worlds say nothing (their manifests and requests are unchanged)
    synth = w.model_copy(
        update={
            "entities": [
                Entity(id="red_circle_3", category="agent", attributes={"colour": "red", "number": 3}, name="x")
            ]
        }
    )
    assert schema_of_record(synth) == "synthetic" and schema_params(synth) == {}


STRAND = {
    "video_name": "0001_aaaaaaaaaaa.mp4",
    "questions": [QUESTION],
    "answers": ["Yes"],
    "sub-questions": [
        [
            "Does the player in the white jersey with number 24 dribble?",
            "Does the player in the white jersey with number 24 pass to the player in blue?",
        ]
    ],
    "sub-answers": [["Yes", "Yes"]],
}


def test_strand_data_runs_the_open_schema_without_the_spec_saying_so(
    tmp_path: Path,
    clip: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-faithful-vocabulary")
    rel, vids = tmp_path / "rel", tmp_path / "vids"
    rel.mkdir()
    vids.mkdir()
    (rel / "sample_0001.json").write_text(json.dumps(STRAND), encoding="utf-8")
    shutil.copy2(clip, vids / STRAND["video_name"])  # a symlink out of --videos is refused (docs/faithful.md)
    import_strand(rel, tmp_path / "data", videos=vids)
    assert read_dataset_info(tmp_path / "data")["schema"] == "open"
    samples = load_samples(tmp_path / "data")
    target = samples[0]
    meta = FaithfulSuite().request_metadata(target)
    assert meta["schema"] == "open" and all(s.params["schema"] == "open" for s in samples)

    def ask(spec: str) -> str:
        return _ask(spec, clip, target.question, meta)

    with FakeServer() as srv:
        srv.script("POST", CHAT, default=_server_reply)
        url = f"{srv.url}/v1"
        got = ask(f"object-centric:chunk_s=2,chunk_frames=4,answer_frames=2,openai:vlm@{url}")
        opened = [r for r in srv.requests_to(CHAT) if "changes or interacts" in _text(r)]
        n = len(srv.requests_to(CHAT))
        # the spec still overrides: schema=synthetic asks in the synthetic schema (and the records fail it)
        forced = ask(f"object-centric:chunk_s=2,chunk_frames=4,answer_frames=2,schema=synthetic,openai:vlm@{url}")
        synthetic = [r for r in srv.requests_to(CHAT)[n:] if '"category": "agent" or "item"' in _text(r)]
        # lexical retrieval + a model answerer on the dataset's words: the player named by number is retrieved
        lex = ask(f"object-centric:chunk_s=2,chunk_frames=4,answer_frames=2,retrieval=lexical,openai:vlm@{url}")
    assert len(opened) == 2 and got.splitlines()[0].startswith("[object-centric] chunks=2 invalid_chunks=0 ")
    assert got.rstrip().endswith("Answer: Yes")
    assert len(synthetic) == 2 and "invalid_chunks=2" in forced.splitlines()[0]
    assert "retrieved=T1=person#24" in lex.splitlines()[0] and lex.rstrip().endswith("Answer: Yes")


def test_the_summarise_aggregator_follows_the_dataset_schema() -> None:
    from test_faithful_framework_open import _records
    from vidaudit.suites.faithful.framework.schema import InvalidExtraction, parse_chunk
    from vidaudit.suites.faithful.framework.summarise import parse_trajectories, prompt

    reply = json.dumps(
        {
            "trajectories": [
                {
                    "id": "T1",
                    "category": "person",
                    "attributes": {"clothing": "white jersey", "number": 24},
                    "seen": [[0.1, 3.9]],
                    "states": [[2.8, "relation", "passes_to", None, "T2"]],
                },
                {"id": "T2", "category": "person", "attributes": {"number": 22}, "seen": [[2.5, 3.9]], "states": []},
            ]
        }
    )
    got = parse_trajectories(reply, 4.0, "open")
    assert got[0]["attributes"] == {"clothing": "white jersey", "number": 24}
    with pytest.raises(InvalidExtraction, match="category"):
        parse_trajectories(reply, 4.0)  # the synthetic memory: agents and items
    chunk = parse_chunk(json.dumps(_records(0.0)), 0.0, 2.0, "open")
    assert '"category": "a short noun"' in prompt([(0, 0.0, 2.0, chunk)], "open")
    assert '"category": "agent" or "item"' in prompt([(0, 0.0, 2.0, chunk)])


def test_caption_retrieval_on_real_video_questions_uses_content_stems() -> None:
    from vidaudit.suites.faithful.framework import captions

    caps = [
        {"id": "C1", "t": [0, 15], "text": "Player 10 shoots from the left wing."},
        {"id": "C2", "t": [15, 30], "text": "A dog runs across the pitch."},
    ]
    assert captions.lexical("Does #1 block #10's shot before #7 scores?", caps) == ["C1"]  # "10", "shot"
    assert captions.lexical("Does the dog run?", caps) == ["C2"]
    assert captions.lexical("Does the red circle marked 3 light up?", caps) == []  # synthetic words: none here
