"""`vidaudit perturb` says how large its output is against the source and why (the quality choice, documented in
docs/perturbations.md "Quality and size"): read from the files written, on a source Debian's ffmpeg encoded."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vidaudit.cli import app

FFMPEG = shutil.which("ffmpeg")


@pytest.mark.skipif(FFMPEG is None, reason="Debian's ffmpeg is not installed (apt-get install -y ffmpeg)")
def test_perturb_states_the_size_ratio_and_the_quality_choice(tmp_path: Path) -> None:
    src = tmp_path / "camera.mp4"  # a compressed camera-like clip: x264 at crf 28, as a phone might
    subprocess.run(
        [
            str(FFMPEG),
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=320x240:rate=25",
            "-t",
            "2",
            "-c:v",
            "libx264",
            "-crf",
            "28",
            "-pix_fmt",
            "yuv420p",
            str(src),
        ],
        check=True,
    )
    out = tmp_path / "out" / "rev.mp4"
    r = CliRunner().invoke(app, ["perturb", str(src), "--op", "reverse", "--out", str(out)])
    assert r.exit_code == 0, r.output
    line = next(x for x in " ".join(r.output.split()).split("size: ")[1:])
    m = re.match(
        r"([\d.]+) MB, ([\d.]+)x the source: encoded near-lossless \(H\.264 at a constant quantiser, qp 18\)", line
    )
    assert m, line
    assert float(m.group(1)) == pytest.approx(out.stat().st_size / 1e6, abs=0.006)
    assert float(m.group(2)) == pytest.approx(out.stat().st_size / src.stat().st_size, abs=0.06)
    assert float(m.group(2)) > 1.5  # near-lossless is larger than a crf 28 source: the reason is printed
