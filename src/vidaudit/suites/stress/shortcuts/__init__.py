"""The ``shortcuts`` probe (Reveal §3.5, 5.4, D.1-D.7): language-prior shortcuts on procedural videos."""
