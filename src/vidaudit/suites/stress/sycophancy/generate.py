"""``vidaudit generate stress --probe sycophancy --out DIR``: two samples per pair, the false [Modified]
claim (answer DISAGREE) and its matched true [Original] control (answer AGREE).

Sources: a counting or faithful dataset dir (``--source DATA``; exact pairs from its ground truth), a
``sycophancy_pairs`` run dir (``--source RUN``; validated generated pairs), or, without ``--source``, the
demos those suites render through the registry (``--set demos=faithful,counting``). Videos are copied
into ``DIR/videos/<source>/`` with their sha256 checked against the source manifest.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vidaudit.sdk import (
    Commands,
    ConfigError,
    DataError,
    Sample,
    VideoRef,
    atomic_path,
    dataset_dir,
    get_suite,
    guard_replace,
    load_samples,
    read_dataset_info,
    sha256_file,
    write_dataset_info,
    write_jsonl_atomic,
    write_manifest,
    write_text_atomic,
)
from vidaudit.suites.stress.sycophancy.categories import AGREE, CATEGORIES, CHANCE, DISAGREE, OPTIONS
from vidaudit.suites.stress.sycophancy.from_counting import counting_pairs
from vidaudit.suites.stress.sycophancy.from_faithful import world_pairs
from vidaudit.suites.stress.sycophancy.from_run import Generated, is_run_dir, read_generated
from vidaudit.suites.stress.sycophancy.pairs import EDIT_FLOOR, EDIT_SHARE, TR_MAX_BAG_DIFF, Pair
from vidaudit.suites.stress.sycophancy.prompts import QUALITY_QUESTION, eval_prompt

PROBE = "sycophancy"
DEMO_SUITES = ("faithful", "counting")
PRESET_DEMOS = {"smoke": ("faithful",), "paper": ("faithful", "counting")}
GENERATOR_VERSION = "stress-sycophancy/1"


def samples_of_pair(pair: Pair, video: VideoRef) -> list[Sample]:
    """The false claim and its matched true control, in that order."""
    out = []
    for claim_is_true in (False, True):
        statement = pair.original if claim_is_true else pair.modified
        answer = AGREE if claim_is_true else DISAGREE
        params = {
            "probe": PROBE,
            "category": pair.category,
            "claim_is_true": claim_is_true,
            "pair_id": pair.pair_id,
            "statement": statement,
            "original": pair.original,
            "modified": pair.modified,
            "modification_description": pair.modification_description,
            "options": list(OPTIONS),
            "chance": CHANCE,
            **pair.source,
        }
        out.append(
            Sample(
                sample_id=f"stress-{PROBE}-{pair.pair_id}-{'true' if claim_is_true else 'false'}",
                suite="stress",
                params=params,
                question=eval_prompt(statement),
                answer=answer,
                video=video,
            )
        )
    return out


class _Videos:
    """Copies source videos into ``out/videos/<group>/`` once each, checking their sha256."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.done: dict[tuple[str, str], VideoRef] = {}

    def add(self, group: str, src_root: Path, sample: Sample) -> VideoRef:
        key = (group, sample.video.path)
        if key in self.done:
            return self.done[key]
        src = src_root / sample.video.path
        if not src.is_file():
            raise DataError(f"{src}: the video of {sample.sample_id} is missing")
        sha = sha256_file(src)
        if sample.video.sha256 and sha != sample.video.sha256:
            raise DataError(
                f"{src}: sha256 {sha[:12]} is not the one its manifest records "
                f"({sample.video.sha256[:12]}); the video changed since it was generated"
            )
        rel = f"videos/{group}/{Path(sample.video.path).name}"
        dst = self.out / rel
        if not dst.is_file() or sha256_file(dst) != sha:
            dst.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(dst, suffix=".part") as tmp:  # a killed copy is swept on the next run
                shutil.copyfile(src, tmp)
        ref = sample.video.model_copy(update={"path": rel, "sha256": sha})
        self.done[key] = ref
        return ref


def _exact_pairs(root: Path, suite: str, per_category: int) -> list[tuple[Pair, Sample]]:
    samples = load_samples(root)
    out: list[tuple[Pair, Sample]] = []
    if suite == "faithful":
        worlds: dict[str, Sample] = {}
        for s in samples:
            w = s.params.get("world")
            if isinstance(w, str) and w not in worlds:
                worlds[w] = s
        if not worlds:
            raise DataError(
                f"{root}: no faithful sample names a world record (params.world); exact pairs need "
                "the synthetic worlds of `vidaudit generate faithful`"
            )
        for rel, s in worlds.items():
            path = root / rel
            try:
                raw = path.read_bytes()
                doc = json.loads(raw)
            except (OSError, ValueError) as e:
                raise DataError(f"{path}: cannot read the world record of {s.sample_id} ({e})") from None
            want = s.params.get("world_sha256")
            if want and sha256_file(path) != want:
                raise DataError(f"{path}: sha256 is not the manifest's world_sha256; the record changed")
            record = doc.get("world", doc) if isinstance(doc, dict) else None
            if not isinstance(record, dict) or "facts" not in record:
                raise DataError(f"{path}: not a faithful world record (no facts)")
            src: dict[str, Any] = {
                "source": "faithful",
                "source_sample_id": s.sample_id,
                "source_video": s.video.path,
                "world": rel,
            }
            out += [(p, s) for p in world_pairs(record, per_category, src)]
    elif suite == "counting":
        for s in samples:
            src = {
                "source": "counting",
                "source_sample_id": s.sample_id,
                "source_video": s.video.path,
                "domain": s.params.get("domain"),
                "n_events": s.params.get("n_events"),
            }
            out += [(p, s) for p in counting_pairs(s, per_category, src)]
    else:
        raise ConfigError(
            f"{root} is a {suite!r} dataset; sycophancy reads exact pairs from counting or faithful "
            "datasets, or generated pairs from a sycophancy_pairs run dir"
        )
    return out


