"""The report's "mechanism" section: probe outputs under ``RUN/mechanism/`` beside the run's behaviour.

``vidaudit probe NAME ... --out RUN/mechanism`` writes ``NAME.json``; the report stage calls
``mechanism_sections(run_dir)``, which turns every such file into one generic ``Section``: its
``LineFigure`` (stored in the JSON) and a table of the headline numbers. No files, no section; a file
that is not a probe's output is named in a note rather than failing the report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vidaudit.core.contract.report import LineFigure, Section, Table

if TYPE_CHECKING:
    from vidaudit.score.scored_run import Scored

MECHANISM_DIR = "mechanism"


def report_sections(scored: Scored) -> list[Section]:
    """The report stage's hook (registry kind ``report_sections``): the sections of the run's probe outputs."""
    return mechanism_sections(scored.source.get("run_dir"))


def _headline(d: dict[str, Any]) -> list[list[str]]:
    name = d.get("probe")
    if name == "linear":
        return [[s, f"{r['mean']:.3f}", f"{r['std']:.3f}"] for s, r in d["results"].items()]
    if name == "attention":
        return [
            ["mean delta alpha_vid", f"{d['mean_delta']:.4f}", ""],
            ["video-to-claim ratio (neutral)", f"{d['video_to_claim_ratio']:.3f}", ""],
        ]
    if name == "kl":
        return [
            [f"KL {k} ({d['log_base']})", f"{d['kl_real_blank'][k]:.4f}", f"{d['kl_real_noise'][k]:.4f}"]
            for k in d["kl_real_blank"]
        ]
    if name == "cka":

        def f(v: float | None) -> str:
            return "" if v is None else f"{v:.3f}"

        ours = [
            [
                f"{'vision block' if r['stage'] == 'vit' else 'LLM layer'} {r['layer']}",
                f(r["control"]),
                f(r["adversarial"]),
                f(r["control_vs_adversarial"]),
                f(r["paper_adversarial"]),
            ]
            for r in d["curve"]
        ]
        ref = d["reference"]
        return ours + [
            [f"paper: vision block {k} of {ref['vit_depth']}", f(ref["control"][k]), f(v), "", ""]
            for k, v in ref["adversarial"].items()
        ]
    if name == "encoder-partition":
        return [
            [f"block {b['layer']}", f"{b['visible_fraction']:.4f}", f"{b['cross_frame_mass']:.4f}"] for b in d["blocks"]
        ]
    return []


COLUMNS = {
    "linear": ["stage", "accuracy (mean)", "std"],
    "attention": ["measure", "value", ""],
    "kl": ["prompt", "KL(real||blank)", "KL(real||noise)"],
    "cka": ["layer", "control (groups)", "adversarial (groups)", "control vs adversarial", "paper adversarial"],
    "encoder-partition": ["block", "visible fraction", "cross-frame mass"],
}


def mechanism_sections(run_dir: str | Path | None) -> list[Section]:
    """One section with every probe output found under ``RUN/mechanism`` (empty list when none)."""
    if run_dir is None:
        return []
    root = Path(run_dir) / MECHANISM_DIR
    files = sorted(root.glob("*.json")) if root.is_dir() else []
    figures, tables, notes = [], [], []
    for f in files:
        try:
            d = json.loads(f.read_text(encoding="utf-8"))
            fig = LineFigure.model_validate(d["figure"])
            name = d["probe"]
            rows = _headline(d)
        except (OSError, ValueError, KeyError, TypeError) as e:
            notes.append(f"{f.name}: not a probe output ({type(e).__name__}: {e}); skipped")
            continue
        figures.append(fig.model_copy(update={"group": [d.get("model", ""), name]}))
        if rows:
            tables.append(
                Table(
                    id=f"mech-{name}",
                    title=f"{name} ({d.get('model', '')})",
                    columns=COLUMNS[name],
                    rows=rows,
                    key_columns=1,
                )
            )
    if not files:
        return []
    return [
        Section(
            id="mechanism",
            title="Mechanism",
            lede="White-box probes of the same model (vidaudit probe; see docs/mechanism.md).",
            figures=figures,
            tables=tables,
            notes=notes,
        )
    ]
