"""Where a human study lives in a run directory (the two files the score stage reads back are named in
``vidaudit.score.human``)."""

from vidaudit.score.human import HUMAN_RECORDS, HUMAN_STUDY

__all__ = ["HUMAN_RECORDS", "HUMAN_STUDY", "STUDIES_DIR"]

STUDIES_DIR = "human_studies"           # RUN/human_studies/STUDY.json: manifests of studies exported from the run
