"""Learner hyperparameters from files and the command line, checked against each learner's
config dataclass before anything runs.

Three sources, later ones winning field by field:

1. ``--config FILE`` (YAML ``.yaml``/``.yml`` or TOML ``.toml``): a ``learners`` table of
   labels, each with config fields and optionally ``algorithm`` (the registered learner it
   runs; default: the label itself)::

       learners:
         nfsp:
           learning_rate: 0.005
         nfsp_small:            # a second NFSP under its own label
           algorithm: nfsp
           hidden_sizes: [32]

2. learner specs where learners are named (``--learner``, ``--opponent``, ``duel``'s seats,
   ``race --learners``): ``nfsp``, ``nfsp(learning_rate=0.005)`` or
   ``nfsp_small=nfsp(hidden_sizes=[32], learning_rate=0.005)``;
3. ``--set LABEL.FIELD=VALUE`` (repeatable): ``--set nfsp_small.batch_size=64``.

Values are JSON (``0.01``, ``true``, ``[32, 32]``, ``"text"``) or Python literals; anything
else is a plain string (``mode=self_play``). Every field is checked against the type its
dataclass declares and the dataclass's own checks run, so a typo or a bad value is a one-line
:class:`SettingsError` naming the label, the field and what is valid, before any training.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import sys
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nashzoo.agents.registry import learner_class
from nashzoo.games.base import one_line

__all__ = [
    "LearnerSetting",
    "SettingsError",
    "load_settings_file",
    "parse_learner_spec",
    "parse_set",
    "parse_value",
    "resolve_settings",
    "seat_settings",
    "split_specs",
]

_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")


class SettingsError(ValueError):
    """A learner setting that cannot be used (the message says which and why, in one line)."""


@dataclasses.dataclass(frozen=True)
class LearnerSetting:
    """One labelled learner: the registered ``algorithm`` it runs and the config fields set
    (the rest keep the dataclass defaults)."""

    label: str
    algorithm: str
    overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def config(self) -> Any:
        """The learner's config dataclass with the overrides applied (validated)."""
        cls = learner_class(self.algorithm)
        try:
            return cls.coerce_config(dict(self.overrides))  # fields checked, required ones named
        except (TypeError, ValueError) as err:
            text = str(err)  # configs name their learner already ("os_mccfr: ...") or not
            prefix = (
                ""
                if text.startswith((f"{self.label}:", f"{self.algorithm}:"))
                else (f"{self.label}: ")
            )
            raise SettingsError(f"{prefix}{text}") from None

    def full_config(self) -> dict[str, Any]:
        """Every field of the config, defaults included, as plain JSON values."""
        return self.config().to_dict()


# --- values ------------------------------------------------------------------------------------
def parse_value(text: str) -> Any:
    """A command-line value: JSON, else a Python literal, else the text itself."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def split_specs(text: str) -> list[str]:
    """Split a comma-separated list at the commas outside brackets and quotes:
    ``"cfr,nfsp_small=nfsp(hidden_sizes=[32, 32])"`` -> two specs."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    specs = [p.strip() for p in parts]
    if depth != 0 or quote or any(not p for p in specs):
        raise SettingsError(
            f"cannot read the learner list {text!r}: unbalanced brackets/quotes or an empty entry"
        )
    return specs


