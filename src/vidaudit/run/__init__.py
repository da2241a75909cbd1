"""Durable, resumable, budgeted runs: the store, the run config, retries, budget and the executor.

Each name is imported from the module that defines it (``vidaudit.run.store.writer.RunStore``, ...): this package
re-exports nothing, so importing one run module does not load the others."""
