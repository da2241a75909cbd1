"""The stress suite (Reveal, paper 003): probes of what video-language models really see.

Each probe is a sub-package behind ``probe.Probe`` (``camera_motion/``, ...), listed in
``probe.PROBE_TARGETS``; ``suite.py`` routes the Suite protocol to them. See ``docs/stress.md``.
"""

from vidaudit.suites.stress.suite import SUITE

__all__ = ["SUITE"]
