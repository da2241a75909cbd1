"""Items shown under a condition's perturbation: the strip-masked clips of Reveal's cross-frame study (B.6.1).

A cross_frame dataset holds raw videos; masking is a condition of the run (``frames@R+strip_mask(...)``). The
paper's humans answered the occluded videos, so a subset rule with ``present="masked"`` shows each drawn item's
video as the run's first strip_mask condition renders it: the same chain, seed and content cache as the model's
trials (``run.perturbed``), so a person sees the masked video the model was sent, whole, at its own rate. The
item's condition is that condition's id (the human records then sit beside the model's masked trials), its
question is the model's prompt under it, and ``shown_sha256`` names the rendered file; ``video_sha256`` stays the
source's, which import checks.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

from vidaudit.core.errors import DataError
from vidaudit.core.hashing import sha256_json
from vidaudit.core.types import Condition, Sample
from vidaudit.run.conditions import parse_condition
from vidaudit.run.perturbed import PERTURB_CACHE, plan_chain, render
from vidaudit.tools.humanstudy.items import StudyItem, performance_item
from vidaudit.tools.humanstudy.source import StudySource

#: a generator's run config beside a dataset (cross_frame writes one listing its masked conditions)
RUN_CONFIGS = ("cross_frame.yaml",)


def source_conditions(src: StudySource) -> list[Condition]:
    """The run's conditions, or those of a run config the generator wrote beside the dataset."""
    if src.conditions:
        return list(src.conditions)

    out: list[Condition] = []
    for name in RUN_CONFIGS:
        path = src.data_dir / name
        if path.is_file():
            cfg = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            prompt = (cfg.get("prompts") or [src.condition.prompt])[0]
            out += [parse_condition(str(c), prompt) for c in cfg.get("conditions") or []]
    return out


def masked_condition(src: StudySource) -> Condition:
    for c in source_conditions(src):
        if c.perturbations and c.perturbations[-1].name == "strip_mask":
            return c
    raise DataError(
        f"{src.run_dir or src.data_dir}: the cross-frame study shows the strip-masked videos (Reveal "
        "B.6.1), but no condition of the source masks them; export from a run with a "
        "frames@R+strip_mask(...) condition (DATA/cross_frame.yaml lists them)"
    )


def present_masked(src: StudySource, items: Sequence[StudyItem], work: Path) -> list[StudyItem]:
    """``items`` as shown under the source's strip_mask condition (rendered into the run's perturbation cache,
    or ``work`` for a dataset dir); the order is kept."""
    cond = masked_condition(src)
    cache = src.run_dir / PERTURB_CACHE if src.run_dir is not None else work
    samples: dict[str, Sample] = {s.sample_id: s for s in src.samples}
    out = []
    for it in items:
        s = samples[it.sample_id]
        pin = plan_chain(s, cond.perturbations)
        path, sha, _ = render(src.data_dir / s.video.path, pin, cache)
        prompt = src.suite.render_prompt(s, cond)
        item = performance_item(s, prompt.system, prompt.text)
        out.append(
            item.model_copy(
                update={
                    "item_id": "i"
                    + sha256_json(["human-study-item", "performance", s.sample_id, s.video.sha256, cond.id])[:12],
                    "condition": cond.id,
                    "video_path": str(Path(path).resolve()),
                    "shown_sha256": sha,
                }
            )
        )
    return out


def work_dir() -> tempfile.TemporaryDirectory[str]:
    """Where a dataset dir's renderings live until the page is written."""
    return tempfile.TemporaryDirectory(prefix="vidaudit-study-")
