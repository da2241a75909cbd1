"""The faithful suite (the STRAND paper): targets about the order of events, their sub-questions, faithful accuracy.

Synthetic worlds with exact facts (``vidaudit generate faithful``) or the paper's released JSON
(``import_strand`` / ``validate_strand``); A_target, A_sub, A_faith and A_cons with their checks.
"""

from vidaudit.suites.faithful.suite import FaithfulSuite

SUITE = FaithfulSuite()

#: the models that belong to this suite alone (the registry finds them here, like ``SUITE``)
PROVIDERS = {
    "majority": "vidaudit.suites.faithful.majority:MajorityAdapter",
    "object-centric": "vidaudit.suites.faithful.framework.composite:ObjectCentricAdapter",
}
