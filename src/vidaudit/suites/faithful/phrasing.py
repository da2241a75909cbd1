"""English for patterns and forms: "Does the red circle marked 3 light up before the blue square marked 5 does?",
"Has the red circle marked 3 already lit up when the ball ...?" (implicit order), "Do exactly two agents light up?",
"Is the red circle that goes behind the blue hexagon marked 5 the same agent as the red circle that lights up?"
(identity: agents described by what they do, and by their shared look when they are look-alikes)

Every predicate the simulator logs has a base form (after "Does X ...") and a third-person form
(after "before X ..."). Entities are named by their record's ``name``, which spells out colour,
shape and number, so that look-alikes are told apart by their numbers.
"""

from __future__ import annotations

from vidaudit.suites.faithful.questions import Before, Count, EventKind, Exists, Pattern, Ref, Same
from vidaudit.suites.faithful.world import WorldRecord

#: (kind, predicate, value) -> (base form, third person); "{o}" is the object's name
VERBS: dict[tuple[str, str, str | None], tuple[str, str]] = {
    ("attribute", "state", "lit"): ("light up", "lights up"),
    ("attribute", "state", "dark"): ("go dark", "goes dark"),
    ("relation", "passes_to", None): ("pass the ball to {o}", "passes the ball to {o}"),
    ("relation", "receives", None): ("receive the ball", "receives the ball"),
    ("relation", "collides_with", None): ("bump into {o}", "bumps into {o}"),
    ("relation", "goes_behind", None): ("go behind {o}", "goes behind {o}"),
    ("relation", "emerges_from", None): ("come out from behind {o}", "comes out from behind {o}"),
    ("action", "exits", None): ("leave the scene", "leaves the scene"),
    ("action", "enters", None): ("enter the scene", "enters the scene"),
}
#: past participles, for the implicit order phrasing "Has X already lit up when Y leaves the scene?"
PARTICIPLES: dict[tuple[str, str, str | None], str] = {
    ("attribute", "state", "lit"): "lit up",
    ("attribute", "state", "dark"): "gone dark",
    ("relation", "passes_to", None): "passed the ball to {o}",
    ("relation", "receives", None): "received the ball",
    ("relation", "collides_with", None): "bumped into {o}",
    ("relation", "goes_behind", None): "gone behind {o}",
    ("relation", "emerges_from", None): "come out from behind {o}",
    ("action", "exits", None): "left the scene",
    ("action", "enters", None): "entered the scene",
}
NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def _name(world: WorldRecord, entity_id: str) -> str:
    return world.entity(entity_id).name


def verb(p: Pattern | EventKind, world: WorldRecord, third: bool = False, participle: bool = False) -> str:
    key = (p.kind, p.predicate, p.value)
    if key not in VERBS:
        raise KeyError(f"no phrasing for {key}")
    text = PARTICIPLES[key] if participle else VERBS[key][1 if third else 0]
    return text.format(o=_name(world, p.object)) if p.object else text


def same_event_kind(a: Pattern, b: Pattern) -> bool:
    """Two patterns that differ only in their subject ("X lights up" / "Y lights up")."""
    return (a.kind, a.predicate, a.object, a.value) == (b.kind, b.predicate, b.object, b.value)


def clause(p: Pattern, world: WorldRecord) -> str:
    return f"{_name(world, p.subject)} {verb(p, world, third=True)}"


def exists_text(p: Pattern, world: WorldRecord) -> str:
    return f"Does {_name(world, p.subject)} {verb(p, world)}?"


def order_text(first: Pattern, second: Pattern, world: WorldRecord, word: str = "before") -> str:
    """ "Does <first> <word> <second>?"; ``word`` is "before" or "after"."""
    tail = f"{_name(world, second.subject)} does" if same_event_kind(first, second) else clause(second, world)
    return f"Does {_name(world, first.subject)} {verb(first, world)} {word} {tail}?"


def implicit_order_text(first: Pattern, second: Pattern, world: WorldRecord) -> str:
    """ "Has <first> already <done p> when <second>?": the order is implied, never said."""
    return (
        f"Has {_name(world, first.subject)} already {verb(first, world, participle=True)} when {clause(second, world)}?"
    )


def count_text(event: EventKind, n: int, world: WorldRecord) -> str:
    if not 0 <= n < len(NUMBER_WORDS):
        raise ValueError(f"no phrasing for a count of {n}")
    noun = "agent" if n == 1 else "agents"
    return f"{'Does' if n == 1 else 'Do'} exactly {NUMBER_WORDS[n]} {noun} {verb(event, world)}?"


def ref_text(r: Ref, world: WorldRecord) -> str:
    """ "the agent that <does e>", or with a look "the red circle that <does e>" (never a number)."""
    if (r.colour is None) != (r.shape is None):
        raise ValueError("a ref names both colour and shape, or neither")
    who = "the agent" if r.colour is None else f"the {r.colour} {r.shape}"
    return f"{who} that {verb(r.event, world, third=True)}"


def same_text(form: Same, world: WorldRecord) -> str:
    return f"Is {ref_text(form.a, world)} the same agent as {ref_text(form.b, world)}?"


def text_of(
    form: Exists | Before | Count | Same, world: WorldRecord, after: bool = False, implicit: bool = False
) -> str:
    """The question of a form; ``after`` phrases ``before(a, b)`` as "Does <b> after <a>?", ``implicit`` as
    "Has <a> already ... when <b>?"."""
    if isinstance(form, Exists):
        return exists_text(form.pattern, world)
    if isinstance(form, Same):
        return same_text(form, world)
    if isinstance(form, Count):
        return count_text(form.event, form.n, world)
    if implicit:
        return implicit_order_text(form.a, form.b, world)
    if after:
        return order_text(form.b, form.a, world, "after")
    return order_text(form.a, form.b, world, "before")
