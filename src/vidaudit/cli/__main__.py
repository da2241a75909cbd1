"""``python -m vidaudit.cli``: the ``vidaudit`` command."""

from vidaudit.cli import app

app()
