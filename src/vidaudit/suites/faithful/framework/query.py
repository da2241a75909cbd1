"""Parse a faithful question's text back to a query, and evaluate it over trajectories.

The composer's questions come from a grammar (``suites/faithful/phrasing.py``): "Does N V?",
"Does N V before|after M does?", "Does N V before|after M V3?", "Has N already V-ed when M V3?"
(implicit order), "Do exactly K agents V?" (count) and "Is R that V3 the same agent as R' that V3'?"
(identity; R is "the agent" or a look, "the red circle"), with N, M names ("the red circle marked 3",
"the ball") and V a base form of ``phrasing.VERBS``. ``parse_question`` inverts it from
the text alone -- what the model is sent -- never from a sample's fields. ``answer`` evaluates the
query the way ``questions.evaluate`` does on a record, over a trajectory memory instead:

- a name denotes every trajectory whose known attributes agree with it (colour, shape; the number
  when the trajectory has one read), the ball every item trajectory;
- "lights up" / "goes dark" is a ``state`` entry with that value after one with the other value in
  the same trajectory; any other verb is a state with its predicate (and, for a relation, an object
  trajectory the object's name denotes);
- ``exists``: some event matches; ``before(a, b)``: an a-event strictly precedes a b-event;
  ``count``: exactly K agent trajectories do the event (one per agent only when identities are linked:
  with linking off an agent's fragments are counted apart); ``same``: one agent trajectory (with the look,
  when one is said) does both events. Identity is the memory's: two sightings are one agent when one
  trajectory holds both, as the aggregator linked them; the answerer does not re-link fragments by their
  attributes (that is the aggregator's step, the one ``linking=off`` turns off).
With no trajectory the answer is No (nothing is known to have happened).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vidaudit.suites.faithful.phrasing import NUMBER_WORDS, PARTICIPLES, VERBS
from vidaudit.suites.faithful.world import TIME_EPS

NAME = r"the (?:[a-z]+ [a-z]+ marked \d+|ball)"
_NAME_PARTS = re.compile(r"the ([a-z]+) ([a-z]+) marked (\d+)")
#: an identity question's description of an agent: "the agent", or a look without a number ("the red circle")
REF = r"the (?:agent|[a-z]+ [a-z]+)"


@dataclass(frozen=True)
class Name:
    colour: str | None = None
    shape: str | None = None
    number: int | None = None
    item: bool = False

    @classmethod
    def parse_ref(cls, text: str) -> Name:
        """ "the agent" (any agent) or "the red circle" (that look, any number)."""
        if text == "the agent":
            return cls()
        m = re.fullmatch(r"the ([a-z]+) ([a-z]+)", text)
        if m is None:
            raise ValueError(f"not an agent description: {text!r}")
        return cls(colour=m.group(1), shape=m.group(2))

    @classmethod
    def parse(cls, text: str) -> Name:
        if text == "the ball":
            return cls(item=True)
        m = _NAME_PARTS.fullmatch(text)
        if m is None:
            raise ValueError(f"not a name: {text!r}")
        return cls(colour=m.group(1), shape=m.group(2), number=int(m.group(3)))


@dataclass(frozen=True)
class EventQ:
    subject: Name
    kind: str
    predicate: str
    value: str | None
    object: Name | None


@dataclass(frozen=True)
class Query:
    op: str  # "exists" | "before" | "count" | "same"
    a: EventQ
    b: EventQ | None = None
    n: int | None = None  # for "count": the number asked about


def _verb_regex(template: str) -> str:
    return re.escape(template).replace(re.escape("{o}"), f"(?P<o>{NAME})")


_BASE = [(key, _verb_regex(base)) for key, (base, _) in VERBS.items()]
_THIRD = [(key, _verb_regex(third)) for key, (_, third) in VERBS.items()]
_PARTICIPLE = [(key, _verb_regex(pp)) for key, pp in PARTICIPLES.items()]
#: "any agent": the subject of a count question
ANY_AGENT = Name()


def _event(subject: str, key: tuple, obj: str | None) -> EventQ:
    kind, predicate, value = key
    o: Name | None = Name(item=True) if predicate == "receives" else Name.parse(obj) if obj else None
    return EventQ(Name.parse(subject), kind, predicate, value, o)


def _third_event(subject: str, rest: str) -> EventQ | None:
    for key, rx in _THIRD:
        m = re.fullmatch(rx, rest)
        if m is not None:
            return _event(subject, key, m.groupdict().get("o"))
    return None


def _ref_event(ref: str, rest: str) -> EventQ | None:
    for key, rx in _THIRD:
        m = re.fullmatch(rx, rest)
        if m is not None:
            kind, predicate, value = key
            obj = m.groupdict().get("o")
            o = Name(item=True) if predicate == "receives" else (Name.parse(obj) if obj else None)
            return EventQ(Name.parse_ref(ref), kind, predicate, value, o)
    return None


def _same(q: str) -> Query | None:
    """ "Is R that V3 the same agent as R' that V3'?" (identity)."""
    m = re.fullmatch(rf"Is (?P<r>{REF}) that (?P<rest>.+) the same agent as (?P<r2>{REF}) that (?P<rest2>.+)\?", q)
    if m is None:
        return None
    a, b = _ref_event(m.group("r"), m.group("rest")), _ref_event(m.group("r2"), m.group("rest2"))
    if a is None or b is None:
        raise ValueError(f"no verb of the grammar in {q!r}")
    return Query("same", a, b)


def _special(q: str) -> Query | None:
    """The implicit order ("Has N already V-ed when M V3?"), count ("Do exactly K agents V?") and identity
    ("Is R that V3 the same agent as R' that V3'?") forms."""
    same = _same(q)
    if same is not None:
        return same
    m = re.fullmatch(rf"Has (?P<s>{NAME}) already (?P<rest>.+) when (?P<s2>{NAME}) (?P<rest2>.+)\?", q)
    if m is not None:
        for key, rx in _PARTICIPLE:
            vm = re.fullmatch(rx, m.group("rest"))
            b = _third_event(m.group("s2"), m.group("rest2"))
            if vm is not None and b is not None:
                return Query("before", _event(m.group("s"), key, vm.groupdict().get("o")), b)
        raise ValueError(f"no verb of the grammar in {q!r}")
    m = re.fullmatch(r"(?:Do|Does) exactly (?P<n>[a-z]+) agents? (?P<rest>.+)\?", q)
    if m is not None and m.group("n") in NUMBER_WORDS:
        for key, rx in _BASE:
            vm = re.fullmatch(rx, m.group("rest"))
            if vm is not None:
                kind, predicate, value = key
                obj = vm.groupdict().get("o")
                o = Name(item=True) if predicate == "receives" else (Name.parse(obj) if obj else None)
                return Query("count", EventQ(ANY_AGENT, kind, predicate, value, o), n=NUMBER_WORDS.index(m.group("n")))
        raise ValueError(f"no verb of the grammar in {q!r}")
    return None


def parse_question(text: str) -> Query:
    """The query of a composer question; ``ValueError`` for text outside the grammar."""
    q = text.strip()
    special = _special(q)
    if special is not None:
        return special
    m = re.fullmatch(rf"Does (?P<s>{NAME}) (?P<rest>.+)\?", q)
    if m is None:
        raise ValueError(f"not a faithful question: {text!r}")
    subject, rest = m.group("s"), m.group("rest")
    for key, rx in _BASE:
        vm = re.match(rx, rest)
        if vm is None:
            continue
        tail = rest[vm.end() :]
        a = _event(subject, key, vm.groupdict().get("o"))
        if tail == "":
            return Query("exists", a)
        tm = re.fullmatch(rf" (?P<w>before|after) (?P<s2>{NAME}) (?P<rest2>.+)", tail)
        if tm is None:
            continue
        s2, rest2 = tm.group("s2"), tm.group("rest2")
        if rest2 == "does":
            b = EventQ(Name.parse(s2), a.kind, a.predicate, a.value, a.object)
        else:
            found: EventQ | None = None
            for key2, rx2 in _THIRD:
                m2 = re.fullmatch(rx2, rest2)
                if m2 is not None:
                    found = _event(s2, key2, m2.groupdict().get("o"))
                    break
            if found is None:
                continue
            b = found
        return Query("before", a, b) if tm.group("w") == "before" else Query("before", b, a)
    raise ValueError(f"no verb of the grammar in {text!r}")


def question_of(prompt: str) -> str:
    """The question line of a faithful prompt ("Question: ...")."""
    m = re.search(r"^Question: (.+)$", prompt, re.M)
    if m is None:
        raise ValueError("the prompt has no 'Question:' line")
    return m.group(1).strip()


# --------------------------------------------------------------------------- evaluation over trajectories


def denotes(name: Name, traj: dict) -> bool:
    if name.item:
        return traj["category"] == "item"
    if traj["category"] != "agent":
        return False
    at = traj["attributes"]
    for k, v in (("colour", name.colour), ("shape", name.shape), ("number", name.number)):
        if v is not None and at.get(k) is not None and at[k] != v:  # a field the name leaves open matches any
            return False
    return True


def event_times(e: EventQ, trajs: list[dict], subjects: list[dict] | None = None) -> list[float]:
    """Times of the events ``e`` names in ``trajs`` (done by ``subjects`` only when given)."""
    objs = {t["id"] for t in trajs if e.object is not None and denotes(e.object, t)}
    out = []
    for t in trajs if subjects is None else subjects:
        if not denotes(e.subject, t):
            continue
        prev_value = None
        for when, kind, pred, value, obj in t["states"]:
            if kind == "attribute" and pred == e.predicate == "state":
                if value == e.value and prev_value is not None and prev_value != value:
                    out.append(float(when))
                prev_value = value
            elif pred == e.predicate and kind == e.kind and (e.object is None or obj in objs):
                out.append(float(when))
    return out


def doers(e: EventQ, trajs: list[dict]) -> set[str]:
    """The agent trajectories that do ``e`` (one per agent only when identities are linked)."""
    return {t["id"] for t in trajs if t["category"] == "agent" and event_times(e, trajs, subjects=[t])}


def answer(q: Query, trajs: list[dict]) -> bool:
    if q.op == "count":  # the trajectories that do it: one per agent when identities are linked
        return len(doers(q.a, trajs)) == q.n
    if q.op == "same":  # one trajectory does both: the memory's identity
        return q.b is not None and bool(doers(q.a, trajs) & doers(q.b, trajs))
    a = event_times(q.a, trajs)
    if q.op == "exists":
        return bool(a)
    b = event_times(q.b, trajs) if q.b is not None else []
    return any(ta < tb - TIME_EPS for ta in a for tb in b)
