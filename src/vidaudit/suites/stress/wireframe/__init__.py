"""The wireframe probe (Reveal B.7): line connectivity split over temporal groups; see docs/stress.md."""
