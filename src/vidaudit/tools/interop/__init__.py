"""Bridges to the harnesses vidaudit's users already run (see docs/interop.md).

- :mod:`vidaudit.tools.interop.hf`: ``vidaudit export hf`` (a suite's dataset as a Hugging Face dataset);
- :mod:`vidaudit.tools.interop.lmms_eval`: ``vidaudit export lmms-eval`` (a task directory whose
  ``process_results`` is vidaudit's scorer) and the reader of lmms-eval's ``--log_samples``;
- :mod:`vidaudit.tools.interop.inspect_ai_tasks` (the ``inspect_ai`` entry point's module): inspect_ai tasks
  ``vidaudit/<suite>`` with vidaudit's prompts and scorer;
- :mod:`vidaudit.tools.interop.vlmevalkit`: the reader of VLMEvalKit's prediction files;
- :mod:`vidaudit.tools.interop.logs`: ``score-responses --from lmms-eval|vlmevalkit|inspect LOG``;
- :mod:`vidaudit.tools.interop.cli`: ``register(app)`` adds those commands to a Typer app.

Optional libraries (``datasets``, ``inspect_ai``, ``pandas``/``openpyxl``) come with
``pip install "vidaudit[interop]"``; nothing here imports them until a bridge is used.
"""
