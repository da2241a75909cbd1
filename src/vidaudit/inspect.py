"""vidaudit's inspect_ai tasks and scorer (a re-export of :mod:`vidaudit.interop.inspect_ai_tasks`).

``inspect eval vidaudit/counting -T data=DIR --model ...`` finds the tasks through the ``inspect_ai``
entry point; in Python: ``from vidaudit.inspect import vidaudit_task``. Needs ``pip install "vidaudit[interop]"``.
"""

from vidaudit.interop.inspect_ai_tasks import TASKS, defined_mean, vidaudit_dataset, vidaudit_scorer, vidaudit_task

__all__ = ["TASKS", "defined_mean", "vidaudit_dataset", "vidaudit_scorer", "vidaudit_task"]
