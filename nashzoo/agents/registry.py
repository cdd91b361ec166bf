"""Registry mapping learner names (``"cfr_plus"``, ``"nfsp"``) to Learner classes."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from nashzoo.agents.base import Learner, LearnerConfig
from nashzoo.games import Game

_REGISTRY: dict[str, type[Learner]] = {}
# Learners living in modules with optional dependencies: name -> (module, extra to install).
_LAZY: dict[str, tuple[str, str]] = {}
# Learner name -> the plugin module whose import registered it (see registered_by_plugin).
_BY_PLUGIN: dict[str, str] = {}

LearnerClass = TypeVar("LearnerClass", bound=type[Learner])


def register(cls: LearnerClass) -> LearnerClass:
    """Class decorator: make ``cls`` available to :func:`make_learner` under ``cls.name``.

    A name already taken by another learner (a built-in such as ``"cfr"``, one needing an
    optional extra such as ``"nfsp"``, or another plugin's) is refused: replacing it would make
    every ``train``, race and checkpoint that says ``"cfr"`` run the plugin's code under the
    built-in's name, silently. The same class defined again (a module imported twice, as a
    script and by name, or a notebook cell run again) replaces its earlier definition.
    """
    if not isinstance(cls, type):
        raise TypeError(
            f"@register takes the class itself, not {cls!r}: write @register above the class "
            f"and give it the class attribute `name = {cls!r}`"
        )
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a non-empty `name` to be registered")
    taken = _REGISTRY.get(cls.name)
    if (taken is not None and not _same_definition(taken, cls)) or (
        taken is None and cls.name in _LAZY and cls.__module__ != _LAZY[cls.name][0]
    ):
        owner = (
            f"{taken.__module__}.{taken.__qualname__}"
            if taken is not None
            else f"{_LAZY[cls.name][0]} (needs the extra {_LAZY[cls.name][1]!r})"
        )
        mine = taken is not None and not is_nashzoos(taken)
        raise ValueError(
            f"cannot register {cls.__module__}.{cls.__qualname__} as learner {cls.name!r}: "
            f"that name is taken by {owner}; give your learner another name "
            "(its class attribute `name`)"
            + (
                f", or, to put this class in its place (a class renamed in a notebook), "
                f"nashzoo.agents.unregister({cls.name!r}) first"
                if mine
                else ""
            )
        )
    _REGISTRY[cls.name] = cls
    return cls


def unregister(name: str) -> type[Learner]:
    """Forget the learner a plugin or a notebook registered as ``name`` and return its class,
    so that another class can take the name (a class renamed in a notebook was refused until
    the kernel restarted). nashzoo's own learners stay: their names are what every run,
    race and checkpoint that says them means."""
    cls = _REGISTRY.get(name)
    if cls is None:
        raise KeyError(f"no learner {name!r} is registered; registered: {sorted(_REGISTRY)}")
    if is_nashzoos(cls):
        raise ValueError(f"{name!r} is one of nashzoo's own learners, which cannot be removed")
    del _REGISTRY[name]
    return cls


def is_nashzoos(cls: type) -> bool:
    """Whether ``cls`` is one of nashzoo's own classes (its module is in the package)."""
    return (getattr(cls, "__module__", "") or "").split(".")[0] == "nashzoo"


def _same_definition(old: type[Learner], new: type[Learner]) -> bool:
    """Whether ``new`` is ``old`` defined again: the same class name in the same module, or in
    the same file imported under another module name (``__main__`` and ``my_learners``)."""
    if old is new:
        return True
    if old.__qualname__ != new.__qualname__:
        return False
    if old.__module__ == new.__module__:
        return True
    files = [getattr(sys.modules.get(c.__module__), "__file__", None) for c in (old, new)]
    return files[0] is not None and files[0] == files[1]


def register_lazy(name: str, module: str, extra: str) -> None:
    """Declare a learner whose module needs an optional extra (imported on first use)."""
    _LAZY[name] = (module, extra)


def import_plugins(modules: Iterable[str]) -> None:
    """Import the modules that register user learners (``@register``), by module name.

    This is how ``nashzoo --plugin mymodule race`` and every race worker process learn the
    names of learners defined outside nashzoo.
    """
    for module in modules:
        check_module_name(module)
        before = set(_REGISTRY)
        try:
            importlib.import_module(module)
        except ImportError as err:
            raise ImportError(
                f"cannot import plugin module {module!r} ({err}); give an importable module "
                "name (the current folder is searched) that registers learners with "
                "@nashzoo.agents.register"
            ) from None
        _refuse_a_shadowed_plugin(module)
        for name in set(_REGISTRY) - before:
            _BY_PLUGIN[name] = module


def registered_by_plugin(name: str) -> str | None:
    """The plugin module whose import (:func:`import_plugins`) registered learner ``name``,
    or ``None`` (a built-in, or registered otherwise)."""
    return _BY_PLUGIN.get(name)


