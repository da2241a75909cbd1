"""``vidaudit export hf``: a suite's dataset as a Hugging Face dataset on disk, ready for ``push_to_hub``.

``DIR`` (written whole into a temporary sibling, then renamed) holds:

- the Arrow dataset (``datasets.load_from_disk(DIR)``): one row per sample with typed features:
  ``sample_id``, ``suite``, ``question``, ``answer``, ``params`` (a struct), ``trace`` (a list of typed
  events), ``video`` (a ``datasets.Video(decode=False)`` feature with the file's bytes embedded, so
  the rows are readable without torchcodec and ``push_to_hub`` uploads them as they are),
  ``video_path`` (relative to ``DIR``), ``video_sha256``, ``fps``, ``width``, ``height``, ``n_frames``,
  ``duration_s``, how the file was read (``rotation``, ``stream``, ``sar``, ``stored_size``, ``start_s``,
  ``frame_times``: ``add_player_facts``), ``group_id``
  and the suite's default prompt (``prompt``, ``prompt_system``) as the model would receive it with
  the video file;
- ``videos/``: the files alongside, so that ``DIR`` is also a vidaudit dataset (``manifest.jsonl`` and
  ``dataset.json`` with the rewritten video paths: ``vidaudit run --data DIR`` works);
- ``README.md``: the dataset card (suite, paper, grid, verification status, licence, columns).

Types are inferred from the samples: numbers, strings and bools as values, dicts as structs, lists as
lists; a column whose values have no single type, or whose whole numbers its type would not hold exactly (past
2**53 beside floats, past int64), is stored as JSON text under ``NAME_json`` (named in
the card).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from vidaudit import __version__
from vidaudit.core.contract.roles import Verification
from vidaudit.core.errors import ConfigError, DataError, VerificationError, listed
from vidaudit.core.fileio import stage_dir
from vidaudit.core.manifest import write_dataset_info, write_manifest
from vidaudit.core.types import Sample, VideoRef
from vidaudit.tools.interop.common import BridgedData, check_videos, load_data, native_condition, require

CARD = "README.md"
#: vidaudit's own licence: the default for videos vidaudit rendered (real videos must name theirs)
RENDERED_LICENSE = "apache-2.0"


@dataclass(frozen=True)
class HFExport:
    out: Path
    n_samples: int
    features: dict[str, str]
    verification: str
    license: str


# --------------------------------------------------------------------------- types


class _Untypable(Exception):
    pass


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, dict):
        return "dict"
    if isinstance(v, list | tuple):
        return "list"
    raise _Untypable(type(v).__name__)


#: the largest whole number float64 holds exactly (beside floats, ints are stored as float64), and int64's
FLOAT_EXACT = 2**53
INT64_MAX = 2**63 - 1


def infer_feature(values: Sequence[Any]) -> Any:
    """The ``datasets`` feature that holds every value (None is allowed anywhere); ``_Untypable`` otherwise."""
    ds = require("datasets", "vidaudit export hf")
    kinds = {_kind(v) for v in values} - {"null"}
    if not kinds:
        return ds.Value("string")
    if kinds & {"int"} and kinds <= {"int", "float"}:
        # a whole number past what the column holds exactly would come back another number: JSON text instead
        ints = [v for v in values if _kind(v) == "int"]
        limit = FLOAT_EXACT if "float" in kinds else INT64_MAX
        if any(abs(v) > limit for v in ints):
            raise _Untypable(f"a whole number past {limit:,} ({'float64' if 'float' in kinds else 'int64'})")
    if kinds == {"int", "float"}:
        return ds.Value("float64")
    if len(kinds) > 1:
        raise _Untypable(", ".join(sorted(kinds)))
    (k,) = kinds
    if k in ("bool", "int", "float", "str"):
        return ds.Value({"bool": "bool", "int": "int64", "float": "float64", "str": "string"}[k])
    if k == "dict":
        keys: dict[str, None] = {}
        for v in values:
            if v is not None:
                keys.update(dict.fromkeys(v))
        if not keys:
            raise _Untypable("empty dict")
        return {key: infer_feature([v.get(key) if v is not None else None for v in values]) for key in keys}
    items = [x for v in values if v is not None for x in v]
    if not items:
        raise _Untypable("empty lists only")
    return ds.List(infer_feature(items))


def _own_fields(samples: Sequence[Sample]) -> list[str]:
    """The fields of a suite's own that the samples' events carry (``Event`` extras), in first-seen order."""
    return list(dict.fromkeys(k for s in samples for e in s.trace.events for k in (e.model_extra or {})))


def _event_feature(samples: Sequence[Sample]) -> Any:
    """The trace column's feature: the shared event fields, then each field of a suite's own that the events
    carry (counting: ``count``), in first-seen order and typed by its values."""
    ds = require("datasets", "vidaudit export hf")
    shared = {
        "t": ds.Value("float64"),
        "frame": ds.Value("int64"),
        "type": ds.Value("string"),
        "state_before": ds.Value("string"),
        "state_after": ds.Value("string"),
    }
    rows = [e.model_dump(mode="json") for s in samples for e in s.trace.events]
    own = _own_fields(samples)
    try:
        return ds.List(shared | {k: infer_feature([r.get(k) for r in rows]) for k in own})
    except _Untypable as e:
        raise DataError(
            f"an event field of the suite's own has values of several types ({e}); give each "
            "field one type in the manifest's traces"
        ) from None


@contextmanager
def _quiet_datasets() -> Iterator[None]:
    """No tqdm bars from ``datasets`` while we write (restored afterwards: no global change leaks out)."""
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    was = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was:
            enable_progress_bars()


# --------------------------------------------------------------------------- card


def grid_of(samples: Sequence[Sample]) -> dict[str, list[Any]]:
    """Each parameter's distinct values over the samples (the grid the dataset spans)."""
    values: dict[str, set[str]] = {}
    raw: dict[str, dict[str, Any]] = {}
    for s in samples:
        for k, v in s.params.items():
            key = json.dumps(v, sort_keys=True)
            values.setdefault(k, set()).add(key)
            raw.setdefault(k, {})[key] = v

    def order(x: Any) -> tuple[int, Any]:
        return (0, x) if isinstance(x, int | float) and not isinstance(x, bool) else (1, json.dumps(x))

    return {k: sorted((raw[k][j] for j in values[k]), key=order) for k in values}


