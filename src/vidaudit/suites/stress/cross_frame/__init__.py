"""The ``cross_frame`` probe (Reveal §3.3, B.1-B.6): multiple-choice video QA, raw and strip-masked."""
