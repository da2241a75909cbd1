"""Turn CLI flags, a run config YAML or an existing run dir into the ``RunRequest`` that ``session.execute``
runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from rich.console import Console
from rich.table import Table

from vidaudit.core.errors import ConfigError
from vidaudit.core.manifest import dataset_suite
from vidaudit.core.registry import get_suite
from vidaudit.core.types import GenerationSettings, ModelSpec
from vidaudit.core.untrusted import load_yaml
from vidaudit.run.conditions import parse_condition
from vidaudit.run.request import RunRequest
from vidaudit.run.runconfig import RunConfig

if TYPE_CHECKING:
    from vidaudit.run.session import DryRunRow

_CONFIG_KEYS = {
    "suite",
    "data",
    "out",
    "models",
    "conditions",
    "prompts",
    "timestamps",
    "max_attempts",
    "max_cost_usd",
    "max_tokens",
    "limit",
    "provider_defaults",
    "adapter_options",
}


def _model(entry: Any, defaults: dict[str, Any]) -> ModelSpec:
    if isinstance(entry, str):
        return ModelSpec.parse(entry, **defaults)
    if isinstance(entry, dict) and "spec" in entry:
        settings = {**defaults, **{k: v for k, v in entry.items() if k != "spec"}}
        try:
            return ModelSpec.parse(entry["spec"], **settings)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"model {entry['spec']!r}: {e}") from e
    raise ConfigError(f"a model entry must be a spec string or {{spec: ..., temperature: ...}}, got {entry!r}")


def parse_adapter_options(items: list[str]) -> dict[str, dict[str, Any]]:
    """``PROVIDER.KEY=VALUE`` pairs (values read as YAML scalars: 0, 0.5, true, null, text) by provider."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = str(item).partition("=")
        provider, dot, name = key.strip().partition(".")
        if not sep or not dot or not provider or not name:
            raise ConfigError(f"--adapter-option {item!r}: write PROVIDER.KEY=VALUE, e.g. gemini.thinking_budget=0")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as e:
            raise ConfigError(f"--adapter-option {item!r}: cannot read the value ({e})") from e
        if isinstance(value, (dict, list)):
            raise ConfigError(f"--adapter-option {item!r}: the value must be a single number, word or null")
        out.setdefault(provider, {})[name] = value
    return out


