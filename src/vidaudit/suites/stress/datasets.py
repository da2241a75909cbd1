"""Where a probe's ``--source DIR`` clips come from: a plain folder, or one of the paper's datasets in its
published annotation format (``--set dataset=NAME``). Every loader returns ``sources.Clip``s (file, name,
label, labelled actions, the window to keep); the probe imports them (``sources.import_clips``).

Annotation files list every video of a release; a user usually holds a subset, so an entry whose video
file is absent is skipped (none present is a DataError naming where the videos were looked for). Formats,
and where each is documented: docs/stress.md, "Sources: a folder of clips and the paper's datasets".
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.suites.stress.sources import Clip, Step, folder_clips, safe_name

VIDEO_EXTS = (".mp4", ".webm", ".mkv", ".avi", ".mov")
#: Ego4D windows (E.6: clips of 5-15 s): at most this long, at least this long, with at least this many actions
EGO4D_MAX_S, EGO4D_MIN_S, EGO4D_MIN_STEPS = 15.0, 5.0, 3


def _find_video(root: Path, dirs: Iterable[str], stem: str) -> Path | None:
    for d in dirs:
        for ext in VIDEO_EXTS:
            p = root / d / f"{stem}{ext}"
            if p.is_file():
                return p
    return None


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DataError(f"{path} is not readable JSON ({e})") from e


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


def _none_found(clips: list[Clip], root: Path, dirs: Iterable[str]) -> list[Clip]:
    if not clips:
        raise DataError(f"--source {root}: no annotated video was found in {', '.join(str(root / d) for d in dirs)}")
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


CHARADES_COLUMNS = ("id", "subject", "scene", "quality", "relevance", "verified", "script", "objects",
                    "descriptions", "actions", "length")
CHARADES_DIRS = ("Charades_v1_480", "Charades_v1", "videos", ".")


def charades_classes(path: Path) -> dict[str, str]:
    """``Charades_v1_classes.txt``: lines ``c000 Holding some clothes``."""
    out = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            code, _, name = line.strip().partition(" ")
            if not code.startswith("c") or not name:
                raise DataError(f"{path} line {i}: expected 'cNNN Class name', got {line!r}")
            out[code] = name.strip()
    return out


def charades_actions(text: str, classes: dict[str, str], where: str) -> list[Step]:
    """The ``actions`` field: ``c092 11.90 21.20;c147 0.00 12.60`` (class, start s, end s; ';' between)."""
    steps = []
    for part in filter(None, (x.strip() for x in (text or "").split(";"))):
        bits = part.split()
        try:
            code, a, b = bits[0], float(bits[1]), float(bits[2])
        except (IndexError, ValueError) as e:
            raise DataError(f"{where}: action {part!r} is not 'cNNN start end'") from e
        if code not in classes and classes:
            raise DataError(f"{where}: action class {code} is not in Charades_v1_classes.txt")
        if b > a >= 0:
            steps.append(Step(a, b, classes.get(code, code)))
    return steps


def charades(root: Path) -> list[Clip]:
    """Charades v1 (Sigurdsson et al., 2016): ``Charades_v1_{train,test}.csv`` and ``Charades_v1_classes.txt``
    beside ``Charades_v1_480/ID.mp4``. The description is the ``descriptions`` field (else the ``script``);
    the actions, as a non-overlapping chain (``chain``), are the clip's labelled steps."""
    csvs = sorted(root.glob("Charades_v1_*.csv"))
    _need(csvs, root, "Charades_v1_train.csv / Charades_v1_test.csv")
    cls_path = root / "Charades_v1_classes.txt"
    classes = charades_classes(cls_path) if cls_path.is_file() else {}
    clips = []
    for path in csvs:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            missing = [c for c in ("id", "actions") if c not in (reader.fieldnames or ())]
            if missing:
                raise DataError(f"{path}: no column {', '.join(missing)} (Charades' columns: "
                                f"{', '.join(CHARADES_COLUMNS)})")
            for line, r in enumerate(reader, start=2):
                vid = (r["id"] or "").strip()
                video = _find_video(root, CHARADES_DIRS, vid)
                if not vid or video is None:
                    continue
                steps = charades_actions(r["actions"], classes, f"{path} line {line}")
                desc = (r.get("descriptions") or r.get("script") or "").strip()
                clips.append(Clip(video, safe_name(vid), desc, chain(steps),
                                  {"dataset": "charades", "dataset_id": vid, "scene": r.get("scene") or "",
                                   "actions": [[s.label, s.start_s, s.end_s] for s in steps]}))
    return _none_found(clips, root, CHARADES_DIRS)


# --------------------------------------------------------------------------- Something-Something v2


SSV2_DIRS = ("20bn-something-something-v2", "videos", ".")


