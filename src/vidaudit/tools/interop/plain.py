"""Plain copies of the videos another harness would read differently from vidaudit.

A harness handed a video file decodes it with its own loader. lmms-eval's (``read_video``: PyAV's
``container.streams.video[0]``, the stored pictures as decoded; decord alike) takes the first video stream and
ignores the display matrix and the sample aspect ratio, so on a phone clip shot sideways it sees the picture
turned, on an anamorphic clip squeezed, and in a file with two video streams possibly the other stream: other
frames than the ones vidaudit scored the answers against, with no error anywhere. An export therefore hands such
a harness, for those videos only, a plain copy: the frames vidaudit reads (``decode.iter_frames``: upright,
mirrored back, square pixels, ffmpeg's stream), written by vidaudit's writer (``encode.VideoWriter``, H.264 at
the dataset's quality) at the same constant rate, one video stream, and checked by probing it back.

A copy keeps frame ``k`` at frame ``k`` and the clip's times only at a constant rate starting at 0 (to the
millisecond, a Matroska clock's rounding: ``CLOCK_SLACK_S``); a clip that
needs a copy and is variable-rate or starts later (or has an odd displayed size, which yuv420p cannot hold) is
refused, naming the videos. Upright square-pixel single-stream clips, VFR ones included, are handed over as they
are: every reader decodes their frame ``k`` as vidaudit does (it samples by index; the times are the file's own).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vidaudit.core.errors import DataError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.types import VideoRef
from vidaudit.video.decode import iter_frames
from vidaudit.video.display import orientation
from vidaudit.video.encode import VideoWriter
from vidaudit.video.facts import facts_problems
from vidaudit.video.probe import VideoInfo, probe, ref_from
from vidaudit.video.streams import open_video, video_stream

#: where an export keeps its copies, under its own directory
COPIES = "videos"
#: how far a frame's time may be from ``k / fps`` for a constant-rate copy to keep it: a Matroska/WebM clock
#: counts milliseconds, so a 12 fps clip stream-copied into MKV has frames at 0.083, 0.167, ... (ffprobe: VFR)
CLOCK_SLACK_S = 1e-3


@dataclass(frozen=True)
class PlainCopy:
    """A copy written for one source file: its path (absolute), sha256, and why it was needed."""

    source: Path
    path: Path
    sha256: str
    why: tuple[str, ...]


def _mirrored(path: Path, stream: int | None) -> bool:
    with open_video(path) as c:
        for frame in c.decode(video_stream(c, path, stream)):
            return orientation(frame)[1]
    return False


def differences(path: Path, ref: VideoRef) -> list[str]:
    """What a reader of the first video stream's stored pictures gets wrong about this file (empty: nothing), from
    its manifest facts (checked against the file by its sha256) and its first frame's display matrix (mirroring,
    which the manifest does not record)."""
    why = []
    if ref.stream is not None:
        why.append(f"several video streams (vidaudit reads stream {ref.stream}, ffmpeg's pick)")
    if ref.rotation:
        why.append(f"display matrix turns it {ref.rotation} degrees")
    if _mirrored(path, ref.stream):
        why.append("display matrix mirrors it")
    if ref.sar is not None:
        sw, sh = ref.stored_size or (0, 0)
        why.append(f"sample aspect ratio {ref.sar[0]}:{ref.sar[1]} (stored {sw}x{sh})")
    return why


def _unkept(info: VideoInfo) -> list[str]:
    """Why a constant-rate copy from time 0 would not keep this clip's frames and times."""
    out = []
    if info.frame_times is not None and any(
        abs(t - k / info.fps) > CLOCK_SLACK_S for k, t in enumerate(info.frame_times)
    ):
        out.append("variable frame rate")
    if info.start_s != 0:
        out.append(f"first frame at {info.start_s:g} s")
    if info.width % 2 or info.height % 2:
        out.append(f"odd displayed size {info.width}x{info.height}")
    return out


def plain_copies(sources: dict[str, tuple[Path, VideoRef]], out: Path, harness: str) -> dict[str, PlainCopy]:
    """``{sample_id: PlainCopy}`` for the sources (``{sample_id: (file, its manifest ref)}``) that need one, written
    under ``out/videos`` (one copy per distinct file, named by its sha256); other files there are removed."""
    infos: dict[Path, VideoInfo] = {}
    why: dict[Path, list[str]] = {}
    for p, ref in dict(sources.values()).items():
        found = differences(p, ref)
        if found:
            why[p] = found
            infos[p] = probe(p, ref.stream)
    refused = {p: _unkept(infos[p]) for p in why if _unkept(infos[p])}
    if refused:
        named = "; ".join(f"{p} ({', '.join(why[p] + refused[p])})" for p in list(refused)[:5])
        raise DataError(
            f"{len(refused)} video(s) would reach {harness} as other frames than vidaudit scores (its loaders take "
            f"the first video stream and ignore the display matrix and the pixel aspect ratio), and a plain copy "
            f"cannot keep their frames and times: {named}. Re-encode them upright, square-pixel, one stream at a constant "
            "rate from 0 (e.g. ffmpeg -i IN -map 0:v:N -vf scale=iw*sar:ih,setsar=1 -fps_mode cfr OUT.mp4), "
            "re-import the dataset and export again, or score these with `vidaudit run`"
        )
    folder = out / COPIES
    written: dict[Path, PlainCopy] = {}
    for p, reasons in why.items():
        info = infos[p]
        dest = folder / f"{sha256_file(p)[:16]}_{p.stem}.mp4"
        folder.mkdir(parents=True, exist_ok=True)
        with VideoWriter(dest, info.fps, info.width, info.height) as w:
            for frame in iter_frames(p, stream=info.stream):
                w.write(frame)
        problems = facts_problems(probe(dest), _plain_ref(info, dest))
        if problems:
            dest.unlink()
            raise DataError(
                f"the plain copy of {p} is not what vidaudit reads (checked as its manifest line would be): "
                + "; ".join(problems)
            )
        written[p] = PlainCopy(p, dest.resolve(), sha256_file(dest), tuple(reasons))
    keep = {c.path.name for c in written.values()}
    if folder.is_dir():
        for old in folder.iterdir():
            if old.name not in keep and old.is_file() and not old.is_symlink():
                old.unlink()  # a copy from an earlier export of this directory
    return {sid: written[p] for sid, (p, _) in sources.items() if p in written}


def _plain_ref(info: VideoInfo, dest: Path) -> VideoRef:
    """What the copy of a file ``probe`` read as ``info`` must show (``facts.facts_problems`` checks it): the same
    frames, rate and displayed size, upright, square-pixel, one stream, at a constant rate from 0."""
    plain = {"rotation": 0, "start_s": 0.0, "frame_times": None, "sar": None, "stored_size": None, "stream": None}
    return ref_from(info, str(dest), None).model_copy(update=plain)
