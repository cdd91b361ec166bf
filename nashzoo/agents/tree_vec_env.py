"""``n`` copies of the single-agent view played side by side over the compiled tree: a
Stable-Baselines3 ``VecEnv`` whose step is a few numpy calls for all copies at once.

:class:`~nashzoo.envs.single_agent.SingleAgentEnv` routes each move through the PettingZoo env
and its States; under SB3's ``DummyVecEnv`` (plus ``Monitor``), playing 2,048 decisions of Leduc
hold'em from 64 copies took about 60% of an ``mmd_ppo`` learner step, almost all of it Python
per move (BENCHMARKS.md, "Neural learners: where the time goes"). :class:`TreeVecEnv` plays the
same view from the game's compiled tree instead: each copy is a node index; a move is a child
lookup; chance outcomes and the opponent's moves are sampled for every copy at once from the
chance probabilities and the opponent's table (any Policy, asked once per information set that
play reaches after each :meth:`set_opponent`).

What a learner sees is what it sees through the copies of ``SingleAgentEnv``: the observation is the
learner's information-set tensor, ``action_masks()`` the legal actions, the reward the learner's
return paid on the step that ends the game; the seat is fixed or drawn per episode (``"random"``),
the opponent drawn per episode from its pool; an illegal action is remapped to the lowest-numbered
legal one (or raises), an id outside the action space raises in either mode, as does one that
is not an integer (``1.0``, ``True``); the observation space has the game's
``infoset_tensor_bounds``; an episode in which the learner never moves is counted and
skipped. Finished copies restart at once (SB3's auto-reset); their infos carry Monitor's
``info["episode"]`` (return, length in learner moves, seconds) and nothing else (no
``terminal_observation``: episodes end, they are never truncated). The random streams differ from
``SingleAgentEnv``'s (one generator for all copies, seeded by :meth:`seed`), so runs are
reproducible but not draw-for-draw those of the copies.

The play itself is :class:`~nashzoo.agents.tree_play.TreePlay` (which NFSP uses too); this
class adds SB3's VecEnv API, auto-reset, illegal-action handling and Monitor's episode infos.
Used by the SB3 learners when ``n_envs > 1`` and :func:`fits` says the game's tree is small
enough to hold (up to :data:`MAX_HISTORIES` histories; Liar's dice, 294,883, is in); a bigger
game is never compiled to be stepped, its copies stay ``SingleAgentEnv`` copies under
``DummyVecEnv``, as with ``vec_env="copies"``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from nashzoo.agents.tree_play import MAX_HISTORIES, TreePlay, fits
from nashzoo.games import IllegalActionError, load_game
from nashzoo.games.base import Game, action_index, short_repr
from nashzoo.games.infoset import Policy

__all__ = ["MAX_HISTORIES", "TreeVecEnv", "fits"]


class TreeVecEnv(VecEnv):
    """``num_envs`` copies of one seat of ``game`` against an opponent (see the module
    docstring).

    Args:
        game: a Game or a name.
        num_envs: copies played side by side.
        seat: the learner's seat (0, 1) or ``"random"`` (drawn per episode and copy).
        opponent: a Policy or a non-empty sequence of them (one drawn per episode); default
            uniform over the legal actions.
        illegal_action: ``"remap"`` (default: the lowest-numbered legal action is played) or
            ``"raise"``.
        seed: seed of the generator behind every draw (chance, seats, opponents' moves).

    Attributes:
        play: the copies' play (:class:`~nashzoo.agents.tree_play.TreePlay`: nodes, seats,
            counters).
    """

    def __init__(
        self,
        game: Game | str,
        num_envs: int,
        seat: int | Literal["random"] = 0,
        opponent: Policy | Sequence[Policy] | None = None,
        *,
        illegal_action: Literal["remap", "raise"] = "remap",
        seed: int | None = None,
    ) -> None:
        self.game = load_game(game)
        if self.game.num_players != 2:
            raise ValueError(f"TreeVecEnv needs a two-player game; {self.game.display_id} is not")
        if not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if illegal_action not in ("remap", "raise"):
            raise ValueError(f"illegal_action must be 'remap' or 'raise', got {illegal_action!r}")
        self.play = TreePlay(
            self.game, int(num_envs), seat, opponent, rng=np.random.default_rng(seed)
        )
        self.seat_mode = seat
        self.illegal_action = illegal_action
        self.tree = self.play.tree
        size = int(self.game.infoset_tensor_size)
        low, high = self.game.infoset_tensor_bounds  # as SingleAgentEnv's: the same model fits
        self.render_mode = None  # nothing to render (SB3 asks the copies before it starts)
        super().__init__(
            int(num_envs),
            spaces.Box(low, high, (size,), dtype=np.float32),
            spaces.Discrete(self.game.num_actions),
        )
        n = self.num_envs
        self._episode_return = np.zeros(n)
        self._episode_length = np.zeros(n, dtype=np.int64)
        self._episode_start = np.zeros(n)
        self._actions = np.zeros(n, dtype=np.int64)
        self._started = False

    # --- configuration ------------------------------------------------------------------------
    def set_opponent(self, opponent: Policy | Sequence[Policy]) -> None:
        """Replace the opponent pool, at once (see :meth:`TreePlay.set_opponent`); the SB3
        learners reset the copies after it, so each starts a fresh episode."""
        self.play.set_opponent(opponent)

    def seed(self, seed: int | None = None) -> list[int | None]:
        """Reseed the generator behind every draw; like SB3's envs, copies restart at the next
        :meth:`reset`."""
        self.play.rng = np.random.default_rng(seed)
        return [seed] * self.num_envs

    @property
    def moves(self) -> int:
        """Env moves so far (the learners' and the opponents'), all copies."""
        return self.play.moves

    @property
    def episodes(self) -> int:
        """Episodes started so far, all copies."""
        return self.play.episodes

    @property
    def return_sum(self) -> float:
        """The learner's returns over finished episodes, all copies."""
        return self.play.return_sum

    # --- VecEnv API ---------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        self._start(np.arange(self.num_envs))
        self._started = True
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self.play.observations()

    def step_async(self, actions: np.ndarray) -> None:
        """Take one integer action id per copy (refused at once if they are not: see
        :meth:`_integer_actions`); they are played by :meth:`step_wait`."""
        if not self._started:  # the copies sit at the root, a chance node: nothing to play
            raise RuntimeError("call reset() before step()")
        self._actions = self._integer_actions(actions)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if not self._started:
            raise RuntimeError("call reset() before step()")
        play = self.play
        everyone = np.arange(self.num_envs)
        action = self._checked_actions(self._actions, play.masks())
        self._episode_length += 1
        done = play.move(everyone, action)
        reward = np.where(done, play.payoffs(everyone), 0.0)
        self._episode_return += reward
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        finished = np.flatnonzero(done)
        if finished.size:
            play.return_sum += float(reward[finished].sum())
            now = time.time()
            for i in finished.tolist():
                infos[i]["episode"] = {
                    "r": float(self._episode_return[i]),
                    "l": int(self._episode_length[i]),
                    "t": round(now - self._episode_start[i], 6),
                }
            self._start(finished)
        return play.observations(), reward.astype(np.float32), done, infos

    def action_masks(self) -> np.ndarray:
        """``[num_envs, num_actions]``: each copy's legal actions (MaskablePPO reads this)."""
        return self.play.masks()

    def close(self) -> None:
        """Nothing to release."""

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self, attr_name)] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any
    ) -> list[Any]:
        if method_name == "action_masks":
            return list(self.action_masks()[self._indices(indices)])
        raise AttributeError(
            f"TreeVecEnv copies have no method {method_name!r} (only action_masks); use "
            "vec_env='copies' for SingleAgentEnv's own methods"
        )

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    # --- internals ----------------------------------------------------------------------------
    def _indices(self, indices: Any) -> np.ndarray:
        return np.arange(self.num_envs)[indices if indices is not None else slice(None)].reshape(-1)

    def _integer_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as an array of ``num_envs`` integer ids, refused with
        :class:`IllegalActionError` otherwise, as ``SingleAgentEnv`` refuses a float, string or
        bool id: ``1.0`` is not action 1 (a float policy output is a bug to fix at its source,
        and a cast would hide ``1.5``), nor is ``True``. Numpy integers of any width and Python
        ints pass; the test is on the dtype, once for all copies."""
        try:
            array = np.asarray(actions)
        except ValueError as error:  # a ragged list: numpy's own message names no action
            raise IllegalActionError(
                f"actions must be one integer id per copy, got {short_repr(actions)} ({error})"
            ) from None
        if array.dtype == object:  # Python objects: integer ids if each one is one
            array = _object_ids(array, self.game.num_actions)
        if not np.issubdtype(array.dtype, np.integer):  # bool is no numpy integer either
            raise IllegalActionError(
                f"actions must be integer ids (not floats, strings or bools), got "
                f"{short_repr(actions)} (dtype {array.dtype}){_cast_hint(array)}"
            )
        if array.size != self.num_envs:
            raise IllegalActionError(
                f"actions must hold one id for each of the {self.num_envs} copies, got "
                f"{array.size} (shape {array.shape}): {short_repr(actions)}"
            )
        return array.reshape(self.num_envs)

    def _checked_actions(self, actions: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The actions as integer ids, an illegal one remapped (or raised). An id outside the
        action space is refused in either mode, as ``SingleAgentEnv`` refuses it: no policy of
        the space can choose it, so it is a bug to report, not a choice to remap."""
        inside = (actions >= 0) & (actions < legal.shape[1])
        ok = inside & legal[np.arange(self.num_envs), np.where(inside, actions, 0)]
        if ok.all():
            return actions
        if not inside.all():
            i = int(np.flatnonzero(~inside)[0])
            raise IllegalActionError(
                f"action {int(actions[i])} of copy {i} is outside the action space "
                f"Discrete({legal.shape[1]}); legal actions are "
                f"{np.flatnonzero(legal[i]).tolist()} (illegal_action='remap' remaps only ids "
                "inside the space)"
            )
        if self.illegal_action == "raise":
            i = int(np.flatnonzero(~ok)[0])
            raise IllegalActionError(
                f"action {int(actions[i])} is not legal for copy {i} "
                f"(seat {int(self.play.seat[i])}); legal actions are "
                f"{np.flatnonzero(legal[i]).tolist()}"
            )
        return np.where(ok, actions, np.argmax(legal, axis=1))

    def _start(self, envs: np.ndarray) -> None:
        """New episodes for the copies ``envs`` (:meth:`TreePlay.start`), their Monitor
        counters reset."""
        self.play.start(envs)
        self._episode_return[envs] = 0.0
        self._episode_length[envs] = 0
        self._episode_start[envs] = time.time()


def _object_ids(array: np.ndarray, num_actions: int) -> np.ndarray:
    """An object array (Python ints, or ``None`` and the like) as int64 ids if each element is
    an integer id (:func:`~nashzoo.games.base.action_index`, as ``SingleAgentEnv`` takes one),
    else unchanged, to be refused; an id too big for int64 is refused here as outside the
    action space (it cannot be stored to be refused later)."""
    ids = [action_index(a) for a in array.flat]
    whole = [a for a in ids if a is not None]
    if len(whole) < len(ids):
        return array
    for i, a in enumerate(whole):
        if not -(2**63) <= a < 2**63:
            raise IllegalActionError(
                f"action {a} of copy {i} is outside the action space Discrete({num_actions})"
            )
    return np.array(whole, dtype=np.int64).reshape(array.shape)


def _cast_hint(array: np.ndarray) -> str:
    """How to fix non-integer actions whose values are whole numbers (a policy's output kept as
    floats): cast them; nothing for other values, which no cast makes right."""
    if array.dtype.kind != "f" or not array.size:
        return ""
    if np.all(np.isfinite(array)) and np.all(array == np.round(array)):
        return "; cast whole-number floats first: np.asarray(actions).astype(np.int64)"
    return ""