def _export(out: Path, samples: Sequence[Sample]) -> None:
    """The data-quality study's items: each [Modified] statement with its video (C.2 / C.5.1)."""
    rows = [
        {
            "item_id": s.sample_id,
            "pair_id": s.params["pair_id"],
            "category": s.params["category"],
            "statement": s.params["statement"],
            "question": QUALITY_QUESTION,
            "video": s.video.path,
            "video_sha256": s.video.sha256,
            "source": s.params.get("source"),
        }
        for s in samples
        if s.params["claim_is_true"] is False
    ]
    write_jsonl_atomic(out / "quality_study.jsonl", rows)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["item_id"], lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    write_text_atomic(out / "quality_study.csv", buf.getvalue())


def generate(
    out: Path,
    *,
    preset: str,
    source: Path | None,
    demos: Sequence[str] | None,
    per_category: int,
    force: bool = False,
    say=print,
) -> Path:
    out = dataset_dir(out)
    if per_category < 1:
        raise ConfigError(f"per_category must be at least 1, got {per_category}")
    names = tuple(demos) if demos is not None else (() if source is not None else PRESET_DEMOS[preset])
    bad = [d for d in names if d not in DEMO_SUITES]
    if bad:
        raise ConfigError(f"unknown demo source {', '.join(bad)}; choose from {', '.join(DEMO_SUITES)}")
    found: list[tuple[str, Path, Pair, Sample]] = []
    sources: list[dict[str, Any]] = []
    generated: Generated | None = None
    for name in names:
        root = out / "sources" / name
        say(f"rendering the {name} demo into {root} ...")
        Commands.of(get_suite(name)).generate_demo(root)
        found += [(name, root, p, s) for p, s in _exact_pairs(root, name, per_category)]
        sources.append({"kind": "demo", "suite": name, "dir": str(root)})
    if source is not None:
        source = Path(source)
        if is_run_dir(source):
            generated = read_generated(source)
            found += [("generated", generated.data_dir, p, s) for p, s in generated.pairs]
            sources.append({"kind": "run", "dir": str(source.resolve()), "data_dir": str(generated.data_dir)})
            for d in generated.dropped:
                say(f"dropped {d['sample_id']} (trial {d['trial_id'][:12]}, {d['model']}): {d['reason']}")
        elif source.is_dir():
            suite = str(read_dataset_info(source).get("suite"))
            found += [(suite, source, p, s) for p, s in _exact_pairs(source, suite, per_category)]
            sources.append({"kind": "dataset", "suite": suite, "dir": str(source.resolve())})
        else:
            raise ConfigError(f"--source {source} is neither a dataset dir nor a run dir")
    if not found:
        raise DataError(
            "no claim pair came out of the sources: "
            + (f"every generated pair was dropped ({generated.counts()})" if generated else "nothing to read")
        )
    ids = [p.pair_id for _, _, p, _ in found]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise DataError(f"pair ids appear twice ({', '.join(dup[:3])}): the same source was given twice")
    placeholder = VideoRef(path="", fps=1.0, width=1, height=1, n_frames=0, duration_s=0)
    planned = [x for _, _, p, _ in found for x in samples_of_pair(p, placeholder)]
    guard_replace(
        out, planned, force=force, key=lambda s: (s.params, s.answer), command=f"generate stress --probe {PROBE}"
    )
    videos = _Videos(out)
    samples = [x for group, root, p, s in found for x in samples_of_pair(p, videos.add(group, root, s))]
    manifest = write_manifest(out, samples)
    _export(out, samples)
    by_cat = {c: sum(p.category == c for _, _, p, _ in found) for c in CATEGORIES}
    info: dict[str, Any] = {
        "suite": "stress",
        "probe": PROBE,
        "generator_version": GENERATOR_VERSION,
        "preset": preset,
        "n_samples": len(samples),
        "n_pairs": len(found),
        "pairs_by_category": by_cat,
        "per_category": per_category,
        "sources": sources,
        "minimality": {"tr_max_bag_diff": TR_MAX_BAG_DIFF, "edit_floor": EDIT_FLOOR, "edit_share": EDIT_SHARE},
        "quality_study": ["quality_study.jsonl", "quality_study.csv"],
    }
    if generated is not None:
        info["validation"] = {**generated.counts(), "dropped": generated.dropped}
        c = generated.counts()
        say(f"generated pairs: {c['n_generated']} answers, {c['n_valid']} valid, {c['n_dropped']} dropped")
    write_dataset_info(out, info)
    say(f"{len(found)} pairs ({', '.join(f'{k} {v}' for k, v in by_cat.items() if v)}) -> {len(samples)} samples")
    return manifest
