"""Generic helpers for report tables: cell formatting, nested look-ups, flattening, Markdown escaping.

A suite builds its own :class:`~vidaudit.core.contract.report.Table` objects (preformatted strings) with
these helpers; Markdown and HTML then render the same tables, so the numbers in both documents
cannot drift apart. ``None`` (e.g. no eligible trials) is shown as an em dash, never as 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from vidaudit.core.contract.report import Table

MISSING = "—"

_LINE_BREAKS = re.compile("[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # every str.splitlines() break


def dig(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]...`` or None when any level is absent or not a mapping."""
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def fmt(value: Any, digits: int = 3) -> str:
    """One cell's text: floats rounded, None as an em dash, everything else as str."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return MISSING
        return f"{value:.{digits}f}"
    if isinstance(value, int) and abs(value) >= 10_000:
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v, digits) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {fmt(v, digits)}" for k, v in value.items())
    return str(value)


def numeric_key(label: Any) -> tuple[int, float, str]:
    """Sort "0.5" < "1" < "10" numerically; non-numbers after, alphabetically."""
    try:
        x = float(label)
    except (TypeError, ValueError):
        return (1, 0.0, str(label))
    return (0, x, "") if math.isfinite(x) else (1, 0.0, str(label))


def md_escape(text: Any) -> str:
    """Text safe inside a Markdown table cell or list item: '|' and '\\' escaped, line breaks made spaces."""
    return _LINE_BREAKS.sub(" ", str(text).replace("\\", "\\\\").replace("|", "\\|"))


def _is_scalar_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(not isinstance(v, (Mapping, list, tuple)) for v in value)


def _is_record(value: Any) -> bool:
    """A mapping whose values are all scalars (or lists of scalars, shown joined)."""
    return isinstance(value, Mapping) and bool(value) and all(
        not isinstance(v, (Mapping, list, tuple)) or _is_scalar_list(v) for v in value.values())


def flatten_table(id: str, title: str, obj: Any, level_names: Sequence[str], caption: str = "",
                  digits: int = 3) -> Table:
    """A table for nested mappings/lists whose exact shape another module owns.

    Walks mappings until it reaches a record (a mapping of scalars) or a scalar; the keys on the
    way become the leading columns (named by ``level_names``, then "level k"). Keys it has never
    seen become columns of their own, so a new key in the input is shown, never a crash.
    """
    records: list[tuple[list[str], Mapping[str, Any]]] = []

    def walk(value: Any, path: list[str]) -> None:
        if _is_record(value) and path:
            records.append((path, value))
        elif isinstance(value, Mapping) and value:
            for k, v in value.items():
                walk(v, path + [str(k)])
        elif isinstance(value, list) and value and all(_is_record(v) for v in value):
            for v in value:
                records.append((path, v))
        else:
            records.append((path, {"value": value}))

    if obj not in (None, {}, []):
        walk(obj, [])
    depth = max((len(p) for p, _ in records), default=0)
    keys = [str(level_names[i]) if i < len(level_names) else f"level {i + 1}" for i in range(depth)]
    value_cols: list[str] = []
    for _, rec in records:
        for k in rec:
            if str(k) not in value_cols:
                value_cols.append(str(k))
    rows = []
    for path, rec in records:
        by_name = {str(k): v for k, v in rec.items()}
        rows.append(path + [""] * (depth - len(path))
                    + [fmt(by_name[c], digits) if c in by_name else "" for c in value_cols])
    return Table(id=id, title=title, columns=keys + value_cols, rows=rows, caption=caption, key_columns=depth)
