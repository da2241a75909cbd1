"""Moved: agreement statistics are ``score``'s (``vidaudit.score.kappa``); kept here as a re-export."""

from vidaudit.score.kappa import agreement, cohen_kappa, fleiss_from_counts, fleiss_kappa, unanimity

__all__ = ["agreement", "cohen_kappa", "fleiss_from_counts", "fleiss_kappa", "unanimity"]
