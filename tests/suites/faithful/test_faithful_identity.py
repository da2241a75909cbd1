"""Identity targets (issue 32) as written: the smoke preset and two standard worlds are generated, and the test
reads only what the generator wrote -- ``manifest.jsonl`` and ``worlds/*.json`` as JSON -- with its own reader of
the question text (its own verb table and the record's entity names, not vidaudit's phrasing, parser or
evaluator), and checks:

- identity targets are in both presets, Yes and No in equal numbers (per video: one positive, one negative per
  pair), and so are their identity sub-questions;
- every identity question (targets and identity sub-questions) is true of the world record: each description
  ("the red circle that goes behind the blue hexagon marked 5") picks out exactly one fact of the record, and
  the answer is Yes exactly when the two facts have one subject; every single-fact sub-question is true too;
- a positive's two facts are one agent's on the two sides of one of its gaps (an occlusion, or an exit until
  re-entry) with an identity link; a description with a look is a look-alike pair's (the negative's other
  agent shares colour and shape and differs in number).
"""

from __future__ import annotations

import json
import re

import pytest

from vidaudit.suites.faithful.generate import generate, specs_for

#: the test's own table: third-person phrase (after "that") and base phrase (after "Does N") -> (predicate,
#: value, has an object)
THIRD = {
    "lights up": ("state", "lit", False),
    "goes dark": ("state", "dark", False),
    "passes the ball to {o}": ("passes_to", None, True),
    "receives the ball": ("receives", None, False),
    "bumps into {o}": ("collides_with", None, True),
    "goes behind {o}": ("goes_behind", None, True),
    "comes out from behind {o}": ("emerges_from", None, True),
    "leaves the scene": ("exits", None, False),
    "enters the scene": ("enters", None, False),
}
BASE = {
    "light up": "lights up",
    "go dark": "goes dark",
    "pass the ball to {o}": "passes the ball to {o}",
    "receive the ball": "receives the ball",
    "bump into {o}": "bumps into {o}",
    "go behind {o}": "goes behind {o}",
    "come out from behind {o}": "comes out from behind {o}",
    "leave the scene": "leaves the scene",
    "enter the scene": "enters the scene",
}
SAME = re.compile(r"Is the (agent|[a-z]+ [a-z]+) that (.+) the same agent as the (agent|[a-z]+ [a-z]+) that (.+)\?")


def _event(phrase: str, names: dict[str, str], table: dict) -> tuple[str, str | None, str | None]:
    """(predicate, value, object id) of a verb phrase, the object read back from the record's entity names."""
    for template, (pred, value, has_obj) in table.items():
        if not has_obj:
            if phrase == template:
                return pred, value, ("ball" if pred == "receives" else None)
            continue
        head = template.split("{o}")[0]
        if phrase.startswith(head) and phrase[len(head) :] in names:
            return pred, value, names[phrase[len(head) :]]
    raise AssertionError(f"the test cannot read {phrase!r}")


def _matches(fact: dict, pred: str, value: str | None, obj: str | None) -> bool:
    return (
        fact["predicate"] == pred and fact.get("value") == value and (fact.get("object") == obj or pred == "receives")
    )


def _described(world: dict, look: str, phrase: str) -> list[dict]:
    """The facts a description picks out: the event, by an agent of that look ("agent": any agent)."""
    names = {e["name"]: e["id"] for e in world["entities"]}
    agents = {e["id"]: e for e in world["entities"] if e["category"] == "agent"}
    pred, value, obj = _event(phrase, names, THIRD)
    out = []
    for f in world["facts"]:
        a = agents.get(f["subject"])
        if a is None or not _matches(f, pred, value, obj):
            continue
        if look == "agent" or f"{a['attributes']['colour']} {a['attributes']['shape']}" == look:
            out.append(f)
    return out


