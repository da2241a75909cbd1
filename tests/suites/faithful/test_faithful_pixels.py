"""Pixel checks of the synthetic worlds: a rendered world passes, and a record that lies about the pixels fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from vidaudit.suites.faithful.build import build_scene
from vidaudit.suites.faithful.render import render_video
from vidaudit.suites.faithful.scene import SceneSpec
from vidaudit.suites.faithful.verify import check_video

SPEC = SceneSpec(
    video_id="w", seed=5, agents=5, events=8, occlusions=1, lookalikes=1, duration_s=12.0, width=160, height=120
)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory):
    built = build_scene(SPEC)
    path = tmp_path_factory.mktemp("px") / "w.mp4"
    render_video(SPEC, built.sim.cast, built.sim.tracks, path)
    return built, path


def test_a_rendered_world_shows_its_record(rendered) -> None:
    built, path = rendered
    assert check_video(built.sim.world, built.sim.log, path) == []


def _frame_with(log, pred):
    for key, fl in log.frames.items():
        for agent_id, at in fl.agents.items():
            if pred(at):
                return key, agent_id
    raise AssertionError("no such agent in the log")


def _edit(log, key, agent_id, **update):
    fl = log.frames[key]
    agents = {**fl.agents, agent_id: fl.agents[agent_id].model_copy(update=update)}
    return log.model_copy(update={"frames": {**log.frames, key: fl.model_copy(update={"agents": agents})}})


def test_a_moved_blob_is_found(rendered) -> None:
    built, path = rendered
    key, agent = _frame_with(built.sim.log, lambda at: at.vis == "full")
    at = built.sim.log.frames[key].agents[agent]
    bad = _edit(built.sim.log, key, agent, x=at.x + 6.0)
    assert any("centred" in p or "inner disk" in p for p in check_video(built.sim.world, bad, path))


def test_a_wrong_ring_state_is_found(rendered) -> None:
    built, path = rendered
    key, agent = _frame_with(built.sim.log, lambda at: at.vis == "full")
    at = built.sim.log.frames[key].agents[agent]
    bad = _edit(built.sim.log, key, agent, lit=not at.lit)
    assert any("ring" in p for p in check_video(built.sim.world, bad, path))


def test_a_visible_agent_logged_hidden_is_found(rendered) -> None:
    built, path = rendered
    key, agent = _frame_with(built.sim.log, lambda at: at.vis == "full")
    bad = _edit(built.sim.log, key, agent, vis="offscreen")
    assert any("logged offscreen" in p for p in check_video(built.sim.world, bad, path))


def test_a_fact_at_the_wrong_frame_is_found(rendered, tmp_path: Path) -> None:
    built, path = rendered
    w = built.sim.world
    fact = next(f for f in w.facts if f.predicate in ("goes_behind", "exits", "collides_with", "passes_to"))
    shifted = [f.model_copy(update={"frame": f.frame - 3}) if f.id == fact.id else f for f in w.facts]
    # the log must have the shifted frames too, or the check cannot look: log them from the true tracks
    from vidaudit.suites.faithful.simulate import render_log

    wrong = w.with_facts(shifted)
    frames = sorted({int(k) for k in built.sim.log.frames} | {fact.frame - 3, fact.frame - 4})
    log = render_log(SPEC, built.sim.cast, built.sim.tracks, built.sim.vis, built.sim.occluder, frames)
    problems = check_video(wrong, log, path)
    assert any(fact.id in p for p in problems), problems


def test_another_video_fails(rendered, tmp_path: Path) -> None:
    built, _ = rendered
    other = build_scene(SceneSpec(**{**SPEC.__dict__, "seed": 6}))
    path = tmp_path / "other.mp4"
    render_video(SPEC, other.sim.cast, other.sim.tracks, path)
    assert len(check_video(built.sim.world, built.sim.log, path)) > 3
