"""Raw, Occ and TBSR per model, split, abstention and mask, from trials paired by item.

A trial is *masked* when its condition's video part has a ``strip_mask`` perturbation, *raw* when it has
none. Each masked condition is paired with the raw conditions of the same model and prompt (those of its own
frame selection when the run has one: ``raw_partners``); an item's
raw and masked trials are those of its sample (same abstention). Raw and Occ are accuracies over the
planned trials (a failed call is wrong, Wilson intervals); TBSR = items correct on both / items correct
raw (Reveal's numbers fit this reading, not B.6.2's "/ N": reveal-checklist.md section 7.1).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from vidaudit.sdk import ScoreRecord, Table
from vidaudit.suites.stress.common import (
    CEILING_NOTE,
    REFERENCE_COLUMNS,
    HumanCeiling,
    ProbeReport,
    accuracy_cell,
    accuracy_text,
    interval_of,
    interval_text,
    pct,
    reference_cells,
)
from vidaudit.suites.stress.cross_frame.options import (
    CHANCE_ABSTAIN,
    CHANCE_FORCED,
    PAPER_HUMANS,
    PAPER_T,
    TABLE10,
    paper_name,
    table10_row,
)

_MASK = re.compile(r"\+strip_mask(?:\(([^()]*)\))?")


def split_condition(cond: str) -> tuple[str, str]:
    """(video part, prompt part) of a condition id."""
    video, _, rest = cond.partition("/")
    return video, rest


def mask_of(cond: str) -> str | None:
    """The strip_mask spec id of a condition (``strip_mask(S=...)``), or None for a raw one."""
    m = _MASK.search(split_condition(cond)[0])
    return None if m is None else m.group(0)[1:]


def mask_params(mask: str) -> dict[str, Any]:
    m = _MASK.search("+" + mask)
    out: dict[str, Any] = {}
    for pair in filter(None, (m.group(1) or "").split(",")) if m else ():
        k, _, v = pair.partition("=")
        out[k] = int(v) if v.isdigit() else v
    return out


def _is_raw(cond: str) -> bool:
    return "+" not in split_condition(cond)[0].replace("+-", "")


def tbsr_cell(raw: Sequence[ScoreRecord], occ: Sequence[ScoreRecord]) -> dict[str, Any]:
    r_by = {x.params.get("item"): x.correct is True for x in raw}
    o_by = {x.params.get("item"): x.correct is True for x in occ}
    record_of = {x.params.get("item"): x for x in raw}
    paired = sorted(set(r_by) & set(o_by), key=str)
    base = [i for i in paired if r_by[i]]
    both = [i for i in base if o_by[i]]
    iv = interval_of([record_of[i] for i in base], lambda r: o_by[r.params.get("item")])
    return {
        "raw": accuracy_cell(list(raw)),
        "occ": accuracy_cell(list(occ)),
        "n_pairs": len(paired),
        "n_raw_correct": len(base),
        "n_both": len(both),
        "tbsr": len(both) / len(base) if base else None,
        "tbsr_ci_low": iv["ci_low"],
        "tbsr_ci_high": iv["ci_high"],
        **{f"tbsr_{key}": iv[key] for key in ("ci_unit", "n_sources", "design_effect")},
    }


def selection_of(cond: str) -> str:
    """The frame selection of a condition (``frames#64`` of ``frames#64+strip_mask(...)/mcq``)."""
    return split_condition(cond)[0].split("+")[0]


def raw_partners(masked: str, raws: Sequence[str]) -> list[str]:
    """The raw conditions a masked one is paired with: those of the same prompt, and of the same frame selection
    when there is one (``--set sampling=paper`` runs frames#64 and frames@24 raw and masked: each pairs with its
    own); otherwise every one (the default config's raw frames@R and masked frames@(k R) both send every frame)."""
    same_prompt = [c for c in raws if split_condition(c)[1] == split_condition(masked)[1]]
    same_selection = [c for c in same_prompt if selection_of(c) == selection_of(masked)]
    return same_selection or same_prompt


def coverage_notes(records: Sequence[ScoreRecord]) -> list[str]:
    """The coverage warning of masked trials a dataset let leave strips unseen (``--set sampling=paper``), per
    masked condition: the mean share of strips the frames sent show, and how many trials miss some."""
    by: dict[str, list[float]] = {}
    for r in records:
        if r.params.get("probe") != "cross_frame" or r.params.get("sampling") != "paper" or not mask_of(r.condition):
            continue
        cov = (r.params.get("coverage") or {}).get(split_condition(r.condition)[0])
        if cov is not None:
            by.setdefault(split_condition(r.condition)[0], []).append(float(cov))
    notes = []
    for cond, vals in sorted(by.items()):
        head = f"cross_frame: paper sampling (Reveal Fig. 8 / Table 13, --set sampling=paper): under {cond}"
        missing = sum(v < 1 for v in vals)
        if not missing:
            notes.append(f"{head} the frames sent show every strip in all {len(vals)} masked trials")
            continue
        notes.append(
            f"{head} WARNING: the frames sent show {100 * sum(vals) / len(vals):.1f}% of the strips on "
            f"average and {missing} of {len(vals)} masked trials miss some; a model cannot integrate a "
            "strip it is not sent, so Occ and TBSR there measure the sampling too"
        )
    return notes


def aggregate_cross_frame(records: Sequence[ScoreRecord]) -> dict[str, Any]:
    recs = [r for r in records if r.params.get("probe") == "cross_frame"]
    cells: dict[str, Any] = {}
    conds = sorted({r.condition for r in recs})
    masked = [c for c in conds if mask_of(c)]
    raws = [c for c in conds if _is_raw(c)]
    for model in sorted({r.model for r in recs}):
        mine = [r for r in recs if r.model == model]
        for mc in masked:
            for rc in raw_partners(mc, raws):
                for abstention in (True, False):
                    for split in ("T", "S", "all"):

                        def pick(
                            c: str, mine: list[ScoreRecord] = mine, abstention: bool = abstention, split: str = split
                        ) -> list[ScoreRecord]:
                            return [
                                r
                                for r in mine
                                if r.condition == c
                                and bool(r.params.get("abstention")) == abstention
                                and (split == "all" or r.params.get("split") == split)
                            ]

                        raw, occ = pick(rc), pick(mc)
                        if not raw and not occ:
                            continue
                        cell = tbsr_cell(raw, occ)
                        mask = mask_of(mc) or ""
                        cell.update(
                            {
                                "model": model,
                                "role": mine[0].model_role,
                                "raw_condition": rc,
                                "masked_condition": mc,
                                "mask": mask,
                                "abstention": abstention,
                                "split": split,
                                "chance": CHANCE_ABSTAIN if abstention else CHANCE_FORCED,
                                "paper_name": paper_name(model),
                            }
                        )
                        cells[f"{model}|{rc}|{mc}|{'abs' if abstention else 'forced'}|{split}"] = cell
    out: dict[str, Any] = {
        "cells": cells,
        "chance": {"forced": CHANCE_FORCED, "abstention": CHANCE_ABSTAIN},
        "paper_reported": {
            "nextqa_T": {k: list(v) for k, v in PAPER_T.items()},
            "humans": {k: list(v) for k, v in PAPER_HUMANS.items()},
            "table10": [list(r) for r in TABLE10],
        },
        "human_ceiling": None,
    }
    warn = coverage_notes(records)
    if warn:
        out["coverage_warnings"] = warn
    return out


def _paper_cell(c: dict[str, Any]) -> str:
    name = c["paper_name"]
    if name is None or c["split"] != "T" or name not in PAPER_T:
        return "-"
    raw, occ, tb_abs, tb_forced = PAPER_T[name]
    tb = tb_abs if c["abstention"] else tb_forced
    if c["abstention"]:
        parts = ([f"raw {raw:g}"] if raw is not None else []) + ([f"occ {occ:g}"] if occ is not None else [])
        return f"TBSR {tb:g}" + (f", {', '.join(parts)}" if parts else "") + f" ({name})"
    return f"TBSR {tb:g} ({name})"


def _tbsr_table(cells: dict[str, Any], ceiling: HumanCeiling) -> Table:
    rows = []
    for c in cells.values():
        tb = "-" if c["tbsr"] is None else f"{pct(c['tbsr'])} ({c['n_both']}/{c['n_raw_correct']})"
        rows.append(
            [
                c["model"],
                c["split"],
                "w/ abs." if c["abstention"] else "w/o abs.",
                c["mask"],
                c["raw_condition"],
                accuracy_text(c["raw"]),
                accuracy_text(c["occ"]),
                tb,
                interval_text(
                    {k[len("tbsr_") :]: v for k, v in c.items() if k.startswith("tbsr_ci") or k == "tbsr_n_sources"}
                ),
                *reference_cells(c["chance"], _paper_cell(c), ceiling, c["masked_condition"]),
            ]
        )
    return Table(
        id="stress-cross-frame-tbsr",
        title="Cross-frame integration: Raw, Occ and TBSR (%)",
        key_columns=4,
        columns=[
            "model",
            "split",
            "abstention",
            "mask",
            "raw condition",
            "raw",
            "occ",
            "TBSR",
            "TBSR 95% Wilson",
            *REFERENCE_COLUMNS,
        ],
        rows=rows,
        caption="Raw and Occ: accuracy over every planned trial (a failed call is wrong). TBSR: items correct "
        "on both the raw and the masked video / items correct on the raw one, pairing the trials "
        "of one item and model. Chance is 1/5 (w/o abstention) or 1/6 (w/ abstention: a uniform "
        "guess over six options; the abstention option is never the answer, so a constant letter "
        "scores up to 1/5 there). 'paper "
        "reported' is Reveal Fig. 8 / Table 13 on NExT-QA-T for the paper's model of that name (its "
        "own data, not these).",
    )


def _table10_table(cells: dict[str, Any], ceiling: HumanCeiling) -> Table | None:
    rows = []
    for c in cells.values():
        row = table10_row(mask_params(c["mask"]))
        if row is None or c["split"] != "all" or not c["abstention"]:
            continue
        n, s, v, o, k, human, models = row
        rows.append(
            [
                str(n),
                f"{s}/{v}/{o}/{k}",
                c["model"],
                accuracy_text(c["occ"]),
                f"{human:g}",
                f"{models:g}",
                ceiling.text(c["masked_condition"]),
            ]
        )
    if not rows:
        return None
    rows.sort(key=lambda r: (int(r[0]), r[2]))
    return Table(
        id="stress-cross-frame-table10",
        title="Reveal Table 10 sweep: occluded accuracy (%)",
        key_columns=3,
        columns=[
            "config",
            "S/v/orientation/k",
            "model",
            "occ (w/ abs.)",
            "paper human",
            "paper models",
            "human ceiling",
        ],
        rows=rows,
        caption="Each row is one strip_mask configuration of Reveal Table 10 (B.2). 'paper human' and "
        "'paper models' (mean occluded accuracy of Qwen2.5-VL-32B, Qwen2.5-VL-7B and LLaVA) are the "
        "paper's, on 25 NExT-QA items; the human ceiling of these stimuli is not measured.",
    )


def _paper_table() -> Table:
    rows = [[k, *("-" if x is None else f"{x:g}" for x in v)] for k, v in PAPER_T.items()]
    rows += [[f"humans ({s})", f"{r:g}", f"{o:g}", f"{t:g}", "-"] for s, (r, o, t) in PAPER_HUMANS.items()]
    return Table(
        id="stress-cross-frame-paper",
        title="Reveal: reported cross-frame results (%)",
        columns=["model (paper)", "raw", "occ", "TBSR w/ abs.", "TBSR w/o abs."],
        rows=rows,
        caption="NExT-QA-T (n=196) unless marked S (n=183), as listed in reveal-checklist.md section 2. "
        "The human rows are the paper's study (the human-ceiling column is this run's imported study, if any).",
    )


def _count(res: dict[str, Any]) -> str:
    cells = res["cells"].values()
    return f"{len({c['masked_condition'] for c in cells})} masked condition(s), {len({c['model'] for c in cells})} model(s)"


def _notes(records: Sequence[ScoreRecord], res: dict[str, Any]) -> list[str]:
    """The coverage warnings (``coverage_notes``), and why there is no table when nothing could be paired."""
    notes = list(res.get("coverage_warnings", []))
    if not res["cells"] and any(r.params.get("probe") == "cross_frame" for r in records):
        notes.append(
            "cross_frame: no masked and raw conditions to pair; run a raw condition and a "
            "+strip_mask(...) condition (see DIR/cross_frame.yaml)"
        )
    return notes


def _tables(res: dict[str, Any], ceiling: HumanCeiling) -> list[Table]:
    t10 = _table10_table(res["cells"], ceiling)
    return [_tbsr_table(res["cells"], ceiling), *([t10] if t10 is not None else []), _paper_table()]


cross_frame_report = ProbeReport(
    "cross_frame",
    aggregate_cross_frame,
    title="Cross-frame integration (strip masking)",
    lede="Multiple-choice video QA on the raw video and on its strip-masked version (Algorithm 3: every "
    "strip is shown within a few frames, nothing is destroyed, only spread over time). TBSR is the "
    "share of items answered correctly raw that stay correct masked.",
    count=_count,
    says=("chance 20.0% (w/o abstention) / 16.7% (w/ abstention)", CEILING_NOTE),
    more_notes=_notes,
    tables=_tables,
)
