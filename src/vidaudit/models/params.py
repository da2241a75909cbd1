"""What each model family accepts: the table in ``params.yaml`` (data, not name substrings in code).

``load_params()`` reads the shipped table, optionally merged with a user file of the same shape;
``ParamTable.lookup(spec)`` returns the family of a ``provider:name`` (longest matching pattern; each
provider's ``provider:*`` entry is the safe default), and ``FamilyParams.wire_settings(settings)``
says which generation settings go on the wire under which names and which are not sent. Adapters
put that mapping in ``request_options()`` (so it is in the trial id and in every report).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import GenerationSettings, ModelSpec
from vidaudit.core.untrusted import load_yaml
from vidaudit.models.keyed_table import match, parse_entries

Setting = Literal["temperature", "top_p", "seed", "max_tokens"]
SETTINGS: tuple[Setting, ...] = ("temperature", "top_p", "seed", "max_tokens")


class FamilyParams(BaseModel):
    """One family's accepted parameters (see the header of ``params.yaml``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: str
    accepts: tuple[Setting, ...] = SETTINGS
    token_param: str = "max_tokens"
    sampling: Literal["both", "one"] = "both"
    reasoning: bool = False
    thinking_budget: int | None = Field(default=None, ge=-1)
    video: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None
    pattern: str = ""  # the key that matched (filled by lookup)

    def wire_settings(self, settings: GenerationSettings) -> tuple[dict[str, Any], list[str]]:
        """(settings sent, by their wire name) and (settings asked for but not sent, with why)."""
        sent: dict[str, Any] = {}
        dropped: list[str] = []
        for name in SETTINGS:
            value = getattr(settings, name)
            if value is None:
                continue
            if name not in self.accepts:
                dropped.append(f"{name} (not accepted by {self.family})")
                continue
            if name == "top_p" and self.sampling == "one" and "temperature" in sent:
                dropped.append(f"top_p (with temperature; {self.family} takes one of them)")
                continue
            sent[self.token_param if name == "max_tokens" else name] = value
        return sent, dropped

    def mm_processor_kwargs(self) -> dict[str, Any]:
        kw = self.video.get("mm_processor_kwargs", {})
        return dict(kw) if isinstance(kw, dict) else {}


@dataclass(frozen=True)
class ParamTable:
    families: dict[str, FamilyParams]

    def lookup(self, spec: ModelSpec) -> FamilyParams:
        found = match(self.families, spec)
        if found is None:
            raise ConfigError(
                f"the parameter table has no entry for {spec.provider}:{spec.name} and no '{spec.provider}:*' "
                "default; add one to your params file"
            )
        pattern, family = found
        return family.model_copy(update={"pattern": pattern})

    def merged(self, other: ParamTable) -> ParamTable:
        return ParamTable({**self.families, **other.families})


def _parse(raw: Any, where: str) -> ParamTable:
    return ParamTable(
        parse_entries(
            raw,
            where,
            "families",
            FamilyParams,
            needs="a params file needs a top-level 'families:' mapping of 'provider:name' -> "
            "{family, accepts, token_param, ...}; see vidaudit/models/params.yaml",
            bad_key=lambda key: f"key {key!r} must be 'provider:name', e.g. 'openai:gpt-5*'",
            bad_entry=lambda key, field, problem: f"entry {key!r}: {field}: {problem}",
        )
    )


@lru_cache(maxsize=1)
def shipped_params() -> ParamTable:
    text = resources.files("vidaudit.models").joinpath("params.yaml").read_text(encoding="utf-8")
    return _parse(yaml.safe_load(text), "vidaudit/models/params.yaml")


def load_params(path: str | Path | ParamTable | None = None) -> ParamTable:
    """The shipped table, with a user file's entries replacing it key by key."""
    if isinstance(path, ParamTable):
        return path
    base = shipped_params()
    if path is None:
        return base
    p = Path(path)
    try:
        raw = load_yaml(p.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read params file {p}: {e}") from None
    return base.merged(_parse(raw, str(p)))