def _single_fact_event(world: dict, text: str) -> tuple[str, tuple]:
    """A single-fact sub-question read with this file's own grammar: the id of the agent it asks about, and
    the event it asks of it (predicate, value, object id)."""
    names = {e["name"]: e["id"] for e in world["entities"]}
    assert re.fullmatch(r"Does (.+?) (.+)\?", text) is not None, text
    subject = next(n for n in sorted(names, key=len, reverse=True) if text.startswith(f"Does {n} "))
    phrase = text[len(f"Does {subject} ") : -1]
    third = next(
        BASE[b].replace("{o}", phrase[len(b.split("{o}")[0]) :]) if "{o}" in b else BASE[b]
        for b in BASE
        if phrase == b or ("{o}" in b and phrase.startswith(b.split("{o}")[0]))
    )
    return names[subject], _event(third, names, THIRD)


def _single_fact(world: dict, text: str) -> bool:
    subject, (pred, value, obj) = _single_fact_event(world, text)
    return any(f["subject"] == subject and _matches(f, pred, value, obj) for f in world["facts"])


def _same(world: dict, text: str) -> tuple[bool, dict, dict]:
    m = SAME.fullmatch(text)
    assert m is not None, text
    a, b = _described(world, m.group(1), m.group(2)), _described(world, m.group(3), m.group(4))
    assert len(a) == 1 and len(b) == 1, (text, a, b)  # each description picks out exactly one fact
    return a[0]["subject"] == b[0]["subject"], a[0], b[0]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[dict], dict[str, dict], dict]]:
    """preset -> (manifest rows, world records by video id, dataset.json), all read back as JSON."""
    out = {}
    for preset, seeds in (("smoke", None), ("standard", 2)):
        root = tmp_path_factory.mktemp(preset)
        generate(specs_for(preset, seeds), root, workers=1)
        rows = [json.loads(line) for line in (root / "manifest.jsonl").read_text().splitlines() if line.strip()]
        worlds = {p.stem: json.loads(p.read_text())["world"] for p in (root / "worlds").glob("*.json")}
        out[preset] = (rows, worlds, json.loads((root / "dataset.json").read_text()))
    return out


def _identity(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["params"]["role"] == "target" and r["params"]["question_form"] == "identity"]


def test_identity_targets_are_in_both_presets_and_balanced(written) -> None:
    for preset, (rows, _worlds, info) in written.items():
        targets = _identity(rows)
        assert targets, f"no identity target in the {preset} preset"
        by_id = {r["sample_id"]: r for r in rows}
        for video in {r["params"]["video_id"] for r in targets}:  # per video: one Yes and one No per pair
            answers = [r["answer"] for r in targets if r["params"]["video_id"] == video]
            assert answers.count("Yes") == answers.count("No") > 0
        for r in targets:
            if r["answer"] == "No":  # each negative names its positive
                pos = by_id[r["params"]["negative_of"]]
                assert pos["answer"] == "Yes" and pos["params"]["question_form"] == "identity"
            subs = [by_id[s] for s in r["params"]["sub_sample_ids"]]
            assert sorted(s["answer"] for s in subs) == ["No", "No", "Yes", "Yes"]
        probes = [by_id[s] for r in targets for s in r["params"]["sub_sample_ids"]]
        ident = [s["answer"] for s in probes if s["params"]["probe_type"] == "identity"]
        assert ident and ident.count("Yes") == ident.count("No")
        bal = info["balance"]  # what dataset.json says agrees with the manifest
        assert bal["target_identity"] == {
            "n": len(targets),
            "yes": len(targets) // 2,
            "no": len(targets) // 2,
            "other": 0,
            "yes_share": 0.5,
        }
        assert bal["sub_identity"]["yes"] == bal["sub_identity"]["no"] == len(ident) // 2


