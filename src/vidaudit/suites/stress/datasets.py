"""Where a probe's ``--source DIR`` clips come from: a plain folder, or one of the paper's datasets in its
published annotation format (``--set dataset=NAME``). Every loader returns ``sources.Clip``s (file, name,
label, labelled actions, the window to keep); the probe imports them (``sources.import_clips``).

Annotation files list every video of a release; a user usually holds a subset, so an entry whose video
file is absent is skipped and counted (none present is a DataError naming where the videos were looked for).
Every id read from an annotation file joins its video folder through ``core.confine.confined``: an absolute
or ``..`` id is skipped with its reason, nothing outside the folder is read. What a loader leaves out or
changes goes to its ``SourceLog`` (printed, and kept in ``dataset.json``). Formats, and where each is
documented: docs/stress.md, "Sources: a folder of clips and the paper's datasets".
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from vidaudit.sdk import ConfigError, DataError, confined, name_problem, probe, read_json_file
from vidaudit.suites.stress.sources import (
    VIDEO_EXTS,
    Clip,
    SourceLog,
    Step,
    folder_clips,
    reason_of,
    safe_name,
)

#: Ego4D windows (E.6: clips of 5-15 s): at most this long, at least this long, with at least this many actions
EGO4D_MAX_S, EGO4D_MIN_S, EGO4D_MIN_STEPS = 15.0, 5.0, 3


def find_video(root: Path, dirs: Iterable[str], stem: str, what: str = "video id", source: str = "") -> Path | None:
    """``root/DIR/stem.EXT`` for the first of ``dirs`` and ``VIDEO_EXTS`` that is a file; None when there is none.
    ``stem`` is read from an annotation file: it joins each folder through ``confined`` (a DataError naming
    ``source`` for an absolute, ``..`` or otherwise hostile id, or one whose file is a symlink out)."""
    problem = name_problem(stem)
    if problem is not None or "/" in stem or "\\" in stem:
        raise DataError(
            f"{source}: {what} {stem!r} {problem or 'names a subfolder'}; an id names one file in the videos folder"
        )
    for d in dirs:
        folder = root / d
        if not folder.is_dir():
            continue
        for ext in VIDEO_EXTS:
            if (folder / f"{stem}{ext}").is_file() or (folder / f"{stem}{ext}").is_symlink():
                return confined(folder, f"{stem}{ext}", what=what, source=source)
    return None


def _video(log: SourceLog, root: Path, dirs: Iterable[str], stem: str, source: str) -> Path | None:
    """``find_video``, with a hostile id skipped (named in ``log``) and an absent video counted."""
    try:
        video = find_video(root, dirs, stem, source=source)
    except DataError as e:
        log.skip(stem, reason_of(e, root))
        return None
    if video is None:
        log.count("entries_without_video")
    return video


def _listed_again(log: SourceLog, seen: dict[str, str], vid: str, where: str) -> bool:
    """True (skipped, named in ``log``) for a video an annotation file already listed: two samples of one clip
    would share a name, and the dataset would fail only after every video was made."""
    if vid in seen:
        log.skip(vid, f"{where}: listed a second time (first: {seen[vid]}); the first listing is kept")
        return True
    seen[vid] = where
    return False


def _absent(log: SourceLog, dataset: str, root: Path, dirs: Iterable[str]) -> None:
    n = log.counts.get("entries_without_video", 0)
    if n:
        log.note(
            f"{dataset}: {n} annotated entr{'y has' if n == 1 else 'ies have'} no video in "
            f"{' or '.join(str(root / d) for d in dirs)} (skipped; a release lists more videos than a "
            "user usually holds)"
        )


#: a release's annotation file may be large (Ego4D's narration.json); read within this cap, regular files only
MAX_ANNOTATION_BYTES = 2 * 1024**3


def _load_json(path: Path) -> Any:
    return read_json_file(path, what="annotation file", max_bytes=MAX_ANNOTATION_BYTES)


def _need(files: list[Path], root: Path, what: str) -> None:
    if not files:
        raise DataError(f"--source {root} holds no {what}")


def _each_json(files: list[Path], root: Path, what: str, kind: type, expect: str) -> Iterable[tuple[Path, Any]]:
    """(path, parsed JSON) of each annotation file, each checked to be a ``kind`` (``expect`` says what)."""
    _need(files, root, what)
    for path in files:
        data = _load_json(path)
        if not isinstance(data, kind):
            raise DataError(f"{path}: expected {expect}")
        yield path, data


def _none_found(clips: list[Clip], root: Path, dirs: Iterable[str], log: SourceLog) -> list[Clip]:
    if not clips:
        why = f" ({log.reasons()})" if log.skipped else ""
        raise DataError(
            f"--source {root}: no annotated video was found in {', '.join(str(root / d) for d in dirs)}"
            f"{why}; put the release's videos there (named by their id)"
        )
    return clips


def chain(steps: Iterable[Step]) -> tuple[Step, ...]:
    """The non-overlapping actions, earliest start first (an action overlapping the one kept before is dropped):
    Charades' actions overlap, a temporal gap needs a sequence."""
    out: list[Step] = []
    for s in sorted(steps, key=lambda s: (s.start_s, s.end_s)):
        if not out or s.start_s >= out[-1].end_s:
            out.append(s)
    return tuple(out)


