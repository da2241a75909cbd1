"""The ``expectation`` probe (Reveal §3.6, 4.3, 5.5, E.1-E.7): temporal expectation bias on procedure videos."""