def load_config(path: Path) -> dict[str, Any]:
    try:
        raw = load_yaml(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read run config {path}: {e}") from e
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a run config is a mapping (models:, conditions:, ...)")
    unknown = set(raw) - _CONFIG_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown keys {sorted(unknown)}; allowed: {sorted(_CONFIG_KEYS)}")
    return raw


def resolve_run_request(
    *,
    suite: str | None,
    data: Path | None,
    models: list[str],
    conditions: list[str],
    prompts: list[str],
    timestamps: bool,
    config: Path | None,
    out: Path | None,
    resume: Path | None,
    temperature: float | None,
    max_output_tokens: int | None,
    seed: int | None,
    max_attempts: int,
    max_cost_usd: float | None,
    max_tokens: int | None,
    limit: int | None,
    provider_defaults: bool = False,
    adapter_options: list[str] | None = None,
    judge: str | None = None,
    design: str | None = None,
    rule: str | None = None,
    allow_external_videos: bool = False,
    retry_errors: bool = False,
) -> RunRequest:
    """The run the flags, the ``--config`` YAML or the ``--resume`` dir's run.json ask for, built once."""
    if resume is not None:
        rc = RunConfig.load(resume)
        stored_judge = rc.options.get("judge")
        return RunRequest.build(
            design=design or rc.options.get("design", "full"),
            rule=rule or rc.options.get("rule"),
            suite=rc.suite,
            data=Path(rc.data_dir),
            out=Path(resume),
            models=list(rc.models),
            model_options={k: dict(v) for k, v in rc.model_options.items()},
            conditions=list(rc.conditions),
            max_attempts=max(max_attempts, rc.max_attempts),
            max_cost_usd=max_cost_usd if max_cost_usd is not None else rc.budget.max_cost_usd,
            max_tokens=max_tokens if max_tokens is not None else rc.budget.max_tokens,
            limit=rc.options.get("limit"),
            judge=ModelSpec.model_validate(stored_judge) if stored_judge else None,
            allow_external_videos=allow_external_videos,
            retry_errors=retry_errors,
        )
    cfg = load_config(config) if config else {}
    data = data or (Path(cfg["data"]) if "data" in cfg else None)
    suite = cfg.get("suite", suite)
    if suite is None:  # the dataset names its own suite
        if data is None:
            raise ConfigError("no data: pass --data DIR (a directory written by `vidaudit generate`)")
        suite = dataset_suite(data)
    suite = str(suite)
    s = get_suite(suite)
    defaults = {
        k: v
        for k, v in {"temperature": temperature, "max_tokens": max_output_tokens, "seed": seed}.items()
        if v is not None
    }
    provider_defaults = provider_defaults or bool(cfg.get("provider_defaults", False))
    if provider_defaults and defaults:
        raise ConfigError(
            "--provider-defaults sends no decoding settings; drop --temperature, "
            "--max-output-tokens and --seed, or drop --provider-defaults"
        )
    model_entries = list(cfg.get("models", [])) + list(models)
    cond_texts = list(cfg.get("conditions", [])) + list(conditions)
    prompt_names = list(cfg.get("prompts", [])) + list(prompts) or [s.default_prompt]
    for name in prompt_names:
        s.check_prompt(name)
    ts = bool(cfg.get("timestamps", True)) and timestamps
    out = out or (Path(cfg["out"]) if "out" in cfg else None)
    if data is None:
        raise ConfigError("no data: pass --data DIR (a directory written by `vidaudit generate`)")
    if out is None:
        raise ConfigError("no run directory: pass --out RUN")
    specs = []
    for e in model_entries:
        try:
            spec = _model(e, defaults)
        except ValueError as err:
            raise ConfigError(str(err)) from err
        if provider_defaults:
            spec = spec.model_copy(update={"settings": GenerationSettings.provider_defaults()})
        specs.append(spec)
    conds = [parse_condition(c, p, ts) for c in cond_texts for p in prompt_names]
    if len(set(conds)) != len(conds):
        raise ConfigError("a condition is listed twice")
    options = parse_adapter_options(list(cfg.get("adapter_options", [])) + list(adapter_options or []))
    return RunRequest.build(
        design=design or "full",
        rule=rule,
        suite=suite,
        data=Path(data),
        out=Path(out),
        models=specs,
        conditions=conds,
        model_options=options,
        max_attempts=int(cfg.get("max_attempts", max_attempts)),
        max_cost_usd=max_cost_usd if max_cost_usd is not None else cfg.get("max_cost_usd"),
        max_tokens=max_tokens if max_tokens is not None else cfg.get("max_tokens"),
        limit=limit if limit is not None else cfg.get("limit"),
        judge=_judge_spec(judge or cfg.get("judge"), defaults),
        allow_external_videos=allow_external_videos,
        retry_errors=retry_errors,
    )


def _judge_spec(entry: Any, defaults: dict[str, Any]) -> ModelSpec | None:
    """``--judge SPEC`` (or the config's ``judge:``) with the run's decoding defaults; None without one."""
    if entry is None or entry == "":
        return None
    try:
        return _model(entry, defaults)
    except ValueError as err:
        raise ConfigError(f"--judge: {err}") from err


def print_dry_run(rows: list[DryRunRow], console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title="dry run: nothing was called")
    for col in ("model", "condition", "trials", "frames", "est. tokens", "est. cost (USD)"):
        table.add_column(col, justify="right" if col not in ("model", "condition") else "left")
    for r in rows:
        cost = "unknown" if r.est_cost_usd is None else f"{r.est_cost_usd:.2f}"
        table.add_row(r.model, r.condition, str(r.trials), str(r.frames), f"{r.est_tokens:,}", cost)
    console.print(table)
    console.print(f"{sum(r.trials for r in rows)} trials in all")


#: at most this many failure causes are printed (the rest are counted); every one is in store.sqlite
MAX_CAUSES_SHOWN = 5


def print_summary(res: Any, console: Console | None = None, *, next_step: bool = True) -> None:
    """What the session did, why trials failed (one line per cause), how to retry them, what to do next."""
    console = console or Console(stderr=True)
    if res.summary is not None:
        console.print(res.summary.describe(), highlight=False, markup=False)
    if getattr(res, "design", None):
        console.print(design_line(res.design), highlight=False, markup=False)
    for line in failure_lines(res):
        console.print(line, highlight=False, markup=False, soft_wrap=True)  # a message stays copyable
    if res.summary is not None and res.summary.stop_reason.value == "budget":
        console.print(
            f"the budget cap stopped the run; to go on, raise it and resume: vidaudit run --resume "
            f"{res.run_dir} --max-cost-usd USD (or --max-tokens N)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    console.print(
        f"run: {res.run_dir}  (store: {res.run_dir / 'store.sqlite'}, config: {res.run_dir / 'run.json'})",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if next_step and int(getattr(res, "trials_ok", 0)):
        # `score` first, always: after a session that stored anything, a scored file from before is stale and
        # `report` alone would refuse it; `score` prints the figures and `report` then reads what it wrote
        console.print(
            f"next: vidaudit score {res.run_dir}\nthen: vidaudit report {res.run_dir}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def failure_lines(res: Any) -> list[str]:
    """One line per cause of the trials not ok (with counts), then how to retry them; [] when none failed."""
    causes = list(getattr(res, "failures", []) or [])
    if not causes:
        return []
    failed = sum(c.count for c in causes)
    ok = getattr(res, "trials_ok", 0)
    head = "no trial succeeded" if not ok else f"{ok} trial(s) ok"
    lines = [f"{head}; {failed} failed, by cause of their last attempt:"]
    lines += [f"  {c.line()}" for c in causes[:MAX_CAUSES_SHOWN]]
    if len(causes) > MAX_CAUSES_SHOWN:
        rest = causes[MAX_CAUSES_SHOWN:]
        lines.append(
            f"  ... and {sum(c.count for c in rest)} more in {len(rest)} other causes (store.sqlite, table attempts)"
        )
    summary = getattr(res, "summary", None)
    exhausted = summary.skipped_exhausted if summary is not None else 0
    if summary is not None and summary.called == 0 and exhausted:
        lines.append(f"{exhausted} trial(s) are out of attempts, so nothing was called.")
    lines.append(f"after fixing the cause, retry them: vidaudit run --resume {res.run_dir} --retry-errors")
    return lines


def design_line(figures: dict[str, Any]) -> str:
    """A sequential design's budget figure: trials planned against the full grid."""
    full, planned = figures.get("full_grid_trials") or 0, figures.get("trials_planned") or 0
    pct = f"{100 * planned / full:.1f}%" if full else "n/a"
    done = "decided" if figures.get("complete") else "not finished: resume to continue"
    return (
        f"{figures.get('name')} design ({figures.get('rule')}): {planned} of {full} trials of the full grid "
        f"planned ({pct}, {full - planned} saved) in {figures.get('waves')} wave(s) this session; {done}"
    )