# --------------------------------------------------------------------------- Charades


CHARADES_COLUMNS = (
    "id",
    "subject",
    "scene",
    "quality",
    "relevance",
    "verified",
    "script",
    "objects",
    "descriptions",
    "actions",
    "length",
)
CHARADES_DIRS = ("Charades_v1_480", "Charades_v1", "videos", ".")


def charades_classes(path: Path) -> dict[str, str]:
    """``Charades_v1_classes.txt``: lines ``c000 Holding some clothes`` (a BOM, as a Windows editor saves it,
    is read past; a code listed twice with another name is refused: which name an action has would be a guess)."""
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    for i, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        if line.strip():
            code, _, name = line.strip().partition(" ")
            if not code.startswith("c") or not name:
                raise DataError(f"{path} line {i}: expected 'cNNN Class name', got {line!r}")
            if out.get(code, name.strip()) != name.strip():
                raise DataError(
                    f"{path} line {i}: class {code} is {out[code]!r} on line {first[code]} and {name.strip()!r} "
                    "here; keep the release's file as it is"
                )
            out[code] = name.strip()
            first.setdefault(code, i)
    return out


CHARADES_CLASSES = "Charades_v1_classes.txt"


def charades_actions(text: str, classes: dict[str, str], where: str) -> list[tuple[str, float, float]]:
    """The ``actions`` field as annotated: ``c092 11.90 21.20;c147 0.00 12.60`` -> (class name, start s, end s)
    each, in the field's order (an inverted or empty one included: the loader reports it)."""
    out = []
    for part in filter(None, (x.strip() for x in (text or "").split(";"))):
        bits = part.split()
        try:  # exactly three: 'c092 11.90 21.20 c147 0.00 12.60' (a lost ';') would drop the second action
            code, a, b = bits[0], float(bits[1]), float(bits[2])
            if len(bits) != 3:
                raise IndexError
        except (IndexError, ValueError) as e:
            raise DataError(f"{where}: action {part!r} is not 'cNNN start end'") from e
        if not (math.isfinite(a) and math.isfinite(b)):
            raise DataError(f"{where}: action {part!r} has a time that is not a number")
        if code not in classes:
            raise DataError(f"{where}: action class {code} is not in {CHARADES_CLASSES}")
        out.append((classes[code], a, b))
    return out


def _float_or_none(text: str | None) -> float | None:
    try:
        v = float((text or "").strip())
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _listed(items: list[str], limit: int = 10) -> str:
    return ", ".join(items[:limit]) + (f" (and {len(items) - limit} more)" if len(items) > limit else "")


