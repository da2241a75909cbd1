"""The object-centric framework's parts on constructed cases: the aggregator, the schema, chunks, the spec,
the question grammar's inverse, retrieval scoring and the blind wrappers' request rewriting."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.errors import ConfigError
from vidaudit.core.registry import get_suite
from vidaudit.core.types import ImagePart, ModelSpec, Request, TextPart
from vidaudit.models.base import ModelCallError
from vidaudit.models.blind import text_only
from vidaudit.suites.faithful.framework.aggregator import AggregatorSettings, aggregate, similarity
from vidaudit.suites.faithful.framework.chunks import plan_chunks
from vidaudit.suites.faithful.framework.memory import read, render, shuffle_times
from vidaudit.suites.faithful.framework.query import answer, parse_question
from vidaudit.suites.faithful.framework.retrieval_eval import gold_entities, precision_recall, retrieved_of
from vidaudit.suites.faithful.framework.schema import ChunkExtraction, InvalidExtraction, parse_chunk
from vidaudit.suites.faithful.framework.spec import parse_spec
from vidaudit.suites.faithful.majority import MajorityAdapter


@pytest.fixture(scope="module", params=[0, 1, 2])
def faithful_world(request):
    """A built (not rendered) scene with look-alikes and occlusions: its record, targets and sub-questions."""
    from vidaudit.suites.faithful.build import build_scene
    from vidaudit.suites.faithful.scene import SceneSpec

    b = build_scene(
        SceneSpec(
            video_id=f"w{request.param}",
            seed=request.param,
            agents=5,
            events=8,
            occlusions=1,
            lookalikes=1,
            max_targets=6,
        )
    )
    return b.sim.world, b.targets, b.subs


@pytest.fixture(scope="module")
def faithful_samples():
    from vidaudit.core.types import Sample, VideoRef

    video = VideoRef(path="v.mp4", sha256=None, fps=10, width=96, height=96, n_frames=10, duration_s=1)
    return [
        Sample(sample_id=f"s{i}", suite="faithful", params={"role": role}, question="Q?", answer=ans, video=video)
        for i, (role, ans) in enumerate(
            [("target", "Yes"), ("target", "No"), ("sub", "No"), ("sub", "No"), ("sub", "Yes")]
        )
    ]


def _obj(
    oid: str, t0: float, t1: float, pos0=(0.5, 0.5), pos1=None, colour="red", shape="circle", number=None, states=()
) -> dict:
    return {
        "id": oid,
        "category": "agent",
        "attributes": {"colour": colour, "shape": shape, "size": "small", "number": number},
        "first_seen": t0,
        "last_seen": t1,
        "position": {"first": list(pos0), "last": list(pos1 or pos0)},
        "states": list(states),
    }


def _chunk(*objs: dict) -> ChunkExtraction:
    return ChunkExtraction.model_validate({"objects": list(objs)})


# --------------------------------------------------------------------------- aggregator


def test_an_occlusion_shorter_than_dt_max_is_bridged_and_a_longer_one_splits_the_entity() -> None:
    # seen in chunk 0 until 4 s, hidden, seen again in chunk 2 (chunks of 5 s)
    short = [(0, _chunk(_obj("a", 0, 4.0))), (2, _chunk(_obj("b", 10.0, 14.9)))]
    assert len(aggregate(short, AggregatorSettings(dt_max=15))) == 1
    assert len(aggregate(short, AggregatorSettings(dt_max=5))) == 2  # 6 s gap > 5 s: two entities
    long = [(0, _chunk(_obj("a", 0, 4.0))), (4, _chunk(_obj("b", 20.0, 24.9)))]
    trajs = aggregate(long)
    assert len(trajs) == 2 and all(len(t.members) == 1 for t in trajs)  # kept as singletons, not dropped


def test_lookalikes_are_matched_one_to_one_by_position() -> None:
    c0 = _chunk(_obj("a", 0, 4.9, (0.2, 0.2)), _obj("b", 0, 4.9, (0.8, 0.8)))
    c1 = _chunk(_obj("x", 5, 9.9, (0.78, 0.8)), _obj("y", 5, 9.9, (0.22, 0.2)))
    trajs = aggregate([(0, c0), (1, c1)])
    assert sorted(sorted(t.members) for t in trajs) == [[(0, "a"), (1, "y")], [(0, "b"), (1, "x")]]


def test_a_read_number_vetoes_a_link_however_close() -> None:
    a, b = _obj("a", 0, 4.9, number=3), _obj("b", 5, 9, number=4)
    assert (
        similarity(
            parse_chunk(json.dumps({"objects": [a]}), 0, 5).objects[0],
            parse_chunk(json.dumps({"objects": [b]}), 5, 10).objects[0],
        )
        == 0.0
    )
    assert len(aggregate([(0, _chunk(a)), (1, _chunk(b))])) == 2


def test_conflicting_links_bipartite_beats_greedy() -> None:
    # p1-q1 is the single best link, but taking it strands p2 (whose only candidate is q1) and q2 (whose
    # only candidate is p1); the one-to-one matching links both pairs instead
    c0 = _chunk(_obj("p1", 0, 4.9, (0.50, 0.5)), _obj("p2", 0, 4.9, (0.20, 0.5)))
    c1 = _chunk(_obj("q1", 5, 9.9, (0.45, 0.5)), _obj("q2", 5, 9.9, (0.72, 0.5)))
    bip = aggregate([(0, c0), (1, c1)], AggregatorSettings(matching="bipartite"))
    greedy = aggregate([(0, c0), (1, c1)], AggregatorSettings(matching="greedy"))
    for trajs in (bip, greedy):
        assert all(len({m[0] for m in t.members}) == len(t.members) for t in trajs)
    assert sum(len(t.members) == 2 for t in bip) == 2
    assert sum(len(t.members) == 2 for t in greedy) == 1  # greedy takes p1-q1 first


def test_linking_off_keeps_every_observation_apart() -> None:
    c = [(m, _chunk(_obj("a", 5 * m, 5 * m + 4.9))) for m in range(3)]
    assert len(aggregate(c)) == 1
    assert len(aggregate(c, AggregatorSettings(linking=False))) == 3


@st.composite
def _observations(draw):
    chunks = []
    for m in range(draw(st.integers(1, 4))):
        objs = []
        for k in range(draw(st.integers(0, 4))):
            t0 = 5 * m + draw(st.floats(0, 2))
            objs.append(
                _obj(
                    f"o{k}",
                    t0,
                    t0 + draw(st.floats(0, 2.9)),
                    (draw(st.floats(0, 1)), draw(st.floats(0, 1))),
                    colour=draw(st.sampled_from(["red", "blue"])),
                    number=draw(st.sampled_from([None, 1, 2])),
                    states=[{"t": t0, "kind": "attribute", "predicate": "state", "value": "dark", "object": None}],
                )
            )
        chunks.append((m, _chunk(*objs)))
    return chunks


@settings(max_examples=60, deadline=None)
@given(_observations(), st.sampled_from(["bipartite", "greedy"]), st.floats(0.0, 0.95))
def test_aggregator_invariants(chunks, matching, tau) -> None:
    trajs = aggregate(chunks, AggregatorSettings(matching=matching, tau_conf=tau))
    members = [m for t in trajs for m in t.members]
    assert sorted(members) == sorted((c, o.id) for c, ex in chunks for o in ex.objects)  # each exactly once
    for t in trajs:
        assert len({c for c, _ in t.members}) == len(t.members)  # never two observations of one chunk
        assert [s[0] for s in t.states] == sorted(s[0] for s in t.states)
    assert sum(len(t.states) for t in trajs) == sum(len(o.states) for _, ex in chunks for o in ex.objects)


# --------------------------------------------------------------------------- schema, chunks, spec


@pytest.mark.parametrize(
    "text, why",
    [
        ("not json", "not JSON"),
        ('{"objects": [{"id": "a"}]}', "objects.0"),
        (json.dumps({"objects": [_obj("a", 0, 30)]}), "outside the chunk"),
        (
            json.dumps(
                {
                    "objects": [
                        _obj(
                            "a",
                            0,
                            1,
                            states=[
                                {"t": 0.5, "kind": "relation", "predicate": "passes_to", "value": None, "object": "zz"}
                            ],
                        )
                    ]
                }
            ),
            "unknown object",
        ),
        (json.dumps({"objects": [_obj("a", 0, 1), _obj("a", 0, 1)]}), "not unique"),
    ],
)
def test_invalid_extraction_is_an_outcome_with_a_reason(text: str, why: str) -> None:
    with pytest.raises(InvalidExtraction, match=why):
        parse_chunk(text, 0.0, 15.0)
    assert "extraction invalid" in render([], [(0, 0.0, 15.0, why)])


@given(st.floats(1.0, 200.0), st.sampled_from([5.0, 10.0, 30.0]), st.floats(1.0, 30.0), st.integers(1, 80))
def test_chunks_are_half_open_and_share_no_frame(duration, fps, chunk_s, k) -> None:
    n = int(duration * fps)
    chunks = plan_chunks(n / fps, fps, n, chunk_s, k)
    seen = [i for c in chunks for i in c.frames]
    assert len(seen) == len(set(seen)) and all(0 <= i < n for i in seen)
    for c in chunks:
        assert all(c.t_start - 1e-6 <= i / fps < c.t_end for i in c.frames) and len(c.frames) <= k


def test_spec_grammar() -> None:
    o = parse_spec(ModelSpec.parse("object-centric:linking=off,chunk_s=7.5,offline"))
    assert (o.backbone, o.linking, o.chunk_s, o.retrieval) == ("offline", "off", 7.5, "lexical")
    o = parse_spec(ModelSpec.parse("object-centric:retrieval=all,openai:qwen@http://h:8/v1"))
    assert o.backbone == "openai:qwen@http://h:8/v1" and o.retrieval == "all"
    assert parse_spec(ModelSpec.parse("object-centric:openai:gpt-4o")).retrieval == "model"
    for bad in (
        "object-centric:",
        "object-centric:nope=1,offline",
        "object-centric:order=random,offline",
        "object-centric:retrieval=model,offline",
        "object-centric:tau=x,offline",
    ):
        with pytest.raises(ConfigError):
            parse_spec(ModelSpec.parse(bad))


# --------------------------------------------------------------------------- the question grammar, inverted


def test_every_composed_question_parses_and_answers_right_on_the_gold_record(faithful_world) -> None:
    """The program answerer's semantics on a memory built from the gold record (one trajectory per entity)
    give every composed answer: parsing inverts phrasing.py, evaluation matches questions.evaluate."""
    world, targets, subs = faithful_world
    trajs = []
    for e in world.entities:
        facts = [f for f in world.facts if f.subject == e.id]
        states = [[0.0, "attribute", "state", "dark", None]] if e.category == "agent" else []
        states += [[f.t, f.kind, f.predicate, f.value, f.object] for f in facts]
        trajs.append({"id": e.id, "category": e.category, "attributes": dict(e.attributes), "states": states})
    for item in [*targets, *subs]:
        assert answer(parse_question(item.text), trajs) == (item.answer == "Yes"), item.text
    shuffled = shuffle_times(trajs)
    assert sorted(s[0] for t in shuffled for s in t["states"]) == sorted(s[0] for t in trajs for s in t["states"])
    assert read(render(trajs, [])) == trajs


def test_identity_questions_need_the_memory_to_link_the_sightings(faithful_world) -> None:
    """The program answerer reads identity from the memory: split every agent's gold trajectory at its gaps (one
    fragment per observation interval, as with linking off when a gap falls across chunks) and every identity
    positive is answered No -- its two facts sit on the two sides of a gap -- while the negatives stay No."""
    world, targets, subs = faithful_world
    spans = {
        e.id: sorted((o.t_start, o.t_end) for o in world.observations if o.entity == e.id) or [(0.0, world.duration_s)]
        for e in world.entities
    }

    def frag(entity: str, t: float) -> str:  # the fragment of ``entity`` observed nearest ``t``
        k = min(range(len(spans[entity])), key=lambda i: max(0.0, spans[entity][i][0] - t, t - spans[entity][i][1]))
        return f"{entity}#{k}"

    frags = []
    for e in world.entities:
        for k, (t0, t1) in enumerate(spans[e.id]):
            facts = [f for f in world.facts if f.subject == e.id and frag(e.id, f.t) == f"{e.id}#{k}"]
            # each fragment starts with the state it is first seen in (as an extractor reports it)
            lit = [f.value for f in world.facts if f.subject == e.id and f.predicate == "state" and f.t < t0 - 1e-6]
            states = [[t0, "attribute", "state", (lit or ["dark"])[-1], None]] if e.category == "agent" else []
            states += [[f.t, f.kind, f.predicate, f.value, frag(f.object, f.t) if f.object else None] for f in facts]
            frags.append(
                {"id": f"{e.id}#{k}", "category": e.category, "attributes": dict(e.attributes), "states": states}
            )
    identity = [t for t in targets if t.question_form == "identity"]
    assert identity
    for t in identity:
        assert answer(parse_question(t.text), frags) is False, t.text  # Yes targets are lost, No ones kept
    # the fragments still carry every event: the single-fact sub-questions of those targets are all answered right
    for s in subs:
        if s.probe_type == "single_fact" and s.target_id in {t.target_id for t in identity}:
            assert answer(parse_question(s.text), frags) == (s.answer == "Yes"), s.text


def test_retrieval_precision_recall() -> None:
    text = "[object-centric] chunks=1 invalid_chunks=0 trajectories=3 retrieved=T1=red/circle/3,T2=blue/square/None,T3=item/grey\nAnswer: Yes"
    ret = retrieved_of(text)
    gold = gold_entities(
        [
            "f01 at 1.00 s: the red circle marked 3 receives the ball",
            "f02 at 2.00 s: the green diamond marked 5 lights up",
        ]
    )
    p, r = precision_recall(ret, gold)
    assert (p, r) == (2 / 3, 2 / 3)
    assert retrieved_of("Answer: Yes") is None


# --------------------------------------------------------------------------- blind wrappers


def test_question_only_sends_no_visual_input() -> None:
    img = np.zeros((4, 4, 3), np.uint8)
    req = Request(
        trial_id="t",
        parts=(
            TextPart("t=0.50s"),
            ImagePart(img, 5, 0.5),
            TextPart("The images above are frames of one video in time order.\nQuestion: Q?"),
        ),
    )
    out = text_only(req)
    assert [type(p) for p in out.parts] == [TextPart] and out.parts[0].text == "Question: Q?"


def test_majority_is_recomputed_per_level(faithful_samples) -> None:
    m = MajorityAdapter(
        ModelSpec.parse("majority"), samples={s.sample_id: s for s in faithful_samples}, suite=get_suite("faithful")
    )
    assert m.labels == {"target": "Yes", "sub": "No"}  # the target tie goes to Yes
    for s in faithful_samples[:4]:
        r = asyncio.run(m.generate(Request(trial_id="t", parts=(), metadata={"sample_id": s.sample_id})))
        assert (r.text, r.model_version, r.cost_usd, r.finish_reason) == (
            f"Answer: {m.labels[s.params['role']]}",
            "majority",
            0.0,
            "stop",
        )
    with pytest.raises(ModelCallError, match="^bad_request: majority: unknown sample 'nope'$"):
        asyncio.run(m.generate(Request(trial_id="t", parts=(), metadata={"sample_id": "nope"})))
