"""The stress suite (Reveal, paper 003): probes of what video-language models really see.

Part 1 implements the ``camera_motion`` probe (6-way camera motion on procedural still scenes moved by
``camera_2d``). See ``docs/stress.md``.
"""

from vidaudit.suites.stress.suite import SUITE

__all__ = ["SUITE"]