def charades(root: Path, log: SourceLog | None = None) -> list[Clip]:
    """Charades v1 (Sigurdsson et al., 2016): ``Charades_v1_{train,test}.csv`` and ``Charades_v1_classes.txt``
    beside ``Charades_v1_480/ID.mp4``. The description is the ``descriptions`` field (else the ``script``);
    the actions, as a non-overlapping chain (``chain``), are the clip's labelled steps.

    The release's quirks are kept, counted and said (``log``): most rows have an action that ends after the
    row's ``length``, so each action is held to the video's real duration (``probe``): one that ends later is
    clamped to it, one that starts after it is dropped and named; an action that ends before it starts (or
    lasts nothing) is dropped and named; a row without a video is counted; a video that does not decode is
    skipped with its reason. Without ``Charades_v1_classes.txt`` the labels would be class codes ("c008, then
    c109" as an answer option): a DataError says where to put it."""
    log = log if log is not None else SourceLog()
    csvs = sorted(root.glob("Charades_v1_*.csv"))
    _need(csvs, root, "Charades_v1_train.csv / Charades_v1_test.csv")
    cls_path = root / CHARADES_CLASSES
    if not cls_path.is_file():
        raise DataError(
            f"--source {root} has no {CHARADES_CLASSES}; without it every action label would be a "
            "class code ('c008, then c109' in an answer option). Copy it from the Charades annotations "
            f"(Charades.zip holds it beside Charades_v1_train.csv) into {root}"
        )
    classes = charades_classes(cls_path)
    clips: list[Clip] = []
    seen: dict[str, str] = {}
    tally = _CharadesTally()
    for path in csvs:
        for where, r in _charades_rows(path):
            tally.rows += 1
            clip = _charades_clip(root, log, tally, seen, classes, where, r)
            if clip is not None:
                clips.append(clip)
    tally.report(log, root, csvs, len(clips))
    return _none_found(clips, root, CHARADES_DIRS, log)


