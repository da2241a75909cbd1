"""The ``wireframe`` probe behind the ``Probe`` interface (Reveal B.7 behavioural tests)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vidaudit.sdk import Condition, ConfigError, Prompt, Sample
from vidaudit.suites.stress.common import require_every_frame
from vidaudit.suites.stress.probe import ProbeBaselines, RenderingProbe
from vidaudit.suites.stress.viewer import ParamsTrial
from vidaudit.suites.stress.wireframe.generate import generate
from vidaudit.suites.stress.wireframe.observer import observe as observer
from vidaudit.suites.stress.wireframe.report import wireframe_report
from vidaudit.suites.stress.wireframe.scene import ARRANGEMENTS, COUNTS, NODES, QUERY
from vidaudit.suites.stress.wireframe.scoring import score_trial
from vidaudit.suites.stress.wireframe.tasks import SIDE_OPTIONS, TASKS, answer_text, question

PROBE_NAME = "wireframe"


class WireframeBaselines(ProbeBaselines):
    """The wireframe probe's baseline answers."""

    def oracle_answer(self, sample: Sample) -> str:
        return answer_text(sample.params["task"], str(sample.answer))

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        self.refuse_option(option, "it draws uniformly over the task's answers")
        task = sample.params["task"]
        if task in ("connectivity", "window"):
            others = [x for x in NODES if x != QUERY]
            pick = sorted(others[int(i)] for i in rng.choice(len(others), 2, replace=False))
            return answer_text(task, ", ".join(pick))
        if task == "spatial":
            return answer_text(task, SIDE_OPTIONS[int(rng.integers(len(SIDE_OPTIONS)))][1])
        return answer_text(task, str(COUNTS[int(rng.integers(len(COUNTS)))]))

    def constant_answer(self, sample: Sample, value: str) -> str:
        task = sample.params["task"]
        v = value.strip()
        if task == "spatial":
            side = {"A": "left", "B": "right"}.get(v.upper(), v.lower())
            if side not in ("left", "right"):
                raise ConfigError(f"constant answer for wireframe spatial must be left, right, A or B; got {value!r}")
            return answer_text(task, side)
        return answer_text(task, v)

    observe = staticmethod(observer)


class WireframeProbe(RenderingProbe):
    name = PROBE_NAME
    description = (
        "B.7 line connectivity at 448x448 in 4 frames (control / adversarial temporal groups / "
        "interleaved), widths 1-10 px, with the x=112 window contrast, spatial and counting tasks"
    )
    presets = ("smoke", "paper")
    prompts = ("mcq",)
    record_keys = ("probe", "task", "arrangement", "line_width", "seed", "preset", "scene_kind")
    renders = "scenes"
    generator = staticmethod(generate)
    baselines = WireframeBaselines()

    domains = {"task": TASKS, "arrangement": ARRANGEMENTS}

    def check_truth(self, sample: Sample) -> str | None:
        p = sample.params
        if sample.video.n_frames != 4:
            return f"a wireframe video has 4 frames, this one {sample.video.n_frames}"
        if p["task"] in ("connectivity", "window") and sample.answer != ", ".join(p.get("neighbours", [])):
            return f"answer {sample.answer!r} is not its neighbours {p.get('neighbours')}"
        return None

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        require_every_frame(sample, condition, self.name)
        q = sample.params.get("query")
        return Prompt(None, question(sample.params["task"], tuple(q) if q else None))

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        p = sample.params
        return {
            "task": p["task"],
            "arrangement": p["arrangement"],
            "width": p["width"],
            "height": p["height"],
            "query": p.get("query"),
        }

    viewer_trial = staticmethod(
        ParamsTrial(
            PROBE_NAME,
            kind="task",
            predicted="predicted",
            facts={"arrangement": "arrangement", "line width px": "line_width", "scene": "scene_kind"},
            grid=("task", "arrangement"),
        )
    )

    score = staticmethod(score_trial)
    aggregate = staticmethod(wireframe_report)


PROBE = WireframeProbe()