def parse_learner_spec(spec: str) -> tuple[str, str, dict[str, Any]]:
    """``"label=algorithm(field=value, ...)"`` -> ``(label, algorithm, overrides)``; the label
    and the parentheses are optional (``"nfsp"``, ``"nfsp(learning_rate=0.01)"``)."""
    text = spec.strip()
    label, algorithm, args = "", text, ""
    head = text.split("(", 1)[0]
    if "=" in head:
        label, _, text = text.partition("=")
        label, algorithm = label.strip(), text.strip()
    if "(" in algorithm:
        if not algorithm.endswith(")"):
            raise SettingsError(f"learner spec {spec!r}: write name(field=value, ...)")
        algorithm, _, args = algorithm[:-1].partition("(")
    algorithm = algorithm.strip()
    label = label or algorithm
    for name in (label, algorithm):
        if not _LABEL.match(name):
            raise SettingsError(
                f"learner spec {spec!r}: {name!r} is not a name (letters, digits, '_', '.', '-')"
            )
    overrides: dict[str, Any] = {}
    for item in split_specs(args) if args.strip() else []:
        field, sep, value = item.partition("=")
        if not sep or not field.strip():
            raise SettingsError(f"learner spec {spec!r}: {item!r} is not field=value")
        overrides[field.strip()] = parse_value(value)
    return label, algorithm, overrides


