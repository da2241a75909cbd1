"""The ``lane_change`` probe (Reveal §3.2, A.4, A.6): does the vehicle change lanes? Binary, scored by F1."""
