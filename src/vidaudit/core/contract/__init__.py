"""The contract every stage and every suite shares, on the ground floor (it imports no stage).

What the stages and the suites share, in five modules (a suite imports it through ``vidaudit.sdk``, the front
door, which re-exports all of it; a stage imports each name from the module that defines it, this package
re-exports nothing):

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

One path per name: the stages (``run``, ``score``, ``report``) import from the five modules, the suites from
``vidaudit.sdk``.
"""
