"""Config field values checked against the types a learner's config dataclass declares.

One check for every way a setting arrives (a ``config={...}`` dict or a config instance in
Python, a ``--config`` file, ``--set``, ``NAME(FIELD=VALUE)``), so the same value gives the same
config whichever way it came: a float field takes an int as a float, a tuple field takes a list
as a tuple, numpy scalars become Python numbers, and a bool is never taken for a number
(``True`` for a learning rate is a mistake, not ``1.0``).
"""

from __future__ import annotations

import dataclasses
import numbers
import types
import typing
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ConfigFieldError",
    "coerce_field",
    "coerce_fields",
    "coerce_instance",
    "field_hints",
]


class ConfigFieldError(ValueError):
    """A config value of the wrong type (the message names the field and what is valid)."""


def field_hints(config_cls: type) -> dict[str, Any]:
    """The declared type of each field of ``config_cls`` (``Any`` where it cannot be read,
    e.g. a plugin's annotation that names a type its module imports only for type checkers)."""
    if not dataclasses.is_dataclass(config_cls):
        return {}
    try:
        hints = typing.get_type_hints(config_cls)
    except Exception:  # an unresolvable annotation: the dataclass's own checks still run
        hints = {}
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(config_cls)}


def coerce_fields(config_cls: type, values: Mapping[str, Any], who: str) -> dict[str, Any]:
    """``values`` (known fields of ``config_cls``) as their declared types; a
    :class:`ConfigFieldError` names ``who.FIELD`` for the first that does not fit."""
    hints = field_hints(config_cls)
    return {
        name: coerce_field(value, hints.get(name, Any), f"{who}.{name}")
        for name, value in values.items()
    }


def coerce_instance(config: Any, who: str) -> Any:
    """A config dataclass instance checked as a dict of its fields is (:func:`coerce_fields`,
    the same messages): ``config`` itself where every field already holds its declared type,
    else a copy (:func:`dataclasses.replace`, so a frozen one too) with the coerced values, so an
    instance and the equivalent dict give equal configs (an int for a float field is stored as
    a float). Fields not set through ``__init__`` are left to the dataclass."""
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        return config
    given = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.init}
    values = coerce_fields(type(config), given, who)
    changed = {name: v for name, v in values.items() if not _same(v, given[name])}
    return dataclasses.replace(config, **changed) if changed else config


def _same(new: Any, old: Any) -> bool:
    """Whether a coerced value is the value given: the same object, or equal with the same
    type all the way down a tuple (``1.0`` for ``1``, or ``(1.0,)`` for ``(1,)``, is not)."""
    if new is old:
        return True
    if type(new) is not type(old):
        return False
    if isinstance(new, tuple):
        return len(new) == len(old) and all(_same(a, b) for a, b in zip(new, old, strict=True))
    return bool(new == old)


def describe(hint: Any, *, listing: bool = False) -> str:
    """A declared type as text, the one place types are put into words: as the messages name it
    (``a list of int``, ``one of 'a', 'b'``, ``int or None``) or, with ``listing``, as the
    learners' settings are listed (``list of int``, ``'a' | 'b'``, ``int | None``)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is type(None):
        return "None"
    if hint is Any:
        return "any"
    if origin is typing.Literal:
        values = [repr(a) for a in args]
        return " | ".join(values) if listing else "one of " + ", ".join(values)
    if origin in (typing.Union, types.UnionType):
        return (" | " if listing else " or ").join(describe(a, listing=listing) for a in args)
    if origin is tuple:
        a_list = "list" if listing else "a list"
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            return f"{a_list} of {describe(args[0], listing=listing) if args else 'values'}"
        items = ", ".join(describe(a, listing=listing) for a in args)
        return f"{a_list} of {len(args)} ({items})"
    return getattr(hint, "__name__", str(hint)).replace("typing.", "")


def _kind(value: Any) -> str:
    """What ``value`` is, for a message: ``a list``, ``an int``, ``a str``."""
    name = "list" if isinstance(value, list) else type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def _wrong(value: Any, hint: Any, where: str) -> ConfigFieldError:
    return ConfigFieldError(f"{where}: expected {describe(hint)}, got {value!r} ({_kind(value)})")


def coerce_field(value: Any, hint: Any, where: str) -> Any:
    """``value`` as the declared type ``hint`` (ints for floats, lists for tuples, numpy
    scalars as Python numbers), or a :class:`ConfigFieldError` naming ``where``. A type this
    check does not know (a dict, a plugin's own class) passes unchanged to the dataclass."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return _coerce_union(value, hint, args, where)
    if origin is typing.Literal:
        if not isinstance(value, bool) and value in args:
            return value
        raise _wrong(value, hint, where)
    if origin is tuple:
        return _coerce_tuple(value, hint, args, where)
    if hint in _SCALARS:
        fits, plain = _SCALARS[hint]
        if not fits(value):
            raise _wrong(value, hint, where)
        try:
            return plain(value)
        except OverflowError:  # an int beyond a float's range (10**400)
            digits = int(int(value).bit_length() * 0.30103)
            raise ConfigFieldError(
                f"{where}: expected float, got an integer of about 10**{digits}, beyond a "
                "float's range"
            ) from None
    return value


def _is_bool(value: Any) -> bool:
    """A Python or numpy bool (never taken for a number)."""
    return isinstance(value, bool) or type(value).__name__ == "bool_"


_SCALARS: dict[Any, tuple[Any, Any]] = {
    # declared type: (which values it takes, the plain Python value stored)
    bool: (lambda v: _is_bool(v), bool),
    int: (lambda v: isinstance(v, numbers.Integral) and not _is_bool(v), int),
    float: (lambda v: isinstance(v, numbers.Real) and not _is_bool(v), float),
    str: (lambda v: isinstance(v, str), str),
}


def _coerce_union(value: Any, hint: Any, args: tuple[Any, ...], where: str) -> Any:
    """The first member of a union that takes ``value``; with one member besides ``None``,
    that member's own message (it names the item of a list that does not fit)."""
    if value is None and type(None) in args:
        return None
    members = [a for a in args if a is not type(None)]
    for arg in members:
        try:
            return coerce_field(value, arg, where)
        except ConfigFieldError as err:
            if len(members) == 1 and isinstance(value, (list, tuple)):
                raise ConfigFieldError(f"{err}; {where} takes {describe(hint)}") from None
    raise _wrong(value, hint, where)


def _coerce_tuple(value: Any, hint: Any, args: tuple[Any, ...], where: str) -> tuple[Any, ...]:
    """A list or tuple as a tuple of the declared items (``tuple[int, ...]``: any length;
    ``tuple[int, str]``: exactly these); a 1-d numpy array as its items."""
    if getattr(value, "ndim", None) == 1 and hasattr(value, "tolist"):
        value = value.tolist()  # np.array([64, 64]) from a sweep: plain numbers
    if not isinstance(value, (list, tuple)):
        raise _wrong(value, hint, where)
    if not args or (len(args) == 2 and args[1] is Ellipsis):
        item = args[0] if args else Any
        return tuple(coerce_field(v, item, f"{where}[{i}]") for i, v in enumerate(value))
    if len(value) != len(args):
        raise _wrong(value, hint, where)
    pairs = enumerate(zip(value, args, strict=True))
    return tuple(coerce_field(v, a, f"{where}[{i}]") for i, (v, a) in pairs)
