"""One synthetic video from its spec: draw the cast and the tracks, log the world, compose the questions.

Every random choice comes from ``rng_from("faithful", seed, knobs, attempt)``. A draw that breaks a
constraint (things touching outside an episode, no room, no order-dependent triple) is discarded
and the next attempt is drawn; the attempt that succeeded is recorded in the world's provenance.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from vidaudit.sdk import ConfigError, rng_from
from vidaudit.suites.faithful.choreography import DrawFailed, layout
from vidaudit.suites.faithful.compose import compose
from vidaudit.suites.faithful.questions import SubQuestion, Target
from vidaudit.suites.faithful.scene import SceneSpec, make_cast
from vidaudit.suites.faithful.simulate import Simulation, build_world, check_frames, render_log, visibility

MAX_ATTEMPTS = 200


@dataclass
class Built:
    sim: Simulation
    targets: list[Target]
    subs: list[SubQuestion]


def build_scene(spec: SceneSpec) -> Built:
    last = "no attempt"
    for attempt in range(MAX_ATTEMPTS):
        rng = rng_from("faithful", spec.seed, spec.knobs(), attempt)
        cast = make_cast(spec, rng)
        try:
            tracks = layout(spec, cast, rng)
            vis, occ = visibility(spec, cast, tracks)
            world = build_world(spec, cast, tracks, vis, occ, attempt)
        except DrawFailed as e:
            last = str(e)
            continue
        except ValidationError as e:
            last = f"world record rejected: {e.errors()[0]['msg']}"
            continue
        targets, subs = compose(world, spec.max_targets, rng_from("faithful-compose", spec.seed, spec.knobs(), attempt))
        if not targets:
            last = "no two comparable events with an independent event between them"
            continue
        log = render_log(spec, cast, tracks, vis, occ, check_frames(world, tracks.n_frames))
        return Built(Simulation(spec, cast, tracks, vis, occ, world, log, attempt), targets, subs)
    raise ConfigError(
        f"no valid scene for seed {spec.seed} in {MAX_ATTEMPTS} draws (last reason: {last}); give the "
        "agents more room (--width/--height), more time (--duration) or more --events"
    )
