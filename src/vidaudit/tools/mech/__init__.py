"""White-box probes of open ``hf`` video-language models (Reveal section 6, B.7): where the visual signal is lost.

- ``tiny``: random-weight models of each family, built from configs (``vidaudit tiny-model``).
- ``whitebox``: one forward pass of a scored trial's exact inputs, with hidden states at the vision
  encoder, the projector and chosen LLM layers, attention per span, and the first-step distribution.
- ``probe_*``: the probes behind ``vidaudit probe NAME`` (linear, attention, kl, cka, encoder-partition).
See ``docs/mechanism.md``.
"""
