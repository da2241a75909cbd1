"""How the trace viewer lists stress trials: one spec for every probe (the group is probe: sub-kind)."""

from __future__ import annotations

from vidaudit.sdk import ViewerColumn, ViewerSpec

STRESS_VIEWER = ViewerSpec(group_label="probe", columns=[ViewerColumn(key="answer", label="true answer"),
                                                         ViewerColumn(key="predicted", label="predicted"),
                                                         ViewerColumn(key="parse", label="parse")])
