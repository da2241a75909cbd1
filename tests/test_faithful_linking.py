"""Issue 10's Done-when for the identity-linking control: with the offline framework, linking off falls on
look-alike and occlusion worlds and not on worlds without them.

Worlds: smoke-sized (192x144, 10 fps), two seeds each; ``LOOKALIKE`` has 6 agents in 3 look-alike pairs and 4
occlusions over 18 s, ``PLAIN`` neither. Chunks of 1.5 s, so that many states fall near a chunk boundary
(where only a linked trajectory still holds the state before the change). Measured (docs/faithful.md):
LOOKALIKE, 4 seeds: A_faith 18/18 linking on vs 16/18 off; PLAIN, 4 seeds: 20/20 vs 20/20.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vidaudit.suites.faithful.framework.offline_eval import evaluate
from vidaudit.suites.faithful.generate import generate, specs_for

ON = "object-centric:chunk_s=1.5,offline"
OFF = "object-centric:chunk_s=1.5,linking=off,offline"
LOOKALIKE = {"agents": 6, "lookalikes": 3, "occlusions": 4, "duration_s": 18.0}
PLAIN = {"agents": 6, "lookalikes": 0, "occlusions": 0}


@pytest.fixture(scope="module")
def scores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    root = tmp_path_factory.mktemp("linking")
    out = {}
    for name, knobs in (("lookalike", LOOKALIKE), ("plain", PLAIN)):
        data = Path(root) / name
        generate(specs_for("smoke", seeds=2, **knobs), data, workers=1)
        out[name] = evaluate(data, [ON, OFF])
    return out


def test_linking_off_falls_on_lookalike_and_occlusion_worlds(scores: dict[str, dict]) -> None:
    on, off = scores["lookalike"][ON], scores["lookalike"][OFF]
    assert on.targets >= 6
    assert on.a_faith >= 0.8
    assert on.faithful >= off.faithful + 1, (on, off)


def test_linking_off_does_not_fall_without_lookalikes_or_occlusions(scores: dict[str, dict]) -> None:
    on, off = scores["plain"][ON], scores["plain"][OFF]
    assert on.targets >= 6
    assert on.a_faith >= 0.8
    assert abs(on.faithful - off.faithful) <= 1, (on, off)
