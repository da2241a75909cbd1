"""Real-video count transfer: turn a RepCount-style annotation CSV and its videos into counting Samples.

The Low-Frequency Trap paper (section 7, appendix C.7) checks whether the count pattern found on
rendered videos transfers to natural repetition videos (RepCount / TransRAC). Their annotation
CSV has a header row ``type,name,count,L1,L2,...`` (the released files may carry extra leading
index columns, which are ignored): ``L1, L2`` are the start and end frame of repetition 1,
``L3, L4`` of repetition 2, and so on, with empty cells after the last pair. Frame values are
often written by pandas as ``433.0``; integral decimals are accepted, anything else is not.

Each row becomes one Sample whose trace has one ``repetition`` event per repetition *start*
(``t = start / fps`` with the fps read back from the file). Natural videos do not control the
repetition rate, so ``params["frequency_hz"]`` is ``None`` and the measured mean rate goes to
``params["rate_hz"]``; the counting scorer then scores exact match only, as the paper does.

Validation is strict: every problem raises :class:`DataError` naming the CSV line and how to fix
it. :func:`scan_repcount` instead collects bad rows so that a large real CSV with a few broken
annotations can still be used, with every skipped row recorded in ``dataset.json``.
"""

from __future__ import annotations

import csv
import io
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidaudit.sdk import (
    DataError,
    Sample,
    VideoInfo,
    __version__,
    confined,
    library_versions,
    probe,
    ref_from,
    sha256_file,
    write_dataset_info,
    write_manifest,
)
from vidaudit.suites.counting.grid import SUITE
from vidaudit.suites.counting.prompts import REAL_TEMPLATES
from vidaudit.suites.counting.running_count import counting_event, counting_trace

SOURCE = "repcount"
LOADER_VERSION = "repcount/1"
EVENT_TYPE = "repetition"

#: The question stem of the paper's real-world prompts (appendix C.7), verbatim.
DEFAULT_QUESTION = "How many times does the person perform the repetitive exercise in this video?"

#: The three real-world prompt conditions of appendix C.7, verbatim. They are the counting suite's
#: prompts ``zero_shot``, ``cot`` and ``direct`` (``prompts.REAL_TEMPLATES``; ``direct`` on a sample
#: whose ``params["source"]`` is ``"repcount"`` renders the C.7 text). This older mapping keeps the
#: ``real_*`` names for code that imported it; run with the suite's names.
REAL_WORLD_TEMPLATES: dict[str, tuple[str | None, str]] = {f"real_{k}": v for k, v in REAL_TEMPLATES.items()}

_TYPE_COLUMNS = ("type", "action", "class")
_NAME_COLUMNS = ("name", "video", "video_name", "filename", "file")
_L_COLUMN = re.compile(r"^[Ll](\d+)$")
_INTEGER = re.compile(r"^[+-]?[0-9]+(?:\.0*)?$")
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


# --------------------------------------------------------------------------- the CSV


@dataclass(frozen=True)
class RepcountRow:
    """One validated annotation row: ``segments`` are (start, end) frame pairs, starts increasing."""

    line: int
    action: str
    name: str
    count: int
    segments: tuple[tuple[int, int], ...]

    @property
    def starts(self) -> tuple[int, ...]:
        return tuple(s for s, _ in self.segments)


@dataclass(frozen=True)
class RowProblem:
    """A row that failed validation: where it is and why (the DataError message)."""

    line: int
    name: str | None
    message: str


@dataclass(frozen=True)
class _Header:
    type_col: int
    name_col: int
    count_col: int
    l_cols: tuple[int, ...]  # column indices of L1, L2, ... in numeric order
    width: int


def _find(header: list[str], names: Sequence[str], what: str, source: str) -> int:
    low = [h.strip().lower() for h in header]
    for n in names:
        if n in low:
            return low.index(n)
    raise DataError(
        f"{source}:1: the header has no {what} column (looked for {', '.join(names)}); "
        f"a RepCount CSV starts with `type,name,count,L1,L2,...`"
    )


def _parse_header(header: list[str], source: str) -> _Header:
    if header and header[0].startswith("\ufeff"):
        header = [header[0][1:], *header[1:]]
    t = _find(header, _TYPE_COLUMNS, "action type", source)
    n = _find(header, _NAME_COLUMNS, "video name", source)
    c = _find(header, ("count",), "count", source)
    ls: dict[int, int] = {}
    for i, h in enumerate(header):
        m = _L_COLUMN.match(h.strip())
        if m:
            k = int(m.group(1))
            if k in ls:
                raise DataError(f"{source}:1: column L{k} appears twice in the header; rename or drop one")
            ls[k] = i
    if ls and sorted(ls) != list(range(1, len(ls) + 1)):
        missing = next(k for k in range(1, len(ls) + 1) if k not in ls)
        raise DataError(
            f"{source}:1: the header lists L columns but not L{missing}; L columns must run L1, L2, ... without gaps"
        )
    return _Header(t, n, c, tuple(ls[k] for k in sorted(ls)), len(header))


