"""lmms-eval: ``vidaudit export lmms-eval`` (a task directory) and the reader of its ``--log_samples`` JSONL.

The task directory holds ``<task>.yaml`` (dataset = ``docs.jsonl`` through the ``json`` builder,
``generate_until`` with the video file as the visual and vidaudit's prompt as the text, greedy,
no stop sequence), ``utils.py`` (hooks re-exported from :mod:`vidaudit.tools.interop.lmms_eval_runtime`,
whose ``process_results`` calls the suite's scorer), ``docs.jsonl`` and a ``README.md`` with the
commands, and, for videos lmms-eval's loaders would decode as other frames than vidaudit scores (turned or
mirrored by a display matrix, non-square pixels, several video streams), ``videos/`` with their plain copies
(:mod:`vidaudit.tools.interop.plain`). lmms-eval runs it with ``--include_path TASKDIR``; neither this module
nor the task needs lmms-eval installed to be written.

Reading a log: each row of ``<date>_samples_<task>.jsonl`` is keyed by ``vidaudit_sample_id`` (written
by the exported task; ``doc.sample_id`` where an lmms-eval version logs the document) and carries the
row format (``vidaudit_format``), suite and condition. The model label comes from the
``<date>_results.json`` beside it (``config.model`` and the ``pretrained``/``model``/``model_version``
of ``model_args``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from vidaudit import __version__
from vidaudit.core.errors import ConfigError, DataError, listed
from vidaudit.core.fileio import read_jsonl_objects, write_text_atomic
from vidaudit.core.manifest import external_videos_allowed
from vidaudit.core.untrusted import distinct_keys
from vidaudit.score.stage import ResponseRow
from vidaudit.tools.interop.common import (
    ImportedLog,
    check_videos,
    load_data,
    native_condition,
    scalar_metric_names,
)
from vidaudit.tools.interop.lmms_eval_runtime import ROW_FORMAT
from vidaudit.tools.interop.plain import PlainCopy, plain_copies
from vidaudit.video.facts import resolve_video

HARNESS = "lmms-eval"
DOCS = "docs.jsonl"
MARKER = ".vidaudit-export.json"
TASK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
#: row formats this vidaudit reads
KNOWN_ROW_FORMATS = (ROW_FORMAT,)
#: keys of ``model_args`` that name the checkpoint or API model, in the order they are looked for
MODEL_ARG_KEYS = ("pretrained", "model", "model_version", "model_name")


@dataclass(frozen=True)
class LmmsEvalExport:
    out: Path
    task: str
    yaml: Path
    n_docs: int
    metrics: list[str]
    condition: str
    command: str
    #: the samples whose video the task hands over as a plain copy (``plain.py``), by sample id
    copies: dict[str, PlainCopy]


def _template(name: str) -> Any:
    text = resources.files("vidaudit.tools.interop").joinpath("templates", name).read_text(encoding="utf-8")
    return jinja2.Environment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    ).from_string(text)


def run_command(
    task: str, taskdir: Path, model: str = "MODEL", model_args: str = "MODEL_ARGS", output: str = "OUT"
) -> str:
    return (
        f"python -m lmms_eval --model {model} --model_args {model_args} --tasks {task} "
        f"--include_path {taskdir} --log_samples --output_path {output}"
    )


def export_lmms_eval(
    data: str | Path, out: str | Path, *, prompt: str | None = None, task: str | None = None, max_new_tokens: int = 2048
) -> LmmsEvalExport:
    """Write an lmms-eval task directory for the dataset at ``data`` (see the module docstring)."""
    d = load_data(data)
    suite = d.suite
    cond = native_condition(suite, prompt)
    name = task or (
        f"vidaudit_{suite.name}" if prompt in (None, suite.default_prompt) else f"vidaudit_{suite.name}_{cond.prompt}"
    )
    if not TASK_NAME.match(name):
        raise ConfigError(f"task name {name!r} must be letters, digits and underscores, starting with a letter")
    if max_new_tokens < 1:
        raise ConfigError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ConfigError(
            f"{out} exists, is not empty and is not a task directory vidaudit wrote; choose a new directory"
        )
    check_videos(d)
    prompts = {s.sample_id: suite.render_prompt(s, cond) for s in d.samples}
    with_system = [sid for sid, p in prompts.items() if p.system]
    if with_system:
        raise ConfigError(
            f"prompt {cond.prompt!r} has a system instruction ({listed(with_system, 3)}); lmms-eval's "
            "doc_to_text carries only the user text (its --system_instruction is global). Export "
            "another prompt, or run this one with `vidaudit run`"
        )
    metrics = scalar_metric_names(suite, d.samples, cond)
    data_dir = d.root.resolve()
    manifest = str(data_dir / "manifest.jsonl")
    external = external_videos_allowed(data_dir)
    sources = {
        s.sample_id: resolve_video(data_dir, s.video.path, allow_external=external, who=s.sample_id) for s in d.samples
    }
    taskdir = out.resolve()
    copies = plain_copies({s.sample_id: (sources[s.sample_id], s.video) for s in d.samples}, taskdir, HARNESS)
    out.mkdir(parents=True, exist_ok=True)  # after a refusal of the videos: nothing written

    def doc(s: Any) -> dict[str, Any]:
        c = copies.get(s.sample_id)
        extra = {} if c is None else {"video_source": str(c.source), "video_copy_sha256": c.sha256}
        return {
            "sample_id": s.sample_id,
            "suite": suite.name,
            "condition": cond.id,
            "prompt": prompts[s.sample_id].text,
            "target": json.dumps(s.answer) if not isinstance(s.answer, str) else s.answer,
            "video": str(c.path if c is not None else sources[s.sample_id]),
            "video_sha256": s.video.sha256,
            "manifest": manifest,
            "group_id": s.group_id,
            "vidaudit_format": ROW_FORMAT,
            **extra,
        }

    docs = [doc(s) for s in d.samples]
    command = run_command(name, taskdir)
    directions = {f"vidaudit_{k}": bool(v) for k, v in suite.capabilities.higher_is_better.items()}
    directions["vidaudit_correct"] = True
    ctx: dict[str, Any] = {
        "task": name,
        "suite": suite.name,
        "data_dir": str(data_dir),
        "vidaudit_version": __version__,
        "command": command,
        "docs": str(taskdir / DOCS),
        "max_new_tokens": max_new_tokens,
        "metrics": ["vidaudit_correct"] + [f"vidaudit_{m}" for m in metrics],
        "directions": directions,
        "row_format": ROW_FORMAT,
        "condition": cond.id,
        "metric_names": metrics,
    }
    write_text_atomic(out / DOCS, "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in docs))
    yaml_path = out / f"{name}.yaml"
    for old in out.glob("*.yaml"):
        if old != yaml_path:
            old.unlink()  # a previous export under another task name: one task per directory
    write_text_atomic(yaml_path, _template("lmms_eval_task.yaml.j2").render(**ctx))
    write_text_atomic(out / "utils.py", _template("lmms_eval_utils.py.j2").render(**ctx))
    write_text_atomic(out / "README.md", _readme(ctx, taskdir) + _copies_note(copies, taskdir))
    write_text_atomic(
        out / MARKER,
        json.dumps(
            {
                "task": name,
                "suite": suite.name,
                "condition": cond.id,
                "data": str(data_dir),
                "vidaudit_version": __version__,
                "row_format": ROW_FORMAT,
                **({"plain_copies": _copies_record(copies, taskdir)} if copies else {}),
            },
            indent=2,
        )
        + "\n",
    )
    return LmmsEvalExport(
        out=out,
        task=name,
        yaml=yaml_path,
        n_docs=len(docs),
        metrics=ctx["metrics"],
        condition=cond.id,
        command=command,
        copies=copies,
    )


def _copies_note(copies: dict[str, PlainCopy], taskdir: Path) -> str:
    """The README's paragraph on the plain copies (none: nothing, so a plain dataset's README is unchanged)."""
    if not copies:
        return ""
    files = {c.path: c for c in copies.values()}
    lines = [
        f"{len(files)} video(s) go to lmms-eval as plain copies under `videos/` (its loaders take the first video "
        "stream and ignore the display matrix and the pixel aspect ratio, so they would decode other frames than "
        "vidaudit scores): the frames vidaudit reads, upright, square-pixel, one stream, at the same rate. "
        "`.vidaudit-export.json` lists them (`plain_copies`):",
        "",
    ]
    lines += [f"- `{p.relative_to(taskdir)}` from `{c.source}`: {', '.join(c.why)}" for p, c in files.items()]
    return "\n".join(lines) + "\n"


def _copies_record(copies: dict[str, PlainCopy], taskdir: Path) -> list[dict[str, Any]]:
    """The export metadata's ``plain_copies``: one entry per copied file, with the samples it serves."""
    by_file: dict[Path, list[str]] = {}
    for sid, c in copies.items():
        by_file.setdefault(c.path, []).append(sid)
    first = {c.path: c for c in copies.values()}
    return [
        {
            "copy": str(p.relative_to(taskdir)),
            "copy_sha256": first[p].sha256,
            "source": str(first[p].source),
            "why": list(first[p].why),
            "samples": sids,
        }
        for p, sids in by_file.items()
    ]


