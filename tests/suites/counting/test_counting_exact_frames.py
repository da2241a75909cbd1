"""Exact event frames (issue 32): every event's ``frame`` is the first frame at or after its exact time, and the
``keyframes`` condition sends that frame.

The exact times are derived here from the schedule's definition (docs/counting.md): t_1 is a frame boundary
k / fps (or, when the window for t_1 is narrower than a frame, its lower end 1/4 s + lead-in), and
t_i = t_1 + (i - 1) / F, with fps and F the decimals they are written as. Nothing here calls the schedule's own
code: the manifests are read as the generator wrote them, and the frames compared with integer ceilings.

Before the fix, 3,333 of the paper grid's 12,240 events were one frame late (200/30 s written as 6.666666667 s
is 200.00000001 frames, and "the first frame at or after t" gave 201); putting back the old
``ceil(round(t * fps, 9))`` makes both tests fail.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from realvideos import Player
from vidaudit.core.manifest import load_samples
from vidaudit.core.registry import get_suite
from vidaudit.core.types import ImagePart, ModelSpec, Sample
from vidaudit.models.base import Capabilities
from vidaudit.run.conditions import parse_condition
from vidaudit.run.plan import PlanStream, select_frames
from vidaudit.run.request_builder import RequestBuilder
from vidaudit.suites.counting.generate import generate
from vidaudit.suites.counting.grid import GridPoint, preset
from vidaudit.suites.counting.scene import RenderSettings


def ceil_div(a: Fraction) -> int:
    """ceil of a rational by integer arithmetic."""
    return -((-a.numerator) // a.denominator)


def lead(domain: str, f: Fraction, fps: Fraction) -> tuple[Fraction, Fraction]:
    """(lead-in, lead-out) as docs/counting.md defines them: the ball moves a quarter period on each side of its
    contacts; the last blink's pulse (3/10 of a period, at least two frames) must end inside the clip."""
    if domain == "bounce_ball":
        return 1 / (4 * f), 1 / (4 * f)
    if domain == "blinking":
        return Fraction(0), max(Fraction(3, 10) / f, 2 / fps)
    return Fraction(0), Fraction(0)


def exact_times(sample: Sample, render: dict) -> list[Fraction]:
    """The events' exact times from the schedule's definition and the written first time."""
    fps, duration = Fraction(str(render["fps"])), Fraction(str(render["duration_s"]))
    f = Fraction(str(sample.params["frequency_hz"]))
    ts = [e.t for e in sample.trace.events]
    if not ts:
        return []
    lead_in, lead_out = lead(sample.params["domain"], f, fps)
    lo = Fraction(1, 4) + lead_in
    hi = duration - Fraction(1, 4) - lead_out - (len(ts) - 1) / f
    k = round(ts[0] * fps)
    candidates = [Fraction(k) / fps, lo, hi]
    t1 = next(c for c in candidates if lo <= c <= hi and abs(float(c) - ts[0]) < 1e-9)
    return [t1 + i / f for i in range(len(ts))]


def test_every_paper_grid_event_is_on_its_exact_frame(tmp_path: Path) -> None:
    """The paper grid's manifest (a dry run: traces, no videos): frame == ceil(exact t * fps) for all 12,240
    events, each written t is its exact time to 9 decimals, and ``keyframes`` selects exactly the frames on
    screen at t - 0.1 s, the event's frame and t + 0.1 s (``floor`` of the exact times)."""
    out = tmp_path / "paper"
    generate(preset("paper"), out, RenderSettings(), dry_run=True)
    render = json.loads((out / "dataset.json").read_text())["render"]
    fps = Fraction(str(render["fps"]))
    samples = load_samples(out)
    n_events = late_before = 0
    keyframes = parse_condition("keyframes", "direct")
    for s in samples:
        times = exact_times(s, render)
        last = s.video.n_frames - 1
        want = {
            f(x)
            for t in times
            for f, x in (
                (lambda x: min(max(math.floor(x), 0), last), (t - Fraction(1, 10)) * fps),
                (ceil_div, t * fps),
                (lambda x: min(max(math.floor(x), 0), last), (t + Fraction(1, 10)) * fps),
            )
        }
        if times:
            assert set(select_frames(s, keyframes).indices) == want, s.sample_id
        for e, t in zip(s.trace.events, times, strict=True):
            n_events += 1
            assert e.t == round(float(t), 9), (s.sample_id, e.t, t)
            assert e.frame == ceil_div(t * fps), (s.sample_id, e.t, t, e.frame)
            late_before += math.ceil(round(e.t * float(fps), 9)) == e.frame + 1  # the old rule, one frame late
    assert (len(samples), n_events) == (2190, 12240)
    assert late_before == 3333


#: small clips whose every event lies on a frame boundary and is written rounded up (each was one frame late)
CLIPS = [GridPoint("blinking", 3, 2.5, 1), GridPoint("state_machine", 3, 2.5, 0), GridPoint("bounce_ball", 3, 2.5, 2)]
SMALL = RenderSettings(duration_s=6.0, width=320, height=240)


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("exact_frames") / "data"
    generate(CLIPS, out, SMALL, workers=1, decode_every=1)
    return out


def test_keyframes_send_each_events_own_frame(clips: Path) -> None:
    """The keyframes request (built as a run builds it) holds, for every event, the frame at its exact time; an
    independent player (ffmpeg) shows the event first in that frame: a blink's onset, a state change, and for a
    contact the frame where the ball turns (its distance to the far side stops growing)."""
    render = json.loads((clips / "dataset.json").read_text())["render"]
    fps = Fraction(str(render["fps"]))
    suite = get_suite("counting")
    model = ModelSpec.parse("openai:x")
    player = Player.required()
    for s in load_samples(clips):
        times = exact_times(s, render)
        assert all((t * fps).denominator == 1 and e.t > t for e, t in zip(s.trace.events, times, strict=True))
        want = [ceil_div(t * fps) for t in times]
        (p,) = PlanStream(
            [s],
            [parse_condition("keyframes", "direct")],
            [model],
            suite=suite,
            caps_by_model={model.label: Capabilities()},
        ).planned()
        req = RequestBuilder(clips)(p)
        sent = {x.frame_index: x.image for x in req.parts if isinstance(x, ImagePart)}
        assert set(want) <= set(sent), (s.sample_id, want, sorted(sent))
        _, frames = player.frames(clips / s.video.path)
        grey = [f.astype(np.int16) for f in frames]

        def changed(a: int, b: int) -> float:
            """Share of pixels whose colour moves by more than 40 levels between frames a and b."""
            return float((np.abs(grey[a] - grey[b]).max(axis=2) > 40).mean())

        for j in want:
            assert np.abs(sent[j].astype(np.int16) - grey[j]).mean() < 3  # the frame sent is the player's frame j
            if s.params["domain"] == "blinking":  # OFF before, ON from j (against the OFF first frame)
                assert changed(j - 1, 0) < 1e-4 < 5e-3 < changed(j, 0), (s.sample_id, j)
            elif s.params["domain"] == "state_machine":  # frame j differs from j-1, which equals j-2
                assert changed(j - 1, j - 2) < 1e-4 < 5e-3 < changed(j, j - 1), (s.sample_id, j)
            else:  # the ball is at the wall: j-1 and j+1 are its mirror images
                assert changed(j - 1, j + 1) < 0.25 * changed(j, j + 1), (s.sample_id, j)
