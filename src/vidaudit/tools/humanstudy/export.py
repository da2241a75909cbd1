"""``vidaudit human-study export``: the study page, its media, and the manifest that keeps the answers.

Videos are embedded in the page as data URIs when all the chosen clips together are at most
``EMBED_MAX_BYTES`` (16 MiB: a page that size still opens quickly from disk); above that they are copied
into a folder beside the page (``STEM_media/SHA256.mp4``) and referenced relatively, so the page still
works from ``file://`` as long as the folder travels with it. ``media`` forces either.

Written in this order, each file atomically: the media folder, the manifest (``STEM.json`` beside the
page, and ``RUN/human_studies/STUDY.json`` when exported from a run), then the page. Everything is built
and checked before the first file is written.
"""

from __future__ import annotations

import base64
import mimetypes
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from vidaudit import __version__
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.fileio import atomic_path, write_json_atomic, write_text_atomic
from vidaudit.core.hashing import sha256_file
from vidaudit.core.manifest import external_videos_allowed
from vidaudit.tools.humanstudy.items import StudyItem, has_statement, performance_item, quality_item, study_id
from vidaudit.tools.humanstudy.page import render_page
from vidaudit.tools.humanstudy.paths import STUDIES_DIR
from vidaudit.tools.humanstudy.present import present_masked, work_dir
from vidaudit.tools.humanstudy.select import apart_keys, select, select_by_rules, units_of
from vidaudit.tools.humanstudy.source import StudySource, open_source
from vidaudit.tools.humanstudy.subsets import Rule, Stratified
from vidaudit.tools.humanstudy.subsets import subset as named_subset
from vidaudit.video.facts import resolve_video

EMBED_MAX_BYTES = 16 << 20
KINDS = ("performance", "quality")
MEDIA = ("auto", "embed", "folder")
MANIFEST_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Exported:
    page: Path
    manifest: Path
    study: str
    n_items: int
    media: str
    run_copy: Path | None = None
    notes: list[str] = field(default_factory=list)  # shortfalls and items left out by a stratified draw
    counts: dict[str, dict[str, int]] = field(default_factory=dict)


def build_items(src: StudySource, kind: str) -> list[StudyItem]:
    """One item per sample: the model's question (performance) or the statement's (quality)."""
    if kind not in KINDS:
        raise ConfigError(f"--kind must be performance or quality, got {kind!r}")
    if kind == "quality":
        chosen = [s for s in src.samples if has_statement(s)]
        if not chosen:
            raise DataError(
                f"{src.data_dir}: no sample carries a statement (params.statement), so there is no "
                "data-quality question to ask; use --kind performance"
            )
        return [quality_item(s) for s in chosen]
    out = []
    for s in src.samples:
        prompt = src.suite.render_prompt(s, src.condition)
        out.append(performance_item(s, prompt.system, prompt.text))
    return out


def _video_files(src: StudySource, items: list[StudyItem]) -> dict[str, Path]:
    """Each item's video, confined to the dataset (``video.facts.resolve_video``: a manifest path that leads
    outside it is refused unless the dataset's own ``dataset.json`` opts in), as the run confines it. An item
    shown as vidaudit rendered it (``shown_sha256``: a strip-masked copy in the run's perturbation cache, never
    a path read from a manifest) is taken where it was rendered and checked by its sha256 instead."""
    external = external_videos_allowed(src.data_dir)
    files: dict[str, Path] = {}
    for it in items:
        if it.shown_sha256 is not None:
            path = Path(it.video_path)
            if not path.is_file() or sha256_file(path) != it.shown_sha256:
                raise DataError(
                    f"the rendering shown for sample {it.sample_id} is missing or changed: {path}; "
                    "export again (it is rendered anew)"
                )
            files[it.item_id] = path
            continue
        path = resolve_video(src.data_dir, it.video_path, allow_external=external, who=it.sample_id)
        if not path.is_file():
            raise DataError(f"the video of sample {it.sample_id} is missing: {path}; regenerate the dataset")
        files[it.item_id] = path
    return files


@dataclass(frozen=True)
class Draw:
    """How the items are chosen: ``--sample K`` alone (stratified over probe and condition), ``--stratify`` keys
    (with ``--sample K`` spread evenly or ``--per-stratum N``; ``--unit KEY`` binds items), or a named ``--subset``."""

    sample: int | None = None
    stratify: tuple[str, ...] = ()
    per_stratum: int | None = None
    unit: str | None = None
    subset: str | None = None
    allow_shortfall: bool = False

    def rules(self) -> tuple[tuple[Rule, ...], str] | None:
        """The rules of a stratified draw and the option naming it; None for the default selection."""
        if self.subset is not None:
            if self.stratify or self.per_stratum is not None or self.unit is not None or self.sample is not None:
                raise ConfigError("--subset names a whole draw; drop --sample, --stratify, --per-stratum and --unit")
            return named_subset(self.subset).rules, f"--subset {self.subset}"
        if not self.stratify:
            if self.per_stratum is not None or self.unit is not None:
                raise ConfigError("--per-stratum and --unit need --stratify KEY[,KEY]")
            return None
        return (
            Rule(self.stratify, total=self.sample, per_stratum=self.per_stratum, unit=self.unit),
        ), f"--stratify {','.join(self.stratify)}"

    def describe(self) -> str:
        if self.subset is not None:
            return f"subset {self.subset}: " + "; ".join(r.describe() for r in named_subset(self.subset).rules)
        got = self.rules()
        if got is not None:
            return got[0][0].describe() + ", seeded"
        return "stratified over (probe, condition), equal allocation, seeded"


