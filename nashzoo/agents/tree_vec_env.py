"""``n`` copies of the single-agent view played side by side over the compiled tree: a
Stable-Baselines3 ``VecEnv`` whose step is a few numpy calls for all copies at once.

:class:`~nashzoo.envs.single_agent.SingleAgentEnv` routes each move through the PettingZoo env
and its States; under SB3's ``DummyVecEnv`` (plus ``Monitor``), playing 2,048 decisions of Leduc
hold'em from 64 copies took about 60% of an ``mmd_ppo`` learner step, almost all of it Python
per move (BENCHMARKS.md, "Neural learners: where the time goes"). :class:`TreeVecEnv` plays the
same view from the game's compiled tree instead: each copy is a node index; a move is a child
lookup; chance outcomes and the opponent's moves are sampled for every copy at once from the
chance probabilities and the opponent's table (any Policy, materialised once per
:meth:`set_opponent` over the information sets where it may move).

What a learner sees is what it sees through the copies of ``SingleAgentEnv``: the observation is
the learner's information-set tensor, ``action_masks()`` the legal actions, the reward the
learner's return paid on the step that ends the game; the seat is fixed or drawn per episode
(``"random"``), the opponent drawn per episode from its pool; an illegal action is remapped to
the lowest-numbered legal one (or raises); an episode in which the learner never moves is
counted and skipped. Finished copies restart at once (SB3's auto-reset); their infos carry
Monitor's ``info["episode"]`` (return, length in learner moves, seconds) and nothing else (no
``terminal_observation``: episodes end, they are never truncated). The random streams differ from
``SingleAgentEnv``'s (one generator for all copies, seeded by :meth:`seed`), so runs are
reproducible but not draw-for-draw those of the copies.

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

from nashzoo.agents.policy import TabularPolicy
from nashzoo.envs.lazy import small_enough
from nashzoo.envs.single_agent import opponent_pool
from nashzoo.games import IllegalActionError, compile_tree, load_game
from nashzoo.games.base import CHANCE, TERMINAL, Game
from nashzoo.games.infoset import Policy, PolicyError, UniformPolicy

__all__ = ["MAX_HISTORIES", "TreeVecEnv", "fits"]

_MAX_EMPTY_EPISODES = 1000

MAX_HISTORIES = 2_000_000
"""The largest game (in histories) whose copies ``vec_env="auto"`` plays over the compiled tree:
the tree plus this env's per-node tables took 140 bytes a history on Liar's dice (175 at the
peak of building them, ``tracemalloc``), so about 0.3 GB at this limit."""


def fits(game: Game) -> bool:
    """Whether ``vec_env="auto"`` plays ``game`` over its compiled tree: at most
    :data:`MAX_HISTORIES` histories when the game knows its size, else the env's own rule
    (:func:`nashzoo.envs.lazy.small_enough`: tabulated envs only), which counts no further than
    its own limit."""
    size = game.num_histories()
    if size is None:
        return small_enough(game)
    return size <= MAX_HISTORIES


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
            raise ValueError(f"TreeVecEnv needs a two-player game; {self.game.id} is not")
        if not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if seat not in (0, 1, "random"):
            raise ValueError(f"seat must be 0, 1 or 'random', got {seat!r}")
        if illegal_action not in ("remap", "raise"):
            raise ValueError(f"illegal_action must be 'remap' or 'raise', got {illegal_action!r}")
        self.seat_mode = seat
        self.illegal_action = illegal_action
        tree = self.tree = compile_tree(self.game)
        self._player = tree.player
        self._infoset = tree.infoset
        self._children = tree.children
        self._utility = tree.utility
        self._tensors = tree.infoset_tensors
        self._legal = tree.legal_mask
        # Chance nodes' outcome distributions, one row per chance node, by outcome id.
        chance_nodes = np.flatnonzero(tree.player == CHANCE)
        self._chance_row = np.full(tree.num_nodes, -1, dtype=np.int64)
        self._chance_row[chance_nodes] = np.arange(chance_nodes.size)
        below = self._children[chance_nodes]
        self._chance_probs = np.where(below >= 0, tree.chance_prob[np.maximum(below, 0)], 0.0)
        size = int(self.game.infoset_tensor_size)
        self.render_mode = None  # nothing to render (SB3 asks the copies before it starts)
        super().__init__(
            int(num_envs),
            spaces.Box(0.0, 1.0, (size,), dtype=np.float32),
            spaces.Discrete(self.game.num_actions),
        )
        n = self.num_envs
        self.rng = np.random.default_rng(seed)
        self._node = np.zeros(n, dtype=np.int64)
        self._seat = np.zeros(n, dtype=np.int64) if seat == "random" else np.full(n, seat)
        self._pool = np.zeros(n, dtype=np.int64)
        self._episode_return = np.zeros(n)
        self._episode_length = np.zeros(n, dtype=np.int64)
        self._episode_start = np.zeros(n)
        self._actions = np.zeros(n, dtype=np.int64)
        self.moves = 0  # env moves so far (the learners' and the opponents'), all copies
        self.episodes = 0  # episodes started, all copies
        self.return_sum = 0.0  # the learner's returns over finished episodes, all copies
        self.set_opponent(UniformPolicy() if opponent is None else opponent)

    # --- configuration ------------------------------------------------------------------------
    def set_opponent(self, opponent: Policy | Sequence[Policy]) -> None:
        """Replace the opponent pool, each policy materialised over the opponent's information
        sets (both seats' with ``seat="random"``; the learner's own rows are never asked of it);
        takes effect at each copy's next episode."""
        rows = None if self.seat_mode == "random" else self.tree.infosets_of(1 - self.seat_mode)
        tables = []
        for policy in opponent_pool(self.game, opponent):
            table = TabularPolicy.from_policy(self.game, policy, rows=rows)
            probs = np.asarray(table.probs, dtype=float)
            probs = np.where(self._legal, np.maximum(probs, 0.0), 0.0)
            total = probs.sum(axis=1, keepdims=True)
            empty = np.flatnonzero(~(total[:, 0] > 0))
            if empty.size:
                raise PolicyError(
                    "the opponent gives no probability to a legal action at "
                    f"{self.tree.infoset_keys[int(empty[0])]!r}"
                )
            tables.append(probs / total)
        self._tables = np.stack(tables)  # [K, I, A]

    def seed(self, seed: int | None = None) -> list[int | None]:
        """Reseed the generator behind every draw; like SB3's envs, copies restart at the next
        :meth:`reset`."""
        self.rng = np.random.default_rng(seed)
        return [seed] * self.num_envs

    # --- VecEnv API ---------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        self._start(np.arange(self.num_envs))
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self._observations()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        node = self._node
        legal = self._legal[self._infoset[node]]
        action = self._checked_actions(self._actions, legal)
        self._node = self._children[node, action]
        self.moves += self.num_envs
        self._episode_length += 1
        self._advance(np.arange(self.num_envs))
        done = self._player[self._node] == TERMINAL
        reward = np.where(done, self._utility[self._node, self._seat], 0.0)
        self._episode_return += reward
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        finished = np.flatnonzero(done)
        if finished.size:
            self.return_sum += float(reward[finished].sum())
            now = time.time()
            for i in finished.tolist():
                infos[i]["episode"] = {
                    "r": float(self._episode_return[i]),
                    "l": int(self._episode_length[i]),
                    "t": round(now - self._episode_start[i], 6),
                }
            self._start(finished)
        return self._observations(), reward.astype(np.float32), done, infos

    def action_masks(self) -> np.ndarray:
        """``[num_envs, num_actions]``: each copy's legal actions (MaskablePPO reads this)."""
        return self._legal[self._infoset[self._node]]

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

    def _observations(self) -> np.ndarray:
        return self._tensors[self._infoset[self._node]]

    def _checked_actions(self, actions: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The actions as integer ids, an illegal one remapped (or raised)."""
        if not np.issubdtype(actions.dtype, np.integer):
            whole = np.asarray(actions, dtype=float)
            if not np.all(np.isfinite(whole)) or np.any(whole != np.round(whole)):
                raise IllegalActionError(f"actions must be integer ids, got {actions!r}")
            actions = whole.astype(np.int64)
        inside = (actions >= 0) & (actions < legal.shape[1])
        ok = inside & legal[np.arange(self.num_envs), np.where(inside, actions, 0)]
        if ok.all():
            return actions
        if self.illegal_action == "raise":
            i = int(np.flatnonzero(~ok)[0])
            raise IllegalActionError(
                f"action {int(actions[i])} is not legal for copy {i} (seat {int(self._seat[i])}); "
                f"legal actions are {np.flatnonzero(legal[i]).tolist()}"
            )
        return np.where(ok, actions, np.argmax(legal, axis=1))

    def _start(self, envs: np.ndarray) -> None:
        """New episodes for the copies ``envs``: seat and opponent drawn, then chance and the
        opponent play until the learner is to move (an episode in which the learner never
        moves is counted, paid and replaced)."""
        for _ in range(_MAX_EMPTY_EPISODES):
            if self.seat_mode == "random":
                self._seat[envs] = self.rng.integers(2, size=envs.size)
            self._pool[envs] = self.rng.integers(len(self._tables), size=envs.size)
            self._node[envs] = 0
            self._episode_return[envs] = 0.0
            self._episode_length[envs] = 0
            self._episode_start[envs] = time.time()
            self.episodes += int(envs.size)
            self._advance(envs)
            over = self._player[self._node[envs]] == TERMINAL
            if not over.any():
                return
            envs = envs[over]
            self.return_sum += float(self._utility[self._node[envs], self._seat[envs]].sum())
        raise RuntimeError(
            f"in {_MAX_EMPTY_EPISODES} episodes of {self.game.id} a learner's seat never got to "
            "move; this game has no decisions for that seat"
        )

    def _advance(self, envs: np.ndarray) -> None:
        """Chance and the opponent move in the copies ``envs`` until each is at a learner
        decision or over."""
        width = self._children.shape[1]
        while envs.size:
            node = self._node[envs]
            who = self._player[node].astype(np.int64)
            moving = (who != TERMINAL) & (who != self._seat[envs])
            envs, node, who = envs[moving], node[moving], who[moving]
            if not envs.size:
                return
            chance = who == CHANCE
            probs = np.zeros((envs.size, width))
            if chance.any():
                probs[chance] = self._chance_probs[self._chance_row[node[chance]]]
            opponent = ~chance
            if opponent.any():
                rows = self._tables[self._pool[envs[opponent]], self._infoset[node[opponent]]]
                probs[opponent, : rows.shape[1]] = rows
                self.moves += int(opponent.sum())
            self._node[envs] = self._children[node, _sample(probs, self.rng)]


def _sample(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row of ``probs`` (rows summing to one), never one of probability 0."""
    cumulative = np.cumsum(probs, axis=1)
    draw = rng.random((probs.shape[0], 1)) * cumulative[:, -1:]
    pick = (cumulative <= draw).sum(axis=1)
    last = probs.shape[1] - 1 - np.argmax(probs[:, ::-1] > 0, axis=1)  # round-off guard
    return np.minimum(pick, last)
