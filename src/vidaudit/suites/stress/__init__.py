"""The stress suite (Reveal, paper 003): probes of what video-language models really see.

Each probe is a sub-package holding a ``probe.Probe`` (itself a ``Suite``; ``camera_motion/``, ...), listed in
``suite.PARTS``; the stress suite is a ``PartedSuite`` that routes every hook to them. See ``docs/stress.md``.
"""

from vidaudit.suites.stress.suite import StressSuite

SUITE = StressSuite()

#: the models that belong to this suite alone (the registry finds them here, like ``SUITE``)
PROVIDERS = {"camera-flow": "vidaudit.suites.stress.camera_flow:CameraFlowAdapter"}
