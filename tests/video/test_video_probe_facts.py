"""``probe.SHARED_FACTS``: the player facts a probed ``VideoInfo`` and a manifest's ``VideoRef`` share, copied as they
are by ``ref_from``. The tuple must name every field the two records both declare (but the three a ref writes only
for an unusual file) with the same type in each, and the ref ``video_ref`` writes for a real file must carry each
of those facts as an independent player (Debian's ffmpeg) reads them."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import typing
from fractions import Fraction
from pathlib import Path

from realvideos import Player, write_video
from vidaudit.core.types import VideoRef
from vidaudit.video.probe import SHARED_FACTS, VideoInfo, video_ref

#: fields both records declare that ``ref_from`` writes otherwise (only where they differ from an ordinary file's)
WRITTEN_APART = {"sar", "stored_size", "stream"}


def test_the_shared_facts_are_every_field_both_records_declare_alike() -> None:
    info = typing.get_type_hints(VideoInfo)
    ref = typing.get_type_hints(VideoRef)
    assert len(set(SHARED_FACTS)) == len(SHARED_FACTS)
    for name in SHARED_FACTS:
        assert name in {f.name for f in dataclasses.fields(VideoInfo)} and name in VideoRef.model_fields, name
        assert info[name] == ref[name], (name, info[name], ref[name])
    both = {f.name for f in dataclasses.fields(VideoInfo)} & set(VideoRef.model_fields)
    assert both - WRITTEN_APART == set(SHARED_FACTS)


def test_a_phone_clip_s_ref_carries_what_ffmpeg_shows(tmp_path: Path) -> None:
    """A rotated variable-rate clip that starts late (every shared fact away from its default): its ref's clock,
    size and rotation are ffmpeg's."""
    player = Player.required()
    jitter = [9000 + p for p in (0, 2900, 6100, 9000, 12100, 14900, 18000, 21200, 23900, 27000, 30100, 33000)]
    write_video(tmp_path / "phone.mp4", jitter, Fraction(1, 90000), rotation=90, audio_s=0.6)
    ref = VideoRef.model_validate_json(video_ref(tmp_path, "phone.mp4").model_dump_json())
    times, frames = player.frames(tmp_path / "phone.mp4")
    side = json.loads(
        subprocess.run(
            [player.ffprobe or "ffprobe", "-v", "error", "-select_streams", "v", "-show_entries"]
            + ["stream_side_data=rotation", "-of", "json", str(tmp_path / "phone.mp4")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    rotation = [int(float(sd["rotation"])) % 360 for sd in side["streams"][0]["side_data_list"]]
    assert rotation == [ref.rotation] and ref.rotation in (90, 270)
    assert ref.n_frames == len(frames) == len(jitter)
    assert (ref.height, ref.width) == frames[0].shape[:2]
    assert ref.frame_times is not None
    assert max(abs(a - b) for a, b in zip(ref.frame_times, times, strict=True)) < 1e-5
    assert abs(ref.start_s - times[0]) < 1e-5 and ref.start_s > 0.05
    assert ref.duration_s > times[-1] and ref.fps > 0
