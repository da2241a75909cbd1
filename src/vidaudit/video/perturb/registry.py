"""The perturbation registry and spec handling: one name per op, a pydantic model of its parameters.

``resolve(spec)`` turns a :class:`~vidaudit.core.types.PerturbationSpec` into (op, validated params);
``canonical_spec(spec)`` is the same spec with every default filled in, the form that content-addresses
a perturbed video. Bad names and parameters raise :class:`ConfigError` with the op's allowed values.
"""

from __future__ import annotations

import importlib
import types
import typing
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import PerturbationSpec
from vidaudit.video.perturb.base import Op, Params

#: Modules that define the built-in ops (imported on first lookup, so importing the registry is cheap).
_BUILTIN_MODULES = (
    "vidaudit.video.perturb.temporal",
    "vidaudit.video.perturb.spatial",
    "vidaudit.video.perturb.integration",
    "vidaudit.video.perturb.camera",
)

_OPS: dict[str, Op] = {}
_loaded = False


def register(cls: type[Op]) -> type[Op]:
    """Class decorator: add one op instance under ``cls.name`` (a second op with that name is refused)."""
    op = cls()
    if op.name in _OPS and type(_OPS[op.name]) is not cls:
        raise ValueError(f"perturbation {op.name!r} is registered twice")  # pragma: no cover - programming error
    _OPS[op.name] = op
    return cls


def _load() -> None:
    global _loaded
    if not _loaded:
        for m in _BUILTIN_MODULES:
            importlib.import_module(m)
        _loaded = True


def op_names() -> list[str]:
    _load()
    return sorted(_OPS)


def get_op(name: str) -> Op:
    _load()
    try:
        return _OPS[name]
    except KeyError:
        raise ConfigError(f"unknown perturbation {name!r}; known: {', '.join(sorted(_OPS))}") from None


# --------------------------------------------------------------------------- parameter descriptions


def _literal_choices(ann: Any) -> list[Any] | None:
    if typing.get_origin(ann) is Literal:
        return list(typing.get_args(ann))
    return None


def _strip_optional(ann: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if len(args) == 1:
            return args[0], len(args) != len(typing.get_args(ann))
    return ann, False


def is_text_field(model: type[BaseModel], name: str) -> bool:
    """True when the field takes plain text (str or a Literal of str): a CLI value is used verbatim."""
    ann, _ = _strip_optional(model.model_fields[name].annotation)
    choices = _literal_choices(ann)
    return ann is str or (choices is not None and all(isinstance(c, str) for c in choices))


_KINDS = {int: "an integer", float: "a number", bool: "true or false", str: "text"}
_PLURAL = {int: "integers", float: "numbers", bool: "booleans", str: "strings"}


def _kind(ann: Any) -> str:
    if ann in _KINDS:
        return _KINDS[ann]
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is tuple and args and Ellipsis not in args and len(set(args)) == 1 and args[0] in _PLURAL:
        return f"a list of {len(args)} {_PLURAL[args[0]]}"
    if origin is list and len(args) == 1:
        inner = args[0]
        if typing.get_origin(inner) is tuple:
            return f"a list of [{', '.join(_KINDS.get(a, str(a)).split()[-1] for a in typing.get_args(inner))}] lists"
        return f"a list of {_PLURAL.get(inner, str(inner))}"
    return str(ann).replace("typing.", "")


def describe_field(model: type[BaseModel], name: str) -> str:
    """The allowed values of one parameter in words, e.g. ``an integer in [1, 64]`` or ``one of a, b``."""
    f = model.model_fields[name]
    ann, optional = _strip_optional(f.annotation)
    choices = _literal_choices(ann)
    if choices is not None:
        text = "one of " + ", ".join(str(c) for c in choices)
    else:
        text = _kind(ann)
        lo = hi = None
        lo_open = hi_open = False
        for m in f.metadata:
            for attr, is_lo, open_ in (
                ("ge", True, False),
                ("gt", True, True),
                ("le", False, False),
                ("lt", False, True),
            ):
                val = getattr(m, attr, None)
                if val is not None:
                    if is_lo:
                        lo, lo_open = val, open_
                    else:
                        hi, hi_open = val, open_
        if lo is not None and hi is not None:
            text += " in " + ("(" if lo_open else "[") + f"{lo:g}, {hi:g}" + (")" if hi_open else "]")
        elif lo is not None:
            text += (" > " if lo_open else " >= ") + f"{lo:g}"
        elif hi is not None:
            text += (" < " if hi_open else " <= ") + f"{hi:g}"
    if optional:
        text += " or null"
    if f.description:
        text += f" ({f.description})"
    return text


def describe_params(model: type[BaseModel]) -> dict[str, dict[str, Any]]:
    """Every parameter: its default (``required`` when none) and its allowed values in words."""
    out = {}
    for name, f in model.model_fields.items():
        default = "required" if f.is_required() else f.get_default()
        if isinstance(default, tuple):
            default = list(default)
        out[name] = {"default": default, "allowed": describe_field(model, name)}
    return out


def _validation_message(op: Op, e: ValidationError) -> str:
    model = op.Params
    parts = []
    for err in e.errors():
        loc = err.get("loc") or ()
        field = str(loc[0]) if loc else ""
        if err.get("type") == "extra_forbidden":
            parts.append(
                f"{op.name} has no parameter {field!r}; its parameters: {', '.join(model.model_fields) or '(none)'}"
            )
        elif err.get("type") == "missing":
            parts.append(f"{op.name} needs {field}: {describe_field(model, field)}")
        elif field in model.model_fields:
            parts.append(
                f"{op.name}: {field}={err.get('input')!r} is not allowed ({err.get('msg')}); "
                f"{field} must be {describe_field(model, field)}"
            )
        else:
            parts.append(f"{op.name}: {err.get('msg')}")
    return "; ".join(parts)


def validate_params(op: Op, params: dict[str, Any]) -> Params:
    try:
        return op.Params.model_validate(params)
    except ValidationError as e:
        raise ConfigError(_validation_message(op, e)) from None


def resolve(spec: PerturbationSpec | dict[str, Any]) -> tuple[Op, Params]:
    """The registered op and its validated parameters (defaults filled in)."""
    if not isinstance(spec, PerturbationSpec):
        try:
            spec = PerturbationSpec.model_validate(spec)
        except ValidationError as e:
            raise ConfigError(
                f"not a perturbation spec: {e.errors()[0].get('msg')}; write {{'name': 'reverse', 'params': {{}}}}"
            ) from None
    op = get_op(spec.name)
    return op, validate_params(op, dict(spec.params))


def params_json(params: Params) -> dict[str, Any]:
    return params.model_dump(mode="json")


def canonical_spec(spec: PerturbationSpec | dict[str, Any]) -> PerturbationSpec:
    """The spec with every parameter present (defaults filled in, types normalised): equal inputs, equal ids."""
    op, p = resolve(spec)
    return PerturbationSpec(name=op.name, params=params_json(p))