def _readme(ctx: dict[str, Any], taskdir: Path) -> str:
    return "\n".join(
        [
            f"# lmms-eval task `{ctx['task']}` (vidaudit suite `{ctx['suite']}`)",
            "",
            f"Written by `vidaudit export lmms-eval` (vidaudit {ctx['vidaudit_version']}) from `{ctx['data_dir']}`; "
            f"condition `{ctx['condition']}` (the model receives the video file and samples it itself).",
            "",
            "Run it (the model's frames, the prompt as vidaudit renders it, vidaudit's scorer in `process_results`):",
            "",
            "```bash",
            ctx["command"],
            "```",
            "",
            "lmms-eval's table then reports " + ", ".join(f"`{m}`" for m in ctx["metrics"]) + ".",
            "",
            "Re-score the log with vidaudit (report, trace viewer, Wilson intervals, bootstrap):",
            "",
            "```bash",
            f"vidaudit score-responses --from lmms-eval OUT --samples {ctx['data_dir']}/manifest.jsonl "
            "--out scores.jsonl --report report/",
            "```",
            "",
            "Paths to the dataset are absolute: move the dataset, export again.",
            "",
        ]
    )


# --------------------------------------------------------------------------- the log


def find_samples_file(path: Path) -> Path:
    """The ``*_samples_*.jsonl`` file named by ``path``, or the single one under a directory."""
    if path.is_file():
        return path
    if not path.is_dir():
        raise DataError(f"no lmms-eval log at {path}")
    found = sorted(path.rglob("*_samples_*.jsonl"))
    if not found:
        raise DataError(
            f"{path} holds no lmms-eval samples log (*_samples_<task>.jsonl; run lmms-eval with --log_samples)"
        )
    if len(found) > 1:
        raise DataError(
            f"{path} holds {len(found)} lmms-eval samples logs; name one: {listed([str(f) for f in found])}"
        )
    return found[0]


