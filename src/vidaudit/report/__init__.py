"""Reports: report.json, report.md and a self-contained report.html with figures and a trace viewer.

Generic: a suite describes its report as :class:`Section` objects (tables, grid and line figures,
notes) and its viewer as a :class:`ViewerSpec` plus :class:`ViewerTrial` objects; nothing here
knows a suite, and no module here imports ``vidaudit.suites``. Import what you need from its module
(``report.stage``, ``report.write``, ``report.viewer``, ...): this package re-exports nothing, so that a suite
reading ``report.tables`` does not load the HTML renderer.
"""