def verification_status(data: BridgedData, verify: bool, workers: int | None) -> str:
    """What the card says about pixel verification (checked now when ``verify``)."""
    n = len(data.samples)
    if data.info.get("real_video"):
        return "not applicable: real videos with annotated counts (pixel verification applies to rendered suites only)"
    if not verify:
        if "verified" in data.info:
            return f"recorded at generation: {data.info['verified']}"
        return (
            "not re-checked at export. `vidaudit generate` checks every rendered video against its trace "
            "unless run with --no-verify; run `vidaudit verify DIR` (or export with --verify) to check"
        )
    try:
        problems = Verification.of(data.suite).verify(data.root, data.samples, workers=workers)
    except ConfigError as e:
        return f"not available: {e}"
    if problems:
        raise VerificationError(
            f"{len(problems)} of {n} samples fail pixel verification "
            f"({listed(sorted(problems))}); fix the data before sharing it"
        )
    return (
        f"verified at export (vidaudit {__version__}): all {n} videos show their trace, every event found at "
        "its frame from decoded pixels alone"
    )


def card_text(
    data: BridgedData, *, license: str, verification: str, features: dict[str, str], json_columns: Sequence[str]
) -> str:
    suite, info, samples = data.suite, data.info, data.samples
    grid = grid_of(samples)
    n_events = [len(s.trace.events) for s in samples]
    fm = {
        "license": license,
        "pretty_name": f"vidaudit {suite.name}",
        "tags": ["vidaudit", "video", "executable-ground-truth", suite.name],
        "task_categories": ["video-text-to-text"],
        "size_categories": ["n<1K" if len(samples) < 1000 else "1K<n<10K" if len(samples) < 10_000 else "10K<n<100K"],
    }
    lines = (
        ["---"]
        + [f"{k}: {json.dumps(v)}" for k, v in fm.items()]
        + [
            "---",
            "",
            f"# vidaudit: {suite.name}",
            "",
            suite.description or "",
            "",
            f"- **Suite**: `{suite.name}` (vidaudit {__version__}; `vidaudit suites` describes it)",
            f"- **Paper**: {suite.paper or 'none recorded'}",
            f"- **Samples**: {len(samples)}; events per trace {min(n_events)}..{max(n_events)}",
            f"- **Verification**: {verification}",
            f"- **Licence**: {license}",
        ]
    )
    if info.get("generator_version"):
        lines.append(f"- **Generator**: {info['generator_version']}, created {info.get('created_at', 'unknown')}")
    if info.get("source"):
        lines.append(f"- **Source**: {info['source']}")
    lines += ["", "## Grid", "", "| parameter | values |", "| --- | --- |"]
    for k, vals in grid.items():
        shown = ", ".join(json.dumps(v) for v in vals[:24]) + (f" ... ({len(vals)} values)" if len(vals) > 24 else "")
        lines.append(f"| `{k}` | {shown} |")
    lines += ["", "## Columns", "", "| column | feature |", "| --- | --- |"]
    lines += [f"| `{k}` | {v} |" for k, v in features.items()]
    if json_columns:
        lines += ["", f"Stored as JSON text (their values have no single type): {', '.join(json_columns)}."]
    lines += [
        "",
        "## Use",
        "",
        "```python",
        "import datasets",
        "ds = datasets.load_from_disk(DIR)  # or load_dataset(REPO)",
        "row = ds[0]  # video: {'path', 'bytes'}; decode with ds.cast_column('video', datasets.Video())",
        "```",
        "",
        "Video bytes are embedded in the rows; the same files lie under `videos/`, and `manifest.jsonl` "
        "makes this directory a vidaudit dataset (`vidaudit run NAME --data DIR`).",
        "",
        "Ground truth (`answer`, `trace`): `trace` lists the true events of each video, each with its time "
        "(s, on the player's clock), first frame, type and state change, and the suite's own fields "
        f"({', '.join(f'`{k}`' for k in _own_fields(samples)) or 'none'}).",
        "",
        "Share: `ds.push_to_hub(REPO)`, then upload this card "
        "(`huggingface_hub.DatasetCard.load('DIR/README.md').push_to_hub(REPO)`).",
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- export


def _dest_paths(samples: Sequence[Sample]) -> dict[str, str]:
    """Where each sample's video goes under DIR (its own relative path when it stays inside, else
    ``videos/NAME``, made unique by the sha256 where two names collide). Two samples share a file only when
    they name the same one: the same sha256, or, where the manifest gives none, the same path."""
    out: dict[str, str] = {}
    taken: dict[str, str] = {}
    for s in samples:
        same = s.video.sha256 or f"path:{s.video.path}"
        rel = PurePosixPath(s.video.path)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts or rel.parts[0] != "videos":
            rel = PurePosixPath("videos") / rel.name
        key = str(rel)
        if key in taken and taken[key] != same:
            tag = s.video.sha256 or hashlib.sha256(same.encode()).hexdigest()  # one name per distinct file
            key = str(PurePosixPath("videos") / f"{tag[:16]}_{rel.name}")
        taken[key] = same
        out[s.sample_id] = key
    return out


#: how the file's frames become the ones vidaudit scored (``VideoRef``): a reader that ignores one of these
#: (decord ignores the display matrix; most readers take the first video stream, ffmpeg the largest) gets other
#: frames, at other times, than the answers were scored on
PLAYER_FACTS = (
    ("rotation", "int64"),
    ("stream", "int64"),
    ("sar", "list"),
    ("stored_size", "list"),
    ("start_s", "float64"),
    ("frame_times", "list_float"),
)


def add_player_facts(columns: dict[str, list[Any]], features: dict[str, Any], videos: Sequence[VideoRef]) -> None:
    """The columns that say how to read each video as vidaudit did: ``rotation`` (degrees counter-clockwise the
    stored picture is turned for display), ``stream`` (the video stream's index, null where the file has one),
    ``sar`` ([num, den], null for square pixels), ``stored_size`` ([width, height] as stored, null for square
    pixels), ``start_s`` (the first frame's time) and ``frame_times`` (every frame's time, null at a constant
    rate)."""
    ds = require("datasets", "vidaudit export hf")
    kinds = {
        "int64": ds.Value("int64"),
        "float64": ds.Value("float64"),
        "list": ds.List(ds.Value("int64")),
        "list_float": ds.List(ds.Value("float64")),
    }
    for key, kind in PLAYER_FACTS:
        features[key] = kinds[kind]
        columns[key] = [(list(v) if isinstance(v, tuple) else v) for v in (getattr(r, key) for r in videos)]


def export_hf(
    data: str | Path, out: str | Path, *, license: str | None = None, verify: bool = False, workers: int | None = None
) -> HFExport:
    """Write the dataset at ``data`` as a Hugging Face dataset in ``out`` (see the module docstring)."""
    ds = require("datasets", "vidaudit export hf")
    d = load_data(data)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out} exists and is not empty; choose a new directory for the export")
    if license is None:
        if d.info.get("real_video"):
            raise ConfigError(
                f"{d.root} holds real videos ({d.info.get('source', 'imported')}); their licence is "
                "not vidaudit's to choose. Pass --license with the source dataset's licence "
                "(e.g. --license cc-by-nc-4.0) before sharing it"
            )
        license = RENDERED_LICENSE
    check_videos(d)
    verification = verification_status(d, verify, workers)
    dest = _dest_paths(d.samples)
    cond = native_condition(d.suite, None)

    columns: dict[str, list[Any]] = {
        "sample_id": [],
        "suite": [],
        "question": [],
        "answer": [],
        "params": [],
        "group_id": [],
    }
    for s in d.samples:
        columns["sample_id"].append(s.sample_id)
        columns["suite"].append(s.suite)
        columns["question"].append(s.question)
        columns["answer"].append(s.answer)
        columns["params"].append(dict(s.params))
        columns["group_id"].append(s.group_id)
    features: dict[str, Any] = {}
    json_columns: list[str] = []
    for name in list(columns):
        try:
            features[name] = infer_feature(columns[name])
        except _Untypable:
            columns[f"{name}_json"] = [json.dumps(v, sort_keys=True) for v in columns.pop(name)]
            features[f"{name}_json"] = ds.Value("string")
            json_columns.append(name)
    features["trace"] = _event_feature(d.samples)
    columns["trace"] = [[e.model_dump(mode="json") for e in s.trace.events] for s in d.samples]
    prompts = [d.suite.render_prompt(s, cond) for s in d.samples]
    columns["prompt"] = [p.text for p in prompts]
    columns["prompt_system"] = [p.system for p in prompts]
    features["prompt"] = ds.Value("string")
    features["prompt_system"] = ds.Value("string")
    for key, dtype in (
        ("video_path", "string"),
        ("video_sha256", "string"),
        ("fps", "float64"),
        ("width", "int64"),
        ("height", "int64"),
        ("n_frames", "int64"),
        ("duration_s", "float64"),
    ):
        features[key] = ds.Value(dtype)
    columns["video_path"] = [dest[s.sample_id] for s in d.samples]
    columns["video_sha256"] = [s.video.sha256 for s in d.samples]
    for key in ("fps", "width", "height", "n_frames", "duration_s"):
        columns[key] = [getattr(s.video, key) for s in d.samples]
    add_player_facts(columns, features, [s.video for s in d.samples])
    features["video"] = ds.Video(decode=False)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = stage_dir(out)  # named after this process: a killed export's folder is swept by the next one
    try:
        for s in d.samples:
            target = tmp / dest[s.sample_id]
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                shutil.copyfile(d.root / s.video.path, target)
        # bytes embedded: datasets resolves a bare relative path against the working directory
        columns["video"] = [
            {"path": dest[s.sample_id], "bytes": (tmp / dest[s.sample_id]).read_bytes()} for s in d.samples
        ]
        rows = [dict(zip(columns, vals, strict=True)) for vals in zip(*columns.values(), strict=True)]
        with _quiet_datasets():
            dataset = ds.Dataset.from_list(rows, features=ds.Features(features))
            dataset.save_to_disk(str(tmp))
        moved = [
            s.model_copy(update={"video": s.video.model_copy(update={"path": dest[s.sample_id]})}) for s in d.samples
        ]
        write_manifest(tmp, moved)
        write_dataset_info(
            tmp,
            {
                **d.info,
                "exported": {
                    "to": "huggingface",
                    "vidaudit_version": __version__,
                    "from": str(d.root.resolve()),
                    "license": license,
                    "verification": verification,
                },
            },
        )
        feats = {k: _feature_name(v) for k, v in dataset.features.items()}
        (tmp / CARD).write_text(
            card_text(d, license=license, verification=verification, features=feats, json_columns=json_columns),
            encoding="utf-8",
        )
        if out.exists():
            out.rmdir()  # empty (checked above)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return HFExport(out=out, n_samples=len(d.samples), features=feats, verification=verification, license=license)


def _feature_name(f: Any) -> str:
    """A feature in a few words: ``int64``, ``list<float64>``, ``struct{a: string, ...}``, ``Video``."""
    if isinstance(f, dict):
        return "struct{" + ", ".join(f"{k}: {_feature_name(v)}" for k, v in f.items()) + "}"
    inner = getattr(f, "feature", None)
    if inner is not None:
        return f"list<{_feature_name(inner)}>"
    dtype = getattr(f, "dtype", None)
    if type(f).__name__ == "Value" and isinstance(dtype, str):
        return dtype
    return type(f).__name__
