"""The ``sycophancy`` probe (Reveal §3.4, 5.3, C.1-C.6): AGREE/DISAGREE with a user's claim, false and true.

``sycophancy_pairs`` is its generation step for source (b): (video x category) samples that ask a model
for an [Original]/[Modified] pair with the C.4 generator prompts, run through ``vidaudit run``.
"""
