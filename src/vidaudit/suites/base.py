"""Moved: the suite protocol is part of the contract on the ground floor, ``vidaudit.core.contract.suite``.

Kept as a re-export so that code written against the old path keeps working; new code imports
``vidaudit.core.contract`` (or ``vidaudit.core.contract.suite``).
"""

from vidaudit.core.contract.suite import *  # noqa: F403 - the whole public surface of the moved module
from vidaudit.core.contract.suite import __all__ as __all__
