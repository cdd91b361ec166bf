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
else is a plain string (``mode=self_play``). A field given twice in one source (a spec, the
``--set`` options, one table of the file) is an error rather than a silent last-one-wins.
Every field is checked against the type its dataclass declares and the dataclass's own checks
run, so a typo or a bad value is a one-line :class:`SettingsError` naming the label, the field
and what is valid, before any training.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nashzoo.agents.config_fields import ConfigFieldError, coerce_fields
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
    try:
        items = split_specs(args) if args.strip() else []
    except SettingsError:
        raise SettingsError(
            f"learner spec {spec!r}: unbalanced brackets/quotes or an empty entry between commas"
        ) from None
    for item in items:
        field, sep, value = item.partition("=")
        if not sep or not field.strip():
            # a bare value after a comma: the rest of a list written without brackets
            value_only = not sep and not isinstance(parse_value(item), str)
            hint = "; a list value needs brackets: field=[64, 64]" if value_only else ""
            raise SettingsError(f"learner spec {spec!r}: {item!r} is not field=value{hint}")
        if field.strip() in overrides:
            raise SettingsError(
                f"learner spec {spec!r}: {field.strip()!r} is given twice; give it once"
            )
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
        table = out.setdefault(label, {})
        if field in table:
            raise SettingsError(
                f"--set {label}.{field} is given twice ({table[field]!r} and "
                f"{parse_value(value)!r}); give it once"
            )
        table[field] = parse_value(value)
    return out


