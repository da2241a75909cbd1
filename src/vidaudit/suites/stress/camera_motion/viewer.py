"""One camera-motion trial in the trace viewer (the columns of the suite's ``STRESS_VIEWER``)."""

from __future__ import annotations

from vidaudit.suites.stress.viewer import ParamsTrial

viewer_trial = ParamsTrial(
    "camera_motion",
    kind="motion",
    predicted="predicted_motion",
    facts={"synthesis": "synthesis", "content motion": "content_motion", "perturbation": "perturbation"},
    grid=("motion",),
)
