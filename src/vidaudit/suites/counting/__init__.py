"""The counting suite (the Low-Frequency Trap paper): event counting over an N x F grid.

Bounce-ball wall contacts, blinks and state transitions are rendered with an executable event
trace; models count them and report timestamped events, scored against the trace.
"""

from vidaudit.suites.counting.suite import CountingSuite

SUITE = CountingSuite()

#: the models that belong to this suite alone (the registry finds them here, like ``SUITE``)
PROVIDERS = {"simulated": "vidaudit.suites.counting.simulated:SimulatedAdapter"}
