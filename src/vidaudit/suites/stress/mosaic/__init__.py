"""The mosaic probe (Reveal B.3, 6.1.3): temporal vs spatial quadrant integration; see docs/stress.md."""
