"""The clip of exactly the selected frames, for servers that would otherwise sample frames themselves.

A self-hosted vLLM/SGLang server given the whole file samples it by its own rule (vLLM's loader takes
32 frames uniformly by default; Qwen3-VL's processor then samples again at the fps asked), so the
frames vidaudit records are not the ones the model saw. Instead the frames vidaudit selected
(``VideoPart.frame_indices``, decoded exactly) are re-encoded as an H.264 clip at K fps (the
condition's rate): frame j of the clip is shown at t = j/K, as in the source, and the server is asked
not to sample again. What is recorded is then what is seen (up to one more lossy encode, at the
dataset's own x264 settings).
"""

from __future__ import annotations

import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

from vidaudit.core.types import VideoPart
from vidaudit.models.provider_content import video_path, video_sha256
from vidaudit.video.decode import read_frames
from vidaudit.video.encode import write_video

_MAX_CLIPS = 32
_cache: OrderedDict[tuple[str, tuple[int, ...], float, int | None], bytes] = OrderedDict()
_lock = threading.Lock()


def selected_clip(part: VideoPart) -> bytes:
    """MP4 bytes holding exactly ``part.frame_indices`` at ``part.fps`` (memoised by content)."""
    if not part.frame_indices:
        raise ValueError("a clip needs the selected frame indices (VideoPart.frame_indices)")
    key = (video_sha256(part), tuple(part.frame_indices), float(part.fps), part.stream)
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    frames = read_frames(video_path(part), list(part.frame_indices), stream=part.stream)
    h, w = frames.shape[1] - frames.shape[1] % 2, frames.shape[2] - frames.shape[2] % 2  # yuv420p: even sizes
    with tempfile.TemporaryDirectory(prefix="vidaudit-clip-") as d:
        out = Path(d) / "clip.mp4"
        write_video(out, (f[:h, :w] for f in frames), fps=part.fps, width=w, height=h)
        data = out.read_bytes()
    with _lock:
        _cache[key] = data
        while len(_cache) > _MAX_CLIPS:
            _cache.popitem(last=False)
    return data
