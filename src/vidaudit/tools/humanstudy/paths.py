"""Where a human study lives in a run directory (the two files the score stage reads back, ``HUMAN_STUDY`` and
``HUMAN_RECORDS``, are named in ``vidaudit.score.human``, their one home)."""

__all__ = ["STUDIES_DIR"]

STUDIES_DIR = "human_studies"  # RUN/human_studies/STUDY.json: manifests of studies exported from the run
