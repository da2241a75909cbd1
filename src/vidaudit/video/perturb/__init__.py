"""Perturbations of any video: registered, pure functions of (source, parameters, seed).

Each writes new frames plus machine-readable metadata of exactly what it did (``DST.json``: op, params with
defaults filled in, seed, source sha256, fps and frame count read back from the file, and the op's
frame-by-frame map). See ``docs/perturbations.md`` for every op. This package re-exports nothing: import each
name from the module that defines it.

- ``engine``: ``apply(source, spec, out, seed=, second_source=)`` (write ``out`` and its JSON atomically),
  ``preview(source, spec, seed=)`` (the metadata without rendering), ``plan_for`` (the plan from a source's
  facts alone), ``cache_key``, ``PerturbResult``, ``PerturbMeta``, ``ENGINE_VERSION``;
- ``cache``: ``cached(source, source_sha256, spec, seed, cache_dir)`` (``apply``, content-addressed),
  ``cached_chain``, ``lookup``;
- ``registry``: the ops by name (``get_op``, ``op_names``, ``resolve``, ``canonical_spec``);
- ``base``: ``Op``, ``Params``, ``Plan``, ``SourceInfo`` (a source as an op sees it); ``source``: ``open_source``,
  ``IMAGE_SUFFIXES``;
- ``integration``: ``check_strip_coverage(meta, sent_indices)`` (problems with the frames a sampler would send),
  ``quadrant_boxes``; the ops themselves in ``temporal``, ``spatial``, ``integration`` and ``camera``;
- ``cli``: ``perturb_command(...)`` (the ``vidaudit perturb`` command); ``batch``: ``--batch`` jobs.
"""
