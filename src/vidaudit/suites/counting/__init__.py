"""The counting suite (the Low-Frequency Trap paper): event counting over an N x F grid.

Bounce-ball wall contacts, blinks and state transitions are rendered with an executable event
trace; models count them and report timestamped events, scored against the trace.
"""

from vidaudit.suites.base import SuiteInfo

SUITE = SuiteInfo(
    name="counting",
    description="Count wall contacts, blinks and state transitions over an N x F grid with executable traces "
                "(Low-Frequency Trap).",
    paper="000_2cdda6f6d04db62c",
)