def _charades_rows(path: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    """(where, row) for each row of one Charades CSV: ``PATH line N``, the line the row starts on (a quoted
    field may span lines); a file without the ``id`` or ``actions`` column is refused."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing = [c for c in ("id", "actions") if c not in (reader.fieldnames or ())]
        if missing:
            raise DataError(
                f"{path}: no column {', '.join(missing)} (Charades' columns: {', '.join(CHARADES_COLUMNS)})"
            )
        line = reader.line_num + 1
        for r in reader:
            where, line = f"{path} line {line}", reader.line_num + 1
            yield where, r


def _charades_clip(
    root: Path,
    log: SourceLog,
    tally: _CharadesTally,
    seen: dict[str, str],
    classes: dict[str, str],
    where: str,
    r: dict[str, Any],
) -> Clip | None:
    """One CSV row as a clip; None for a row left out (no id, no video, listed twice, a video that does not
    decode), counted in ``tally`` or named in ``log``."""
    vid = (r["id"] or "").strip()
    if not vid:
        tally.no_id += 1
        return None
    video = _video(log, root, CHARADES_DIRS, vid, where)
    if video is None:
        return None
    if _listed_again(log, seen, vid, where):
        return None
    actions = charades_actions(r["actions"], classes, where)
    try:
        duration = probe(video).duration_s
    except DataError as e:
        log.skip(video.name, reason_of(e, video))
        return None
    length = _float_or_none(r.get("length"))
    steps, n_clamped = tally.steps(vid, actions, duration, length)
    desc = (r.get("descriptions") or r.get("script") or "").strip()
    return Clip(
        video,
        safe_name(vid),
        desc,
        chain(steps),
        {
            "dataset": "charades",
            "dataset_id": vid,
            "scene": r.get("scene") or "",
            "length_s": length,
            "video_s": duration,
            "actions_clamped": n_clamped,
            "actions": [[s.label, s.start_s, s.end_s] for s in steps],
        },
    )


class _CharadesTally:
    """What the Charades loader counts and names as it reads the release's quirky rows, said once at the end
    (``report``) so the user sees how much of the release was clamped or dropped and why."""

    def __init__(self) -> None:
        self.rows = self.no_id = self.clamped_rows = self.clamped = self.past_length = 0
        self.after_video: list[str] = []
        self.inverted: list[str] = []

    def steps(
        self, vid: str, actions: list[tuple[str, float, float]], duration: float, length: float | None
    ) -> tuple[list[Step], int]:
        """(the row's actions held to the video's real duration, how many were clamped): an inverted or empty
        action and one that starts after the video are dropped and named."""
        steps, n_clamped = [], 0
        for label, a, b in actions:
            name = f"{vid} {label!r} {a:.2f}-{b:.2f} s"
            if b <= a:
                self.inverted.append(name)
                continue
            self.past_length += length is not None and b > length + 1e-6
            if max(a, 0.0) >= duration - 1e-6:
                self.after_video.append(f"{name} (the video lasts {duration:g} s)")
                continue
            if b > duration + 1e-6 or a < 0:
                n_clamped += 1
            steps.append(Step(max(a, 0.0), min(b, duration), label))
        self.clamped += n_clamped
        self.clamped_rows += n_clamped > 0
        return steps, n_clamped

    def report(self, log: SourceLog, root: Path, csvs: list[Path], n_clips: int) -> None:
        """The counts and notes in ``log`` (with the videos absent, ``_absent``)."""
        log.count("rows", self.rows)
        for key, n in (
            ("rows_without_id", self.no_id),
            ("actions_past_length", self.past_length),
            ("actions_clamped", self.clamped),
            ("actions_after_video", len(self.after_video)),
            ("actions_inverted", len(self.inverted)),
        ):
            if n:
                log.count(key, n)
        log.note(f"charades: {self.rows} rows in {', '.join(p.name for p in csvs)}; {n_clips} with a video used")
        if self.no_id:
            log.note(f"charades: {self.no_id} rows have no id (skipped)")
        _absent(log, "charades", root, CHARADES_DIRS)
        if self.clamped or self.past_length:
            log.note(
                f"charades: {self.past_length} actions end after their row's length; {self.clamped} actions in "
                f"{self.clamped_rows} videos end after the video's real duration (probed) and are clamped to its "
                "end"
            )
        if self.after_video:
            log.note(
                f"charades: {len(self.after_video)} actions start after their video ends (dropped): "
                f"{_listed(self.after_video)}"
            )
        if self.inverted:
            log.note(
                f"charades: {len(self.inverted)} actions end before they start, or last nothing (dropped): "
                f"{_listed(self.inverted)}"
            )


# --------------------------------------------------------------------------- Something-Something v2


SSV2_DIRS = ("20bn-something-something-v2", "videos", ".")


def ssv2(root: Path, log: SourceLog | None = None) -> list[Clip]:
    """Something-Something v2: ``something-something-v2-{train,validation}.json``, each a list of
    ``{"id", "label", "template", "placeholders"}``, beside ``20bn-something-something-v2/ID.webm``. The
    label is the description (no timed actions: reversal and anomalies only)."""
    log = log if log is not None else SourceLog()
    files = sorted(
        p for p in root.glob("something-something-v2-*.json") if p.stem.rsplit("-", 1)[-1] in ("train", "validation")
    )
    clips = []
    seen: dict[str, str] = {}
    for path, data in _each_json(
        files,
        root,
        "something-something-v2-train.json / -validation.json",
        list,
        "a list of {id, label, template, placeholders} objects",
    ):
        for i, e in enumerate(data):
            if not isinstance(e, dict) or "id" not in e or "label" not in e:
                raise DataError(f"{path} entry {i}: needs 'id' and 'label'")
            video = _video(log, root, SSV2_DIRS, str(e["id"]), f"{path} entry {i}")
            if video is not None and not _listed_again(log, seen, str(e["id"]), f"{path.name} entry {i}"):
                clips.append(
                    Clip(
                        video,
                        safe_name(f"ssv2-{e['id']}"),
                        str(e["label"]),
                        (),
                        {
                            "dataset": "ssv2",
                            "dataset_id": str(e["id"]),
                            "template": e.get("template", ""),
                            "placeholders": list(e.get("placeholders") or []),
                        },
                    )
                )
    _absent(log, "ssv2", root, SSV2_DIRS)
    return _none_found(clips, root, SSV2_DIRS, log)


# --------------------------------------------------------------------------- RTime


RTIME_DIRS = ("videos", ".")


def _rtime_types(e: dict[str, Any]) -> str | None:
    """What in an RTime entry is not of its release's JSON type (booleans, lists of strings), or None."""
    for key in ("reverse", "temporal"):
        if key in e and not isinstance(e[key], bool):
            return f"{key!r} is {e[key]!r}; it must be true or false"
    for key in ("forward_captions", "reverse_captions"):
        v = e.get(key)
        if v is not None and not (isinstance(v, list) and all(isinstance(c, str) for c in v)):
            return f"{key!r} must be a list of strings"
    return None


def rtime(root: Path, log: SourceLog | None = None) -> list[Clip]:
    """RTime (Reversed in Time; Liu et al., 2025): ``test.json`` / ``valid.json`` / ``train.json``, each
    ``{VIDEO_ID: {"temporal", "reverse", "forward_captions", "reverse_captions", ...}}``, beside
    ``videos/VIDEO_ID.mp4``. Only entries with ``reverse`` true (their reversal is meaningful, the paper's
    forward-reverse pairs) are kept; the first forward caption is the description."""
    log = log if log is not None else SourceLog()
    files = [root / f"{n}.json" for n in ("train", "valid", "test") if (root / f"{n}.json").is_file()]
    clips = []
    seen: dict[str, str] = {}
    for path, data in _each_json(files, root, "RTime's train.json / valid.json / test.json", dict, "{VIDEO_ID: {...}}"):
        for vid, e in data.items():
            if not isinstance(e, dict) or "reverse" not in e:
                raise DataError(f"{path} video {vid}: needs 'reverse' and 'forward_captions'")
            if problem := _rtime_types(e):  # "false" as a string is truthy; a string caption is not a list
                raise DataError(f"{path} video {vid}: {problem}, as in RTime's release")
            if not e["reverse"]:
                log.count("entries_not_reversible")
                continue
            video = _video(log, root, RTIME_DIRS, str(vid), f"{path} video {vid}")
            if video is None or _listed_again(log, seen, str(vid), f"{path.name} video {vid}"):
                continue
            fwd, rev = list(e.get("forward_captions") or [""]), list(e.get("reverse_captions") or [""])
            clips.append(
                Clip(
                    video,
                    safe_name(f"rtime-{vid}"),
                    fwd[0],
                    (),
                    {
                        "dataset": "rtime",
                        "dataset_id": str(vid),
                        "reverse_caption": rev[0],
                        "temporal": bool(e.get("temporal")),
                    },
                )
            )
    _absent(log, "rtime", root, RTIME_DIRS)
    return _none_found(clips, root, RTIME_DIRS, log)


# --------------------------------------------------------------------------- Ego4D narrations


EGO4D_DIRS = ("v1/full_scale", "v2/full_scale", "full_scale", "videos", ".")


def narration_text(text: str) -> str:
    """``#C C picks a bag`` -> ``The camera wearer picks a bag``; ``#O`` (another person) -> ``A person``."""
    t = text.replace("#C C ", "The camera wearer ").replace("#C ", "").replace("#O ", "A person ")
    return t.replace("#", "").strip()


def ego4d_windows(
    narrations: list[tuple[float, str]], duration_s: float | None = None
) -> list[tuple[float, float, list[Step]]]:
    """Windows of consecutive narrations (each the action from its timestamp to the next one's), at most
    ``EGO4D_MAX_S`` long, at least ``EGO4D_MIN_S`` and ``EGO4D_MIN_STEPS`` actions; greedy from the first
    narration, never overlapping. Step times are relative to the window's start."""
    pts = sorted(narrations)
    out, i = [], 0
    while i < len(pts) - 1:
        start = pts[i][0]
        j = i
        while j + 1 < len(pts) and pts[j + 1][0] - start <= EGO4D_MAX_S:
            j += 1
        steps = [
            x
            for x in (
                Step(round(pts[k][0] - start, 6), round(pts[k + 1][0] - start, 6), pts[k][1]) for k in range(i, j)
            )
            if x.end_s > x.start_s
        ]
        end = pts[j][0]
        if len(steps) >= EGO4D_MIN_STEPS and end - start >= EGO4D_MIN_S:
            out.append((start, end, steps))
            i = j
        else:
            i += 1
    return out


def ego4d(root: Path, log: SourceLog | None = None) -> list[Clip]:
    """Ego4D narrations (``narration.json``: ``{VIDEO_UID: {"narration_pass_1": {"narrations": [{"timestamp_sec",
    "narration_text", ...}]}}}``) beside ``v1/full_scale/VIDEO_UID.mp4``: each video cut into windows of 5-15 s
    with at least 3 narrated actions (``ego4d_windows``; E.6's clip lengths), pass 1 only, ``#unsure``
    narrations dropped. A window that ends after its video (probed) is skipped with its reason."""
    log = log if log is not None else SourceLog()
    path = root / "narration.json"
    if not path.is_file():
        raise DataError(f"--source {root} holds no Ego4D narration.json")
    data = _load_json(path)
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected {{VIDEO_UID: {{narration_pass_1: ...}}}}")
    clips = []
    # a window is named by its video's uid cut to 8 characters, or whole where two uids of the file share those
    # (about one chance in a hundred over Ego4D v1's ~9,600 videos): two videos' windows must never share a name
    short = Counter(str(uid)[:8] for uid in data)
    for uid, rec in data.items():
        video = _video(log, root, EGO4D_DIRS, str(uid), f"{path} video {uid}")
        if video is None:
            continue
        narr = ((rec or {}).get("narration_pass_1") or {}).get("narrations")
        if not isinstance(narr, list):
            raise DataError(f"{path} video {uid}: no narration_pass_1.narrations list")
        pts = []
        for k, n in enumerate(narr):
            try:
                t, text = float(n["timestamp_sec"]), str(n["narration_text"])
            except (KeyError, TypeError, ValueError) as e:
                raise DataError(f"{path} video {uid} narration {k}: needs timestamp_sec and narration_text") from e
            if not (math.isfinite(t) and t >= 0):  # a NaN sorts anywhere and a window would start before 0
                raise DataError(f"{path} video {uid} narration {k}: timestamp_sec {t} is not a time in the video")
            if "#unsure" not in text.lower():
                pts.append((t, narration_text(text)))
        windows = ego4d_windows(pts)
        try:
            duration = probe(video).duration_s if windows else 0.0
        except DataError as e:
            log.skip(video.name, reason_of(e, video))
            continue
        for w, (a, b, steps) in enumerate(windows):
            if b > duration + 1e-6:
                log.skip(f"{video.name} [{a:g}-{b:g} s]", f"the narrated window ends after the video's {duration:g} s")
                continue
            clips.append(
                Clip(
                    video,
                    safe_name(f"ego4d-{uid[:8] if short[uid[:8]] == 1 else uid}-{w}"),
                    "",
                    tuple(steps),
                    {"dataset": "ego4d", "dataset_id": uid, "window_s": [a, b]},
                    start_s=a,
                    end_s=b,
                )
            )
    _absent(log, "ego4d", root, EGO4D_DIRS)
    return _none_found(clips, root, EGO4D_DIRS, log)


#: dataset name -> loader of ``DIR``
LOADERS: dict[str, Callable[[Path, SourceLog], list[Clip]]] = {
    "folder": folder_clips,
    "charades": charades,
    "ssv2": ssv2,
    "rtime": rtime,
    "ego4d": ego4d,
}


def clips_from_source(folder: Path, dataset: str | None = None, log: SourceLog | None = None) -> list[Clip]:
    """The clips of ``--source DIR``: a folder of clips by default, else the named dataset's layout; what the
    loader leaves out or changes goes to ``log``."""
    name = (dataset or "folder").strip().lower()
    if name not in LOADERS:
        raise ConfigError(f"unknown dataset {dataset!r} for --set dataset=; choose from {', '.join(LOADERS)}")
    if not Path(folder).is_dir():
        raise ConfigError(f"--source {folder} is not a folder; pass the folder of clips (or the dataset's root)")
    return LOADERS[name](Path(folder), log if log is not None else SourceLog())
