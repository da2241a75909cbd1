"""The contract every stage and every suite shares, on the ground floor (it imports no stage).

This is the public surface for suite authors, in one place:

- the suite protocol (``suite``): :class:`Suite` (an abstract base: four required methods), its declared
  :class:`SuiteCapabilities`, the inputs of its ``score`` and ``aggregate`` (:class:`ScoreInput`,
  :class:`AggregateInput`), :class:`Prompt`, :class:`SuiteInfo`, :class:`PartedSuite`, and the lookup
  :func:`get_suite`;
- the optional roles a suite declares (``roles``): :class:`Baselines` (with :data:`ObservedFrame`),
  :class:`Verification`, :class:`Designs` (:class:`SequentialDesign`), :class:`Audit` (:class:`ModuleAudit`) and
  :class:`Commands`;
- what a suite's ``score`` returns and ``scores.jsonl`` holds (``records``): :class:`TrialScore`,
  :class:`ParseResult`, :class:`ScoreRecord`;
- what a suite's ``aggregate`` and ``viewer_trial`` return and ``report.json`` holds (``report``):
  :class:`SuiteReport`, :class:`Section`, :class:`Table`, :class:`GridFigure`, :class:`LineFigure`,
  :class:`Series`, :class:`ViewerSpec`, :class:`ViewerColumn`, :class:`ViewerTrial`, :class:`EventTimeline`,
  :class:`TimelineEvent`, :class:`ViewerFrame`, and the whole :class:`Report`;
- what a suite gives ``vidaudit audit`` (``profile``): :class:`AuditPart`, :class:`ProfileFigure`, :class:`PartFigures`.

The stages (``run``, ``score``, ``report``) and the suites import these from here (one path per name: the
old re-export modules are gone).
"""

from vidaudit.core.contract import profile, records, report, roles, suite
from vidaudit.core.contract.profile import *  # noqa: F403 - the names listed above, one __all__ per module
from vidaudit.core.contract.records import *  # noqa: F403
from vidaudit.core.contract.report import *  # noqa: F403
from vidaudit.core.contract.roles import *  # noqa: F403
from vidaudit.core.contract.suite import *  # noqa: F403
from vidaudit.core.registry import get_suite

__all__ = [*profile.__all__, *records.__all__, *report.__all__, *roles.__all__, *suite.__all__, "get_suite"]
