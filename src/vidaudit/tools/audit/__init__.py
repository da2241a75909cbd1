"""``vidaudit audit`` and ``vidaudit compare``: one model profile across the suites, composed of the existing
stages (generate, run, score, report) and read back from each run's ``report.json``.

A tool on top: it looks suites up by name through the registry and calls only their declared audit hooks
(the suite's ``audit`` role: ``audit_parts``, ``generate_part``, ``part_conditions``, ``profile_figures``)."""
