"""``paused_gc``: the collector is off inside, and back to exactly its earlier state after, errors included."""

from __future__ import annotations

import gc

import pytest

from vidaudit.core.gcpause import paused_gc, roomy_young_gc


@pytest.mark.parametrize("was_on", [True, False])
def test_the_collector_is_off_inside_and_restored_after(was_on: bool) -> None:
    (gc.enable if was_on else gc.disable)()
    try:
        with paused_gc():
            assert not gc.isenabled()
            with paused_gc():  # nested: the inner block must not turn it back on
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled() is was_on
        with pytest.raises(RuntimeError), paused_gc():
            raise RuntimeError("a failed pass")
        assert gc.isenabled() is was_on
    finally:
        gc.enable()


def test_a_roomy_young_generation_is_restored_after_errors_included() -> None:
    before = gc.get_threshold()
    with roomy_young_gc(12_345):
        assert gc.get_threshold() == (12_345, *before[1:]) and gc.isenabled()
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), roomy_young_gc(12_345):
        raise RuntimeError("a failed run")
    assert gc.get_threshold() == before


def test_score_and_report_leave_the_collector_on(smoke_dir) -> None:
    """A run scored and reported through the stages (which pause it) leaves the collector as it found it."""
    from vidaudit.core.manifest import load_samples
    from vidaudit.report.stage import build_report
    from vidaudit.score.stage import ResponseRow, score_rows

    samples = {s.sample_id: s for s in load_samples(smoke_dir)}
    rows = [
        ResponseRow(sample_id=sid, model="m", condition="c", response=f"\\boxed{{{s.answer}}}", status="ok")
        for sid, s in samples.items()
    ]
    assert gc.isenabled()
    scored = score_rows(samples, rows, suite="counting")
    report = build_report(scored)
    assert gc.isenabled() and len(scored.records) == len(samples) and report is not None
