"""The run store: every trial, attempt and stage call of a run dir, in SQLite and in an fsync'd audit log.

One module per job, each imported from where it is defined:

- ``store/schema.py``: the file, its tables and schema version, building a database whole;
- ``store/records.py``: what is stored, as records, rows and audit-log lines (shared by the jobs below);
- ``store/sync.py``: the audit log kept in step with the database (torn tail cut, missing lines re-appended,
  a lost database rebuilt from the log);
- ``store/writer.py``: ``RunStore``, the one writer (group commits, redaction, the migration from schema 1);
- ``store/reader.py``: ``StoreReader``, read-only access for any number of processes (what ``score`` uses).

This package defines and re-exports nothing.
"""
