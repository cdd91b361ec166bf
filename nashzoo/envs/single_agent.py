"""A Gymnasium single-agent view of any nashzoo game: one seat learns, the opponent moves inside
``step()``.

This is what single-agent RL libraries (Stable-Baselines3, sb3-contrib's MaskablePPO) train on:

* the learner holds one seat (``seat=0``, ``1``, or ``"random"``: a new seat every episode, so one
  network learns both seats; the information-set tensor tells it which seat it holds);
* the opponent's moves happen inside ``reset()`` / ``step()`` with the opponent's
  :class:`~nashzoo.games.infoset.Policy`, queried with ``Infoset(player, key, tensor, legal_mask)``
  and sampled with the env's generator; give one Policy, or a sequence of them (a pool of frozen
  snapshots: one is drawn per episode);
* the observation is the learner's information-set tensor (``Box(0, 1, (D,), float32)``), the
  action space ``Discrete(num_actions)``;
* the reward is the learner's own return, paid on the step that ends the game, including a loss
  caused by the opponent's last move (e.g. the opponent calls and wins a showdown);
* ``action_masks()`` returns the legal actions (MaskablePPO reads it); ``info["action_mask"]``
  carries the same mask. Without masking, an illegal action is handled by ``illegal_action``:
  ``"remap"`` (default) plays the lowest-numbered legal action instead (in Leduc, folding when no
  bet is faced becomes a check), ``"raise"`` raises
  :class:`~nashzoo.games.IllegalActionError`; an id outside the action space raises it in
  either mode (no policy of the space can choose it). :func:`remap_illegal` applies the same
  rule to a probability vector, so a policy materialised from the network plays exactly what
  the env plays;
* seeded by ``reset(seed=...)`` (Gymnasium's ``np_random``): chance outcomes and the opponent's
  draws both come from it, so a seed fixes the whole episode stream;
* an episode in which the learner never moves (chance or the opponent ends the game first) is
  played inside ``reset()`` and drawn again; it still counts in ``episodes`` and its return in
  ``return_sum``, so ``return_sum / episodes`` is the learner's expected return
  (:func:`nashzoo.eval.expected_returns` for the policies played).

The rules come from the game through the PettingZoo env (:class:`~nashzoo.envs.aec.GameAECEnv`);
this class only routes turns. It passes ``gymnasium.utils.env_checker.check_env`` and
Stable-Baselines3's ``check_env``, built directly or through ``gymnasium.make``: importing
:mod:`nashzoo.envs` registers it for every game (ids in :data:`nashzoo.envs.GYMNASIUM_IDS`)::

    import gymnasium
    import nashzoo.envs  # registers nashzoo/KuhnPoker-v0, nashzoo/LeducHoldem-v0, ...

    env = gymnasium.make("nashzoo/KuhnPoker-v0", seat=1, opponent=some_policy)
    env = gymnasium.make("nashzoo/MatrixGame-v0", preset="matching_pennies")
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

import gymnasium
import gymnasium.utils
import numpy as np
from gymnasium import spaces

from nashzoo.envs.aec import GameAECEnv, agent_name, render_mode_error
from nashzoo.games import Game, IllegalActionError, compile_tree, load_game
from nashzoo.games.base import action_index, is_whole_number, legal_actions_text
from nashzoo.games.checks import check_seat_moves
from nashzoo.games.infoset import Infoset, Policy, PolicyError, UniformPolicy, widen_mask

__all__ = ["MaskedObservation", "SingleAgentEnv", "opponent_pool", "remap_illegal"]

_MAX_EMPTY_EPISODES = 100_000
"""Episodes a ``reset()`` plays before giving up on the learner's seat ever moving: its
decisions may be rare (a seat that moves once in 2,000 deals is a valid game), not absent."""

_EMPTY_BEFORE_CHECK = 1_000
"""Empty episodes in a row after which :attr:`SingleAgentEnv.reach_check` is asked (once per
opponent pool) whether the seat can move at all."""


class SeatUnreached(RuntimeError):
    """Chance and every opponent of the pool play so that the learner's seat never moves (a
    pure opponent that ends the game first, say): no episode has anything for it to learn
    from. Raised after an exact check (over the compiled tree), not after redrawing episodes
    until a limit; a learner's step catches it and learns nothing that step."""