def _integer(cell: str, what: str, where: str) -> int:
    s = cell.strip()
    if not _INTEGER.match(s):
        raise DataError(f"{where}: {what} is {cell!r}, not an integer; write whole numbers (e.g. 12 or 12.0)")
    value = int(s.split(".")[0])
    if value < 0:
        raise DataError(f"{where}: {what} is negative ({value}); counts and frame indices start at 0")
    return value


def _parse_row(cells: list[str], line: int, h: _Header, source: str) -> RepcountRow:
    where = f"{source}:{line}"
    if len(cells) > h.width and any(c.strip() for c in cells[h.width :]):
        raise DataError(
            f"{where}: the row has {len(cells)} cells but the header only {h.width} columns; "
            "add L columns to the header or remove the extra cells"
        )
    cells = cells + [""] * (h.width - len(cells))
    action = cells[h.type_col].strip()
    name = cells[h.name_col].strip()
    if not action:
        raise DataError(f"{where}: the action type cell is empty; fill in the type (e.g. squat)")
    if not name:
        raise DataError(f"{where}: the video name cell is empty; fill in the file name (e.g. train951.mp4)")
    pure = Path(name)
    if pure.is_absolute() or ".." in pure.parts or "\\" in name or any(ord(c) < 32 for c in name):
        raise DataError(
            f"{where}: video name {name!r} must be a file name inside the video folder, "
            "not an absolute path, one that climbs out with '..', or one with control characters"
        )
    count = _integer(cells[h.count_col], "count", where)
    raw = [cells[i].strip() for i in h.l_cols]
    n_filled = len(raw)
    while n_filled and not raw[n_filled - 1]:
        n_filled -= 1
    if "" in raw[:n_filled]:
        gap = raw.index("")
        raise DataError(
            f"{where}: L{gap + 1} is empty but L{n_filled} is not; "
            "frame pairs must be contiguous, with empty cells only after the last pair"
        )
    values = [_integer(v, f"L{i + 1}", where) for i, v in enumerate(raw[:n_filled])]
    if len(values) % 2:
        raise DataError(
            f"{where}: {len(values)} L values is an odd number; each repetition needs a start "
            f"and an end frame (L{len(values)} = {values[-1]} has no partner)"
        )
    segments = tuple((values[i], values[i + 1]) for i in range(0, len(values), 2))
    if count != len(segments):
        raise DataError(
            f"{where}: count is {count} but {len(segments)} start/end pairs are annotated; "
            "fix the count or the L columns so that they agree"
        )
    for k, (s, e) in enumerate(segments, 1):
        if e < s:
            raise DataError(
                f"{where}: repetition {k} ends at frame {e} before it starts at frame {s}; "
                "L columns alternate start, end"
            )
        if k > 1 and s <= segments[k - 2][0]:
            raise DataError(
                f"{where}: repetition {k} starts at frame {s}, not after repetition {k - 1} "
                f"(frame {segments[k - 2][0]}); starts must strictly increase"
            )
    return RepcountRow(line=line, action=action, name=name, count=count, segments=segments)


def _rows(text: str, source: str) -> Iterable[tuple[int, list[str]]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        for cells in reader:
            yield reader.line_num, cells
    except csv.Error as e:
        raise DataError(f"{source}:{reader.line_num}: not valid CSV ({e}); fix the quoting on that line") from e


def _iter_parsed(text: str, source: str) -> Iterable[RepcountRow | RowProblem]:
    rows = iter(_rows(text, source))
    header: _Header | None = None
    for line, cells in rows:
        if not any(c.strip() for c in cells):
            continue
        if header is None:
            header = _parse_header(cells, source)
            continue
        try:
            yield _parse_row(cells, line, header, source)
        except DataError as e:
            name = cells[header.name_col].strip() if len(cells) > header.name_col else None
            yield RowProblem(line=line, name=name or None, message=str(e))
    if header is None:
        raise DataError(f"{source}: the CSV is empty; expected a header `type,name,count,L1,L2,...` and rows")


def parse_repcount_text(text: str, source: str = "<csv>") -> list[RepcountRow]:
    """Parse and validate RepCount CSV text; the first bad row raises a DataError naming its line."""
    out: list[RepcountRow] = []
    for item in _iter_parsed(text, source):
        if isinstance(item, RowProblem):
            raise DataError(item.message)
        out.append(item)
    _check_unique(out, source)
    return out


def _check_unique(rows: Sequence[RepcountRow], source: str) -> None:
    seen: dict[str, int] = {}
    for r in rows:
        if r.name in seen:
            raise DataError(
                f"{source}:{r.line}: video {r.name!r} is already annotated on line {seen[r.name]}; "
                "keep one row per video"
            )
        seen[r.name] = r.line


def _read_text(csv_path: str | Path) -> str:
    p = Path(csv_path)
    if not p.is_file():
        raise DataError(f"annotation CSV not found: {p}; pass the RepCount CSV (e.g. annotation/test.csv)")
    try:
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start}); re-save the CSV as UTF-8") from e