def _results_file(samples_file: Path) -> dict[str, Any]:
    stem = samples_file.name.split("_samples_", 1)[0]
    res = samples_file.with_name(f"{stem}_results.json")
    if not res.is_file():
        return {}
    try:
        data = json.loads(res.read_text(encoding="utf-8"), object_pairs_hook=distinct_keys)
    except (OSError, json.JSONDecodeError, DataError) as e:
        raise DataError(f"{res}: not readable as lmms-eval results JSON ({e})") from e
    return data if isinstance(data, dict) else {}


def model_label(results: dict[str, Any]) -> str:
    """``config.model`` plus the checkpoint named in ``model_args`` (``llava_onevision:lmms-lab/...``)."""
    cfg = results.get("config") or {}
    model = str(cfg.get("model") or "") or "lmms-eval"
    args = cfg.get("model_args") or ""
    pairs: dict[str, str] = {}
    if isinstance(args, str):
        for part in args.split(","):
            k, sep, v = part.partition("=")
            if sep:
                pairs[k.strip()] = v.strip()
    elif isinstance(args, dict):
        pairs = {str(k): str(v) for k, v in args.items()}
    for key in MODEL_ARG_KEYS:
        if pairs.get(key):
            return f"{model}:{pairs[key]}"
    return model


def _responses(row: dict[str, Any]) -> list[str | None]:
    resp = row.get("filtered_resps", row.get("resps"))
    if isinstance(resp, list):
        flat: list[Any] = []
        for x in resp:
            flat.extend(x if isinstance(x, list) else [x])
        return [x if isinstance(x, str) or x is None else str(x) for x in flat]
    return [resp if isinstance(resp, str) or resp is None else str(resp)]