def remap_illegal(probs: np.ndarray, legal_mask: np.ndarray) -> np.ndarray:
    """Move the probability of illegal actions onto the lowest-numbered legal action.

    The distribution a ``SingleAgentEnv(illegal_action="remap")`` actually plays when the agent
    samples from ``probs``. Works on ``[num_actions]`` or ``[n, num_actions]`` arrays.
    """
    probs = np.asarray(probs, dtype=np.float64)
    mask = np.asarray(legal_mask, dtype=bool)
    single = probs.ndim == 1
    p2, m2 = np.atleast_2d(probs), np.atleast_2d(mask)
    out = np.where(m2, p2, 0.0)
    first = np.argmax(m2, axis=1)
    out[np.arange(out.shape[0]), first] += np.where(m2, 0.0, p2).sum(axis=1)
    return out[0] if single else out


def opponent_pool(game: Game, opponent: Policy | Sequence[Policy]) -> tuple[Policy, ...]:
    """``opponent`` (one Policy or a non-empty sequence of them) as a tuple, each checked to be
    a Policy and, where it names its game, one for ``game``."""
    pool = tuple(opponent) if isinstance(opponent, (list, tuple)) else (opponent,)
    if not pool:
        raise ValueError("the opponent pool is empty; give at least one Policy")
    for policy in pool:
        if isinstance(policy, type):  # the Protocol check accepts a class: refuse it here
            raise PolicyError(
                f"the opponent must be a Policy object, got the class {policy.__name__}; "
                f"make one first, e.g. opponent={policy.__name__}(...)"
            )
        if not isinstance(policy, Policy):
            raise PolicyError(
                f"the opponent must be a Policy (with action_probabilities(infoset)), got "
                f"{type(policy).__name__}{_policy_hint(policy, game)}"
            )
        policy_game = getattr(policy, "game", None)
        if isinstance(policy_game, Game) and policy_game.id != game.id:
            raise PolicyError(
                f"the opponent policy is for {policy_game.display_id}, this env plays "
                f"{game.display_id}"
            )
    return pool


def _id_hint(action: Any) -> str:
    """How to fix an action that is not an integer id but holds one: a batch of one (``[1]``,
    ``np.array([1])``) gives the id it holds, a whole-number float (a policy's output kept as a
    float) is cast with ``int()``; nothing for other values, which no cast makes right."""
    try:
        value = np.asarray(action)
    except ValueError:  # a ragged list
        return ""
    if value.size != 1 or value.dtype.kind not in "fiu":
        return ""
    number = value.reshape(()).item()
    fixes = ["it is a batch of one: pass the one id it holds"] if value.ndim else []
    if value.dtype.kind == "f":
        if not np.isfinite(number) or number != round(number):
            return ""
        fixes.append(f"cast a whole-number float: {int(number)}, not {number!r}")
    return f" ({'; '.join(fixes)})" if fixes else ""


def _policy_hint(value: Any, game: Game) -> str:
    """How to make a Policy of what was given instead: a file name, a Stable-Baselines3 model
    and a network or function are the usual mistakes (the envs neither read files nor call
    networks themselves: that is :mod:`nashzoo.agents`' work, a layer above)."""
    if isinstance(value, (str, os.PathLike)):
        return (
            f" ({str(value)!r}); load a policy file first: "
            f"opponent=nashzoo.agents.load_policy_file({str(value)!r}, {game.id!r})"
        )
    if callable(getattr(value, "predict", None)) and hasattr(value, "policy"):
        return (  # a Stable-Baselines3 model (checked by shape: SB3 may be absent)
            f"; read a Stable-Baselines3 model first: "
            f"opponent=nashzoo.agents.adapters.from_sb3(model, {game.id!r})"
        )
    if callable(value):
        return (
            "; wrap a network or function of the information-set tensors first: "
            f"opponent=nashzoo.agents.adapters.from_network(fn, {game.id!r}) "
            "(output='logits', 'probs' or 'greedy')"
        )
    return ""


