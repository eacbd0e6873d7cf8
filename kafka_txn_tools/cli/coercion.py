"""Typer's parameter coercion, without importing pydantic for the plain values this CLI takes.

typer 0.29 coerces every non-flag parameter through a pydantic ``TypeAdapter``, and importing pydantic
costs about 0.1 s: a seventh of a whole ``find-hanging --all`` against a 10,000-partition cluster, paid on
every command for values that are strings, integers, paths and choices. ``install()`` puts a quick path in
front of typer's: a value of one of those kinds that converts cleanly is converted here, with typer's own
helpers where it has them; anything else (another type, a range, a parser, a value that does not convert)
goes to typer's own coercion, so every result and every error message stays typer's.

The seam is typer's ``build_runtime_param`` as ``typer.core`` names it (typer is pinned below 0.30 in
pyproject.toml). ``tests/tools/cli/test_coercion.py`` checks that seam and compares both paths value by
value.

Threading: ``install()`` runs once, at import of the application, before any command is parsed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import typer.core
from typer import _coercion, _param_types
from typer._click import Context

Convert = Callable[[Any, Any, Context], Any]

_INTEGER = re.compile(r"-?[0-9]+")  # what pydantic's lax int reads the same way as int(); the rest goes to typer
_typers_own = _coercion.build_runtime_param


class NotQuick(Exception):
    """The quick path does not take this value: typer's own coercion decides."""


@dataclass(frozen=True)
class QuickRuntimeParam(_coercion.RuntimeParam):
    """Converts the values ``convert`` takes; hands every other value to typer's coercion, built for that value
    (a refusal or an unusual value: rare, so not kept)."""

    descriptor: _coercion.TypeDescriptor
    convert: Convert

    def _coerce_value(self, value: Any, param: Any, ctx: Context) -> Any:
        try:
            return self.convert(value, param, ctx)
        except NotQuick:
            return _typers_own(self.descriptor)._coerce_value(value, param=param, ctx=ctx)


def _text(value: Any, param: Any, ctx: Context) -> Any:
    if isinstance(value, str):
        return value
    raise NotQuick


def _flag(value: Any, param: Any, ctx: Context) -> Any:
    if isinstance(value, bool):
        return value
    raise NotQuick  # "yes", "on", "1"... : typer's (pydantic's) reading


def _integer(value: Any, param: Any, ctx: Context) -> Any:
    if type(value) is int:
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    raise NotQuick


def _integer_within(low: float | None, high: float | None) -> Convert:
    def convert(value: Any, param: Any, ctx: Context) -> Any:
        number = _integer(value, param, ctx)
        if (low is not None and number < low) or (high is not None and number > high):
            raise NotQuick  # typer words the refusal (or clamps)
        return number

    return convert


def _path_of(descriptor: _coercion.TypeDescriptor) -> Convert | None:
    info = descriptor.parameter_info
    kind = info.path_type or descriptor.annotation
    if not (isinstance(kind, type) and issubclass(kind, Path)):
        return None

    def convert(value: Any, param: Any, ctx: Context) -> Any:
        if isinstance(value, str) and value:
            value = kind(value)  # what pydantic makes of a non-empty string for a Path
        if not isinstance(value, kind):
            raise NotQuick
        return _param_types.coerce_cli_path(value, info, path_type=kind, param=param, ctx=ctx)

    return convert


def _choice_of(descriptor: _coercion.TypeDescriptor) -> Convert | None:
    choices = descriptor.choices
    if choices is None or not all(isinstance(choice, Enum) for choice in choices):
        return None

    def convert(value: Any, param: Any, ctx: Context) -> Any:
        try:
            return _param_types.coerce_cli_choice(value, choices=choices,
                                                  case_sensitive=descriptor.case_sensitive, ctx=ctx)
        except ValueError:
            raise NotQuick from None  # typer words the refusal

    return convert


def _leaf(descriptor: _coercion.TypeDescriptor) -> Convert | None:
    """The quick conversion of one value of the descriptor's type, or None where typer's is needed."""
    info = descriptor.parameter_info
    if info.parser is not None or descriptor.is_file:
        return None
    if descriptor.is_path:
        return _path_of(descriptor)
    if descriptor.is_choice:
        return _choice_of(descriptor)
    if descriptor.annotation is str:
        return _text
    if descriptor.annotation is bool:
        return _flag
    if descriptor.annotation is int:
        return _integer_within(info.min, info.max) if descriptor.is_ranged else _integer
    return None


def _list_of(descriptor: _coercion.TypeDescriptor) -> Convert | None:
    (item,) = _coercion.get_args(descriptor.annotation) or (None,)
    one = _leaf(_coercion.TypeDescriptor(annotation=item, parameter_info=descriptor.parameter_info,
                                         file_annotation=None)) if item is not None else None
    if one is None:
        return None

    def convert(value: Any, param: Any, ctx: Context) -> Any:
        if not isinstance(value, (list, tuple)):
            value = [value]
        return [one(item, param, ctx) for item in value]

    return convert


def quick_build_runtime_param(descriptor: _coercion.TypeDescriptor) -> _coercion.RuntimeParam:
    """typer's ``build_runtime_param``, with the quick path in front where the type allows it."""
    convert = _list_of(descriptor) if descriptor.is_list else _leaf(descriptor)
    if convert is None:
        return _typers_own(descriptor)
    return QuickRuntimeParam(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation,
                             descriptor=descriptor, convert=convert)


def install() -> None:
    """Route typer's parameters through the quick path (idempotent)."""
    typer.core.build_runtime_param = quick_build_runtime_param