def read_lmms_eval_log(path: str | Path, *, model: str | None = None) -> ImportedLog:
    """The response rows of an lmms-eval ``--log_samples`` file (an ``ImportedLog``)."""
    f = find_samples_file(Path(path))
    results = _results_file(f)
    task = f.name.split("_samples_", 1)[1].removesuffix(".jsonl") if "_samples_" in f.name else ""
    meta = ((results.get("configs") or {}).get(task) or {}).get("metadata") or {}
    label = model or model_label(results)
    rows: list[ResponseRow] = []
    suites: set[str] = set()
    formats: set[str] = set()
    for i, row in read_jsonl_objects(f, f"the {HARNESS} log"):
        where = f"{f}:{i}"
        if "doc_id" not in row or not ("filtered_resps" in row or "resps" in row):
            raise DataError(
                f"{where}: not an lmms-eval --log_samples row (keys found: {listed(sorted(row), 8)}); "
                "this reads the <date>_samples_<task>.jsonl that lmms-eval writes with --log_samples"
            )
        fmt = row.get("vidaudit_format")
        raw_doc = row.get("doc")
        doc: dict[str, Any] = raw_doc if isinstance(raw_doc, dict) else {}
        if fmt is None and "vidaudit_sample_id" not in row and "sample_id" not in doc:
            raise DataError(
                f"{where}: the row carries no vidaudit_format and no sample id (vidaudit_sample_id, "
                "doc.sample_id): it is not from a task written by `vidaudit export lmms-eval`, so its "
                "rows cannot be matched to samples"
            )
        if fmt is not None and fmt not in KNOWN_ROW_FORMATS:
            raise DataError(
                f"{where}: row format vidaudit_format={fmt!r}, which this vidaudit ({__version__}) does "
                f"not know (it reads {', '.join(map(str, KNOWN_ROW_FORMATS))}); upgrade vidaudit"
            )
        formats.add(str(fmt) if fmt is not None else "doc")
        sid = row.get("vidaudit_sample_id", doc.get("sample_id"))
        suite = row.get("vidaudit_suite") or doc.get("suite") or meta.get("vidaudit_suite")
        if suite:
            suites.add(str(suite))
        condition = str(
            row.get("vidaudit_condition") or doc.get("condition") or meta.get("vidaudit_condition") or "external"
        )
        for text in _responses(row):
            rows.append(
                ResponseRow(
                    sample_id=str(sid),
                    response=text,
                    model=label,
                    condition=condition,
                    status="ok" if text is not None else "api_error",
                    where=where,
                )
            )
    return ImportedLog(
        harness=HARNESS,
        path=f,
        rows=rows,
        suites=suites,
        key="vidaudit_sample_id",
        source={
            "lmms_eval_version": str(results.get("lmms_eval_version") or "unknown"),
            "task": task,
            "row_format": ",".join(sorted(formats)),
        },
    )
