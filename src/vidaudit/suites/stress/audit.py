"""The stress suite's part of ``vidaudit audit``: one audit part per probe, and each probe's headline read
back from its ``report.json`` (``results[probe]``) with its chance level, pixel observer and human ceiling.

Probes that need a user's data (``lane_change``: annotated driving clips) or that are a generation step
(``sycophancy_pairs``) are not in an audit. Conditions are the ones each probe's docs and tests run at
(``docs/stress.md``); ``cross_frame`` runs the raw and masked conditions its generator writes beside the data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from vidaudit.sdk import AuditPart, PartFigures, ProfileFigure, accuracy, dig, published, sources_text
from vidaudit.suites.stress import SUITE
from vidaudit.suites.stress.camera_motion.options import HUMAN_REPORTED as CAMERA_MOTION_HUMAN
from vidaudit.suites.stress.probe import GenerateOptions
from vidaudit.suites.stress.shortcuts.report import HUMAN_REPORTED as SHORTCUTS_HUMAN

#: probe -> (conditions, pixel observer run beside the models or None); the audit order
PROBE_PARTS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "camera_motion": (("frames@4",), "ideal-observer"),
    "cross_frame": ((), None),  # the generator's cross_frame.yaml: raw frames@6 and the strip-masked frames@24
    "wireframe": (("frames#4",), "ideal-observer"),
    "mosaic": (("frames#4",), "ideal-observer"),
    "shortcuts": (("frames@4",), None),
    "sycophancy": (("frames#8",), None),
    "expectation": (("frames#8",), None),
}
#: budget -> each probe's preset (standard and paper: the probes' paper presets, the sizes the paper ran)
BUDGET_PRESETS = {"smoke": "smoke", "standard": "paper", "paper": "paper"}
PAPER = "Reveal: Stress Tests Reveal Fragile Temporal and Visual Grounding in Video-Language Models"
#: probe -> where in the paper its published numbers are (the profile names the paper and the table)
SOURCES = {
    "camera_motion": "Appendix A.4 (6-way accuracy on its own clips)",
    "cross_frame": "Table 13 (NExT-QA-T, raw and strip-masked)",
    "wireframe": "Table 18 (connectivity, correct of 5 per arrangement)",
    "mosaic": "Table 12",
    "shortcuts": "Table 22 (Blank-Avg at 10 s)",
    "sycophancy": "Table 4 (false-claim rejection)",
    "expectation": "§5.5 and Appendix E.4 (temporal gap MCQ)",
}


def audit_parts(budget: str) -> list[AuditPart]:
    preset = BUDGET_PRESETS[budget]
    return [
        AuditPart(name=p, preset=preset, conditions=conds, probe=p, observer=obs)
        for p, (conds, obs) in PROBE_PARTS.items()
    ]


def generate_part(
    part: AuditPart, out: Path, *, workers: int | None = None, on_progress: Callable[[int, int], None] | None = None
) -> Path:
    return SUITE.probe(part.probe).generate(
        out, GenerateOptions(preset=part.preset, seeds=part.seeds, workers=workers or 1)
    )


def part_conditions(part: AuditPart, data_dir: Path) -> tuple[str, ...]:
    if part.conditions:
        return part.conditions
    config = yaml.safe_load((Path(data_dir) / f"{part.probe}.yaml").read_text(encoding="utf-8")) or {}
    return tuple(str(c) for c in config.get("conditions", []))


# ---------------------------------------------------------------------- reading report.json


Summed = dict[str, tuple[int, int, list[Mapping[str, Any]]]]


def _sum(cells: Iterable[Mapping[str, Any]], key: Callable[[Mapping[str, Any]], Mapping[str, Any] | None]) -> Summed:
    """k and n (correct, planned) per model over the cells, each cell's counts found by ``key``, with the blocks
    summed (``_figures`` takes the interval of a lone block from it)."""
    out: Summed = {}
    for cell in cells:
        block = key(cell)
        if not block or block.get("n_planned") is None:
            continue
        k, n, blocks = out.get(str(cell["model"]), (0, 0, []))
        out[str(cell["model"])] = (
            k + int(block.get("n_correct") or 0),
            n + int(block["n_planned"]),
            [*blocks, block],
        )
    return out


def _figures(counts: Mapping[str, Summed]) -> dict[str, list[ProfileFigure]]:
    """{figure name: {model: (k, n, blocks)}} -> {model: [figures]}. A figure of one report cell (an audit part
    runs one condition) carries that cell's interval, counted over the items' sources where several items share
    one (``common.interval_of``): Wilson's over the summed items would be the overconfident interval the report no
    longer prints. Summed over several cells whose items share sources, it has no interval (none is exact)."""
    out: dict[str, list[ProfileFigure]] = {}
    for name, per_model in counts.items():
        for model, (k, n, blocks) in per_model.items():
            unit = {str(b.get("ci_unit", "item")) for b in blocks}
            if len(blocks) == 1 and blocks[0].get("ci_low") is not None:
                b = blocks[0]
                note = "" if unit == {"item"} else f"interval over {sources_text(b['n_sources'], unit.pop())}"
                out.setdefault(model, []).append(accuracy(name, k, n, note, (b["ci_low"], b["ci_high"])))
            elif unit <= {"item"}:
                out.setdefault(model, []).append(accuracy(name, k, n))
            else:
                fig = accuracy(name, k, n, "several cells whose items share sources: no pooled interval")
                out.setdefault(model, []).append(fig.model_copy(update={"ci_low": None, "ci_high": None}))
    return out


def _published(
    table: Mapping[str, Any], name: str, pick: Callable[[Any], float | None] = lambda v: v
) -> dict[str, list[ProfileFigure]]:
    out: dict[str, list[ProfileFigure]] = {}
    for model, value in (table or {}).items():
        v = pick(value)
        if v is not None:
            out[str(model)] = [published(name, float(v))]
    return out


def _human(results: Mapping[str, Any], reported: float | None) -> ProfileFigure | None:
    """The imported human study's accuracy where the report has one, else the paper's reported humans."""
    measured = results.get("human_ceiling")
    if isinstance(measured, Mapping) and measured.get("n_planned"):
        lo, hi = measured.get("ci_low"), measured.get("ci_high")
        return accuracy(
            "human ceiling",
            int(measured.get("n_correct") or 0),
            int(measured["n_planned"]),
            note="imported human study",
            interval=(float(lo), float(hi)) if lo is not None and hi is not None else None,
        )
    if isinstance(measured, (int, float)):
        return ProfileFigure(name="human ceiling", value=float(measured), note="imported human study")
    return None if reported is None else published("human ceiling", reported)


def profile_figures(part: AuditPart, results: Mapping[str, Any]) -> PartFigures:
    probe = str(part.probe)
    r = results.get(probe) or {}
    cells = list((r.get("cells") or {}).values())
    read = _READERS[probe]
    by_model, chance, human, pub = read(r, cells)
    names = {f.name for figs in by_model.values() for f in figs}
    if isinstance(chance, Mapping):  # one chance level per figure
        chance_by = {n: float(v) for n, v in chance.items() if v is not None}
    else:
        chance_by = {n: float(chance) for n in names} if chance is not None else {}
    return PartFigures(
        by_model=by_model,
        chance=chance_by,
        human_ceiling=human,
        published=pub,
        published_source=f"{PAPER}, {SOURCES[probe]}",
    )


Reader = Callable[
    [Mapping[str, Any], list[Mapping[str, Any]]],
    tuple[dict[str, list[ProfileFigure]], float | None, ProfileFigure | None, dict[str, list[ProfileFigure]]],
]


def _camera_motion(r: Mapping[str, Any], cells: list[Mapping[str, Any]]):
    return (
        _figures({"accuracy": _sum(cells, lambda c: c)}),
        r.get("chance"),
        _human(r, CAMERA_MOTION_HUMAN),
        _published(r.get("paper_reported") or {}, "accuracy"),
    )


def _cross_frame(r: Mapping[str, Any], cells: list[Mapping[str, Any]]):
    # the split "all" cell only: the T and S cells hold the same trials again
    forced = [c for c in cells if not c.get("abstention") and c.get("split") == "all"]
    by = _figures({"raw": _sum(forced, lambda c: c.get("raw")), "masked": _sum(forced, lambda c: c.get("occ"))})
    pub: dict[str, list[ProfileFigure]] = {}
    for model, row in (dig(r, "paper_reported", "nextqa_T") or {}).items():
        figs = [published(n, v) for n, v in zip(("raw", "masked"), row[:2], strict=False) if v is not None]
        if figs:
            pub[str(model)] = figs
    humans = dig(r, "paper_reported", "humans", "T")
    return by, dig(r, "chance", "forced"), _human(r, humans[0] if humans else None), pub


def _wireframe(r: Mapping[str, Any], cells: list[Mapping[str, Any]]):
    conn = [c for c in cells if c.get("task") == "connectivity"]
    table = dig(r, "paper_table18", "connectivity") or {}
    pub = {}
    if table:  # Table 18: Qwen2.5-VL-7B, correct out of 5 per arrangement
        pub["Qwen2.5-VL-7B"] = [published("connectivity", 100.0 * sum(table.values()) / (5 * len(table)))]
    return _figures({"connectivity": _sum(conn, lambda c: c)}), dig(r, "chance", "connectivity"), _human(r, None), pub


def _mosaic(r: Mapping[str, Any], cells: list[Mapping[str, Any]]):
    obj = [c for c in cells if c.get("stimulus") == "objects"]
    by = _figures(
        {
            "temporal": _sum([c for c in obj if c.get("arrangement") == "temporal"], lambda c: c),
            "spatial": _sum([c for c in obj if c.get("arrangement") == "spatial"], lambda c: c),
        }
    )
    pub = {
        str(m): [published("temporal", v[0]), published("spatial", v[1])]
        for m, v in (r.get("paper_table12") or {}).items()
    }
    humans = r.get("human_table12")
    return by, dig(r, "chance", "objects"), _human(r, humans[0] if humans else None), pub


def _shortcuts(r: Mapping[str, Any], cells: list[Mapping[str, Any]]):
    human = sum(SHORTCUTS_HUMAN.values()) / len(SHORTCUTS_HUMAN)
    pub = _published(
        r.get("paper_blank_avg") or {}, "blank avg (10 s)", lambda v: (v.get("10") or v.get("10.0") or [None])[0]
    )
    return _figures({"accuracy": _sum(cells, lambda c: c.get("overall"))}), r.get("chance"), _human(r, human), pub


def _sycophancy(r: Mapping[str, Any], cells: list[Mapping[str, Any]]):
    humans = dig(r, "paper_reported", "humans", "Gemini-generated")
    return (
        _figures({"false-claim rejection": _sum(cells, lambda c: dig(c, "overall", "false_claim_rejection"))}),
        r.get("chance"),
        _human(r, humans),
        _published(dig(r, "paper_reported", "false_claim_rejection") or {}, "false-claim rejection"),
    )


def _judged(cells: list[Mapping[str, Any]], *path: str) -> dict[str, list[ProfileFigure]]:
    """A judged figure per model: k correct of the judged trials (``judged_cell``), no value without a judge."""
    out: dict[str, list[ProfileFigure]] = {}
    for cell in cells:
        block = dig(cell, *path) or {}
        if block.get("n_planned"):
            model = str(cell["model"])
            k, n = int(block.get("n_correct") or 0), int(block.get("n_judgeable") or 0)
            prev = next((f for f in out.get(model, [])), None)
            if prev is not None:  # several conditions: pooled
                k, n = k + int(prev.k or 0), n + int(prev.n or 0)
            out[model] = [accuracy("anomaly (judged)", k, n, note="" if n else "needs --judge")]
    return out


def _expectation(r: Mapping[str, Any], cells: list[Mapping[str, Any]]):
    by = _figures(
        {
            "gap MCQ": _sum(cells, lambda c: dig(c, "gap", "mcq")),
            "direction": _sum(cells, lambda c: dig(c, "reversed", "direction", "all")),
        }
    )
    for model, figs in _judged(cells, "anomaly", "all").items():
        by.setdefault(model, []).extend(figs)
    pub = _published(r.get("paper_gap") or {}, "gap MCQ", lambda v: v.get("mcq"))
    chance = {"gap MCQ": dig(r, "chance", "gap_mcq"), "direction": dig(r, "chance", "direction")}
    return by, chance, _human(r, dig(r, "human_gap_reported", "mcq")), pub


_READERS: dict[str, Reader] = {
    "camera_motion": _camera_motion,
    "cross_frame": _cross_frame,
    "wireframe": _wireframe,
    "mosaic": _mosaic,
    "shortcuts": _shortcuts,
    "sycophancy": _sycophancy,
    "expectation": _expectation,
}
