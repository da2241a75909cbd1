"""The paper's variant names (Table 7): ``variant=A|B|C`` as spec aliases, the prose extractor behind B and C, and
the names shown in the report -- with the local fake OpenAI-compatible server as the backbone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from httpfake import FakeServer, Recorded, Reply
from test_faithful_framework_backbone import (
    CHAT,
    Backbone,
    _framework_run,
    _n_samples,
    _text,
    completion,
    data,  # noqa: F401 - the module's dataset fixture
)
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ModelSpec
from vidaudit.suites.faithful.framework.spec import VARIANT_TITLES, parse_spec, variant_of


def _opts(spec: str):
    return parse_spec(ModelSpec.parse(spec))


def test_variant_aliases_expand_to_the_options_they_name() -> None:
    b, c, a = (_opts(f"object-centric:variant={v},openai:gpt-4o") for v in "BCA")
    assert (b.states, b.retrieval) == ("prose", "all") and (c.states, c.retrieval) == ("prose", "model")
    assert a == _opts("object-centric:openai:gpt-4o")
    assert variant_of(b) == "B" and variant_of(c) == "C" and variant_of(a) == "A"
    # long-hand specs get the same names; ablations of A are no variant of the paper's
    assert variant_of(_opts("object-centric:states=prose,retrieval=all,openai:gpt-4o")) == "B"
    assert variant_of(_opts("object-centric:offline")) == "A"
    assert variant_of(_opts("object-centric:order=shuffled,openai:gpt-4o")) is None
    assert variant_of(_opts("object-centric:states=captions,openai:gpt-4o")) is None  # dense captions: Cluster H


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("object-centric:variant=B,retrieval=model,openai:gpt-4o", "variant=B means retrieval=all"),
        ("object-centric:variant=D,openai:gpt-4o", "variant must be one of A, B, C"),
        ("object-centric:variant=C,offline", "needs a model"),
        ("object-centric:variant=B,linking=off,openai:gpt-4o", "no trajectories"),
    ],
)
def test_variants_refuse_what_contradicts_them(spec: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        _opts(spec)


class Prose(Backbone):
    def __call__(self, rec: Recorded) -> Reply:
        if "[prose v" in _text(rec):
            return Reply(
                json=completion("The red circle enters at 0.5 s and passes the ball to the blue square at 3.0 s.")
            )
        return super().__call__(rec)


def test_b_and_c_run_the_prose_extractor_and_the_report_names_them(data: Path, tmp_path: Path) -> None:  # noqa: F811
    from vidaudit.report.stage import report_run

    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Prose())
        bb = f"openai:bb@{srv.url}/v1"
        vb, vc = (
            f"object-centric:chunk_s=6,chunk_frames=3,answer_frames=2,variant=B,{bb}",
            f"object-centric:chunk_s=6,chunk_frames=3,answer_frames=2,variant=C,{bb}",
        )
        _framework_run(data, tmp_path / "run", srv, vb, vc)
        sent = srv.requests_to(CHAT)
        prose = [r for r in sent if "[prose v1]" in _text(r)]
        retrieve = [r for r in sent if "JSON list of the ids of the captions" in _text(r)]
        answers = [r for r in sent if "Captions of the video's chunks" in _text(r) and "JSON list" not in _text(r)]
        report_run(tmp_path / "run")
    n = _n_samples(data)
    assert len(prose) == 2  # two chunks, built once for both variants
    assert 1 <= len(retrieve) <= n  # only C retrieves (one call per distinct question)
    assert all("passes the ball" in _text(r) for r in answers)
    results = json.loads((tmp_path / "run" / "report" / "report.json").read_text())["results"]
    assert results["variants"] == {vb: VARIANT_TITLES["B"], vc: VARIANT_TITLES["C"]}
    md = (tmp_path / "run" / "report" / "report.md").read_text()
    assert "is the paper's Variant B: prose extractor, no R" in md