def test_identity_questions_are_true_of_the_world_record(written) -> None:
    checked = looks = 0
    kinds: set[str] = set()
    for _preset, (rows, worlds, _info) in written.items():
        by_id = {r["sample_id"]: r for r in rows}
        for r in _identity(rows):
            world = worlds[r["params"]["video_id"]]
            same, fa, fb = _same(world, r["question"])
            assert same == (r["answer"] == "Yes"), r["question"]
            for sid in r["params"]["sub_sample_ids"]:
                s = by_id[sid]
                if s["params"]["probe_type"] == "identity":
                    assert _same(world, s["question"])[0] == (s["answer"] == "Yes"), s["question"]
                else:
                    assert _single_fact(world, s["question"]) == (s["answer"] == "Yes"), s["question"]
                checked += 1
            if r["answer"] == "Yes":  # across one of the agent's gaps, linked by evidence
                who = fa["subject"]
                linked = {lk["gap"] for lk in world["identity_links"] if lk["entity"] == who}
                gaps = [
                    g
                    for g in world["gaps"]
                    if g["entity"] == who
                    and g["id"] in linked
                    and g["t_end"] is not None
                    and fa["t"] <= g["t_start"] + 1e-9
                    and g["t_end"] <= fb["t"] + 1e-9
                ]
                assert gaps, r["question"]
                kinds |= {g["kind"] for g in gaps}
            else:  # the other agent; a look names a look-alike pair
                m = SAME.fullmatch(r["question"])
                assert m is not None
                neg = _described(world, m.group(3), m.group(4))[0]["subject"]
                assert neg != fa["subject"]
                if m.group(1) != "agent":
                    ents = {e["id"]: e["attributes"] for e in world["entities"]}
                    pair = (ents[fa["subject"]], ents[neg])
                    assert {(x["colour"], x["shape"]) for x in pair} == {tuple(m.group(1).split())}
                    assert pair[0]["number"] != pair[1]["number"]
                    looks += 1
            checked += 1
    # look-alikes and both kinds of gap (an occlusion, an exit until re-entry) are among them
    assert checked >= 20 and looks >= 1 and kinds == {"occlusion", "exit"}, (checked, looks, kinds)


def _subject_and_object(world: dict, text: str) -> tuple[str, str | None]:
    """The ids of the agent a single-fact sub-question asks about and of the agent its event is done to."""
    subject, (_, _, obj) = _single_fact_event(world, text)
    return subject, obj


def test_no_sub_question_asks_whether_an_agent_does_something_to_itself(tmp_path) -> None:
    """Standard seeds 0-4: world-0004's identity pair asked "Does the purple hexagon marked 4 pass the ball to the
    purple hexagon marked 4?" (No from the words alone; 5 of 656 sub-questions of the 20 standard worlds). The
    probe now asks another agent of the chain that never passes to it, and the world keeps its identity pair."""
    generate(specs_for("standard", 5), tmp_path, workers=1)
    rows = [json.loads(line) for line in (tmp_path / "manifest.jsonl").read_text().splitlines() if line.strip()]
    worlds = {p.stem: json.loads(p.read_text())["world"] for p in (tmp_path / "worlds").glob("*.json")}
    singles = [r for r in rows if r["params"]["role"] == "sub" and r["params"]["probe_type"] == "single_fact"]
    objects = 0
    for r in singles:
        world = worlds[r["params"]["video_id"]]
        subject, obj = _subject_and_object(world, r["question"])
        assert subject != obj, r["question"]
        assert _single_fact(world, r["question"]) == (r["answer"] == "Yes"), r["question"]
        objects += obj is not None and obj != "ball"
    assert len(singles) > 100 and objects > 20, (len(singles), objects)
    identity = [
        r for r in rows if r["params"]["video_id"] == "world-0004" and r["params"].get("question_form") == "identity"
    ]
    assert len(identity) == 2
    texts = {r["question"] for r in rows if r["params"]["video_id"] == "world-0004"}
    assert "Does the green diamond marked 1 pass the ball to the purple hexagon marked 4?" in texts
