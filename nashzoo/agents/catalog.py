"""What each registered learner is, for ``nashzoo learners``: its one-line description, its kind,
the optional extra it needs, and the fields of its config as ``--set LEARNER.FIELD=VALUE`` and
``NAME(FIELD=VALUE, ...)`` take them.

Listing the learners imports nothing a learner needs: a learner registered lazily (its module
needs torch or Stable-Baselines3, :func:`~nashzoo.agents.registry.register_lazy`) is described
from its module's source, read as text (its class's docstring), and from the package's metadata
(which packages its extra installs, and whether they are installed), so ``nashzoo learners``
takes a fraction of a second without torch. Its config fields (:func:`config_fields`) need its
class, so they import its module (a missing extra is the usual one-line ImportError naming it).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import inspect
import re
from importlib import metadata
from typing import Any

from nashzoo.agents.config_fields import describe, field_hints
from nashzoo.agents.registry import _LAZY, _REGISTRY, learner_class, learner_names

REQUIRED = "(required)"
"""How a config field without a default shows its default: it must be given."""

KIND_OF_EXTRA_PACKAGE = {"torch": "neural"}
"""A learner not yet imported whose extra installs one of these is of that kind (nfsp,
deep_cfr, ppo, dqn and mmd_ppo are declared lazily with an extra that installs torch)."""


@dataclasses.dataclass(frozen=True)
class LearnerFacts:
    """One registered learner, as ``nashzoo learners`` lists it.

    Attributes:
        name: the registered name (what ``--learner``, ``--learners`` and ``make_learner`` take).
        summary: the first sentence of its class docstring, on one line (``""``: none).
        kind: ``"tabular"``, ``"sampling"``, ``"neural"``, ``"fixed"`` or ``""`` (not said),
            as :attr:`~nashzoo.agents.base.Learner.kind` says.
        extra: the optional extra it needs (``pip install 'nashzoo[EXTRA]'``), or ``None``.
        packages: the packages that extra installs (``()`` without an extra, or where the
            package's metadata cannot be read).
        installed: whether those packages are installed here (True without an extra).
        learns: whether its strategy changes with training (``None``: not known without
            importing its module).
        module: the module that defines it.
    """

    name: str
    summary: str
    kind: str
    extra: str | None
    packages: tuple[str, ...]
    installed: bool
    learns: bool | None
    module: str

    def needs(self) -> str:
        """What it needs beyond numpy, as the table shows it: ``"torch (nashzoo[neural])"``."""
        if self.extra is None:
            return "-"
        install = f"nashzoo[{self.extra}]"
        return f"{', '.join(self.packages)} ({install})" if self.packages else install

    def to_dict(self) -> dict[str, Any]:
        """The facts as plain JSON values, with what it needs spelt out."""
        return {**dataclasses.asdict(self), "packages": list(self.packages)}


@dataclasses.dataclass(frozen=True)
class ConfigField:
    """One field of a learner's config, as ``--set`` and ``NAME(FIELD=VALUE)`` take it.

    Attributes:
        name: the field name.
        type: the type the value is checked against (``nashzoo.train.settings``), written as
            the command line takes it: ``float`` (an integer is accepted too), ``list of int``
            (a tuple field), ``'a' | 'b'`` (one of these strings), ``int | None``.
        default: its default as a value to type (a tuple as a list), or :data:`REQUIRED`.
        doc: its entry in the config's ``Attributes:`` docstring section, on one line, or
            ``""`` where the config documents none.
    """

    name: str
    type: str
    default: str
    doc: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def learner_catalog() -> list[LearnerFacts]:
    """Every registered learner (:func:`~nashzoo.agents.registry.learner_names`), built-in,
    lazily registered and plugins', by name."""
    return [learner_facts(name) for name in learner_names()]


def learner_facts(name: str) -> LearnerFacts:
    """The facts of learner ``name``; a learner registered lazily whose module is not imported
    yet is read from its source, without importing it (ValueError for an unknown name, listing
    the valid ones)."""
    extra = _LAZY[name][1] if name in _LAZY else None
    packages = _extra_packages(extra) if extra is not None else ()
    installed = all(_installed(package) for package in packages)
    cls = _REGISTRY.get(name)
    if cls is not None:
        summary = _summary(inspect.getdoc(cls))
        return LearnerFacts(
            name, summary, cls.kind, extra, packages, installed, cls.learns, cls.__module__
        )
    if name not in _LAZY:
        learner_class(name)  # raises the registry's error naming the valid learners
    module = _LAZY[name][0]
    kind = next((KIND_OF_EXTRA_PACKAGE[p] for p in packages if p in KIND_OF_EXTRA_PACKAGE), "")
    doc = _docstring_in_source(module, name)
    return LearnerFacts(name, _summary(doc), kind, extra, packages, installed, None, module)


def config_fields(name: str) -> list[ConfigField]:
    """The fields of learner ``name``'s config, in declaration order: exactly the fields
    ``--set NAME.FIELD=VALUE``, ``NAME(FIELD=VALUE)`` and a ``--config`` file's table accept,
    each with the type its value is checked against. Imports the learner's module (a missing
    extra is an ImportError naming it; an unknown name a ValueError listing the valid ones)."""
    config = learner_class(name).Config
    hints = field_hints(config)  # Any where a plugin's annotation cannot be resolved
    docs = attribute_docs(config)
    return [
        ConfigField(
            field.name,
            describe(hints.get(field.name, Any), listing=True),
            _default_text(field),
            docs.get(field.name, ""),
        )
        for field in dataclasses.fields(config)
    ]


# --- text --------------------------------------------------------------------------------------
_MODULE_POINTER = re.compile(
    r"\s*\((?:see|algorithm in) the module doc(?:string|s)\)|;\s*see the module doc(?:string|s)"
)


def _summary(doc: str | None) -> str:
    """The first sentence of a docstring, on one line, without its pointer to the module docs
    and with ``code`` marks dropped."""
    if not doc:
        return ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    first = _plain(_MODULE_POINTER.sub("", first))
    end = re.search(r"(?<=[a-z0-9)])\.\s+(?=[A-Z])", first)  # not "et al. 2007"
    return first[: end.start() + 1] if end else first


def attribute_docs(cls: type) -> dict[str, str]:
    """Field name -> its entry in the ``Attributes:`` section of the class docstrings of
    ``cls`` and its bases (Google style; a subclass's entry wins), each on one line."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        docs.update(_attributes_section(inspect.cleandoc(klass.__dict__.get("__doc__") or "")))
    return docs


def _attributes_section(text: str) -> dict[str, str]:
    """The entries of the ``Attributes:`` section of one cleaned docstring."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Attributes:"), None)
    if start is None:
        return {}
    indent = len(lines[start]) - len(lines[start].lstrip())
    entries: dict[str, list[str]] = {}
    entry_indent: int | None = None
    current: list[str] | None = None
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if depth <= indent:
            break  # the next section (Raises:, Example:) or the prose after it
        match = _ENTRY.match(line.strip())
        if match and (entry_indent is None or depth == entry_indent):
            entry_indent = depth
            current = [match.group(2)]  # one text shared by the names it lists ("a, b: ...")
            for name in re.split(r"\s*,\s*", match.group(1)):
                entries[name] = current
        elif current is not None:
            current.append(line.strip())
    return {name: _plain(" ".join(words)) for name, words in entries.items()}