def choose(
    src: StudySource, items: list[StudyItem], how: Draw, seed: int
) -> tuple[list[StudyItem], list[str], dict[str, dict[str, int]]]:
    """The items in page order, the draw's lines (shortfalls, left out) and its counts per stratum."""
    got = how.rules()
    if got is None:
        apart = apart_keys(items, {s.sample_id: s.params for s in src.samples})
        n = len(units_of(items))
        notes: list[str] = []
        if how.sample is not None and how.sample > n:  # never fewer than asked without saying so
            if not how.allow_shortfall:
                raise DataError(
                    f"--sample {how.sample} asks for more units than the {n} there are (a masked/raw "
                    f"pair counts once); pass --sample {n} or less, leave --sample out to show them all, "
                    "or pass --allow-shortfall to take all of them"
                )
            notes.append(f"shortfall: --sample {how.sample}: {n} of {how.sample} units (all there are)")
        order = select(items, how.sample, seed, apart)
        clashes = sum(a.item_id in apart and apart.get(a.item_id) == apart.get(b.item_id) for a, b in pairwise(order))
        if clashes:
            notes.append(
                f"page order: {clashes} claim(s) sit beside their control (too few other items to keep them apart)"
            )
        return order, notes, {}
    rules, label = got
    params = {s.sample_id: s.params for s in src.samples}
    chosen, drawn = select_by_rules(
        items, Stratified(rules, params, seed, allow_shortfall=how.allow_shortfall, label=label)
    )
    return chosen, drawn.shortfall + drawn.left_out, drawn.counts


def export_study(
    source: str | Path,
    out: str | Path,
    *,
    sample: int | None = None,
    seed: int = 0,
    kind: str = "performance",
    media: str = "auto",
    draw: Draw | None = None,
) -> Exported:
    """Write the study page ``out``, its manifest beside it and (for a run) a copy into the run."""
    if media not in MEDIA:
        raise ConfigError(f"--media must be one of {', '.join(MEDIA)}, got {media!r}")
    out = Path(out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ConfigError(f"--out names the study page, an .html file; got {out}")
    how = draw if draw is not None else Draw(sample=sample)
    if draw is not None and sample is not None:
        raise ConfigError("give sample= or draw=, not both (a Draw carries its own sample)")
    how.rules()  # a contradictory draw is refused before any file is read
    src = open_source(source)
    items, notes, counts = choose(src, build_items(src, kind), how, seed)
    if not items:
        raise DataError(f"{source}: no samples to put in a study")
    with work_dir() as work:
        items = presented(src, items, how, Path(work))
        return _write(out, kind, src, items, how, seed, media, notes, counts)


def presented(src: StudySource, items: list[StudyItem], how: Draw, work: Path) -> list[StudyItem]:
    """The items of a rule that shows its probe's clips another way (``Rule.present``), shown so."""
    got = how.rules()
    present = {r.probe: r.present for r in got[0] if r.present} if got is not None else {}
    masked = [it for it in items if present.get(it.probe) == "masked" and it.kind != "quality"]
    if not masked:
        return items
    shown = dict(zip((it.item_id for it in masked), present_masked(src, masked, work), strict=True))
    return [shown.get(it.item_id, it) for it in items]


def _write(
    out: Path,
    kind: str,
    src: StudySource,
    items: list[StudyItem],
    how: Draw,
    seed: int,
    media: str,
    notes: list[str],
    counts: dict[str, dict[str, int]],
) -> Exported:
    files = _video_files(src, items)
    total = sum(p.stat().st_size for p in set(files.values()))
    mode = ("embed" if total <= EMBED_MAX_BYTES else "folder") if media == "auto" else media
    sid = study_id(kind, src.suite.name, items)
    srcs: dict[str, str] = {}
    copies: dict[Path, Path] = {}
    media_dir = out.parent / f"{out.stem}_media"
    for it in items:
        path = files[it.item_id]
        mime = mimetypes.guess_type(path.name)[0] or "video/mp4"
        if mode == "embed":
            srcs[it.item_id] = f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")
        else:
            name = f"{it.shown_sha256 or it.video_sha256 or sha256_file(path)}{path.suffix}"
            copies[media_dir / name] = path
            srcs[it.item_id] = f"{media_dir.name}/{name}"
    html = render_page(sid, kind, src.suite.name, items, srcs)
    manifest = _manifest(sid, kind, src, items, how, seed, mode, notes, counts)
    for dest, path in copies.items():
        with atomic_path(dest) as tmp:
            shutil.copyfile(path, tmp)
    man_path = out.with_suffix(".json")
    write_json_atomic(man_path, manifest)
    run_copy = None
    if src.run_dir is not None:
        run_copy = src.run_dir / STUDIES_DIR / f"{sid}.json"
        write_json_atomic(run_copy, manifest)
    write_text_atomic(out, html)
    return Exported(
        page=out,
        manifest=man_path,
        study=sid,
        n_items=len(items),
        media=mode,
        run_copy=run_copy,
        notes=notes,
        counts=counts,
    )


def _manifest(
    sid: str,
    kind: str,
    src: StudySource,
    items: list[StudyItem],
    how: Draw,
    seed: int,
    mode: str,
    notes: list[str],
    counts: dict[str, dict[str, int]],
) -> dict[str, Any]:
    return {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "study": sid,
        "kind": kind,
        "suite": src.suite.name,
        "vidaudit_version": __version__,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": {
            "data_dir": str(src.data_dir),
            "run_dir": str(src.run_dir) if src.run_dir else None,
            "prompt": src.condition.prompt,
        },
        "selection": {
            "sample": how.sample,
            "seed": seed,
            "rule": how.describe(),
            "subset": how.subset,
            "stratify": list(how.stratify),
            "per_stratum": how.per_stratum,
            "unit": how.unit,
            "counts": counts,
            "notes": notes,
        },
        "media": mode,
        "items": [it.model_dump(mode="json") for it in items],
    }
