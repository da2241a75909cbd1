"""The project-wide Hypothesis profile (tests/conftest.py): a property that holds never fails on a slow machine."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st


def test_the_vidaudit_profile_is_loaded_with_no_deadline() -> None:
    assert settings.default is not None and settings.default.deadline is None


@settings(max_examples=3)
@given(st.integers())
def test_a_slow_example_is_not_a_failure(x: int) -> None:
    """Each example sleeps past Hypothesis' default 200 ms deadline (as one does under load); a test's own
    ``@settings`` (here max_examples) keeps the profile's deadline."""
    time.sleep(0.25)
    assert isinstance(x, int)
