"""Fixed (non-learning) policies and the two learners that play them: ``uniform`` and ``fixed``.

These are the reference opponents and baselines of every experiment: a learner trained against
``uniform`` should exploit it, a seat playing a known equilibrium strategy should have zero seat
exploitability, and a fixed mixed strategy in Rock-Paper-Scissors has a best response that can
be written down by hand.

* :func:`uniform_policy` plays uniformly over the legal actions everywhere.
* :func:`fixed_policy` plays a given strategy: either ``{infoset_key: probabilities}``, or, for
  games where each seat has a single information set (matrix games such as RPS), ONE mixed
  strategy for the given seat(s), e.g. ``fixed_policy("rps", [0.3, 0.3, 0.4])``.
* :class:`UniformLearner` (``"uniform"``) and :class:`FixedLearner` (``"fixed"``) are Learners
  whose ``step`` does no work; ``current_policy()`` and ``average_policy()`` both return the
  fixed policy. They exist so that a Trainer can pair any learner with a fixed opponent through
  the same code path as self-play.

Both return :class:`~nashzoo.agents.policy.TabularPolicy` objects, which are immutable Policies
that can also act (``policy.act(infoset, rng)``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from nashzoo.agents.base import CheckpointError, Learner, LearnerConfig
from nashzoo.agents.policy import Policy, PolicyError, TabularPolicy
from nashzoo.agents.registry import register
from nashzoo.games import Game, compile_tree, load_game
from nashzoo.games.base import check_player
from nashzoo.io import ArraySpec

Strategy = Mapping[str, Sequence[float]] | Sequence[float] | np.ndarray
"""A fixed strategy: ``{infoset_key: probabilities}`` or one mixed strategy (matrix games)."""


def uniform_policy(game: Game | str) -> TabularPolicy:
    """Uniform over the legal actions at every information set of ``game``."""
    return TabularPolicy.uniform(game)


def _seats(game: Game, seats: int | Iterable[int] | None) -> list[int]:
    if seats is None:
        return list(range(game.num_players))
    if isinstance(seats, (int, np.integer)):
        seats = [int(seats)]
    out = sorted({check_player(game, s) for s in seats})
    if not out:
        raise ValueError("seats must name at least one seat")
    return out


def fixed_policy(
    game: Game | str, strategy: Strategy, seats: int | Iterable[int] | None = None
) -> TabularPolicy:
    """A policy that plays ``strategy`` at ``seats`` (default: every seat) and uniformly at the
    other seats' information sets.

    Args:
        game: the game (or its name).
        strategy: either ``{infoset_key: probabilities}`` listing every information set of the
            chosen seats (and no other), or ONE mixed strategy for games where each chosen seat
            has exactly one information set (matrix games: ``fixed_policy("rps", [.3, .3, .4])``
            makes both seats play rock .3, paper .3, scissors .4). A mixed strategy may list
            only the seat's legal actions (for non-square matrix games) or all
            ``game.num_actions`` entries with zeros on illegal ones.
        seats: which seat(s) play ``strategy``; ``None`` means every seat.

    Raises:
        PolicyError: unknown or missing information sets, wrong lengths, or probabilities that
            do not form a distribution over the legal actions (the message names the
            information set).
    """
    game = load_game(game)
    chosen = _seats(game, seats)
    if isinstance(strategy, Mapping):
        return _per_infoset_policy(game, strategy, chosen)
    return _mixed_strategy_policy(game, strategy, chosen)


def _per_infoset_policy(
    game: Game, strategy: Mapping[str, Sequence[float]], seats: list[int]
) -> TabularPolicy:
    """``strategy``'s rows, which must cover exactly the information sets of ``seats``; uniform
    rows at the other seats."""
    tree = compile_tree(game)
    for key in strategy:
        index = tree.infoset_index.get(key)
        if index is None:
            raise PolicyError(
                f"information set {key!r} does not exist in {game.display_id}; valid keys look "
                f"like {list(tree.infoset_keys[:4])}"
            )
        if int(tree.infoset_player[index]) not in seats:
            raise PolicyError(
                f"information set {key!r} belongs to seat {int(tree.infoset_player[index])}, "
                f"but the strategy is for seat(s) {seats}; pass seats=... to match"
            )
    wanted = np.concatenate([tree.infosets_of(s) for s in seats])
    missing = [tree.infoset_keys[i] for i in wanted if tree.infoset_keys[i] not in strategy]
    if missing:
        raise PolicyError(
            f"the strategy has no probabilities for information set {missing[0]!r} of "
            f"{game.display_id} ({len(missing)} missing); list every information set of seat(s) "
            f"{seats}"
        )
    return TabularPolicy.from_dict(game, strategy, default=TabularPolicy.uniform(game))


def _mixed_strategy_policy(
    game: Game, strategy: Sequence[float] | np.ndarray, seats: list[int]
) -> TabularPolicy:
    """One mixed strategy played at the single information set of each of ``seats`` (over all
    ``num_actions`` ids, or over the seat's legal actions only); uniform rows elsewhere."""
    tree = compile_tree(game)
    row = np.asarray(strategy, dtype=np.float64)
    if row.ndim != 1:
        raise PolicyError(
            f"a single mixed strategy must be a 1-D list of probabilities, got shape {row.shape}; "
            "for a strategy per information set pass {infoset_key: probabilities}"
        )
    probs = np.array(TabularPolicy.uniform(game).probs)
    for seat in seats:
        infosets = tree.infosets_of(seat)
        if infosets.size != 1:
            raise PolicyError(
                f"a single mixed strategy fits games where each seat has one information set "
                f"(matrix games); seat {seat} of {game.display_id} has {infosets.size}. Pass "
                "{infoset_key: probabilities} instead"
            )
        index = int(infosets[0])
        legal = tree.legal_mask[index]
        if row.shape[0] == game.num_actions:
            probs[index] = row
        elif row.shape[0] == int(legal.sum()):
            probs[index] = 0.0
            probs[index, legal] = row
        else:
            raise PolicyError(
                f"information set {tree.infoset_keys[index]!r} of {game.display_id} has "
                f"{int(legal.sum())} legal actions {list(game.action_names[: legal.size])}; "
                f"got {row.shape[0]} probabilities"
            )
    return TabularPolicy(game, probs)


def _plain_strategy(strategy: Any) -> Any:
    """A JSON-ready copy of a strategy (numbers as floats, sequences as lists); a one-line error
    naming the field when it is neither a dict of probability rows nor one row."""
    if strategy is None:
        return None
    problem = ValueError(
        "fixed learner: strategy must be {infoset_key: probabilities} or one list of "
        f"probabilities (numbers), got {strategy!r}"
    )
    if isinstance(strategy, (str, bytes, os.PathLike)):
        raise ValueError(f"{problem} (a policy file goes in path=)")
    try:
        if isinstance(strategy, Mapping):
            return {
                str(k): [float(p) for p in np.asarray(v, dtype=float)] for k, v in strategy.items()
            }
        return [float(p) for p in np.asarray(strategy, dtype=float).reshape(-1)]
    except (TypeError, ValueError):
        raise problem from None


@dataclasses.dataclass(frozen=True)
class UniformConfig(LearnerConfig):
    """The ``uniform`` learner has nothing to configure."""


@register
class UniformLearner(Learner):
    """Plays uniformly over the legal actions; ``step`` does no work."""

    name: ClassVar[str] = "uniform"
    kind: ClassVar[str] = "fixed"
    Config: ClassVar[type[LearnerConfig]] = UniformConfig
    learns: ClassVar[bool] = False

    def _setup(self) -> None:
        self._policy = uniform_policy(self.game)

    def _step(self, opponent: Policy) -> dict[str, float]:
        return {"nodes_touched": 0, "env_steps": 0}

    def current_policy(self) -> TabularPolicy:
        """The uniform policy (immutable, so safe to share)."""
        return self._policy

    def average_policy(self) -> TabularPolicy:
        """The uniform policy (immutable, so safe to share)."""
        return self._policy

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {}

    def _load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        self.checked_state_arrays(arrays, {})


@dataclasses.dataclass(frozen=True)
class FixedConfig(LearnerConfig):
    """Configuration of the ``fixed`` learner: give exactly one of the two fields.

    Attributes:
        strategy: the seat's strategy, ``{infoset_key: probabilities}`` (every information set
            of the seat; keys of the other seat are allowed and ignored, so a joint table can be
            reused), or one mixed strategy for matrix games (``[0.3, 0.3, 0.4]`` in RPS).
            Default ``None``.
        path: a TabularPolicy JSON file (written by ``TabularPolicy.save``) whose rows for the
            seat are played. Default ``None``.
    """

    strategy: dict[str, list[float]] | list[float] | None = None
    path: str | os.PathLike[str] | None = None  # stored as a str

    def __post_init__(self) -> None:
        object.__setattr__(self, "strategy", _plain_strategy(self.strategy))
        if self.path is not None and not isinstance(self.path, (str, os.PathLike)):
            raise ValueError(f"fixed learner: path must be a file path, got {self.path!r}")
        object.__setattr__(self, "path", None if self.path is None else os.fspath(self.path))
        if (self.strategy is None) == (self.path is None):
            raise ValueError(
                "the fixed learner needs exactly one of strategy= (a {infoset_key: probs} dict "
                "or one mixed strategy) or path= (a TabularPolicy JSON file)"
            )


@register
class FixedLearner(Learner):
    """Plays a fixed strategy on its seat (uniform rows elsewhere); ``step`` does no work.

    The strategy's rows are stored in checkpoints, so a saved learner loads even if the policy
    file it was configured with has since moved or changed.
    """

    name: ClassVar[str] = "fixed"
    kind: ClassVar[str] = "fixed"
    Config: ClassVar[type[LearnerConfig]] = FixedConfig
    learns: ClassVar[bool] = False
    config: FixedConfig

    def __init__(
        self,
        game: Game | str,
        seat: int,
        config: LearnerConfig | dict[str, Any] | None = None,
        *,
        seed: int = 0,
        restoring: bool = False,
    ) -> None:
        self._restoring = restoring
        super().__init__(game, seat, config, seed=seed)

    def _setup(self) -> None:
        # Validate the strategy (or read the file) now, so a bad config fails at construction;
        # a learner restored from a checkpoint plays the stored rows instead (the file it was
        # configured with may have moved), set by ``_load_state_arrays``.
        self._policy: TabularPolicy | None = None if self._restoring else self._build()

    def _build(self) -> TabularPolicy:
        if self.config.path is not None:
            table = TabularPolicy.load(self.config.path, self.game)
            return TabularPolicy.uniform(self.game).with_rows(self.seat, table)
        strategy = self.config.strategy
        assert strategy is not None, "FixedConfig holds exactly one of strategy and path"
        if isinstance(strategy, dict):
            tree = compile_tree(self.game)
            unknown = [k for k in strategy if k not in tree.infoset_index]
            if unknown:
                raise PolicyError(
                    f"information set {unknown[0]!r} does not exist in {self.game.display_id}"
                )
            own = {
                k: v
                for k, v in strategy.items()
                if int(tree.infoset_player[tree.infoset_index[k]]) == self.seat
            }
            return fixed_policy(self.game, own, seats=self.seat)
        return fixed_policy(self.game, strategy, seats=self.seat)

    @property
    def policy(self) -> TabularPolicy:
        """The fixed policy."""
        if self._policy is None:
            self._policy = self._build()
        return self._policy

    def _step(self, opponent: Policy) -> dict[str, float]:
        return {"nodes_touched": 0, "env_steps": 0}

    def current_policy(self) -> TabularPolicy:
        """The fixed policy (immutable, so safe to share)."""
        return self.policy

    def average_policy(self) -> TabularPolicy:
        """The fixed policy (immutable, so safe to share)."""
        return self.policy

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {"probs": np.asarray(self.policy.probs)}

    @classmethod
    def _instance_to_restore(
        cls, game: Game, seat: int, config: dict[str, Any], seed: int
    ) -> FixedLearner:
        """A learner that skips building its policy from the config: the checkpoint's rows are
        what a saved fixed learner plays."""
        return cls(game, seat, config, seed=seed, restoring=True)

    def _load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        tree = compile_tree(self.game)
        shape = (tree.num_infosets, tree.num_actions)
        probs = self.checked_state_arrays(arrays, {"probs": ArraySpec(shape, nonnegative=True)})
        try:
            self._policy = TabularPolicy(self.game, probs["probs"])
        except PolicyError as err:
            raise CheckpointError(f"array 'probs' is not a policy: {err}") from None
