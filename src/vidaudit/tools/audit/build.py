"""Build the profile from each part's run ``report.json`` and write profile.json / .md / .html."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vidaudit import __version__
from vidaudit.core.contract.roles import Audit
from vidaudit.core.errors import DataError
from vidaudit.core.fileio import write_text_atomic
from vidaudit.score.scored_run import read_checked
from vidaudit.tools.audit.budgets import half_width, min_detectable_difference
from vidaudit.tools.audit.profile import PROFILE_JSON, ModelRow, PartInfo, Profile, merge_published, now
from vidaudit.tools.audit.render import render_html, render_markdown

PUBLISHED_NOTE = (
    "published rows are the papers' own numbers on their own data and models, copied from the suites' "
    "reference tables; they were not measured here and carry no interval"
)


def _report_results(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "report" / "report.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("results") or {}
    except FileNotFoundError:
        raise DataError(f"{path} is missing: re-run the audit (it resumes) or `vidaudit report {run_dir}`") from None


def _scored(run_dir: Path, data_dir: Path, models: Sequence[str]) -> tuple[int, str, dict[str, int]]:
    """Planned trials of the first of ``models`` in the run (one record per planned trial), the checksum of the
    checked scored file they were counted in, and model -> its trials that need a judge the run did not have (the
    contract's ``needs_judge``), where any."""
    header, trials = read_checked(run_dir, data_dir=data_dir)
    first = models[0] if models else ""
    unjudged: dict[str, int] = {}
    for t in trials:
        r = t.record
        if r.model in models and r.needs_judge:
            unjudged[r.model] = unjudged.get(r.model, 0) + 1
    return sum(1 for t in trials if t.record.model == first), header.sha256, unjudged


def build_profile(out: Path, budget: str, models: Sequence[str], parts: Sequence[Any]) -> Profile:
    """One row per model, a column group per part, the published rows apart; every figure from report.json."""
    rows = {m: ModelRow(model=m) for m in models}
    published: dict[str, ModelRow] = {}
    infos: list[PartInfo] = []
    for p in parts:
        figs = Audit.of(p.suite).profile_figures(p.part, _report_results(p.run_dir))
        for m in models:
            rows[m].figures[p.part.name] = list(figs.by_model.get(m, []))
        n, scored_sha256, unjudged = _scored(p.run_dir, p.data_dir, models)
        observer = p.part.observer if p.part.observer not in models else None
        # the resolution a part states is its widest interval's: the smallest n of an accuracy it shows (a figure
        # over a subset, e.g. mosaic's 2 temporal text items of 12 clips, is wider than all the trials suggest)
        accs = [f for m in (*models, observer) if m for f in figs.by_model.get(m, []) if f.kind == "accuracy"]
        scored = min((f.n for f in accs if f.n), default=n - (unjudged.get(models[0], 0) if models else 0))
        half, mdd = half_width(scored), min_detectable_difference(scored)
        # an interval counted over sources (items that share a scene or video) can be wider than n independent
        # trials give: then the part states its widest, and scales the difference it resolves by as much
        widest = max(
            ((f.ci_high - f.ci_low) / 2 for f in accs if f.ci_low is not None and f.ci_high is not None), default=0.0
        )
        if half is not None and mdd is not None and widest > half:
            half, mdd = widest, mdd * widest / half
        infos.append(
            PartInfo(
                suite=p.suite.name,
                name=p.part.name,
                preset=p.part.preset,
                seeds=p.part.seeds,
                dataset_key=p.key,
                data_dir=_rel(p.data_dir, out),
                run_dir=_rel(p.run_dir, out),
                report_html=_rel(p.run_dir / "report" / "report.html", out),
                conditions=list(p.conditions),
                trials_per_model=n,
                ci_half_width=half,
                min_detectable_difference=mdd,
                resolution_n=scored,
                observer=observer,
                chance=figs.chance,
                observer_figures=list(figs.by_model.get(observer, [])) if observer else [],
                human_ceiling=figs.human_ceiling,
                published_source=figs.published_source,
                notes=list(figs.notes),
                scored_sha256=scored_sha256,
                unjudged=unjudged,
            )
        )
        merge_published(published, p.part.name, figs.published, figs.published_source)
    return Profile(
        vidaudit_version=__version__,
        created_at=now(),
        budget=budget,
        models=list(models),
        parts=infos,
        rows=list(rows.values()),
        published=list(published.values()),
        notes=[PUBLISHED_NOTE],
    )


def _rel(path: Path, root: Path) -> str:
    """A path relative to the audit dir (links in the profile keep working when the dir moves)."""
    return Path(os.path.relpath(Path(path).resolve(), Path(root).resolve())).as_posix()


def write_profile(out: Path, budget: str, models: Sequence[str], parts: Sequence[Any]) -> dict[str, Path]:
    profile = build_profile(out, budget, models, parts)
    return write_profile_files(profile, out)


def write_profile_files(profile: Profile, out: Path) -> dict[str, Path]:
    text = json.dumps(profile.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    md, html = render_markdown(profile), render_html(profile)  # render all before writing any
    paths = {"json": out / PROFILE_JSON, "md": out / "profile.md", "html": out / "profile.html"}
    write_text_atomic(paths["json"], text)
    write_text_atomic(paths["md"], md)
    write_text_atomic(paths["html"], html)
    return paths
