"""Moved: the report's typed records are part of the contract on the ground floor, ``vidaudit.core.contract.report``.

Kept as a re-export so that code written against the old path keeps working; new code imports
``vidaudit.core.contract`` (or ``vidaudit.core.contract.report``).
"""

from vidaudit.core.contract.report import *  # noqa: F403 - the whole public surface of the moved module
from vidaudit.core.contract.report import __all__ as __all__
