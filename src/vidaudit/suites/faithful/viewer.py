"""How the trace viewer shows a faithful trial: the question, its gold and read answer, and its group.

A target lists its sub-questions with their answers and its chain of facts (and, for a negative,
the fact it perturbs); a sub-question names its target and the facts it probes. All from the
sample's params, so the viewer needs no other file.
"""

from __future__ import annotations

from vidaudit.sdk import DataError, Sample, ScoreRecord, ViewerColumn, ViewerSpec, ViewerTrial

FAITHFUL_VIEWER = ViewerSpec(
    group_label="role",
    columns=[
        ViewerColumn(key="role", label="role"),
        ViewerColumn(key="probe_type", label="probe"),
        ViewerColumn(key="gold", label="gold"),
        ViewerColumn(key="said", label="read"),
    ],
)


def viewer_trial(record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
    if record.sample_id != sample.sample_id:
        raise DataError(f"trial {record.trial_id} is for sample {record.sample_id!r}, got {sample.sample_id!r}")
    p = sample.params
    role = str(p.get("role") or "")
    said = record.parse.value if record.parse is not None else None
    method = record.parse.method if record.parse is not None else None
    facts: list[tuple[str, str]] = [
        ("question", sample.question),
        ("gold", str(sample.answer)),
        ("read", f"{said if said is not None else '—'}" + (f" ({method})" if method else "")),
        ("video", str(p.get("video_id"))),
    ]
    if role == "target":
        if p.get("polarity"):
            facts.append(("polarity", str(p["polarity"])))
        for j, sub in enumerate(p.get("subs") or [], 1):
            facts.append(
                (
                    f"sub-question {j} [{sub.get('probe_type') or 'probe type unknown'}]",
                    f"{sub['question']} — {sub['answer']}",
                )
            )
        for line in p.get("chain_text") or []:
            facts.append(("chain fact", line))
        if p.get("perturbed"):
            pt = p["perturbed"]
            facts.append(
                ("perturbed fact", f"{pt['fact_id']} replaced by a claim false at {pt['t']:.2f} s: {pt['replacement']}")
            )
    else:
        facts.append(("target", f"{p.get('target_question')} — {p.get('target_answer')}"))
        for line in p.get("fact_text") or []:
            facts.append(("probed fact", line))
    if p.get("invalid"):
        facts.append(("invalid item (kept as wrong)", ", ".join(p["invalid"])))
    return ViewerTrial.of(
        record,
        raw_text,
        group=role,
        columns={"role": role, "probe_type": p.get("probe_type"), "gold": str(sample.answer), "said": said},
        facts=facts,
        grid_point=[role, p.get("probe_type")],
    )
