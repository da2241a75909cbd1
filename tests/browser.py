"""The browser the HTML tests drive: Debian's Chromium through Playwright, never a downloaded one.

Shared by the report, human-study and audit tests (each imports it by its plain name from tests/)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def require_browser() -> None:
    """Skip (outside CI, or on request) or fail with the fix when Chromium or Playwright is missing."""
    if os.environ.get("VIDAUDIT_SKIP_BROWSER") == "1":
        reason = "VIDAUDIT_SKIP_BROWSER=1: the browser test of report.html is skipped on request"
        print(reason)
        pytest.skip(reason)
    if not CHROMIUM.is_file() and not os.environ.get("CI"):
        pytest.skip(f"{CHROMIUM} not found (outside CI): `apt-get install -y chromium` to run the browser test")
    if not CHROMIUM.is_file():
        pytest.fail(
            f"{CHROMIUM} not found: install it with `apt-get update && apt-get install -y chromium` "
            "(CI does), or set VIDAUDIT_SKIP_BROWSER=1 to skip this test",
            pytrace=False,
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.fail(
            "Playwright for Python is missing: `pip install playwright` (the dev extra); do not run "
            "`playwright install`, the test drives /usr/bin/chromium",
            pytrace=False,
        )