def _plain(text: str) -> str:
    """Docstring text as a terminal shows it: one line, without ``code`` marks or Sphinx roles
    (``:attr:`~NFSP.replay_window``` becomes ``NFSP.replay_window``)."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
    return " ".join(text.replace("``", "").split())


_ENTRY = re.compile(r"(\w+(?:\s*,\s*\w+)*)(?:\s*\([^)]*\))?:\s*(.*)")
"""An ``Attributes:`` entry's first line: ``name: text``, ``name (type): text`` or
``name, other: text`` (one text for several fields)."""


def _default_text(field: dataclasses.Field[Any]) -> str:
    """A field's default as a value to type (a tuple written as a list), or :data:`REQUIRED`."""
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return REQUIRED
    return repr(_as_typed(value))


def _as_typed(value: Any) -> Any:
    """``value`` as it is typed on the command line: tuples as lists."""
    if isinstance(value, (list, tuple)):
        return [_as_typed(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_typed(v) for k, v in value.items()}
    return value


# --- learners not imported ----------------------------------------------------------------------
def _docstring_in_source(module: str, name: str) -> str | None:
    """The docstring of the class in ``module``'s source whose class attribute ``name`` is
    ``name`` (read as text: the module, which needs an optional extra, is not imported), or
    ``None`` where the source cannot be found or read."""
    try:
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec is not None else None
        if origin is None or not origin.endswith(".py"):
            return None
        with open(origin, encoding="utf-8") as source:
            tree = ast.parse(source.read())
    except (ImportError, OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and _class_name_attribute(node) == name:
            return ast.get_docstring(node)
    return None


def _class_name_attribute(node: ast.ClassDef) -> str | None:
    """The string a class body assigns to ``name`` (``name = "nfsp"`` or with a type)."""
    for statement in node.body:
        target = value = None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign):
            target, value = statement.target, statement.value
        if isinstance(target, ast.Name) and target.id == "name" and isinstance(value, ast.Constant):
            return value.value if isinstance(value.value, str) else None
    return None


def _extra_packages(extra: str) -> tuple[str, ...]:
    """The distributions nashzoo's ``extra`` installs, from the package's metadata (``()``
    where it cannot be read, as in a source tree that is not installed)."""
    try:
        requires = metadata.requires("nashzoo") or []
    except metadata.PackageNotFoundError:
        return ()
    found = []
    for requirement in requires:
        if re.search(rf"""extra\s*==\s*["']{re.escape(extra)}["']""", requirement):
            found.append(re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0])
    return tuple(dict.fromkeys(found))


def _installed(distribution: str) -> bool:
    """Whether ``distribution`` is installed (its metadata is there; nothing is imported)."""
    try:
        metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


__all__ = [
    "REQUIRED",
    "ConfigField",
    "LearnerFacts",
    "attribute_docs",
    "config_fields",
    "learner_catalog",
    "learner_facts",
]
