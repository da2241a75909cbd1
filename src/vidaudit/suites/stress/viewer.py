"""How the trace viewer lists stress trials: one spec for every probe (the group is probe: sub-kind), one
builder of a probe's trial row in it, and ``ParamsTrial`` for the probes whose row is read straight off the
sample's params."""

from __future__ import annotations

from dataclasses import dataclass, field
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
    return ViewerTrial.of(
        record,
        raw_text,
        group=f"{probe}: {kind}",
        columns={
            "answer": str(sample.answer) if answer is None else answer,
            "predicted": predicted,
            "parse": record.parse.method if record.parse else None,
        },
        facts=[("probe", probe), *facts],
        grid_point=grid_point,
    )


@dataclass(frozen=True)
class ParamsTrial:
    """The viewer row of a probe that words nothing itself: every cell is a sample param or a record metric, named
    here by key, so such a probe declares which keys it shows instead of spelling ``probe_trial``'s call again.

    Called as the probe's ``viewer_trial``: grouped by the param ``kind``, the predicted answer the metric
    ``predicted``, the facts the params ``facts`` (label -> key, as ``str``) then the metrics ``metric_facts``,
    the grid point the params ``grid``."""

    probe: str
    kind: str
    predicted: str
    facts: dict[str, str]
    grid: tuple[str, ...]
    metric_facts: dict[str, str] = field(default_factory=dict)

    def __call__(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        p, m = sample.params, record.metrics
        return probe_trial(
            self.probe,
            record,
            sample,
            raw_text,
            kind=p.get(self.kind),
            predicted=m.get(self.predicted),
            facts=[(label, str(p.get(k))) for label, k in self.facts.items()]
            + [(label, str(m.get(k))) for label, k in self.metric_facts.items()],
            grid_point=[p.get(k) for k in self.grid],
        )