def parse_repcount_csv(csv_path: str | Path) -> list[RepcountRow]:
    """Parse and validate a RepCount CSV file (annotations only; videos are not opened)."""
    return parse_repcount_text(_read_text(csv_path), str(csv_path))


# --------------------------------------------------------------------------- samples


def sample_id(name: str, split_name: str | None = None) -> str:
    """``repcount[-split]-<file stem>``: stable across machines, readable, safe in file names."""
    stem = _ID_UNSAFE.sub("_", str(Path(name).with_suffix("")))
    return "-".join([SOURCE, *([split_name] if split_name else []), stem])


def mean_rate_hz(starts: Sequence[int], fps: float) -> float | None:
    """Repetitions per second from the annotated starts: (n - 1) / (last start - first start)."""
    if len(starts) < 2 or starts[-1] <= starts[0]:
        return None
    return (len(starts) - 1) * fps / (starts[-1] - starts[0])


def _check_frames(row: RepcountRow, info: VideoInfo, source: str) -> None:
    last = max((e for _, e in row.segments), default=-1)
    if last >= info.n_frames:
        k = next(i for i, (_, e) in enumerate(row.segments, 1) if e == last)
        raise DataError(
            f"{source}:{row.line}: repetition {k} ends at frame {last} but {row.name} has "
            f"{info.n_frames} frames (0..{info.n_frames - 1}); fix the annotation or the video file"
        )


def _video_path_field(video: Path, relative_to: str | Path | None) -> str:
    if relative_to is None:
        return str(video.resolve())
    return Path(os.path.relpath(video.resolve(), Path(relative_to).resolve())).as_posix()


def _sample(
    row: RepcountRow,
    video: Path,
    info: VideoInfo,
    digest: str,
    question: str,
    split_name: str | None,
    relative_to: str | Path | None,
) -> Sample:
    clock = info.timeline  # an annotated frame happens when the player shows it (VFR, late starts)
    trace = counting_trace(
        counting_event(round(clock.time_of(s), 6), s, EVENT_TYPE, i) for i, s in enumerate(row.starts, 1)
    )
    params: dict[str, Any] = {
        "domain": f"real:{row.action}",
        "n_events": row.count,
        "frequency_hz": None,
        "source": SOURCE,
        "rate_hz": mean_rate_hz(row.starts, info.fps),
        "action": row.action,
        "video_name": row.name,
        "segments": [list(seg) for seg in row.segments],
    }
    if split_name:
        params["split"] = split_name
    ref = ref_from(info, _video_path_field(video, relative_to), digest)
    return Sample(
        sample_id=sample_id(row.name, split_name),
        suite=SUITE,
        params=params,
        question=question,
        answer=row.count,
        trace=trace,
        video=ref,
    )


@dataclass(frozen=True)
class RepcountScan:
    """Samples built from the valid rows and the rows that were skipped, with why."""

    samples: list[Sample]
    skipped: list[RowProblem] = field(default_factory=list)


