"""The tools built on the stages and the contract (floor 9, above the suites): ``audit`` (``vidaudit audit`` and
``compare``: every suite's preset run and profiled through the contract), ``humanstudy`` (human answers beside the
models'), ``interop`` (bridges to other harnesses: exports, inspect_ai tasks, log importers) and ``mech``
(white-box probes of open models). A tool imports no other tool; a stage reaches one only through a registry
entry (``core.registry``: the report sections of ``mech`` and ``humanstudy``, the inspect_ai entry point)."""