class SingleAgentEnv(gymnasium.Env):
    """One seat of a nashzoo game as a Gymnasium env (see the module docstring).

    Args:
        game: a Game or a name for :func:`~nashzoo.games.load_game`.
        seat: the learner's seat (``0``, ``1``) or ``"random"`` (drawn each episode).
        opponent: the opponent's Policy, or a non-empty sequence of Policies (one drawn per
            episode). Default: uniform over the legal actions. Its answers are played as
            weights, not checked as distributions: negative entries and illegal actions count
            as zero and the rest is divided by its sum (a network's softmax needs no masking);
            an answer of the wrong shape, not finite, with no weight on a legal action, or an
            exception, is a ``PolicyError`` naming the information set.
        illegal_action: ``"remap"`` (default) or ``"raise"``.
        render_mode: ``None`` or ``"ansi"`` (``render()`` returns the learner's view as text).
        **game_params: parameters for :func:`~nashzoo.games.load_game` when ``game`` is a name
            (``SingleAgentEnv("matrix", preset="matching_pennies")``).
    """

    # As gymnasium.Env declares it (no ClassVar: an instance may set its own).
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012

    def __init__(
        self,
        game: Game | str,
        seat: int | Literal["random"] = 0,
        opponent: Policy | Sequence[Policy] | None = None,
        *,
        illegal_action: Literal["remap", "raise"] = "remap",
        render_mode: str | None = None,
        **game_params: Any,
    ) -> None:
        self.game = load_game(game, **game_params)
        if self.game.num_players != 2:
            raise ValueError(
                f"SingleAgentEnv needs a two-player game; {self.game.display_id} is not"
            )
        if seat != "random" and not (is_whole_number(seat) and seat < 2):
            raise ValueError(f"seat must be 0, 1 or 'random', got {seat!r}")
        if illegal_action not in ("remap", "raise"):
            raise ValueError(f"illegal_action must be 'remap' or 'raise', got {illegal_action!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise render_mode_error(render_mode, self.metadata["render_modes"])
        self.seat_mode = seat if seat == "random" else int(seat)
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        size = int(self.game.infoset_tensor_size)
        low, high = self.game.infoset_tensor_bounds
        self.observation_space = spaces.Box(low, high, (size,), dtype=np.float32)
        self.action_space = spaces.Discrete(self.game.num_actions)
        self._aec = GameAECEnv(self.game, render_mode="ansi")
        if self._aec.tabulated:  # the tree is compiled: a seat that never moves is known now
            check_seat_moves(self.game, compile_tree(self.game).infoset_player, self.seat_mode)
        self._opponents: tuple[Policy, ...]  # set by set_opponent
        self.set_opponent(UniformPolicy() if opponent is None else opponent)
        self.seat = 0 if seat == "random" else int(seat)
        self._opponent: Policy = self._opponents[0]
        self._started = False
        self._done = True
        self.moves = 0  # env moves so far (the learner's and the opponent's)
        self.episodes = 0  # episodes started
        self.return_sum = 0.0  # sum of the learner's returns over finished episodes

    # --- configuration ----------------------------------------------------------------------
    def set_opponent(self, opponent: Policy | Sequence[Policy]) -> None:
        """Replace the opponent (takes effect at the next ``reset()``)."""
        self._opponents = opponent_pool(self.game, opponent)
        self.reach_check: Callable[[], bool] | None = None
        """Set by a learner: asked, after many empty episodes in a row, whether the seat can
        move at all against this pool (:class:`SeatUnreached` if not); else the env draws up
        to 100,000 empty episodes and then gives up."""

    # --- Gymnasium API ----------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode and play the opponent until the learner is to move.

        Args:
            seed: reseeds the env (chance and the opponent's draws).
            options: ``{"chance_outcomes": [...]}``, passed to
                :meth:`GameAECEnv.reset <nashzoo.envs.aec.GameAECEnv.reset>` (a fixed deal);
                no other key.

        Raises:
            ValueError: an unknown option, or forced chance outcomes the PettingZoo env refuses
                (nothing changed), or a forced deal in which the learner's seat did not get to
                move (the episode is over: a forced deal is not drawn again).
        """
        aec_options = self._checked_options(options)  # raises before anything changes
        super().reset(seed=seed)
        for empty in range(1 if aec_options else _MAX_EMPTY_EPISODES):
            self._start_episode(aec_options)
            if not self._done:
                return self._observation(), self._info()
            self.return_sum += float(self._aec.rewards[self._agent])
            if empty + 1 == _EMPTY_BEFORE_CHECK and self.reach_check is not None:
                reached, self.reach_check = self.reach_check(), None  # asked once per pool
                if not reached:
                    raise SeatUnreached(
                        f"in {self.game.display_id}, chance and the opponents' current play "
                        f"never reach a decision of seat {self.seat}"
                    )
        if aec_options:
            raise ValueError(
                f"seat {self.seat} did not get to move in this episode of the forced chance "
                f"outcomes {aec_options['chance_outcomes']}: {self.game.display_id} ended at "
                f"history {self._aec.history} first. A forced deal is not drawn again: force one "
                "where the seat moves, or take the other seat"
            )
        raise RuntimeError(
            f"in {_MAX_EMPTY_EPISODES:,} episodes of {self.game.display_id} seat {self.seat} never "
            "got to move: chance and the opponents' play never reach its decisions, or the game "
            "gives it none"
        )

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play the learner's ``action``, then the opponent until the learner moves again."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("the episode is over; call reset() to start a new one")
        env = self._aec
        a = action_index(action)
        if a is None:
            legal = legal_actions_text(np.flatnonzero(self.action_masks()).tolist())
            raise IllegalActionError(
                f"action must be an integer id (not a float, string or bool), got {action!r}; "
                f"legal actions are [{legal}]{_id_hint(action)}"
            )
        mask = self.action_masks()
        info_extra: dict[str, Any] = {}
        if not 0 <= a < mask.size:  # outside the action space: a bug, not a policy's choice
            legal = legal_actions_text(np.flatnonzero(mask).tolist())
            raise IllegalActionError(
                f"action {a} is outside the action space Discrete({mask.size}); legal actions "
                f"are [{legal}] (illegal_action='remap' remaps only ids inside the space)"
            )
        if not mask[a]:
            if self.illegal_action == "raise":
                legal = legal_actions_text(np.flatnonzero(mask).tolist())
                raise IllegalActionError(
                    f"action {a} is not legal for seat {self.seat}; legal actions are [{legal}]"
                )
            info_extra["illegal_action"] = a
            a = int(np.argmax(mask))
        env.step(a)
        self.moves += 1
        self._play_opponent()
        reward = float(env.rewards[self._agent]) if self._done else 0.0
        self.return_sum += reward
        info = self._info()
        info.update(info_extra)
        return self._observation(), reward, self._done, False, info

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the learner's legal actions (all False once the game is over)."""
        if self._done:
            return np.zeros(self.game.num_actions, dtype=bool)
        return widen_mask(self._aec.observe(self._agent)["action_mask"], self.game.num_actions)

    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() was called without render_mode='ansi'")
            return None
        if not self._started:
            raise RuntimeError("call reset() before render()")
        self._aec.render_agent = self._agent
        return self._aec.render()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} on {self.game.display_id}>"

    def close(self) -> None:
        """Nothing to release."""

    # --- internals --------------------------------------------------------------------------
    def _observation(self) -> np.ndarray:
        return self._aec.observe(self._agent)["observation"]

    def _info(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "infoset_key": self._aec.infos[self._agent]["infoset_key"],
            "action_mask": self.action_masks(),
        }

    def _checked_options(self, options: dict[str, Any] | None) -> dict[str, Any] | None:
        """``options`` for the PettingZoo env's reset (``None`` when nothing is forced), checked
        there without changing anything. An unknown key is refused: Gymnasium's checkers pass
        only ``{}`` (the PettingZoo env ignores unknown keys only because PettingZoo's
        ``api_test`` passes some)."""
        if options is None:
            return None
        if not isinstance(options, dict):
            raise ValueError(f"options must be a dict or None, got {options!r}")
        unknown = sorted(map(repr, set(options) - {"chance_outcomes"}))
        if unknown:
            raise ValueError(
                f"SingleAgentEnv.reset got unknown options {', '.join(unknown)}; the only one is "
                "'chance_outcomes' (a list of forced chance outcomes)"
            )
        self._aec.check_options(options)
        forced = list(options.get("chance_outcomes", ()))
        return {"chance_outcomes": forced} if forced else None

    def _start_episode(self, aec_options: dict[str, Any] | None) -> None:
        """Draw the seat and the opponent, reset the PettingZoo env and play the opponent until
        the learner is to move or the game is over."""
        rng = self.np_random
        if self.seat_mode == "random":
            self.seat = int(rng.integers(2))
        self._agent = agent_name(self.seat)
        self._opponent = self._opponents[int(rng.integers(len(self._opponents)))]
        self._reset_aec(seed=int(rng.integers(2**63)), options=aec_options)
        self._started, self._done = True, False
        self.episodes += 1
        self._play_opponent()

    def _reset_aec(self, **kwargs: Any) -> None:
        """Reset the PettingZoo env, counting the games it drew and redrew because chance ended
        them before anyone moved (:attr:`GameAECEnv.zero_move_games`) as finished episodes of
        the learner: their returns go into :attr:`return_sum`, so ``return_sum / episodes``
        stays the learner's expected return."""
        env = self._aec
        games, paid = env.zero_move_games, env.zero_move_returns[self._agent]
        env.reset(**kwargs)
        self.episodes += env.zero_move_games - games
        self.return_sum += env.zero_move_returns[self._agent] - paid

    def _play_opponent(self) -> None:
        """Opponent moves until the learner is to move or the game is over."""
        env, rng = self._aec, self.np_random
        while True:
            agent = env.agent_selection
            if env.terminations[agent]:
                self._done = True
                return
            if agent == self._agent:
                return
            obs = env.observe(agent)
            key = env.infos[agent]["infoset_key"]
            infoset = Infoset.from_observation(obs, 1 - self.seat, key, self.game.num_actions)
            try:
                probs = np.asarray(self._opponent.action_probabilities(infoset), dtype=np.float64)
            except Exception as err:
                raise PolicyError(
                    f"the opponent failed at {infoset.key!r} ({type(err).__name__}: {err})"
                ) from err
            legal = infoset.legal_mask
            if probs.shape != legal.shape or not np.all(np.isfinite(probs)):
                raise PolicyError(
                    f"the opponent returned {probs!r} at {infoset.key!r}; it must give "
                    f"{legal.size} finite probabilities"
                )
            probs = np.where(legal, np.maximum(probs, 0.0), 0.0)
            total = probs.sum()
            if total <= 0:
                raise PolicyError(
                    f"the opponent gives no probability to a legal action at {infoset.key!r}"
                )
            env.step(int(rng.choice(probs.size, p=probs / total)))
            self.moves += 1


class MaskedObservation(gymnasium.ObservationWrapper, gymnasium.utils.RecordConstructorArgs):
    """The single-agent view with the action mask inside the observation:
    ``Dict({obs_key: Box(0, 1, (D,), float32), mask_key: Box(0, 1, (num_actions,), float32)})``.

    The layout libraries that mask through the observation read; the defaults are the key names
    of RLlib's action-masking RLModule (``"observations"``, ``"action_mask"``).
    """

    def __init__(
        self, env: gymnasium.Env, obs_key: str = "observations", mask_key: str = "action_mask"
    ) -> None:
        gymnasium.utils.RecordConstructorArgs.__init__(self, obs_key=obs_key, mask_key=mask_key)
        gymnasium.ObservationWrapper.__init__(self, env)
        action_masks = getattr(env.unwrapped, "action_masks", None)
        if not callable(action_masks):
            raise TypeError(f"MaskedObservation wraps a SingleAgentEnv, got {env.unwrapped!r}")
        self._action_masks: Callable[[], np.ndarray] = action_masks
        if obs_key == mask_key:
            raise ValueError(f"obs_key and mask_key must differ, both are {obs_key!r}")
        self.obs_key, self.mask_key = obs_key, mask_key
        action_space = env.action_space
        if not isinstance(action_space, spaces.Discrete):
            raise TypeError(
                f"MaskedObservation needs a Discrete action space, got {action_space!r}"
            )
        n = int(action_space.n)
        self.observation_space = spaces.Dict(
            {
                obs_key: env.observation_space,
                mask_key: spaces.Box(0.0, 1.0, (n,), dtype=np.float32),
            }
        )

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        mask = self._action_masks().astype(np.float32)
        return {self.obs_key: observation, self.mask_key: mask}
