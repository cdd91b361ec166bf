"""The race's settings (:class:`RaceConfig`, checked field by field) and its plan: which
learners can play the game and the jobs (:class:`RaceJob`) of self-play and cross-play.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from nashzoo.agents import import_plugins, learner_class, learning_learner_names
from nashzoo.agents.registry import stored_plugins
from nashzoo.games import load_game
from nashzoo.games.base import is_finite_number, is_whole_number
from nashzoo.train.loggers import logger_kinds
from nashzoo.train.race.summary import (
    DEFAULT_THRESHOLDS,
)
from nashzoo.train.settings import LearnerSetting, parse_learner_spec, resolve_settings

BACKENDS = ("process", "serial", "ray")


@dataclasses.dataclass(frozen=True)
class RaceConfig:
    """What to race and how.

    Attributes:
        game: game name (default ``"kuhn_poker"``).
        learners: learner specs: names, or labelled settings such as
            ``"nfsp_small=nfsp(hidden_sizes=[32])"`` (:mod:`nashzoo.train.settings`), so one
            algorithm can race under several configs; ``None`` (default) means every
            registered learner that can play the game and whose optional extra is installed
            (non-learning ``uniform`` and ``fixed`` excluded).
        seeds: number of seeds per pairing (default 3), seeds ``0..seeds-1``.
        budget_seconds: training seconds per run (default 10.0); ``None`` for no time limit.
        budget_iterations: trainer iterations per run (default ``None``).
        budget_work: work per run, nodes touched + env steps over both seats (default ``None``).
        cross_play: also race every ordered pair of different learners (default False).
        self_play: race each learner against itself (default True).
        out: output folder (default ``"runs/race"``).
        workers: parallel runs (default: ``min(usable CPUs, runs)``, the CPUs this process may
            use: :func:`nashzoo.train.threads.usable_cpus`).
        backend: ``"process"`` (default), ``"serial"`` or ``"ray"``.
        address: Ray cluster address (``None``: start a local Ray instance).
        resume: skip runs whose results are already in ``out`` and run the rest (default
            False: a folder that already holds a race is refused unless ``force``).
        thresholds: exploitability levels for the time-to-threshold columns.
        evals_per_decade: log-spaced evaluation points per decade of iterations (default 8).
        plots: write PNG plots (default True; needs matplotlib).
        plugins: modules to import (in this process and in every worker) before the race:
            they register learners defined outside nashzoo (default none).
        force: start over in an ``out`` that already holds a race, deleting its runs (default
            False: such a folder is refused unless ``resume``).
        config_file: a YAML/TOML file of learner settings (``--config``), read when the race
            is planned (and again on ``--resume``: runs whose settings changed are re-run);
            ``race_config.json`` stores it as an absolute path, and a resume may name its new
            place (``--resume --config FILE``).
        sets: ``LABEL.FIELD=VALUE`` overrides (``--set``), applied last.
        logger: ``"tensorboard"``, ``"wandb"`` (offline) or ``"csv"``, or several
            (``"csv,tensorboard"``): each run also logs its metrics in its folder
            ``out/runs/RUN_ID`` (:mod:`nashzoo.train.loggers`).
    """

    game: str = "kuhn_poker"
    learners: tuple[str, ...] | None = None
    seeds: int = 3
    budget_seconds: float | None = 10.0
    budget_iterations: int | None = None
    budget_work: int | None = None
    cross_play: bool = False
    self_play: bool = True
    out: str = "runs/race"
    workers: int | None = None
    backend: str = "process"
    address: str | None = None
    resume: bool = False
    thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS
    evals_per_decade: int = 8
    plots: bool = True
    plugins: tuple[str, ...] = ()
    config_file: str | None = None
    sets: tuple[str, ...] = ()
    logger: str | None = None
    force: bool = False

    def __post_init__(self) -> None:
        self._check_types()
        import_plugins(self.plugins)  # first: the game may be one of theirs
        load_game(self.game)  # raises a ValueError naming the valid games
        if (
            self.budget_seconds is None
            and self.budget_iterations is None
            and (self.budget_work is None)
        ):
            raise ValueError(
                "give a budget: --budget-seconds, --budget-iterations or --budget-work "
                "(RaceConfig's budget_seconds, budget_iterations or budget_work)"
            )
        if self.logger is not None:  # one text, "csv,tensorboard" for several, each kind once
            object.__setattr__(self, "logger", ",".join(logger_kinds(self.logger)) or None)
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if not (self.self_play or self.cross_play):
            raise ValueError("nothing to race: enable self_play or cross_play")
        if self.learners is not None:
            labels = [parse_learner_spec(spec)[0] for spec in self.learners]
            twice = sorted({n for n in labels if labels.count(n) > 1})
            if twice:
                raise ValueError(
                    f"learner(s) {twice} listed more than once; list each learner once "
                    "(--seeds sets how many runs each gets; LABEL=NAME(...) races a second "
                    "config)"
                )
        self.learner_settings()  # unknown learners, fields or values: one-line SettingsError
        if self.resume and self.force:
            raise ValueError("resume keeps the race in out and force deletes it: choose one")

    def _check_types(self) -> None:
        """Every field of the right type (a stored race_config.json is checked the same way)."""
        self._check_flags_and_strings()
        self._check_counts()
        self._check_tuples()
        self._check_optional_strings()

    def _check_flags_and_strings(self) -> None:
        flags = ("cross_play", "self_play", "resume", "plots", "force")
        for name in flags:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        for name in ("game", "backend"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, got {getattr(self, name)!r}")
        if not isinstance(self.out, (str, os.PathLike)):
            raise ValueError(f"out must be a folder path, got {self.out!r}")
        if self.address is not None and not isinstance(self.address, str):
            raise ValueError(f"address must be a string, got {self.address!r}")

    def _check_counts(self) -> None:
        for name in ("seeds", "evals_per_decade", "workers", "budget_iterations", "budget_work"):
            value = getattr(self, name)
            if (value is not None or name in ("seeds", "evals_per_decade")) and not (
                is_whole_number(value, 1)
            ):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
            if isinstance(value, np.generic):  # stored as JSON: a plain Python number
                object.__setattr__(self, name, value.item())
        if self.budget_seconds is not None and not _positive_number(self.budget_seconds):
            raise ValueError(
                f"budget_seconds must be a positive number, got {self.budget_seconds!r}"
            )
        if isinstance(self.budget_seconds, np.generic):
            object.__setattr__(self, "budget_seconds", self.budget_seconds.item())

    def _check_tuples(self) -> None:
        for name in ("learners", "thresholds", "plugins", "sets"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                raise ValueError(f"{name} must be a tuple, got {value!r}")
        if self.learners is not None and (
            not self.learners or not all(isinstance(n, str) for n in self.learners)
        ):
            raise ValueError(f"learners must be learner names, got {self.learners!r}")
        if not self.thresholds or not all(_positive_number(t) for t in self.thresholds):
            raise ValueError(f"thresholds must be positive numbers, got {self.thresholds!r}")
        plain = tuple(t.item() if isinstance(t, np.generic) else t for t in self.thresholds)
        object.__setattr__(self, "thresholds", plain)
        # one check for a race's and a run's; a module named twice is kept once
        object.__setattr__(self, "plugins", stored_plugins(self.plugins, "plugins"))

    def _check_optional_strings(self) -> None:
        for name in ("config_file", "logger"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a string, got {value!r}")
        if not all(isinstance(item, str) for item in self.sets):
            raise ValueError(f"sets must be LEARNER.FIELD=VALUE strings, got {self.sets!r}")

    def learner_settings(self) -> dict[str, LearnerSetting]:
        """Every raced learner's label, algorithm and checked config overrides."""
        names = self.learners
        if names is None:
            names = tuple(learning_learner_names())
        return resolve_settings(names, config_file=self.config_file, sets=self.sets)

    def budget_text(self) -> str:
        parts = []
        if self.budget_seconds is not None:
            parts.append(f"{self.budget_seconds:g} s of training per run")
        if self.budget_iterations is not None:
            parts.append(f"{self.budget_iterations} iterations per run")
        if self.budget_work is not None:
            parts.append(f"{self.budget_work} nodes/env steps per run")
        first = " (whichever comes first)" if len(parts) > 1 else ""
        return ", ".join(parts) + f"{first}, {self.seeds} seed(s)"


