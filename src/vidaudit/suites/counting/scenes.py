"""The counting domains' scenes by name, and the one way to make a grid point's scene (checked settings).

Both the renderer and the verifier (which rebuilds a rendered sample's exact schedule) make scenes here.
"""

from __future__ import annotations

from vidaudit.sdk import ConfigError
from vidaudit.suites.counting.blinking import Blinking
from vidaudit.suites.counting.bounce_ball import BounceBall
from vidaudit.suites.counting.grid import GridPoint, validate
from vidaudit.suites.counting.scene import DEFAULT_SETTINGS, RenderSettings, Scene
from vidaudit.suites.counting.state_machine import StateMachine

SCENES: dict[str, type[Scene]] = {c.domain: c for c in (BounceBall, Blinking, StateMachine)}


def make_scene(point: GridPoint, settings: RenderSettings = DEFAULT_SETTINGS) -> Scene:
    """The scene that renders ``point`` (a ConfigError for a point off the grid or settings no video can have)."""
    validate(point.domain, point.n_events, point.frequency_hz, point.seed)
    if settings.fps <= 0 or settings.duration_s <= 0:
        raise ConfigError(f"fps and duration must be positive, got fps={settings.fps}, duration={settings.duration_s}")
    if settings.width % 2 or settings.height % 2 or settings.width < 320 or settings.height < 240:
        raise ConfigError(f"frame size must be even and at least 320x240, got {settings.width}x{settings.height}")
    return SCENES[point.domain](point, settings)
