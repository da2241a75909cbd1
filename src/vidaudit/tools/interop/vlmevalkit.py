"""VLMEvalKit prediction files, read as response rows.

VLMEvalKit is not on the package registry, so its format is taken from its public repository
(open-compass/VLMEvalKit: ``run.py``, ``vlmeval/inference*.py``, ``vlmeval/smp/file.py``) and written
down in ``docs/interop.md``. In short: inference writes ``WORK_DIR/MODEL/T<YYYYMMDD>_G<commit>/
MODEL_DATASET.<ext>``, ``<ext>`` being ``xlsx`` (the default), ``tsv`` or ``json`` (``PRED_FORMAT``); the
table is the dataset's own table (``index``, ``question``, ``answer``, ``video``, ... whatever the
dataset has) with the model's text added as ``prediction`` (``str()`` of the response). TSV is written
tab-separated, every field quoted, UTF-8, no index column; JSON is a list of row objects. A call that
failed leaves a prediction that starts with ``Failed to obtain answer`` (its API wrappers' ``Failed to obtain
answer via API.``, with a trailing space or an error appended by some, and the plain form of newer versions);
VLMEvalKit's own response cache treats every such text as a failure marker, and so does this reader. Its xlsx
writer (xlsxwriter) cuts a cell at Excel's 32,767 characters: such a prediction is ``truncated`` here, never
scored as the model's text.

Key: the ``sample_id`` column when the table has one (a vidaudit dataset given to VLMEvalKit keeps it,
since VLMEvalKit copies every dataset column), else ``index``. Suite: the ``suite`` column when present,
and a dataset name starting ``vidaudit_`` must continue with the manifest's suite name. Model: the
``MODEL`` of the path (or ``--model-label``). Condition: the ``condition`` column, else
``vlmevalkit:DATASET``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from vidaudit.core.errors import DataError, listed
from vidaudit.core.untrusted import distinct_keys
from vidaudit.score.stage import ResponseRow
from vidaudit.tools.interop.common import ImportedLog, require

HARNESS = "vlmevalkit"
FAIL_MSG = "Failed to obtain answer via API."
#: what every failure marker of VLMEvalKit starts with (``vlmeval.smp.file.INFER_FAIL_MSG`` in newer versions)
FAIL_PREFIX = "Failed to obtain answer"
#: Excel's limit on a cell's characters: VLMEvalKit's xlsx writer cuts a longer prediction to exactly this
XLSX_CELL_MAX = 32767
FORMATS = (".xlsx", ".tsv", ".json")
REQUIRED = ("index", "prediction")
#: the run folder: ``T<YYYYMMDD>_G<commit>`` (older versions) or ``T<YYYYMMDD>-<HHMMSS>`` (newer ones)
EVAL_ID = re.compile(r"^T\d{8}(_G[0-9A-Za-z]+|-\d{6})$")


def _cell(v: Any) -> str | None:
    """A cell as text: None for an empty cell (NaN, None); numbers as VLMEvalKit would print an index."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def read_table(path: Path) -> list[dict[str, Any]]:
    """The rows of a prediction file, every cell as text (VLMEvalKit's own loaders infer types; we keep text)."""
    ext = path.suffix.lower()
    if ext not in FORMATS:
        raise DataError(
            f"{path}: a {ext or 'suffix-less'} file is not a VLMEvalKit prediction format this vidaudit "
            f"knows (it reads {', '.join(FORMATS)}: PRED_FORMAT xlsx, tsv or json)"
        )
    if ext == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=distinct_keys)
        except (UnicodeDecodeError, json.JSONDecodeError, DataError) as e:
            raise DataError(f"{path}: not a VLMEvalKit JSON prediction file ({e})") from e
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise DataError(
                f"{path}: a VLMEvalKit JSON prediction file is a list of row objects, got {type(data).__name__}"
            )
        return [{str(k): v for k, v in r.items()} for r in data]
    pd = require("pandas", "reading VLMEvalKit prediction files")
    try:
        if ext == ".tsv":
            df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, encoding="utf-8")
        else:
            require("openpyxl", "reading VLMEvalKit .xlsx prediction files")
            df = pd.read_excel(path, dtype=str, keep_default_na=False)
    except (ValueError, UnicodeDecodeError, OSError) as e:
        raise DataError(f"{path}: not readable as a VLMEvalKit {ext} prediction file ({e})") from e
    return df.to_dict(orient="records")


def names_from_path(path: Path) -> tuple[str | None, str | None]:
    """(model, dataset) from ``MODEL/T<date>_G<commit>/MODEL_DATASET.ext`` (or ``MODEL/MODEL_DATASET.ext``)."""
    parent = path.parent
    model_dir = parent.parent if EVAL_ID.match(parent.name) else parent
    model = model_dir.name
    if model and path.stem.startswith(model + "_"):
        return model, path.stem[len(model) + 1 :]
    return None, None


def read_vlmevalkit_predictions(path: str | Path, *, model: str | None = None) -> ImportedLog:
    """The response rows of a VLMEvalKit prediction file (an ``ImportedLog``)."""
    f = Path(path)
    if f.is_dir():
        found = sorted(p for p in f.rglob("*") if p.suffix.lower() in FORMATS and p.is_file())
        if len(found) != 1:
            raise DataError(
                f"{f} holds {len(found)} VLMEvalKit prediction files; name one"
                + (f": {listed([str(p) for p in found])}" if found else "")
            )
        f = found[0]
    if not f.is_file():
        raise DataError(f"no VLMEvalKit prediction file at {f}")
    table = read_table(f)
    columns = list(dict.fromkeys(k for r in table for k in r))
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise DataError(
            f"{f}: not a VLMEvalKit prediction file: no {', '.join(missing)} column (columns found: "
            f"{listed(columns, 12)})"
        )
    path_model, dataset = names_from_path(f)
    suites: set[str] = set()
    for r in table:
        s = _cell(r.get("suite"))
        if s:
            suites.add(s)
    key = "sample_id" if "sample_id" in columns else "index"
    label = model or path_model or f.stem
    rows: list[ResponseRow] = []
    for i, r in enumerate(table, 1):
        sid = _cell(r.get(key))
        pred = _cell(r.get("prediction"))
        text = "" if pred is None else pred
        status = "ok"
        if text.lstrip().startswith(FAIL_PREFIX):
            status = "api_error"
        elif f.suffix.lower() == ".xlsx" and len(text) == XLSX_CELL_MAX:
            status = "truncated"  # cut by the xlsx writer: what is left is not the model's answer
        condition = _cell(r.get("condition")) or (f"vlmevalkit:{dataset}" if dataset else "external")
        rows.append(
            ResponseRow(
                sample_id=sid or "",
                response=None if status == "api_error" else text,
                model=label,
                condition=condition,
                status=status,
                where=f"{f}: row {i} ({key} {sid!r})",
            )
        )
    named = dataset[len("vidaudit_") :] if dataset and dataset.startswith("vidaudit_") else None
    return ImportedLog(
        harness=HARNESS,
        path=f,
        rows=rows,
        suites=suites,
        key=f"the {key} column",
        named=named,
        source={"format": f.suffix.lower().lstrip("."), "dataset": dataset or "unknown"},
    )