def _refuse_a_shadowed_plugin(module: str) -> None:
    """The current folder is searched after everything installed (``nashzoo.cli.main``), so a
    plugin saved as ``tree.py`` or ``code.py`` imports the installed module of that name, and
    its learners were then "unknown" with no word of why: say so, and how to fix it."""
    top = module.split(".")[0]
    try:
        here = Path.cwd()
    except OSError:
        return
    local = next((p for p in (here / f"{top}.py", here / top) if p.exists()), None)
    origin = getattr(sys.modules.get(top), "__file__", None)
    if local is None or origin is None or Path(origin).resolve().is_relative_to(here.resolve()):
        return
    raise ImportError(
        f"plugin module {module!r}: the name is also an installed module's ({origin}), which is "
        f"imported instead of {local} (installed modules come first); rename your file"
    )


def check_module_name(module: Any) -> str:
    """``module`` if it is a dotted Python module name (``pkg.mod``); ValueError naming the fix
    otherwise (a path such as ``../x`` or ``x.py`` is not a module name)."""
    if not isinstance(module, str) or not all(part.isidentifier() for part in module.split(".")):
        raise ValueError(
            f"plugin {module!r} is not a module name; give a dotted Python module name such as "
            "my_learners or pkg.my_learners (no path, no .py), importable from the current folder"
        )
    return module


def stored_plugins(value: Any, where: str) -> tuple[str, ...]:
    """The ``--plugin`` modules a stored race (``race_config.json``) or training run
    (``train_config.json``) was started with, as a tuple of dotted module names, each checked
    by :func:`check_module_name` before anything imports it (a file must not choose what code
    runs beyond naming modules); ValueError naming ``where`` otherwise. A resume imports them
    with :func:`import_plugins`, so the user need not type ``--plugin`` again."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{where}: 'plugins' must be a list of module names, got {value!r}")
    return _once(check_module_name(module) for module in value)


def plugin_modules(values: Iterable[str]) -> tuple[str, ...]:
    """The modules named by ``--plugin`` values: each value one module or several,
    comma-separated (``--plugin a,b``, as ``--learners`` lists learners and as messages show a
    run's plugins), each checked by :func:`check_module_name`; a module named twice is kept
    once, where first named (importing it again does nothing)."""
    return _once(
        check_module_name(module.strip()) for value in values for module in value.split(",")
    )


def same_plugins(first: Iterable[str], second: Iterable[str]) -> bool:
    """Whether two plugin lists name the same modules, order and repeats aside: a resume with
    ``--plugin b,a`` continues a run or race started with ``--plugin a,b``. What plugins do is
    register names, and a name registered by two of them is refused whichever comes first
    (:func:`register`, :func:`~nashzoo.games.register_game`), so the same modules make the same
    learners and games. The one way order tells: ``b`` replacing ``a``'s game with
    ``register_game(..., replace=True)``; in the other order ``a``'s registration is refused
    at import, loudly, unless it too says ``replace=True``."""
    return set(first) == set(second)


def _once(modules: Iterable[str]) -> tuple[str, ...]:
    """``modules`` without repeats, each where first named."""
    return tuple(dict.fromkeys(modules))


def learner_names() -> list[str]:
    """All registered learner names (including ones needing optional extras)."""
    return sorted(set(_REGISTRY) | set(_LAZY))


def imported_learner_classes() -> dict[str, type[Learner]]:
    """The learners registered so far, by name, without importing any optional extra's (a
    message that lists learners of a kind must not import torch to say so)."""
    return dict(sorted(_REGISTRY.items()))


def learning_learner_names() -> list[str]:
    """Registered learners whose strategy changes with training (``Learner.learns``): what a
    race runs when no learners are named. A learner whose optional extra is missing stays in the
    list (its class cannot be asked), so the race reports it as skipped with the install hint."""
    names = []
    for name in learner_names():
        try:
            learns = learner_class(name).learns
        except ImportError:
            learns = True
        if learns:
            names.append(name)
    return names


def learner_class(name: str) -> type[Learner]:
    """The Learner class registered as ``name``."""
    if name not in _REGISTRY and name in _LAZY:
        module, extra = _LAZY[name]
        try:
            importlib.import_module(module)
        except ImportError as err:
            raise ImportError(
                f"learner {name!r} needs the optional extra {extra!r}: "
                f"pip install 'nashzoo[{extra}]' ({err})"
            ) from None
    if name not in _REGISTRY:
        base = name.split("(")[0].strip() if isinstance(name, str) and "(" in name else None
        if base in learner_names():
            raise ValueError(
                f"learner {name!r}: NAME(FIELD=VALUE) is the command line's way to set a "
                f"learner up; in Python give the settings apart, as config: "
                f"make_learner({base!r}, game, seat, config={{...}}) or "
                f"train(game, {base!r}, config={{...}})"
            )
        raise ValueError(f"unknown learner {name!r}; valid learners: {', '.join(learner_names())}")
    return _REGISTRY[name]


def make_learner(
    name: str,
    game: Game | str,
    seat: int,
    config: LearnerConfig | dict[str, Any] | None = None,
    *,
    seed: int = 0,
) -> Learner:
    """Build a learner by name for one seat of ``game``."""
    return learner_class(name)(game, seat, config, seed=seed)
