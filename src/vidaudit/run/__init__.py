"""Durable, resumable, budgeted runs: the store, the run config, retries, budget and the executor."""

from vidaudit.run.budget import Budget, BudgetTracker
from vidaudit.run.executor import AdapterError, PrepareError, RunAborted, run_trials
from vidaudit.run.retry import Clock, Decision, RetryPolicy, SystemClock, status_for
from vidaudit.run.runconfig import BudgetConfig, RunConfig, SessionInfo, open_run_config
from vidaudit.run.secrets import SecretLeakError, check_no_secrets
from vidaudit.run.store import RunStore, StoreSummary, TrialRow
from vidaudit.run.summary import ProgressEvent, RunSummary, StopReason

__all__ = [
    "AdapterError", "Budget", "BudgetConfig", "BudgetTracker", "Clock", "Decision", "PrepareError",
    "ProgressEvent", "RetryPolicy", "RunAborted", "RunConfig", "RunStore", "RunSummary", "SecretLeakError",
    "SessionInfo", "StopReason", "StoreSummary", "SystemClock", "TrialRow", "check_no_secrets",
    "open_run_config", "run_trials", "status_for",
]
