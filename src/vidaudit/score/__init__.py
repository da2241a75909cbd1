"""Generic scoring: strict parsers, optimal event matching, trace metrics, statistics, boundaries.

Nothing here knows a suite; suites pass their own rules (label patterns, tolerances) in.
"""
