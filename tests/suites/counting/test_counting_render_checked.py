"""Verification at generate time without a second full decode (docs/counting.md, "Verified at generate time").

``render_checked`` writes the very file ``render`` writes and checks the frames it drew and the packets it
stored; one video in ``decode_every`` is also decoded. These tests tamper with real files and real encodes:
a file changed after the encoder wrote it is caught from its packets alone; an encode that does not show
the frames drawn is caught by the sampled decode when the video is sampled, and by ``vidaudit verify``'s
full decode always.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.errors import VerificationError
from vidaudit.core.manifest import load_samples
from vidaudit.suites.counting import generate as gen
from vidaudit.suites.counting import render as rnd
from vidaudit.suites.counting.grid import DOMAINS, GridPoint, grid
from vidaudit.suites.counting.scene import RenderSettings
from vidaudit.suites.counting.verify import verify_dataset
from vidaudit.video.encode import NalDigest, VideoWriter, probe_stored, stored_nal_digest
from vidaudit.video.probe import VideoInfo, probe

TINY = RenderSettings(duration_s=3.0, width=320, height=240)  # 90 frames, as test_counting_bitstream's
POINTS = [GridPoint(d, 2, 2.0, 0) for d in DOMAINS]


@pytest.mark.parametrize("domain", DOMAINS)
def test_render_checked_writes_what_render_writes_and_finds_no_problem(domain: str, tmp_path: Path) -> None:
    point = GridPoint(domain, 2, 2.0, 0)
    trace, video = rnd.render(point, TINY, tmp_path / "a.mp4", "v.mp4")
    r = rnd.render_checked(point, TINY, tmp_path / "b.mp4", "v.mp4")
    assert (r.trace, r.video) == (trace, video)
    assert (tmp_path / "a.mp4").read_bytes() == (tmp_path / "b.mp4").read_bytes()
    assert r.problems == ()


def test_packet_digest_is_the_same_emitted_and_stored_and_moves_with_one_byte(tmp_path: Path) -> None:
    """The encoder's Annex B packets and the MP4's length-prefixed ones digest equal; any coded byte changes it."""
    emitted = NalDigest()
    with VideoWriter(tmp_path / "v.mp4", 30, 320, 240, on_packet=emitted.update) as w:
        for i in range(40):
            w.write(np.full((240, 320, 3), i * 5, np.uint8), 1 + i % 3)
    assert stored_nal_digest(tmp_path / "v.mp4") == (emitted.hexdigest(), emitted.n_packets)
    assert probe_stored(tmp_path / "v.mp4") == (probe(tmp_path / "v.mp4"), emitted.hexdigest(), emitted.n_packets)
    other = NalDigest()
    for p in (b"\x00\x00\x00\x01\x65\x88\x84", b"\x00\x00\x01\x41\x9a"):
        other.update(p)
    changed = NalDigest()
    for p in (b"\x00\x00\x00\x01\x65\x88\x85", b"\x00\x00\x01\x41\x9a"):
        changed.update(p)
    same_avcc = NalDigest(length_size=4)
    for p in (b"\x00\x00\x00\x03\x65\x88\x84", b"\x00\x00\x00\x02\x41\x9a"):
        same_avcc.update(p)
    assert other.hexdigest() != changed.hexdigest()
    assert other.hexdigest() == same_avcc.hexdigest()


def _flip_coded_byte(path: Path) -> None:
    """Change one byte inside the first coded frame (after the 'mdat' box header): the container still reads."""
    data = bytearray(path.read_bytes())
    at = data.index(b"mdat") + 64
    data[at] ^= 0x55
    path.write_bytes(bytes(data))


def test_a_file_changed_after_the_encoder_wrote_it_is_caught_without_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = rnd.probe_stored

    def tampered(path: Path) -> tuple[VideoInfo, str, int]:
        _flip_coded_byte(Path(path))
        return real(path)

    monkeypatch.setattr(rnd, "probe_stored", tampered)
    r = rnd.render_checked(POINTS[0], TINY, tmp_path / "v.mp4", "v.mp4")
    assert any("stored packets are not" in p for p in r.problems), r.problems
    # and at generate time, with no video sampled for a decode: refused, no manifest
    with pytest.raises(VerificationError, match="stored packets"):
        gen.generate(POINTS[:1], tmp_path / "data", TINY, workers=1, decode_every=10**9)
    assert not (tmp_path / "data" / "manifest.jsonl").exists()


def _frozen_encode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every frame handed to the encoder is the first one drawn: the encode no longer shows the drawn frames,
    yet the encoder's packets are stored faithfully (the render-time checks cannot see it; a decode can)."""
    real = VideoWriter.write
    first: dict[int, np.ndarray] = {}

    def write(
        self: VideoWriter, rgb: np.ndarray, repeat: int = 1, box: tuple[int, int, int, int] | None = None
    ) -> None:
        real(self, first.setdefault(id(self), rgb.copy()), repeat)  # whole: the first frame, whatever changed

    monkeypatch.setattr(VideoWriter, "write", write)


