"""Moved: reading a run's human study back is the score stage's (``vidaudit.score.human``); re-exported here."""

from vidaudit.score.human import load_human, performance_records

__all__ = ["load_human", "performance_records"]
