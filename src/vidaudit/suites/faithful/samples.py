"""Targets and sub-questions as vidaudit ``Sample``s: each one is its own sample (and so its own trial).

``params["role"]`` is ``target`` or ``sub``; both carry ``target_id`` (the sample id of the target
they belong to is ``target_sample_id``) and ``probe_type`` (``single_fact``, ``ordering``, or None
for a target or where the data does not say). A target lists its sub-questions' sample ids in
``sub_sample_ids``, so that aggregation rebuilds every target's group from the manifest alone, and
carries their texts and answers for the trace viewer. Runs, the store, resume and
``score-responses`` need nothing else: a sample is a question about a video with a Yes/No answer.
"""

from __future__ import annotations

from typing import Any

from vidaudit.sdk import Sample, VideoRef
from vidaudit.suites.faithful.compose import scope
from vidaudit.suites.faithful.framework.vocabulary import schema_of_record, vocabulary_of_record
from vidaudit.suites.faithful.phrasing import clause
from vidaudit.suites.faithful.questions import Pattern, SubQuestion, Target
from vidaudit.suites.faithful.world import WorldRecord

SUITE = "faithful"
ROLES = ("target", "sub")


def target_sample_id(video_id: str, target_id: str) -> str:
    return f"{video_id}-{target_id}"


def sub_sample_id(video_id: str, sub_id: str) -> str:
    return f"{video_id}-{sub_id}"


def fact_line(world: WorldRecord, fact_id: str) -> str:
    f = world.fact(fact_id)
    return f"{fact_id} at {f.t:.2f} s: {clause(Pattern.of(f), world)}"


def schema_params(world: WorldRecord) -> dict[str, Any]:
    """What a sample says about the schema its video needs: for an open-vocabulary record ``schema: open`` and
    the record's vocabulary (the framework extracts and reads questions with them); synthetic: nothing."""
    if schema_of_record(world) != "open":
        return {}
    return {"schema": "open", "vocabulary": vocabulary_of_record(world)}


def _member(
    video: VideoRef, group: dict[str, Any], sample_id: str, item: Target | SubQuestion, own: dict[str, Any]
) -> Sample:
    """A target or one of its sub-questions as a sample: the question and answer of ``item`` on the video, with
    the params every member of the target's group carries (``group``: the video's and the target's ids) and its
    ``own`` (its ``role`` first)."""
    return Sample(
        sample_id=sample_id,
        suite=SUITE,
        question=item.text,
        answer=item.answer,
        video=video,
        params={**group, **own},
    )


def samples_for(
    world: WorldRecord, targets: list[Target], subs: list[SubQuestion], video: VideoRef, common: dict[str, Any]
) -> list[Sample]:
    """The samples of one video, each target followed by its sub-questions (so ``--limit`` keeps groups whole)."""
    by_target: dict[str, list[SubQuestion]] = {}
    for s in subs:
        by_target.setdefault(s.target_id, []).append(s)
    out: list[Sample] = []
    base = {
        "video_id": world.video_id,
        "source_video_id": world.source_video_id,
        "domain": world.domain,
        **schema_params(world),
        **common,
    }
    for t in targets:
        tsid = target_sample_id(world.video_id, t.target_id)
        mine = by_target.get(t.target_id, [])
        sub_ids = [sub_sample_id(world.video_id, s.sub_id) for s in mine]
        perturbed = None
        if t.perturbed is not None:
            r = t.perturbed.replacement
            perturbed = {"fact_id": t.perturbed.fact_id, "t": r.t, "replacement": clause(r.pattern(), world)}
        group = {**base, "target_id": t.target_id, "target_sample_id": tsid}
        out.append(
            _member(
                video,
                group,
                tsid,
                t,
                {
                    "role": "target",
                    "probe_type": None,
                    "polarity": t.polarity,
                    "temporally_constrained": t.temporally_constrained,
                    "question_form": t.question_form,
                    "phrasing": t.phrasing,
                    "negative_of": target_sample_id(world.video_id, t.negative_of) if t.negative_of else None,
                    "ordering_pair": list(t.ordering_pair) if t.ordering_pair else None,
                    "chain": list(t.chain),
                    "chain_text": [fact_line(world, f) for f in t.chain],
                    "perturbed": perturbed,
                    "scope_names": [world.entity(e).name for e in scope(t, world)],
                    "sub_sample_ids": sub_ids,
                    "subs": [
                        {"sample_id": sid, "question": s.text, "answer": s.answer, "probe_type": s.probe_type}
                        for sid, s in zip(sub_ids, mine, strict=True)
                    ],
                },
            )
        )
        for j, (sid, s) in enumerate(zip(sub_ids, mine, strict=True), 1):
            out.append(
                _member(
                    video,
                    group,
                    sid,
                    s,
                    {
                        "role": "sub",
                        "probe_type": s.probe_type,
                        "sub_index": j,
                        "fact_ids": list(s.fact_ids),
                        "fact_text": [fact_line(world, f) for f in s.fact_ids],
                        "target_question": t.text,
                        "target_answer": t.answer,
                    },
                )
            )
    return out
