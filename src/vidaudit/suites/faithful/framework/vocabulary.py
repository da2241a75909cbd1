"""The dataset's vocabulary: which schema its videos need, and the words that name its entities and events.

A dataset says which extraction schema its videos need (``schema_of``): ``import strand`` data is
``open`` (real videos: people, vehicles, animals), a world record whose entities are not the synthetic
worlds' agents and items (a category other than ``agent`` / ``item``, an attribute other than
colour / shape / size / number) is ``open``, anything else ``synthetic``. The samples carry it
(``params["schema"]``, only when open, so synthetic manifests are unchanged) and the suite passes it to
the model in the request's public metadata; a spec's ``schema=`` still overrides it.

The vocabulary (``vocabulary_of``, a JSON dict: ``categories``, ``attributes`` {key: values},
``predicates``, ``names`` {how questions name an entity: its category and attributes}) is read from
the world records when the dataset has them; with none (the STRAND release) the memory's own words
are the vocabulary. Lexical retrieval and the program answerer match words by ``stem`` (a light
suffix stripper: "passes", "passed", "passing" -> "pass"; "scores", "score" -> "scor").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

SYNTHETIC_CATEGORIES = frozenset({"agent", "item"})
SYNTHETIC_ATTRIBUTES = frozenset({"colour", "shape", "size", "number"})
WORD = re.compile(r"[a-z0-9]+")
#: words that never identify an entity or an event on their own
STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "with",
        "and",
        "or",
        "by",
        "for",
        "from",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "does",
        "do",
        "did",
        "has",
        "have",
        "had",
        "who",
        "that",
        "which",
        "this",
        "it",
        "its",
        "his",
        "her",
        "their",
        "there",
        "one",
        "any",
        "some",
    ]
)


#: irregular forms a light stemmer cannot see (plural nouns, past tenses), mapped to their base
IRREGULAR = {
    "people": "person",
    "men": "man",
    "women": "woman",
    "children": "child",
    "shot": "shoot",
    "ran": "run",
    "threw": "throw",
    "thrown": "throw",
    "caught": "catch",
    "took": "take",
    "taken": "take",
    "gave": "give",
    "given": "give",
    "fell": "fall",
    "fallen": "fall",
    "went": "go",
    "gone": "go",
    "came": "come",
    "held": "hold",
    "hit": "hit",
    "struck": "strike",
    "rode": "ride",
    "drove": "drive",
    "driven": "drive",
    "sat": "sit",
    "stood": "stand",
    "put": "put",
    "ate": "eat",
    "eaten": "eat",
}


def stem(word: str) -> str:
    """A light stem: "passes"/"passed"/"passing" -> "pass", "scores"/"score"/"scored" -> "scor"; irregular
    forms (``IRREGULAR``: "shot" -> "shoot", "people" -> "person") first."""
    w = IRREGULAR.get(word.lower(), word.lower())
    for suf in ("ing", "ed", "es"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)].rstrip("e") if suf != "es" else w[:-2]
    if w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        w = w[:-1]
    return w[:-1] if w.endswith("e") and len(w) > 3 else w


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def stems(text: str) -> set[str]:
    """The content stems of a text (stop words left out)."""
    return {stem(w) for w in words(text) if w not in STOP}


def is_open_entity(category: str, attributes: Iterable[str]) -> bool:
    return category not in SYNTHETIC_CATEGORIES or not set(attributes) <= SYNTHETIC_ATTRIBUTES


def schema_of_record(record: Any) -> str:
    """``open`` when some entity of a world record is not a synthetic agent or item, else ``synthetic``."""
    return "open" if any(is_open_entity(e.category, e.attributes) for e in record.entities) else "synthetic"


def vocabulary_of_record(record: Any) -> dict[str, Any]:
    """A world record's vocabulary: categories, attribute values per key, fact predicates (and attribute
    values), and each entity's name with its category and attributes."""
    attrs: dict[str, set[str]] = {}
    for e in record.entities:
        for k, v in e.attributes.items():
            attrs.setdefault(k, set()).add(str(v))
    preds = {f.predicate for f in record.facts} | {f.value for f in record.facts if f.value}
    return {
        "categories": sorted({e.category for e in record.entities}),
        "attributes": {k: sorted(v) for k, v in sorted(attrs.items())},
        "predicates": sorted(preds),
        "names": {e.name: {"category": e.category, "attributes": dict(e.attributes)} for e in record.entities},
    }


def merge(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    """Two vocabularies as one (lists unioned, names of ``a`` first)."""
    a, b = a or {}, b or {}
    attrs: dict[str, set[str]] = {}
    for voc in (a, b):
        for k, vs in (voc.get("attributes") or {}).items():
            attrs.setdefault(k, set()).update(str(v) for v in vs)
    return {
        "categories": sorted(set(a.get("categories") or ()) | set(b.get("categories") or ())),
        "attributes": {k: sorted(v) for k, v in sorted(attrs.items())},
        "predicates": sorted(set(a.get("predicates") or ()) | set(b.get("predicates") or ())),
        "names": {**(b.get("names") or {}), **(a.get("names") or {})},
    }


def vocabulary_of_memory(trajs: list[dict]) -> dict[str, Any]:
    """The words a trajectory memory uses (its categories, attribute values and state predicates)."""
    attrs: dict[str, set[str]] = {}
    for t in trajs:
        for k, v in (t.get("attributes") or {}).items():
            if v is not None:
                attrs.setdefault(k, set()).add(str(v))
    preds = {s[2] for t in trajs for s in t["states"]} | {
        str(s[3]) for t in trajs for s in t["states"] if s[1] == "attribute" and s[3] is not None
    }
    return {
        "categories": sorted({t["category"] for t in trajs}),
        "attributes": {k: sorted(v) for k, v in attrs.items()},
        "predicates": sorted(preds),
        "names": {},
    }


def synthetic_trajectory(t: dict) -> bool:
    """A trajectory in the synthetic worlds' terms (an agent or item with a colour): the synthetic rules apply."""
    return (
        t["category"] in SYNTHETIC_CATEGORIES
        and "colour" in (t.get("attributes") or {})
        and not is_open_entity(t["category"], t["attributes"])
    )


def value_in(value: object, text_stems: set[str], text_words: set[str]) -> bool:
    """Whether an attribute value is named by a text: a number as a word ("#24", "24"), free text by every
    content stem of it."""
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return str(int(value)) in text_words if float(value).is_integer() else False
    s = stems(str(value))
    if not s:
        return False
    if all(x.isdigit() for x in s):
        return s <= text_words
    return s <= text_stems
