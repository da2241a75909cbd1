"""Human studies: a self-contained study page per study, and the annotators' answers scored like a model's.

``export.export_study`` writes the page (``page.py``) for items built from samples (``items.py``) and
chosen by ``select.py``; ``importing.import_answers`` reads the answers files (``answers.py``), scores
them with the suite's own scorer (``scoring.py``; free text through ``judging.judge_for_run``) and
writes the records and the summary (``summary.py``, agreement from ``vidaudit.score.kappa``) into the run,
where the score stage reads them back (``vidaudit.score.human``) and the report shows them (``section.py``).
See docs/human-study.md.
"""
