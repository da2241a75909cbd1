"""Moved: the suite protocol is part of the contract on the ground floor, ``vidaudit.core.contract.suite``.

Kept as a re-export so that code written against the old path keeps working; new code imports
``vidaudit.core.contract`` (or ``vidaudit.core.contract.suite``).
"""

from vidaudit.core.contract.suite import Capabilities, ObservedFrame, Prompt, Suite, SuiteInfo, check_suite

__all__ = ["Capabilities", "ObservedFrame", "Prompt", "Suite", "SuiteInfo", "check_suite"]
