"""D.6's retrieval measurements and H.12's tokens per frame and latency split (issue 23), on a real offline run of
one smoke world: the clutter-failure rate pairs the filtered framework with its ``retrieval=all`` twin, the
drop-one-gold re-answer pairs ``drop_one=on`` with the base, both recomputed here from scores.jsonl; the budget
carries tokens per frame and the latency split from the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vidaudit.core.types import Condition, ModelSpec, Presentation
from vidaudit.run.session import execute
from vidaudit.suites.faithful.framework.interventions import pairs
from vidaudit.suites.faithful.framework.retrieval_eval import dropped_of

COND = "native@1/yes_no"
BASE = "object-centric:chunk_s=4,offline"
ALL = "object-centric:chunk_s=4,retrieval=all,offline"
DROP = "object-centric:chunk_s=4,drop_one=on,offline"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from vidaudit.report.stage import report_run
    from vidaudit.suites.faithful.generate import generate, specs_for

    root = tmp_path_factory.mktemp("iv")
    generate(specs_for("smoke", seeds=1, max_targets=6), root / "data", workers=1)
    cond = Condition(presentation=Presentation.NATIVE, fps=1.0, prompt="yes_no")
    res = execute(
        root / "data", root / "run", [ModelSpec.parse(m) for m in (BASE, ALL, DROP)], [cond], suite="faithful"
    )
    assert res.summary is not None and not res.summary.stopped_early
    report_run(root / "run")
    return root / "run"


def _results(run: Path) -> dict:
    return json.loads((run / "report" / "report.json").read_text())["results"]


def _scores(run: Path) -> dict[tuple[str, str], dict]:
    out = {}
    for line in (run / "scores.jsonl").read_text().splitlines():
        r = json.loads(line)
        out[(r["model"], r["sample_id"])] = r
    return out


def _right(r: dict | None) -> bool:
    return r is not None and r["status"] == "ok" and bool(r["correct"])


def test_clutter_failure_rate_recomputes_from_the_scores(run: Path) -> None:
    res = _results(run)
    [c] = res["interventions"]["clutter"]
    assert (c["filtered"], c["no_filter"], c["condition"]) == (BASE, ALL, COND)
    sc = _scores(run)
    targets = sorted({sid for (m, sid), r in sc.items() if m == BASE and r["params"]["role"] == "target"})
    assert c["n_targets"] == len(targets) > 0
    fails = sum(_right(sc[(BASE, t)]) and not _right(sc[(ALL, t)]) for t in targets)
    reverse = sum(_right(sc[(ALL, t)]) and not _right(sc[(BASE, t)]) for t in targets)
    assert (c["clutter_failures"], c["filter_failures"]) == (fails, reverse)
    assert c["clutter_failure_rate"] == pytest.approx(fails / len(targets))


def test_dropping_one_retrieved_gold_trajectory_and_re_answering(run: Path) -> None:
    res = _results(run)
    [d] = res["interventions"]["drop_one_gold"]
    assert (d["base"], d["dropped"]) == (BASE, DROP) and d["gold"].startswith("chain entities")
    sc = _scores(run)
    dropped = [
        sid
        for (m, sid), r in sc.items()
        if m == DROP and r["params"]["role"] == "target" and r["metrics"].get("dropped")
    ]
    assert 0 < d["n_targets"] <= len(dropped)
    # the answerer consumes what it is given: without a gold trajectory it is right less often than with it
    assert d["a_target_after_drop"] < d["a_target_base"]
    ok = [r for (m, _), r in sc.items() if m == BASE and r["status"] == "ok"]
    assert ok and all("dropped" not in r["metrics"] for r in ok)  # the base run drops nothing
    md = (run / "report" / "report.md").read_text()
    assert "Clutter failures" in md and "Drop one retrieved gold trajectory" in md


def test_tokens_per_frame_and_the_latency_split(run: Path) -> None:
    systems = {s["model"]: s for s in _results(run)["budget"]["systems"]}
    base = systems[BASE]
    assert base["n_videos"] == 1
    lat = base["latency"]
    assert lat["preprocessing_s_per_video"] > 0 and lat["per_query_s"] >= 0
    assert set(lat["median_s_per_call"]) == {"extract", "answer"}  # lexical retrieval: no R call
    assert lat["preprocessing_s_total"] == pytest.approx(lat["preprocessing_s_per_video"])
    # the offline stages report no tokens: tokens per frame is 0 over the frames they were sent
    assert base["input_tokens_per_frame"] == 0
    assert base["frame_tokens_at_256_per_question"] == pytest.approx(256 * base["frames_per_question"])
    md = (run / "report" / "report.md").read_text()
    assert "Tokens per frame and latency split (H.12)" in md


def test_pairs_only_match_specs_that_differ_in_the_one_option() -> None:
    systems = [
        (BASE, COND),
        (ALL, COND),
        (DROP, COND),
        ("object-centric:chunk_s=5,retrieval=all,offline", COND),
        (ALL, "other"),
    ]
    assert pairs(systems, "retrieval", "all", ("model", "lexical")) == [((BASE, COND), (ALL, COND))]
    assert pairs(systems, "drop_one", "on", ("off",)) == [((BASE, COND), (DROP, COND))]
    assert dropped_of("[object-centric] chunks=1 retrieved=- dropped=T2=red/circle/3\nAnswer: No") == [
        {"id": "T2", "category": "agent", "attributes": {"colour": "red", "shape": "circle", "number": 3}}
    ]
    assert dropped_of("[object-centric] chunks=1 retrieved=-\nAnswer: No") is None
