"""The ``camera_motion`` probe (Reveal §3.2, 5.1, A.1-A.6): 6-way camera motion, chance 1/6."""