def ssv2(root: Path) -> list[Clip]:
    """Something-Something v2: ``something-something-v2-{train,validation}.json``, each a list of
    ``{"id", "label", "template", "placeholders"}``, beside ``20bn-something-something-v2/ID.webm``. The
    label is the description (no timed actions: reversal and anomalies only)."""
    files = sorted(p for p in root.glob("something-something-v2-*.json")
                   if p.stem.rsplit("-", 1)[-1] in ("train", "validation"))
    clips = []
    for path, data in _each_json(files, root, "something-something-v2-train.json / -validation.json", list,
                                 "a list of {id, label, template, placeholders} objects"):
        for i, e in enumerate(data):
            if not isinstance(e, dict) or "id" not in e or "label" not in e:
                raise DataError(f"{path} entry {i}: needs 'id' and 'label'")
            video = _find_video(root, SSV2_DIRS, str(e["id"]))
            if video is not None:
                clips.append(Clip(video, safe_name(f"ssv2-{e['id']}"), str(e["label"]), (),
                                  {"dataset": "ssv2", "dataset_id": str(e["id"]), "template": e.get("template", ""),
                                   "placeholders": list(e.get("placeholders") or [])}))
    return _none_found(clips, root, SSV2_DIRS)


# --------------------------------------------------------------------------- RTime


RTIME_DIRS = ("videos", ".")


def rtime(root: Path) -> list[Clip]:
    """RTime (Reversed in Time; Liu et al., 2025): ``test.json`` / ``valid.json`` / ``train.json``, each
    ``{VIDEO_ID: {"temporal", "reverse", "forward_captions", "reverse_captions", ...}}``, beside
    ``videos/VIDEO_ID.mp4``. Only entries with ``reverse`` true (their reversal is meaningful, the paper's
    forward-reverse pairs) are kept; the first forward caption is the description."""
    files = [root / f"{n}.json" for n in ("train", "valid", "test") if (root / f"{n}.json").is_file()]
    clips = []
    for path, data in _each_json(files, root, "RTime's train.json / valid.json / test.json", dict,
                                 "{VIDEO_ID: {...}}"):
        for vid, e in data.items():
            if not isinstance(e, dict) or "reverse" not in e:
                raise DataError(f"{path} video {vid}: needs 'reverse' and 'forward_captions'")
            video = _find_video(root, RTIME_DIRS, str(vid))
            if not e["reverse"] or video is None:
                continue
            fwd, rev = list(e.get("forward_captions") or [""]), list(e.get("reverse_captions") or [""])
            clips.append(Clip(video, safe_name(f"rtime-{vid}"), fwd[0], (),
                              {"dataset": "rtime", "dataset_id": str(vid), "reverse_caption": rev[0],
                               "temporal": bool(e.get("temporal"))}))
    return _none_found(clips, root, RTIME_DIRS)


# --------------------------------------------------------------------------- Ego4D narrations


EGO4D_DIRS = ("v1/full_scale", "v2/full_scale", "full_scale", "videos", ".")


def narration_text(text: str) -> str:
    """``#C C picks a bag`` -> ``The camera wearer picks a bag``; ``#O`` (another person) -> ``A person``."""
    t = text.replace("#C C ", "The camera wearer ").replace("#C ", "").replace("#O ", "A person ")
    return t.replace("#", "").strip()


def ego4d_windows(narrations: list[tuple[float, str]], duration_s: float | None = None) -> list[tuple[float, float, list[Step]]]:
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
        steps = [x for x in (Step(round(pts[k][0] - start, 6), round(pts[k + 1][0] - start, 6), pts[k][1])
                             for k in range(i, j)) if x.end_s > x.start_s]
        end = pts[j][0]
        if len(steps) >= EGO4D_MIN_STEPS and end - start >= EGO4D_MIN_S:
            out.append((start, end, steps))
            i = j
        else:
            i += 1
    return out


def ego4d(root: Path) -> list[Clip]:
    """Ego4D narrations (``narration.json``: ``{VIDEO_UID: {"narration_pass_1": {"narrations": [{"timestamp_sec",
    "narration_text", ...}]}}}``) beside ``v1/full_scale/VIDEO_UID.mp4``: each video cut into windows of 5-15 s
    with at least 3 narrated actions (``ego4d_windows``; E.6's clip lengths), pass 1 only, ``#unsure``
    narrations dropped."""
    path = root / "narration.json"
    if not path.is_file():
        raise DataError(f"--source {root} holds no Ego4D narration.json")
    data = _load_json(path)
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected {{VIDEO_UID: {{narration_pass_1: ...}}}}")
    clips = []
    for uid, rec in data.items():
        video = _find_video(root, EGO4D_DIRS, uid)
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
            if "#unsure" not in text.lower():
                pts.append((t, narration_text(text)))
        for w, (a, b, steps) in enumerate(ego4d_windows(pts)):
            clips.append(Clip(video, safe_name(f"ego4d-{uid[:8]}-{w}"), "", tuple(steps),
                              {"dataset": "ego4d", "dataset_id": uid, "window_s": [a, b]}, start_s=a, end_s=b))
    return _none_found(clips, root, EGO4D_DIRS)


#: dataset name -> loader of ``DIR``
LOADERS: dict[str, Callable[[Path], list[Clip]]] = {"folder": folder_clips, "charades": charades, "ssv2": ssv2,
                                                     "rtime": rtime, "ego4d": ego4d}


def clips_from_source(folder: Path, dataset: str | None = None) -> list[Clip]:
    """The clips of ``--source DIR``: a folder of clips by default, else the named dataset's layout."""
    name = (dataset or "folder").strip().lower()
    if name not in LOADERS:
        raise ConfigError(f"unknown dataset {dataset!r} for --set dataset=; choose from {', '.join(LOADERS)}")
    if not Path(folder).is_dir():
        raise ConfigError(f"--source {folder} is not a folder; pass the folder of clips (or the dataset's root)")
    return LOADERS[name](Path(folder))