def scan_repcount(
    csv_path: str | Path,
    video_dir: str | Path,
    *,
    question: str = DEFAULT_QUESTION,
    split_name: str | None = None,
    relative_to: str | Path | None = None,
    skip_invalid: bool = False,
) -> RepcountScan:
    """Build Samples from every row; with ``skip_invalid`` bad rows are collected instead of raised.

    Problems with the CSV as a whole (no header, bad quoting, unreadable file) always raise.
    """
    source = str(csv_path)
    vdir = Path(video_dir)
    if not vdir.is_dir():
        raise DataError(f"video folder not found: {vdir}; pass the folder holding the CSV's video files")
    if split_name is not None and not re.fullmatch(r"[A-Za-z0-9_.]+", split_name):
        raise DataError(f"split name {split_name!r} may hold only letters, digits, '_' and '.' (e.g. test)")
    samples: list[Sample] = []
    skipped: list[RowProblem] = []
    seen: dict[str, int] = {}
    ids: dict[str, int] = {}
    for item in _iter_parsed(_read_text(csv_path), source):
        try:
            if isinstance(item, RowProblem):
                raise DataError(item.message)
            if item.name in seen:
                raise DataError(
                    f"{source}:{item.line}: video {item.name!r} is already annotated on line "
                    f"{seen[item.name]}; keep one row per video"
                )
            # a name inside the folder (no symlink out; not '.'), checked before anything is derived from it
            video = confined(vdir, item.name, what="video name", source=f"{source}:{item.line}")
            sid = sample_id(item.name, split_name)
            if sid in ids:
                raise DataError(
                    f"{source}:{item.line}: video {item.name!r} gets sample id {sid!r}, the same as "
                    f"line {ids[sid]}; rename one of the files"
                )
            if not video.is_file():
                raise DataError(
                    f"{source}:{item.line}: video {item.name!r} not found in {vdir}; "
                    "download it there or remove the row"
                )
            info = probe(video)
            _check_frames(item, info, source)
            samples.append(_sample(item, video, info, sha256_file(video), question, split_name, relative_to))
            seen[item.name] = item.line
            ids[sid] = item.line
        except DataError as e:
            if not skip_invalid:
                raise
            msg = str(e)
            if isinstance(item, RepcountRow) and not msg.startswith(f"{source}:{item.line}"):
                msg = f"{source}:{item.line}: {msg}"  # e.g. probe() failing on a corrupt file
            skipped.append(RowProblem(line=item.line, name=item.name, message=msg))
    return RepcountScan(samples=samples, skipped=skipped)


def load_repcount(
    csv_path: str | Path,
    video_dir: str | Path,
    *,
    question: str = DEFAULT_QUESTION,
    split_name: str | None = None,
    relative_to: str | Path | None = None,
) -> list[Sample]:
    """Counting Samples from a RepCount-style CSV and its videos; any bad row raises a DataError.

    ``video.path`` is absolute unless ``relative_to`` names the dataset directory it should be
    relative to (what :func:`write_repcount_dataset` does).
    """
    return scan_repcount(csv_path, video_dir, question=question, split_name=split_name, relative_to=relative_to).samples


# --------------------------------------------------------------------------- datasets on disk


@dataclass(frozen=True)
class RepcountDataset:
    out: Path
    manifest: Path
    samples: list[Sample]
    skipped: list[RowProblem]


def write_repcount_dataset(
    csv_path: str | Path,
    video_dir: str | Path,
    out_dir: str | Path,
    *,
    question: str = DEFAULT_QUESTION,
    split_name: str | None = None,
    skip_invalid: bool = False,
) -> RepcountDataset:
    """Write ``manifest.jsonl`` + ``dataset.json`` into ``out_dir``; videos stay where they are.

    ``video.path`` is written relative to ``out_dir`` (``../videos/x.mp4``), so the dataset and the
    video folder can be moved together; the recorded sha256 detects a wrong or changed file.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    scan = scan_repcount(
        csv_path, video_dir, question=question, split_name=split_name, relative_to=out, skip_invalid=skip_invalid
    )
    if not scan.samples:
        raise DataError(
            f"{csv_path}: no usable row ({len(scan.skipped)} skipped); nothing to write. "
            + (f"First problem: {scan.skipped[0].message}" if scan.skipped else "")
        )
    manifest = write_manifest(out, scan.samples)
    counts = [int(s.answer) for s in scan.samples]
    write_dataset_info(
        out,
        {
            "suite": SUITE,
            "source": SOURCE,
            "real_video": True,
            "loader_version": LOADER_VERSION,
            "vidaudit_version": __version__,
            "libraries": library_versions(),
            "annotations": {"csv": str(Path(csv_path).resolve()), "sha256": sha256_file(csv_path)},
            "video_dir": str(Path(video_dir).resolve()),
            "video_paths": "relative to this directory",
            "external_videos": True,  # the videos stay in the folder the user named: runs may open them there
            "split": split_name,
            "question": question,
            "n_samples": len(scan.samples),
            "domains": sorted({str(s.params["domain"]) for s in scan.samples}),
            "count_range": [min(counts), max(counts)],
            "skipped": [{"line": p.line, "name": p.name, "reason": p.message} for p in scan.skipped],
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )
    return RepcountDataset(out=out, manifest=manifest, samples=scan.samples, skipped=scan.skipped)