def _positive_number(value: Any) -> bool:
    return is_finite_number(value) and value > 0


@dataclasses.dataclass(frozen=True)
class RaceJob:
    """One run: a learner per seat, a seed and the budget."""

    game: str
    learners: tuple[str, str]
    seed: int
    budget_seconds: float | None
    budget_iterations: int | None
    budget_work: int | None
    evals_per_decade: int = 8
    plugins: tuple[str, ...] = ()
    algorithms: tuple[str, str] | None = None  # per seat; None: the learners' names
    configs: tuple[dict[str, Any], dict[str, Any]] = ({}, {})  # full config per seat
    logger: str | None = None

    @property
    def mode(self) -> str:
        return "self" if self.learners[0] == self.learners[1] else "cross"

    @property
    def run_id(self) -> str:
        a, b = self.learners
        head = f"self-{a}" if a == b else f"cross-{a}-vs-{b}"
        return f"{head}-seed{self.seed}"


def usable_learners(
    game: str, names: Iterable[str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """Learners that can play ``game``: ``(usable, {skipped name: reason})``."""
    game_obj = load_game(game)
    chosen = learning_learner_names() if names is None else list(names)
    usable, skipped = [], {}
    for name in chosen:
        try:
            learner_class(name).check_game(game_obj)
        except ImportError as err:
            skipped[name] = str(err)
            continue
        except ValueError as err:
            skipped[name] = str(err)
            continue
        usable.append(name)
    return usable, skipped


def plan(config: RaceConfig) -> tuple[list[RaceJob], dict[str, str]]:
    """The jobs of a race and the learners skipped (with the reason)."""
    settings = config.learner_settings()
    algorithms = sorted({s.algorithm for s in settings.values()})
    ok, reasons = usable_learners(config.game, algorithms)
    usable = [label for label, s in settings.items() if s.algorithm in ok]
    skipped = {
        label: reasons[s.algorithm] for label, s in settings.items() if s.algorithm in reasons
    }
    full = {label: settings[label].full_config() for label in usable}
    pairs: list[tuple[str, str]] = []
    if config.self_play:
        pairs += [(a, a) for a in usable]
    if config.cross_play:
        pairs += [(a, b) for a in usable for b in usable if a != b]
    jobs = [
        RaceJob(
            config.game,
            pair,
            seed,
            config.budget_seconds,
            config.budget_iterations,
            config.budget_work,
            config.evals_per_decade,
            tuple(config.plugins),
            (settings[pair[0]].algorithm, settings[pair[1]].algorithm),
            (full[pair[0]], full[pair[1]]),
            config.logger,
        )
        for pair in pairs
        for seed in range(config.seeds)
    ]
    return jobs, skipped
