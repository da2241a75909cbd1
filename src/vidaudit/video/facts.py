"""Is this file the video its manifest describes? Where it lies, its bytes, and the facts a run relies on.

A run sends frames chosen on the manifest's clock (rate, frame count, start, frame times) at the
manifest's displayed size, rotation and sample aspect ratio, from the manifest's video stream, so those facts
are read back from the file and compared, not
only the sha256: a manifest whose facts were edited (or written by a tool that got them wrong) would
otherwise plan frames the file does not show at those times. A video path must stay inside the dataset
directory unless the user opts in (a hand-edited ``../../..`` or a symlink out of the folder would
otherwise be opened and sent).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from vidaudit.core.confine import escape_problem
from vidaudit.core.errors import DataError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.manifest import external_videos_allowed
from vidaudit.core.types import Sample, VideoRef
from vidaudit.video.probe import VideoInfo, probe

_PROBED: dict[tuple[str, int | None], VideoInfo] = {}  # (sha256, stream) -> facts: the same bytes probe the same


def resolve_video(data_dir: Path, rel: str, *, allow_external: bool = False, who: str = "") -> Path:
    """``data_dir / rel``, refused (``DataError``) unless ``allow_external`` or it names a file inside ``data_dir``
    by the rule every loader of a user's file follows (``core.confine``: not absolute, no ``..``, no symlink out)."""
    root = Path(data_dir)
    if allow_external:
        return root / rel
    problem = escape_problem(root, rel)
    if problem is not None:
        raise DataError(
            f"{who + ': ' if who else ''}video path {rel!r} leads outside the data directory "
            f"{root.resolve()}: it {problem}; move the video into the dataset, or pass "
            "--allow-external-videos if you trust this manifest"
        )
    return root / rel


def check_video_paths(data_dir: Path, samples: Iterable[Sample]) -> None:
    """Every sample's video path names a file inside ``data_dir`` (unless the dataset's own ``dataset.json`` opts
    in to external videos); the first that does not is a ``DataError``."""
    if external_videos_allowed(data_dir):
        return
    for s in samples:
        resolve_video(data_dir, s.video.path, who=s.sample_id)


def facts_problems(info: VideoInfo, ref: VideoRef) -> list[str]:
    """What the file shows that the manifest says otherwise (empty: they agree)."""
    out = []
    if info.n_frames != ref.n_frames:
        out.append(f"{info.n_frames} frames, the manifest says {ref.n_frames}")
    if not math.isclose(info.fps, ref.fps, rel_tol=1e-6):
        out.append(f"{info.fps:g} fps, the manifest says {ref.fps:g}")
    if (info.width, info.height) != (ref.width, ref.height):
        out.append(f"displayed size {info.width}x{info.height}, the manifest says {ref.width}x{ref.height}")
    if info.rotation != ref.rotation:
        out.append(f"rotation {info.rotation}, the manifest says {ref.rotation}")
    sar = (info.sar.numerator, info.sar.denominator)
    if sar != (ref.sar or (1, 1)):
        out.append(
            f"sample aspect ratio {sar[0]}:{sar[1]}, the manifest says "
            + ("square pixels" if ref.sar is None else f"{ref.sar[0]}:{ref.sar[1]}")
        )
    elif ref.stored_size is not None and tuple(ref.stored_size) != tuple(info.stored_size):
        out.append(
            f"stored size {info.stored_size[0]}x{info.stored_size[1]}, the manifest says "
            f"{ref.stored_size[0]}x{ref.stored_size[1]}"
        )
    if info.video_streams > 1 and ref.stream is None:
        out.append(f"{info.video_streams} video streams, the manifest names none (it records the one read)")
    if not math.isclose(info.start_s, ref.start_s, abs_tol=1e-6):
        out.append(f"first frame at {info.start_s:g} s, the manifest says {ref.start_s:g} s")
    mine, theirs = info.frame_times, ref.frame_times
    if (mine is None) != (theirs is None):
        out.append(("a variable" if mine is not None else "a constant") + " frame rate, the manifest says otherwise")
    elif mine is not None and theirs is not None and len(mine) == len(theirs):
        worst = max(abs(a - b) for a, b in zip(mine, theirs, strict=True))
        if worst > 1e-6:
            out.append(f"frame times up to {worst:.3f} s away from the manifest's")
    return out


def probed(path: Path, sha256: str, stream: int | None = None) -> VideoInfo:
    hit = _PROBED.get((sha256, stream))
    if hit is None:
        hit = _PROBED[(sha256, stream)] = probe(path, stream)
    return hit


def check_video_file(path: Path, ref: VideoRef, *, who: str, facts: bool = True) -> None:
    """The file at ``path`` has ``ref``'s sha256 and (``facts``) shows what ``ref`` says; else a DataError."""
    if not path.is_file():
        raise DataError(
            f"video for {who} is missing: {path}; regenerate the data (vidaudit generate ... --skip-existing)"
        )
    if ref.sha256 is None:
        raise DataError(f"{who} has no video sha256 (a dry-run manifest?); generate the videos first")
    if sha256_file(path) != ref.sha256:
        raise DataError(
            f"{path} does not match the manifest's sha256 for {who}: the file changed; regenerate it "
            "or point --data at the matching manifest"
        )
    if facts:
        problems = facts_problems(probed(path, ref.sha256, ref.stream), ref)
        if problems:
            raise DataError(
                f"{path} (for {who}) is not the video its manifest describes: {'; '.join(problems)}. "
                "Regenerate the manifest from the file (vidaudit import / generate), do not edit it "
                "by hand"
            )
