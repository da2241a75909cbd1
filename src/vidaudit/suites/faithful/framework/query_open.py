"""Read a yes/no question in an open vocabulary (real videos, STRAND's release) and evaluate it on trajectories.

The synthetic grammar (``framework/query.py``) is tried first; a question outside it is read here, by
words, against the trajectories sent and the dataset's vocabulary (``framework/vocabulary.py``):

- the question is split at its first " before " / " after " / " when " into two clauses (none: an
  existence question; "Has X already ... when Y ...": X before Y; "A after B": B before A);
  "Do exactly K <noun>s <verb>?" is a count over the trajectories of that category (``agents``,
  ``objects``, ``people``: any);
- in a clause, an *entity mention* is a dataset name ("the player in white marked 24") found in it, or a
  trajectory attribute value it names (a number as "#24" / "24"; free text by every content stem). The
  first mention is the subject, the next one the object; a clause with no mention ("before the goal")
  has any trajectory as subject, and a clause with no verb ("... before #7 does") repeats the first
  clause's verb;
- the verb is the clause's stems that are the stem of a state's predicate (its first word:
  "passes_to" -> "pass") or of an attribute state's value ("open"); an event is a state of a subject
  trajectory with such a predicate or value, to an object trajectory when the clause names an object
  and the state is a relation;
- ``exists``: some event; ``before``: an event of the first clause strictly precedes one of the
  second; ``count``: exactly K trajectories of the category have an event.

A question with no verb the memory or the vocabulary knows raises ``ValueError`` (the answerer then
gives no answer: unparseable, so wrong -- never a guess).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from vidaudit.suites.faithful.framework.vocabulary import STOP, stem, value_in, words
from vidaudit.suites.faithful.phrasing import NUMBER_WORDS
from vidaudit.suites.faithful.world import TIME_EPS

_AUX = re.compile(r"^(?:does|do|did|is|are|was|were|has|have|had|will|can)\s+", re.I)
_SPLIT = re.compile(r"\s(before|after|when|while)\s", re.I)
_COUNT = re.compile(r"^(?:do|does|did|are|were)\s+exactly\s+(\w+)\s+(\w+)\s+(.+)$", re.I)
#: count nouns that quantify over every trajectory
ANY_COUNT = {stem(w) for w in ("agents", "objects", "things", "entities", "ones")}


@dataclass(frozen=True)
class Clause:
    subject: frozenset[str] | None  # trajectory ids (None: any)
    object: frozenset[str] | None
    verbs: frozenset[str]  # predicate stems named (the verb)
    values: frozenset[str] = frozenset()  # attribute-state value stems named, read when no predicate is


@dataclass(frozen=True)
class OpenQuery:
    op: str  # "exists" | "before" | "count"
    a: Clause
    b: Clause | None = None
    n: int | None = None
    category: str | None = None  # count: the category stem (None: any)


def _name_matches(spec: dict[str, Any], traj: dict) -> bool:
    """A dataset name's entity agrees with a trajectory: every attribute both give is equal (free text
    without case or extra spaces), and at least one is given by both."""
    shared = 0
    for k, v in (spec.get("attributes") or {}).items():
        tv = (traj.get("attributes") or {}).get(k)
        if tv is None or v is None:
            continue
        shared += 1
        if " ".join(str(tv).lower().split()) != " ".join(str(v).lower().split()):
            return False
    return shared > 0


def mentions(
    clause: str, trajs: list[dict], vocab: dict[str, Any]
) -> tuple[list[tuple[int, frozenset[str]]], set[str]]:
    """(position, trajectory ids) of each entity the clause names, in order; and the stems used up by them."""
    low = " ".join(words(clause))
    toks = low.split()
    used: set[str] = set()
    found: dict[int, set[str]] = {}
    numbered: set[str] = set()
    for name, spec in (vocab.get("names") or {}).items():
        nl = " ".join(words(name))
        i = f" {low} ".find(f" {nl} ") if nl else -1
        if i >= 0:
            ids = {t["id"] for t in trajs if _name_matches(spec, t)}
            if ids:
                found.setdefault(len(low[:i].split()), set()).update(ids)
                used |= {stem(w) for w in nl.split()}
    stems_at = [stem(w) for w in toks]
    for t in trajs:
        for v in (t.get("attributes") or {}).values():
            if not value_in(v, set(stems_at), set(toks)):
                continue
            vs = (
                [str(int(v))]
                if isinstance(v, int | float) and not isinstance(v, bool)
                else [stem(w) for w in words(str(v)) if w not in STOP]
            )
            pos = min((i for i, s in enumerate(toks if vs[0].isdigit() else stems_at) if s in vs), default=None)
            if pos is not None:
                found.setdefault(pos, set()).add(t["id"])
                used |= set(vs)
                if vs[0].isdigit():
                    numbered.add(t["id"])
    # one entity per position; a trajectory keeps only its first position; among trajectories named at one
    # position ("the player in red ... number 7"), those whose number is named too are the ones meant
    seen: set[str] = set()
    out = []
    for pos in sorted(found):
        ids = found[pos] - seen
        seen |= ids
        ids = (ids & numbered) or ids
        if ids:
            out.append((pos, frozenset(ids)))
    return out, used


def _head(predicate: str) -> str | None:
    """The stem of a predicate's first word ("passes_to" -> "pass")."""
    ws = words(str(predicate).replace("_", " "))
    return stem(ws[0]) if ws else None


