"""How the trace viewer lists stress trials: one spec for every probe (the group is probe: sub-kind), and one
builder of a probe's trial row in it."""

from __future__ import annotations

from typing import Any

from vidaudit.sdk import Sample, ScoreRecord, ViewerColumn, ViewerSpec, ViewerTrial

STRESS_VIEWER = ViewerSpec(
    group_label="probe",
    columns=[
        ViewerColumn(key="answer", label="true answer"),
        ViewerColumn(key="predicted", label="predicted"),
        ViewerColumn(key="parse", label="parse"),
    ],
)


def probe_trial(
    probe: str,
    record: ScoreRecord,
    sample: Sample,
    raw_text: str | None,
    *,
    kind: object,
    predicted: Any,
    facts: list[tuple[str, str]],
    grid_point: list[Any],
    answer: str | None = None,
) -> ViewerTrial:
    """One trial of ``probe`` as ``STRESS_VIEWER`` lists it: grouped as "probe: kind", the true answer (the
    sample's, unless a probe words it as ``answer``), the ``predicted`` one and how it was parsed, the probe
    first among the facts."""
    return ViewerTrial(
        trial_id=record.trial_id,
        sample_id=record.sample_id,
        model=record.model,
        condition=record.condition,
        group=f"{probe}: {kind}",
        status=record.status,
        correct=record.correct,
        columns={
            "answer": str(sample.answer) if answer is None else answer,
            "predicted": predicted,
            "parse": record.parse.method if record.parse else None,
        },
        facts=[("probe", probe), *facts],
        raw_text=raw_text or "",
        grid_point=grid_point,
    )
