"""Generic helpers for report tables: cell formatting, nested look-ups, flattening, Markdown escaping.

A suite builds its own :class:`~vidaudit.core.contract.report.Table` objects (preformatted strings) with
these helpers; Markdown and HTML then render the same tables, so the numbers in both documents
cannot drift apart. ``None`` (e.g. no eligible trials) is shown as an em dash, never as 0.
"""

from __future__ import annotations

import math
import re
import unicodedata
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


#: Markdown's code spans, strikethrough and table cells backslash-escaped
_MD_ESCAPES = str.maketrans({"\\": "\\\\", "|": "\\|", "`": "\\`", "~": "\\~"})
#: a "<" that could start a tag, comment, declaration, processing instruction or autolink (a letter, "/",
#: "!" or "?" after it, or a ">" before the next space): written as its HTML entity, whatever a renderer
#: does with raw HTML; ``<1`` or ``a < b`` stay as they are
_MD_TAG = re.compile(r"<(?=[A-Za-z/!?]|[^\s<>]*>)")
#: "&" only where it would start an entity (``&lt;`` written by a model stays those four characters)
_MD_ENTITY = re.compile(r"&(?=#?[0-9A-Za-z]+;)")
#: a "]" that could close a link or image (``](``, ``][``, ``]:``); the brackets of ``[1, 2]`` or
#: ``[0.2, 0.4] (4/10)`` stay as they are (a reference link with a space, ``[a] [b]``, needs a ``[b]:``
#: definition, which is escaped wherever it is written). A text that report.md follows with ":" ends
#: in an escaped "]" (``md_escape(text, label=True)``)
_MD_LINK = re.compile(r"\](?=[(\[:])")
#: a run of "*": escaped when it can open emphasis (CommonMark's left-flanking rule, see ``_opens``);
#: ``N*(F)`` cannot open one and stays as it is
_MD_STAR = re.compile(r"\*+")
#: an underscore that could open or close emphasis: one not between two letters or digits (``bounce_ball``
#: stays as it is; GitHub-flavoured Markdown never emphasises inside a word)
_MD_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
#: what makes a line a heading, list item, quote, rule or setext underline when the text starts a line
_MD_LINE_START = re.compile(r"^(?:#{1,6}(?=\s|$)|[-+*](?=\s|$)|-{2,}|={2,}|\*{2,}|>|\d{1,9}[.)](?=\s|$))")
#: a heading's closing "#"s: a run of them at the end, after a space
_MD_HEADING_END = re.compile(r"(?:(?<=\s)|^)#(?=#*\s*$)")


def _punct(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


def _star_run(m: re.Match[str]) -> str:
    """A "*" run, escaped when it is left-flanking: followed by a non-space that is not punctuation, or by
    punctuation with a space or punctuation before the run (a closer alone never makes emphasis)."""
    text, run = m.string, m.group(0)
    before = text[m.start() - 1] if m.start() else " "
    after = text[m.end()] if m.end() < len(text) else " "
    opens = not after.isspace() and (not _punct(after) or before.isspace() or _punct(before))
    return "\\*" * len(run) if opens else run


def _line_start(m: re.Match[str]) -> str:
    mark = m.group(0)
    return mark[:-1] + "\\" + mark[-1] if mark[0].isdigit() else "\\" + mark


def md_escape(text: Any, label: bool = False) -> str:
    """Text shown literally by any Markdown renderer, raw HTML on or off: the report's one escaping rule.

    As in report.html, nothing a model, user or annotator wrote can become markup: a "<" that could
    start a tag, comment or autolink is written as ``&lt;`` and an "&" that would start an entity as
    ``&amp;``;
    Markdown's own syntax (code spans, emphasis openers, a "]" that would make a link or image, a ``|``
    that would add a table column, a line start that would make a heading, list or quote) is
    backslash-escaped; every line break becomes a space, so the text cannot end a table row or a list
    item. Rendered, the text reads exactly as it was written; characters that cannot start markup are
    left alone, so the file stays readable as text. ``label``: the text is followed by ":" (a final "]"
    is escaped too).
    """
    out = str(text)
    if "&" in out:  # before "<" becomes "&lt;"
        out = _MD_ENTITY.sub("&amp;", out)
    if "<" in out:
        out = _MD_TAG.sub("&lt;", out)
    # leading blanks would make a code block where the text starts a line; a renderer drops them anyway
    out = _LINE_BREAKS.sub(" ", out.translate(_MD_ESCAPES)).lstrip(" \t")
    if "]" in out:
        out = _MD_LINK.sub(r"\\]", out)
        if label and out.endswith("]") and not out.endswith("\\]"):
            out = out[:-1] + "\\]"  # "[x]" then ":" would be a link definition
    if "*" in out:
        out = _MD_STAR.sub(_star_run, out)
    if "_" in out:
        out = _MD_UNDERSCORE.sub(r"\\_", out)
    if "#" in out:
        out = _MD_HEADING_END.sub(r"\\#", out)
    return _MD_LINE_START.sub(_line_start, out, count=1)


def _is_scalar_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(not isinstance(v, (Mapping, list, tuple)) for v in value)


def _is_record(value: Any) -> bool:
    """A mapping whose values are all scalars (or lists of scalars, shown joined)."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(not isinstance(v, (Mapping, list, tuple)) or _is_scalar_list(v) for v in value.values())
    )


def flatten_table(
    id: str, title: str, obj: Any, level_names: Sequence[str], caption: str = "", digits: int = 3
) -> Table:
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
        rows.append(
            path + [""] * (depth - len(path)) + [fmt(by_name[c], digits) if c in by_name else "" for c in value_cols]
        )
    return Table(id=id, title=title, columns=keys + value_cols, rows=rows, caption=caption, key_columns=depth)