def _verb_stems(trajs: list[dict], vocab: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(predicate stems, attribute-value stems) the memory and the dataset's vocabulary know."""
    preds = {s[2] for t in trajs for s in t["states"]} | set(vocab.get("predicates") or ())
    values = {str(s[3]) for t in trajs for s in t["states"] if s[1] == "attribute" and s[3] is not None}
    return ({h for p in preds if (h := _head(p))}, {stem(w) for v in values for w in words(v) if w not in STOP})


def _clause(text: str, trajs: list[dict], vocab: dict[str, Any], known: tuple[set[str], set[str]]) -> Clause:
    ments, used = mentions(text, trajs, vocab)
    st = {stem(w) for w in words(text) if w not in STOP} - used
    return Clause(
        subject=ments[0][1] if ments else None,
        object=ments[1][1] if len(ments) > 1 else None,
        verbs=frozenset(st & known[0]),
        values=frozenset(st & known[1]),
    )


def parse_open(question: str, trajs: list[dict], vocab: dict[str, Any] | None = None) -> OpenQuery:
    """The query of an open-vocabulary yes/no question over ``trajs``; ``ValueError`` when no verb is known."""
    vocab = vocab or {}
    known = _verb_stems(trajs, vocab)
    q = question.strip().rstrip("?").strip()
    m = _COUNT.match(q)
    if m is not None and m.group(1).lower() in NUMBER_WORDS:
        noun = stem(m.group(2))
        c = _clause(m.group(3), trajs, vocab, known)
        if not (c.verbs or c.values):
            raise ValueError(f"no verb the memory knows in {question!r}")
        return OpenQuery(
            "count", c, n=NUMBER_WORDS.index(m.group(1).lower()), category=None if noun in ANY_COUNT else noun
        )
    q = _AUX.sub("", q)
    parts = _SPLIT.split(q, maxsplit=1)
    a = _clause(parts[0], trajs, vocab, known)
    if not (a.verbs or a.values):
        raise ValueError(f"no verb the memory knows in {question!r}")
    if len(parts) == 1:
        return OpenQuery("exists", a)
    word, rest = parts[1].lower(), parts[2]
    b = _clause(rest, trajs, vocab, known)
    if not (b.verbs or b.values):
        b = Clause(b.subject, b.object, a.verbs, a.values)  # "... before #7 does"
    return OpenQuery("before", b, a) if word == "after" else OpenQuery("before", a, b)


def event_times(c: Clause, trajs: list[dict]) -> list[float]:
    out = []
    for t in trajs:
        if c.subject is not None and t["id"] not in c.subject:
            continue
        for when, kind, pred, value, obj in t["states"]:
            if c.verbs:
                hit = _head(pred) in c.verbs
            else:
                hit = kind == "attribute" and value is not None and any(stem(w) in c.values for w in words(str(value)))
            if hit and c.object is not None and kind == "relation" and obj not in c.object:
                hit = False
            if hit:
                out.append(float(when))
    return out


def answer_open(q: OpenQuery, trajs: list[dict]) -> bool:
    if q.op == "count":
        pool = [t for t in trajs if q.category is None or stem(t["category"]) == q.category]
        return sum(1 for t in pool if event_times(q.a, [t])) == q.n
    a = event_times(q.a, trajs)
    if q.op == "exists":
        return bool(a)
    b = event_times(q.b, trajs) if q.b is not None else []
    return any(ta < tb - TIME_EPS for ta in a for tb in b)