def _id_not_sampled(every: int) -> GridPoint:
    for p in (GridPoint("blinking", 2, 2.0, s) for s in range(100)):
        if not gen.decoded_at_generate(p.sample_id, every):
            return p
    raise AssertionError("no seed unsampled")


def test_the_sampled_decode_catches_a_corrupted_encode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _frozen_encode(monkeypatch)
    point = POINTS[1]  # blinking: a frozen clip never turns on
    with pytest.raises(VerificationError, match="decoded: detector found 0 events"):
        gen.generate([point], tmp_path / "sampled", TINY, workers=1, decode_every=1)
    assert not (tmp_path / "sampled" / "manifest.jsonl").exists()

    # a video outside the sample passes generate (the documented trade-off) ...
    unsampled = _id_not_sampled(8)
    res = gen.generate([unsampled], tmp_path / "unsampled", TINY, workers=1, decode_every=8)
    assert res.verified == 1
    # ... and `vidaudit verify` decodes every video, so it is caught there
    samples = load_samples(tmp_path / "unsampled" / "manifest.jsonl")
    problems = verify_dataset(tmp_path / "unsampled", samples, workers=1)
    assert problems and "detector found 0 events" in problems[unsampled.sample_id][0]


def test_manifest_bytes_do_not_depend_on_how_generate_verified(tmp_path: Path) -> None:
    """Checked at render (one in 8 decoded), every video decoded, or no verification: the same manifest bytes,
    and `vidaudit verify`'s full decode passes on it."""
    manifests = []
    for name, kwargs in (("checked", {}), ("all-decoded", {"decode_every": 1}), ("unverified", {"verify": False})):
        gen.generate(POINTS, tmp_path / name, TINY, workers=1, **kwargs)
        manifests.append((tmp_path / name / "manifest.jsonl").read_bytes())
    assert manifests[0] == manifests[1] == manifests[2]
    assert verify_dataset(tmp_path / "checked", load_samples(tmp_path / "checked" / "manifest.jsonl"), workers=1) == {}


def test_the_decode_sample_is_deterministic_and_about_one_in_eight() -> None:
    ids = [p.sample_id for p in grid()]
    picked = [i for i in ids if gen.decoded_at_generate(i)]
    assert picked == [i for i in ids if gen.decoded_at_generate(i, gen.DECODE_EVERY)]
    assert abs(len(picked) / len(ids) - 1 / gen.DECODE_EVERY) < 0.03
    assert all(gen.decoded_at_generate(i, 1) for i in ids[:50])


def _escaped(raw: bytes) -> bytes:
    """H.264 emulation prevention: no 00 00 0x (x <= 3) inside a NAL unit, and its last byte is not zero."""
    out, zeros = bytearray(), 0
    for b in raw:
        if zeros >= 2 and b <= 3:
            out.append(3)
            zeros = 0
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
    return bytes(out) + b"\x80"  # the stop bit


NALS = st.lists(st.binary(max_size=40).map(_escaped), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(NALS, st.lists(st.booleans(), min_size=6, max_size=6)), min_size=1, max_size=5))
def test_nal_digest_reads_annex_b_and_length_prefixed_packets_alike(packets: list) -> None:
    """Any NAL units, framed with 3- or 4-byte start codes (as libx264 emits them) or 4-byte sizes (as MP4 stores
    them), give one digest; any other NALs give another."""
    annexb, avcc = NalDigest(), NalDigest(length_size=4)
    for nals, long_code in packets:
        annexb.update(b"".join((b"\x00" if lc else b"") + b"\x00\x00\x01" + n for n, lc in zip(nals, long_code)))
        avcc.update(b"".join(len(n).to_bytes(4, "big") + n for n in nals))
    assert annexb.hexdigest() == avcc.hexdigest()
    assert annexb.n_packets == avcc.n_packets == len(packets)
    moved = NalDigest(length_size=4)
    for nals, _ in packets[:-1]:
        moved.update(b"".join(len(n).to_bytes(4, "big") + n for n in nals))
    last = packets[-1][0]
    moved.update(b"".join(len(n).to_bytes(4, "big") + n for n in [*last[:-1], last[-1] + b"\x01"]))
    assert moved.hexdigest() != avcc.hexdigest()


@pytest.mark.parametrize(
    "name,args",
    [
        ("av.mp4", ["-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-c:a", "aac", "-shortest"]),  # audio between
        ("v.mkv", []),
        ("v.ts", []),  # packets are not frames there: probe decodes, and still sees every packet
    ],
)
def test_probe_stored_is_probe_and_the_stored_digest_in_one_pass(tmp_path: Path, name: str, args: list[str]) -> None:
    """On ffmpeg-written files: the video stream's packets only (not the audio's), whichever way probe reads."""
    import subprocess

    from quirkvideos import ffmpeg

    path = tmp_path / name
    subprocess.run(
        [
            ffmpeg(),
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=96x64:rate=10:duration=2",
            *args,
            "-c:v",
            "libx264",
            "-g",
            "7",
            str(path),
        ],
        check=True,
    )
    assert probe_stored(path) == (probe(path), *stored_nal_digest(path))
