"""Moved: the score records are part of the contract on the ground floor, ``vidaudit.core.contract.records``.

Kept as a re-export so that code written against the old path keeps working; new code imports
``vidaudit.core.contract`` (or ``vidaudit.core.contract.records``).
"""

from vidaudit.core.contract.records import *  # noqa: F403 - the whole public surface of the moved module
from vidaudit.core.contract.records import __all__ as __all__