def parse_set(items: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``["nfsp.learning_rate=0.01", ...]`` -> ``{"nfsp": {"learning_rate": 0.01}}``."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        label, dot, field = key.strip().rpartition(".")
        if not sep or not dot or not label or not field:
            raise SettingsError(f"--set {item!r}: write --set LEARNER.FIELD=VALUE")
        out.setdefault(label, {})[field] = parse_value(value)
    return out


# --- files -------------------------------------------------------------------------------------
def load_settings_file(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The ``learners`` table of a YAML or TOML file: ``{label: {field: value}}`` (an
    ``algorithm`` entry names the registered learner a label runs)."""
    file = Path(path)
    path = one_line(str(path))  # as messages show it (the path may come from a damaged file)
    if not file.is_file():
        raise SettingsError(f"--config {path}: no such file")
    suffix = file.suffix.lower()
    try:
        if suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError:
                raise SettingsError(
                    "--config: YAML files need PyYAML (pip install 'nashzoo[config]')"
                ) from None
            data = yaml.safe_load(file.read_text())
        elif suffix == ".toml":
            if sys.version_info >= (3, 11):
                import tomllib
            else:
                try:
                    import tomli as tomllib
                except ImportError:
                    raise SettingsError(
                        "--config: TOML files need Python 3.11+ or tomli "
                        "(pip install 'nashzoo[config]')"
                    ) from None
            data = tomllib.loads(file.read_text())
        else:
            raise SettingsError(f"--config {path}: expected a .yaml, .yml or .toml file")
    except SettingsError:
        raise
    except Exception as err:  # the parsers' own errors name line and column
        msg = " ".join(str(err).split())
        raise SettingsError(f"--config {path}: not valid {suffix[1:].upper()}: {msg}") from None
    data = {} if data is None else data
    if not isinstance(data, dict) or set(data) - {"learners"}:
        extra = sorted(set(data) - {"learners"}) if isinstance(data, dict) else data
        raise SettingsError(f"--config {path}: expected only a 'learners' table, found {extra}")
    learners = data.get("learners") or {}
    if not isinstance(learners, dict) or not all(isinstance(v, dict) for v in learners.values()):
        raise SettingsError(
            f"--config {path}: 'learners' must map each learner label to a table of fields"
        )
    return {str(k): dict(v) for k, v in learners.items()}


# --- checking ----------------------------------------------------------------------------------
def _describe(hint: Any) -> str:
    if typing.get_origin(hint) is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    return getattr(hint, "__name__", str(hint)).replace("typing.", "")


def _kind(value: Any) -> str:
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"


def _coerce(value: Any, hint: Any, where: str) -> Any:
    """``value`` as the declared type ``hint`` (ints for floats, lists for tuples), or a
    SettingsError naming ``where``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arg in (a for a in args if a is not type(None)):
            try:
                return _coerce(value, arg, where)
            except SettingsError:
                continue
        expected = " or ".join(map(_describe, args))
        raise SettingsError(f"{where}: expected {expected}, got {value!r} ({_kind(value)})")
    if origin is typing.Literal:
        if value in args:
            return value
        raise SettingsError(f"{where}: expected {_describe(hint)}, got {value!r} ({_kind(value)})")
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise SettingsError(f"{where}: expected a list, got {value!r} ({_kind(value)})")
        item = args[0] if args else Any
        return tuple(_coerce(v, item, where) for v in value)
    ok = {
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
        str: isinstance(value, str),
    }
    if hint in ok:
        if not ok[hint]:
            raise SettingsError(
                f"{where}: expected {hint.__name__}, got {value!r} ({_kind(value)})"
            )
        return float(value) if hint is float else value
    return value


def check_overrides(label: str, algorithm: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Overrides checked field by field against ``algorithm``'s config dataclass."""
    where = "" if label == algorithm else f"{label}: "  # the error names the algorithm itself
    try:
        cls = learner_class(algorithm)
    except ImportError as err:
        if not overrides:
            return {}  # a missing optional extra: the race skips the learner and says why
        raise SettingsError(f"{where}{err}") from None
    except ValueError as err:
        raise SettingsError(f"{where}{err}") from None
    hints = typing.get_type_hints(cls.Config)
    fields = [f.name for f in dataclasses.fields(cls.Config)]
    out = {}
    for name, value in overrides.items():
        if name not in fields:
            who = label if label == algorithm else f"{label} ({algorithm})"
            valid = f"valid: {', '.join(fields)}" if fields else "it has no settings"
            raise SettingsError(f"{who} has no setting {name!r}; {valid}")
        out[name] = _coerce(value, hints.get(name, Any), f"{label}.{name}")
    setting = LearnerSetting(label, algorithm, out)
    setting.config()  # the dataclass's own checks
    return out


def seat_settings(
    seat_specs: Sequence[str],
    *,
    config_file: str | os.PathLike[str] | None = None,
    sets: Iterable[str] = (),
) -> list[LearnerSetting]:
    """:func:`resolve_settings` for one learner spec per seat, returned per seat (a self-play
    run names the same learner twice)."""
    settings = resolve_settings(seat_specs, config_file=config_file, sets=sets)
    return [settings[parse_learner_spec(spec)[0]] for spec in seat_specs]


def resolve_settings(
    specs: Sequence[str],
    *,
    config_file: str | os.PathLike[str] | None = None,
    sets: Iterable[str] = (),
) -> dict[str, LearnerSetting]:
    """Every learner named in ``specs`` with its algorithm and checked overrides (file, then
    the spec's own, then ``--set``), keyed by label in the order given.

    A file or ``--set`` entry for a label that no spec names is an error (a typo would
    otherwise be ignored silently).
    """
    from_file = load_settings_file(config_file) if config_file is not None else {}
    from_set = parse_set(sets)
    out: dict[str, LearnerSetting] = {}
    first_spec: dict[str, str] = {}
    for spec in specs:
        label, algorithm, inline = parse_learner_spec(spec)
        filed = dict(from_file.get(label, {}))
        filed_algorithm = filed.pop("algorithm", None)
        if "=" not in spec.split("(", 1)[0] and filed_algorithm is not None:
            algorithm = str(filed_algorithm)  # a bare label takes its algorithm from the file
        if label in out:
            # The same spec again (self-play names it for both seats) or the bare label is the
            # same setting; another spec under one label would silently lose one of them.
            if spec.strip() not in (label, first_spec[label]):
                raise SettingsError(f"learner {label!r} is given twice; use a label per setting")
            continue
        first_spec[label] = spec.strip()
        merged = {**filed, **inline, **from_set.get(label, {})}
        out[label] = LearnerSetting(label, algorithm, check_overrides(label, algorithm, merged))
    for source, table in (("--config", from_file), ("--set", from_set)):
        stray = sorted(set(table) - set(out))
        if stray:
            raise SettingsError(
                f"{source} sets {', '.join(stray)}, which this run does not use "
                f"(its learners: {', '.join(out)})"
            )
    return out
