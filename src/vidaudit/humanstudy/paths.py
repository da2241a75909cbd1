"""Where a human study lives in a run directory."""

HUMAN_RECORDS = "human_records.jsonl"   # ScoreRecords of the human answers
HUMAN_STUDY = "human_study.json"        # the summary: accuracy, kappa, unanimity
STUDIES_DIR = "human_studies"           # RUN/human_studies/STUDY.json: manifests of studies exported from the run
