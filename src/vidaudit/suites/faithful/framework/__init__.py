"""The object-centric trajectory framework (STRAND section 5, H.5-H.12) as a composite model ``object-centric:...``.

Stages: chunk-wise extraction E (``extract``: query-agnostic, validated JSON per chunk), the
deterministic aggregator A (``aggregator``: no model call), retrieval R (``retrieval``: lexical or a
model call) and answer generation G (``composite``). ``object-centric:offline`` runs it with no VLM:
a classical extractor (``extractor_offline``) and a program answerer (``answerer_program``).
The spec grammar is in ``spec``; docs/faithful.md has every rule.
"""
