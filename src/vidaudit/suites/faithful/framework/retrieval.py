"""Retrieval R: which trajectories the answerer gets for a question.

- ``lexical`` (no model call; costed as zero calls): a trajectory is retrieved when the question
  contains its colour and shape words and, when it has a read number, that number (the ball: the
  word "ball"); a count question ("Do exactly two agents ...?") retrieves every agent; an identity question
  ("Is the red circle that ... the same agent as ...?") every agent of the look it names (every agent for
  "the agent that ..."), since it describes agents by what they do, not by their numbers, beside what it
  names. The unit is the trajectory (§5.3), not the state triplet.
- open vocabulary (a trajectory that is not a synthetic agent or item: real videos): the question names
  one of its attribute values (a number as "#24", free text by every content stem), a dataset name that
  agrees with it (the vocabulary's ``names``), or its category ("the dog") when it names no attribute of
  any trajectory of that category; a count ("Do exactly two people jump?") keeps that category.
- ``model``: one call to the backbone with the trajectory headers and the question, asking for a
  JSON list of ids; a reply that is not one yields every trajectory, and says so (``note``).
- ``all`` (the no-filter ablation): every trajectory.
- ``random``: k trajectories drawn with a seed from the question text, k = what ``lexical`` returns.
"""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np

from vidaudit.suites.faithful.framework.query_open import ANY_COUNT, mentions
from vidaudit.suites.faithful.framework.vocabulary import stem, synthetic_trajectory

WORD = re.compile(r"[a-z0-9]+")


#: a count question quantifies over every agent ("Do exactly two agents light up?"), an identity question over
#: the agents its descriptions may denote ("Is the red circle that ... the same agent as the red circle that ...?")
_COUNT = re.compile(r"^(?:do|does) exactly [a-z]+ agents? ")
_SAME = re.compile(r"^is the (?:agent|[a-z]+ [a-z]+) that .+ the same agent as the (?:agent|[a-z]+ [a-z]+) that ")
_LOOK = re.compile(r"(?:^is|the same agent as) the ([a-z]+) ([a-z]+) that ")


def lexical(question: str, trajs: list[dict], vocabulary: dict | None = None) -> list[str]:
    words = set(WORD.findall(question.lower()))
    opened = {t["id"] for t in trajs if not synthetic_trajectory(t)}
    keep = set(_lexical_open(question, [t for t in trajs if t["id"] in opened], vocabulary)) if opened else set()
    low = question.strip().lower()
    if _COUNT.match(low):  # every agent, and the ball when the question names it
        return [t["id"] for t in trajs if t["category"] == "agent" or "ball" in words or t["id"] in keep]
    same = _SAME.match(low)
    looks = {(m.group(1), m.group(2)) for m in _LOOK.finditer(low)} if same else set()
    out = []
    for t in trajs:
        at = t["attributes"]
        if (
            same
            and t["category"] == "agent"
            and ("the agent that" in low or (at.get("colour"), at.get("shape")) in looks)
        ):
            hit = True  # an agent the question's descriptions may denote
        elif t["id"] in opened:
            hit = t["id"] in keep
        elif t["category"] == "item":
            hit = "ball" in words
        else:
            hit = (
                at.get("colour") in words
                and (at.get("shape") is None or at["shape"] in words)
                and (at.get("number") is None or str(at["number"]) in words)
            )
        if hit:
            out.append(t["id"])
    return out


def _lexical_open(question: str, trajs: list[dict], vocabulary: dict | None) -> list[str]:
    """Open-vocabulary trajectories a question names: one of its attribute values ("#24", "white jersey"),
    a dataset name that agrees with it, or its category word ("the dog") when the question names no
    attribute of any trajectory of that category; a count ("exactly K <noun>s") keeps the category."""
    low = question.strip().lower()
    ws = set(WORD.findall(low))
    st = {stem(w) for w in ws}
    named = {i for _, ids in mentions(question, trajs, vocabulary or {})[0] for i in ids}
    m = re.match(r"^(?:do|does|did|are|were) exactly [a-z]+ ([a-z]+) ", low)
    counted = stem(m.group(1)) if m else None
    out = []
    for t in trajs:
        cat = stem(t["category"])
        same = [u for u in trajs if stem(u["category"]) == cat]
        by_category = cat in st and not any(u["id"] in named for u in same)
        if t["id"] in named or by_category or (counted is not None and counted in (cat, *ANY_COUNT)):
            out.append(t["id"])
    return out


def random_k(question: str, trajs: list[dict], k: int) -> list[str]:
    seed = int(hashlib.sha256(question.encode()).hexdigest()[:16], 16)
    rng = np.random.default_rng(seed)
    ids = [t["id"] for t in trajs]
    pick = sorted(int(i) for i in rng.permutation(len(ids))[:k])
    return [ids[i] for i in pick]


def headers(trajs: list[dict]) -> str:
    return "\n".join(
        json.dumps(
            {
                "id": t["id"],
                "category": t["category"],
                "attributes": t["attributes"],
                "predicates": sorted({s[2] for s in t["states"]}),
            },
            separators=(",", ":"),
        )
        for t in trajs
    )


def model_prompt(question: str, trajs: list[dict]) -> str:
    return (
        "These are the object trajectories extracted from a video (one per line):\n"
        + headers(trajs)
        + f"\n\nQuestion: {question}\nReply with only a JSON list of the ids of the trajectories needed to "
        'answer the question, e.g. ["T1", "T4"].'
    )


def parse_model_reply(text: str, trajs: list[dict]) -> tuple[list[str], str | None]:
    """(ids, note): the ids the model named, or every id and why when the reply is not a list of known ids."""
    ids = [t["id"] for t in trajs]
    m = re.search(r"\[[^\[\]]*\]", text or "")
    try:
        got = json.loads(m.group(0)) if m else None
    except json.JSONDecodeError:
        got = None
    if not isinstance(got, list) or not all(isinstance(x, str) and x in ids for x in got):
        return ids, "retrieval reply was not a JSON list of known ids: every trajectory kept"
    return [i for i in ids if i in set(got)], None
