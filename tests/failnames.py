"""A pytest plugin: name a failing (or timed-out) test the moment its report arrives, on a line of its own with
its phase and duration, so that a run killed later (a CI limit, a hung worker) still says which tests failed;
the end-of-run summary (``-ra``) says it again. Printed by the process that owns the terminal (xdist's controller,
or pytest itself without ``-n``). Loaded by ``tests/conftest.py``."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # an xdist worker's reports reach the controller, which prints them
        config.pluginmanager.register(_FailNames(config), "vidaudit-failnames")


class _FailNames:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.failed:
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        text = str(getattr(report, "longrepr", "") or "")
        timed_out = "Timeout (>" in text or "Timeout >" in text
        reporter.write("\n")  # after the progress character of this test
        reporter.write_line(
            f"FAILED {report.nodeid} ({report.when}, {report.duration:.1f} s{', timed out' if timed_out else ''})",
            red=True,
        )