# --- files -------------------------------------------------------------------------------------
def load_settings_file(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The ``learners`` table of a YAML or TOML file: ``{label: {field: value}}`` (an
    ``algorithm`` entry names the registered learner a label runs).

    The text is UTF-8 (a byte-order mark is allowed, as editors on Windows write one). YAML
    reads ``1e-3`` as a number (YAML 1.2; PyYAML's YAML 1.1 would read a string), and a key
    written twice in one table is an error in both formats (YAML would keep the last one
    silently)."""
    file = Path(path)
    path = one_line(str(path))  # as messages show it (the path may come from a damaged file)
    if file.is_dir():
        raise SettingsError(f"--config {path}: is a folder; give the YAML or TOML file in it")
    if not file.is_file():
        raise SettingsError(f"--config {path}: no such file")
    suffix = file.suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml"):
        raise SettingsError(f"--config {path}: expected a .yaml, .yml or .toml file")
    try:
        text = file.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise SettingsError(
            f"--config {path}: not UTF-8 text (byte {err.object[err.start]:#04x} at offset "
            f"{err.start}); save the file as UTF-8"
        ) from None
    except OSError as err:
        raise SettingsError(f"--config {path}: cannot read it ({err.strerror or err})") from None
    parse = _parse_yaml if suffix in (".yaml", ".yml") else _parse_toml
    try:
        data = parse(text)
    except SettingsError as err:
        raise SettingsError(f"--config {path}: {err}") from None
    except Exception as err:  # the parsers' own errors name line and column
        msg = " ".join(str(err).split())
        raise SettingsError(f"--config {path}: not valid {suffix[1:].upper()}: {msg}") from None
    return _learners_table(data, path)


def _learners_table(data: Any, path: str) -> dict[str, dict[str, Any]]:
    """The ``learners`` table of a parsed file, checked for shape."""
    data = {} if data is None else data
    if not isinstance(data, dict) or set(data) - {"learners"}:
        extra = sorted(map(str, set(data) - {"learners"})) if isinstance(data, dict) else data
        raise SettingsError(f"--config {path}: expected only a 'learners' table, found {extra}")
    learners = data.get("learners") or {}
    if not isinstance(learners, dict) or not all(isinstance(v, dict) for v in learners.values()):
        raise SettingsError(
            f"--config {path}: 'learners' must map each learner label to a table of fields"
        )
    return {str(k): dict(v) for k, v in learners.items()}


_YAML_EXPONENT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
_YAML_MERGE = "tag:yaml.org,2002:merge"


def _parse_yaml(text: str) -> Any:
    """YAML with PyYAML's safe loader, YAML 1.2 floats (``1e-3``, ``5E2``) and duplicate keys
    refused."""
    try:
        import yaml
    except ImportError:
        raise SettingsError("YAML files need PyYAML (pip install 'nashzoo[config]')") from None

    class Loader(yaml.SafeLoader):
        """The safe loader, stricter about keys and YAML 1.2 about exponents."""

    def mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == _YAML_MERGE:
                continue  # merged keys (<<: *anchor) may be overridden: that is their use
            key = loader.construct_object(key_node, deep=True)
            try:
                twice = key in seen
            except TypeError:
                continue  # an unhashable key: the loader's own error names it
            if twice:
                line = key_node.start_mark.line + 1
                raise SettingsError(f"{key!r} is given twice in one table (line {line})")
            seen.add(key)
        return dict(loader.construct_mapping(node, deep=deep))

    def exponent_float(loader: Any, node: Any) -> float:
        return float(loader.construct_scalar(node).replace("_", ""))

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    Loader.add_constructor("tag:nashzoo,2026:exponent", exponent_float)
    Loader.add_implicit_resolver("tag:nashzoo,2026:exponent", _YAML_EXPONENT, None)
    return yaml.load(text, Loader=Loader)


def _parse_toml(text: str) -> Any:
    """TOML with the standard library's reader (tomli before Python 3.11)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        try:
            import tomli as tomllib
        except ImportError:
            raise SettingsError(
                "TOML files need Python 3.11+ or tomli (pip install 'nashzoo[config]')"
            ) from None
    return tomllib.loads(text)


# --- checking ----------------------------------------------------------------------------------
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
    fields = [f.name for f in dataclasses.fields(cls.Config)]
    for name in overrides:
        if name not in fields:
            who = label if label == algorithm else f"{label} ({algorithm})"
            valid = f"valid: {', '.join(fields)}" if fields else "it has no settings"
            raise SettingsError(f"{who} has no setting {name!r}; {valid}")
    try:
        out = coerce_fields(cls.Config, overrides, label)
    except ConfigFieldError as err:
        raise SettingsError(str(err)) from None
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


def _check_not_renamed(label: str, algorithm: str, config_file: Any) -> None:
    """Refuse a file that runs another algorithm under a registered learner's name
    (``cfr_plus: {algorithm: xfp}``): every table and plot would show xfp's numbers as
    cfr_plus's."""
    from nashzoo.agents.registry import learner_names

    if label != algorithm and label in learner_names():
        raise SettingsError(
            f"--config {one_line(str(config_file))}: label {label!r} is a learner's name but "
            f"runs algorithm {algorithm!r}; give it a label of its own (e.g. "
            f"{algorithm}_{label}:) or remove its 'algorithm' entry"
        )


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
            _check_not_renamed(label, algorithm, config_file)
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
                f"(its learners: {', '.join(out)}){_stray_hint(source, stray, out)}"
            )
    return out


def _stray_hint(source: str, stray: list[str], used: dict[str, LearnerSetting]) -> str:
    """What settings for labels the run does not use most likely meant: an algorithm that runs
    here under labels (``--set dcfr.alpha=3`` with ``x=dcfr``: settings name labels), a
    misspelt label (``--set cfr_pluss.x=1``), or, in a config file, labels to add to the
    run's learners."""
    by_algorithm: dict[str, list[str]] = {}
    for setting in used.values():
        by_algorithm.setdefault(setting.algorithm, []).append(setting.label)
    hints = []
    for name in stray:
        if name in by_algorithm:
            labels = by_algorithm[name]
            hints.append(
                f"settings name a learner's label, and {name} runs here as {', '.join(labels)}: "
                f"set {' and '.join(f'{label}.FIELD' for label in labels)}"
            )
        elif close := difflib.get_close_matches(name, list(used), n=1):
            hints.append(f"{name}: did you mean {close[0]}?")
    if hints:
        return "; " + "; ".join(hints)
    if source == "--config":
        them = "it" if len(stray) == 1 else "them"
        return (
            f"; to run {them}, add {them} to the learners (race: --learners "
            f"{','.join([*used, *stray])}; train: --learner {stray[0]}), else leave {them} out "
            "of the file"
        )
    return ""
