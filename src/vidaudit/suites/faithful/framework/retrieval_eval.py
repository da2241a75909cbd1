"""Retrieval precision and recall against each target's gold chain (D.6), on data with fact chains.

Unit: the entity (a trajectory is the memory's unit, §5.3). Gold: the entities the target's chain
facts name (subjects and objects, read from the chain's text, e.g. "the red circle marked 3",
"the ball"). A retrieved trajectory (its descriptor in the framework's header line) *hits* a gold
entity when its known attributes agree with the entity's name (colour and shape equal, the number
equal when the trajectory has one; the ball: an item). Per target: precision = retrieved trajectories
that hit some gold entity / retrieved; recall = gold entities hit by some retrieved trajectory /
gold entities. Reported as means over targets (macro; a target with nothing retrieved has
precision undefined and is left out of the precision mean) and pooled (micro).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from vidaudit.suites.faithful.framework.query import NAME, Name, denotes

_HEADER = re.compile(r"^\[object-centric\] .*?retrieved=(\S+)", re.M)
_DESC = re.compile(r"^(T\d+)=(?:item/(\w+)|(\w+)/(\w+|None)/(\w+|None))$")


_DROPPED = re.compile(r"^\[object-centric\] .*? dropped=(\S+)", re.M)
_MEMORY = re.compile(r"^\[object-centric\] .*? memory=(\d+)", re.M)


def memory_of(text: str | None) -> int | None:
    """The estimated tokens of the memory G read, as a framework reply's header says (None: not said)."""
    m = _MEMORY.search(text or "")
    return None if m is None else int(m.group(1))


def retrieved_of(text: str | None) -> list[dict] | None:
    """The retrieved trajectories a framework reply names (None: not a framework reply)."""
    m = _HEADER.search(text or "")
    return None if m is None else _descriptors(m.group(1))


def dropped_of(text: str | None) -> list[dict] | None:
    """The trajectory a ``drop_one=on`` reply dropped (None: no drop in the reply; [] when nothing was named)."""
    m = _DROPPED.search(text or "")
    return None if m is None else _descriptors(m.group(1))


def _descriptors(field: str) -> list[dict]:
    if field == "-":
        return []
    out = []
    for d in field.split(","):
        dm = _DESC.match(d)
        if dm is None:
            continue
        if dm.group(2) is not None:
            out.append({"id": dm.group(1), "category": "item", "attributes": {"colour": dm.group(2)}})
        else:
            num = dm.group(5)
            out.append(
                {
                    "id": dm.group(1),
                    "category": "agent",
                    "attributes": {
                        "colour": dm.group(3),
                        "shape": None if dm.group(4) == "None" else dm.group(4),
                        "number": None if num == "None" else int(num),
                    },
                }
            )
    return out


def gold_entities(chain_text: Sequence[str]) -> list[Name]:
    names = {n for line in chain_text for n in re.findall(NAME, line)}
    return [Name.parse(n) for n in sorted(names)]


def precision_recall(retrieved: list[dict], gold: list[Name]) -> tuple[float | None, float | None]:
    if not gold:
        return None, None
    hits = [t for t in retrieved if any(denotes(g, t) for g in gold)]
    covered = [g for g in gold if any(denotes(g, t) for t in retrieved)]
    return (len(hits) / len(retrieved) if retrieved else None), len(covered) / len(gold)


def summarise(pairs: Sequence[tuple[list[dict], list[Name]]]) -> dict:
    ps, rs = [], []
    n_ret = n_hit = n_gold = n_cov = 0
    for ret, gold in pairs:
        p, r = precision_recall(ret, gold)
        if p is not None:
            ps.append(p)
        if r is not None:
            rs.append(r)
        n_ret += len(ret)
        n_hit += sum(any(denotes(g, t) for g in gold) for t in ret)
        n_gold += len(gold)
        n_cov += sum(any(denotes(g, t) for t in ret) for g in gold)
    return {
        "n_targets": len(pairs),
        "precision_macro": sum(ps) / len(ps) if ps else None,
        "recall_macro": sum(rs) / len(rs) if rs else None,
        "precision_micro": n_hit / n_ret if n_ret else None,
        "recall_micro": n_cov / n_gold if n_gold else None,
        "mean_retrieved": n_ret / len(pairs) if pairs else None,
        "unit": "entity (trajectory); gold = the entities the target's chain facts name",
    }
