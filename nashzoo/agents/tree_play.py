"""One seat's play against an opponent in ``n`` copies of a game at once, over the compiled tree.

A learner that learns from sampled episodes (NFSP's lanes, the SB3 learners' copies) needs the
same few things per move: where each copy is, what the learner sees there, and, after its
move, chance and the opponent played until the learner is to move again or the game is over.
Routing each move through the PettingZoo env and its States costs tens of microseconds of
Python per copy and move. :class:`TreePlay` does it for all copies at once from the game's
compiled tree: each copy is a node index, a move is a child lookup, and chance outcomes and the
opponent's moves are drawn for every copy at once from the chance probabilities and the
opponent's table (any Policy, asked once per information set that play reaches after each
:meth:`TreePlay.set_opponent`).

What the learner sees is what it sees through the env: the observation is its information-set
tensor, the mask its legal actions, and its payoff at the end the game's return. Used by
:class:`~nashzoo.agents.tree_vec_env.TreeVecEnv` (SB3's VecEnv API over it) and by NFSP when
:func:`fits` says the game's tree is small enough to hold; a bigger game is never compiled to
be stepped (its learners play through the env). Needs numpy only.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from nashzoo.agents.policy import check_distributions, policy_rows
from nashzoo.envs.lazy import small_enough
from nashzoo.envs.single_agent import SeatUnreached, opponent_pool
from nashzoo.games import compile_tree, load_game
from nashzoo.games import treemath as tm
from nashzoo.games.base import CHANCE, TERMINAL, Game, is_whole_number
from nashzoo.games.checks import check_seat_moves
from nashzoo.games.infoset import Policy, UniformPolicy
from nashzoo.games.limits import history_limit

__all__ = ["MAX_HISTORIES", "SeatUnreached", "TreePlay", "fits", "unreached_step"]

_MAX_EMPTY_EPISODES = 100_000
"""Episodes redrawn for a copy whose learner never got to move before giving up: its seat's
decisions may be rare (a seat that moves once in 2,000 deals is a valid game), not absent."""


def unreached_step(moves: int, game: Game) -> dict[str, Any]:
    """The metrics of a learner's step that :class:`SeatUnreached` ended: the opponent's moves
    played before it was found (work done), no episode of its own, nothing learnt; and
    ``seat_unreached`` 1, so that a log shows why. With no move at all (chance ended every game
    before anyone's decision) a ValueError: such a step does no work, and a run with a work
    budget would step for ever."""
    if moves == 0:
        raise ValueError(
            f"in {game.display_id}, chance ends every game drawn before anyone moves (its "
            "decisions have probability 0): there is nothing to learn from playing it"
        )
    return {"env_steps": int(moves), "episodes": 0, "seat_unreached": 1}


MAX_HISTORIES = 2_000_000
"""The largest game (in histories) played over its compiled tree when a learner chooses
``"auto"``: the tree plus the per-node tables of :class:`TreePlay` took 140 bytes a history on
Liar's dice (175 at the peak of building them, ``tracemalloc``), so about 0.3 GB at this limit."""


def fits(game: Game) -> bool:
    """Whether ``"auto"`` plays ``game`` over its compiled tree: at most :data:`MAX_HISTORIES`
    histories when the game knows its size, else the env's own rule
    (:func:`nashzoo.envs.lazy.small_enough`: tabulated envs only), which counts no further than
    its own limit; and never past a cap on compiles (``NASHZOO_MAX_HISTORIES``,
    :func:`~nashzoo.games.limits.history_limit`), under which such a learner plays through the
    envs instead of being refused."""
    size = game.num_histories()
    if size is None:
        return small_enough(game)  # which reads the cap too
    cap = history_limit()
    return size <= MAX_HISTORIES and (cap is None or size <= cap)


class TreePlay:
    """``copies`` copies of one seat of ``game`` against an opponent (see the module docstring).

    Args:
        game: a two-player Game or a name.
        copies: copies played side by side.
        seat: the learner's seat (0, 1) or ``"random"`` (drawn per episode and copy).
        opponent: a Policy or a non-empty sequence of them (one drawn per episode and copy);
            default uniform over the legal actions.
        rng: the generator behind every draw (chance, seats, opponents' moves); a caller that
            owns one generator for all its randomness passes it (and may replace
            :attr:`rng` later).

    Attributes:
        node: ``[copies]`` each copy's node in :attr:`tree`.
        seat: ``[copies]`` each copy's learner seat.
        moves: moves played so far in all copies (the learner's and the opponent's).
        episodes: episodes started so far in all copies (empty ones included).
        return_sum: the learner's returns of episodes that ended inside :meth:`start` (episodes
            in which it never moved; the caller adds those of the episodes it plays out).
    """

    def __init__(
        self,
        game: Game | str,
        copies: int,
        seat: int | Literal["random"] = 0,
        opponent: Policy | Sequence[Policy] | None = None,
        *,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.game = load_game(game)
        if self.game.num_players != 2:
            raise ValueError(
                f"playing over the tree needs a two-player game; {self.game.display_id} is not"
            )
        if not is_whole_number(copies, 1):
            raise ValueError(f"the number of copies must be a positive integer, got {copies!r}")
        if seat not in (0, 1, "random"):
            raise ValueError(f"seat must be 0, 1 or 'random', got {seat!r}")
        self.seat_mode = seat
        self.copies = int(copies)
        tree = self.tree = compile_tree(self.game)
        check_seat_moves(self.game, tree.infoset_player, seat)
        self._player = tree.player
        self._infoset = tree.infoset
        self._utility = tree.utility
        self._tensors = tree.infoset_tensors
        self._legal = tree.legal_mask
        # Chance nodes' outcome distributions, one row per chance node, by child position.
        self._chance = tm.chance_rows(tree)
        n = self.copies
        self.rng = rng if rng is not None else np.random.default_rng()
        self.node = np.zeros(n, dtype=np.int64)
        self.seat = np.zeros(n, dtype=np.int64) if seat == "random" else np.full(n, seat)
        self._pool = np.zeros(n, dtype=np.int64)
        self.moves = 0
        self.episodes = 0
        self.return_sum = 0.0
        self.set_opponent(UniformPolicy() if opponent is None else opponent)

    def set_opponent(self, opponent: Policy | Sequence[Policy]) -> None:
        """Replace the opponent pool, at once: a copy in the middle of an episode plays the
        rest of it against the new pool (where the pool shrank below the opponent it had drawn,
        it draws again from the new one).

        Each policy is asked lazily: the first time a copy reaches one of its information sets
        (after this call), all the sets reached at that tick that it has not answered yet are
        asked at once (one batched call for a network), and the answers are kept until the next
        :meth:`set_opponent`. A large game's opponent is so asked only where play goes (Liar's
        dice has 24,576 information sets; a step of a few hundred episodes visits a few hundred
        of them). The learner's own information sets are never asked of it with a fixed seat.
        An answer that is not a distribution over the legal actions raises
        :class:`~nashzoo.games.infoset.PolicyError` naming the information set.
        """
        self._policies = opponent_pool(self.game, opponent)
        shape = (len(self._policies), self.tree.num_infosets)
        self._tables = np.zeros((*shape, self.tree.num_actions))  # [K, I, A], rows as asked
        self._known = np.zeros(shape, dtype=bool)
        self._reachable: bool | None = None  # whether the learner gets to move (when asked)
        stale = np.flatnonzero(self._pool >= len(self._policies))
        if stale.size:
            self._pool[stale] = self.rng.integers(len(self._policies), size=stale.size)

    def _opponent_rows(self, pool: np.ndarray, infosets: np.ndarray) -> np.ndarray:
        """The opponents' distributions at ``(pool[i], infosets[i])``, asking for the missing."""
        missing = ~self._known[pool, infosets]
        if missing.any():
            for k in np.unique(pool[missing]).tolist():
                rows = np.unique(infosets[missing & (pool == k)])
                answer = policy_rows(self.tree, self._policies[k], rows)
                table = self._tables[k]
                table[rows] = answer
                check_distributions(self.tree, table, rows=rows)
                probs = np.where(self._legal[rows], np.maximum(answer, 0.0), 0.0)
                table[rows] = probs / probs.sum(axis=1, keepdims=True)
                self._known[k, rows] = True
        return self._tables[pool, infosets]

    # --- what the learner sees ----------------------------------------------------------------
    def observations(self, copies: np.ndarray | slice = slice(None)) -> np.ndarray:
        """The learner's information-set tensors at ``copies`` (all by default)."""
        return self._tensors[self._infoset[self.node[copies]]]

    def infosets(self, copies: np.ndarray | slice = slice(None)) -> np.ndarray:
        """The learner's information-set ids (rows of the tree's tables) at ``copies``."""
        return self._infoset[self.node[copies]]

    def masks(self, copies: np.ndarray | slice = slice(None)) -> np.ndarray:
        """``[len(copies), num_actions]``: the learner's legal actions at ``copies``."""
        return self._legal[self._infoset[self.node[copies]]]

    def payoffs(self, copies: np.ndarray) -> np.ndarray:
        """The learner's return at ``copies``' nodes (its payoff where a game is over)."""
        return self._utility[self.node[copies], self.seat[copies]]

    # --- play -----------------------------------------------------------------------------------
    def start(self, copies: np.ndarray) -> None:
        """New episodes for ``copies``: seat and opponent drawn, then chance and the opponent
        play until the learner is to move (an episode in which the learner never moves is
        counted, paid into :attr:`return_sum` and replaced). :class:`SeatUnreached` when the
        current opponents and chance reach none of the learner's decisions (checked exactly
        the first time a whole batch ends without the learner moving)."""
        checked = False
        for _ in range(_MAX_EMPTY_EPISODES):
            if self.seat_mode == "random":
                self.seat[copies] = self.rng.integers(2, size=copies.size)
            self._pool[copies] = self.rng.integers(len(self._tables), size=copies.size)
            self.node[copies] = 0
            self.episodes += int(copies.size)
            self._advance(copies)
            ended = self._player[self.node[copies]] == TERMINAL
            if not ended.any():
                return
            copies = copies[ended]
            self.return_sum += float(self._utility[self.node[copies], self.seat[copies]].sum())
            if not checked and ended.all():
                checked = True
                if not self._reaches_learner():
                    raise SeatUnreached(
                        f"in {self.game.display_id}, chance and the other seat's current play "
                        "never reach a decision of the learner's seat"
                    )
        raise RuntimeError(
            f"in {_MAX_EMPTY_EPISODES:,} episodes of {self.game.display_id} a learner's seat never "
            "got to move: chance and the other seat's current play never reach its decisions"
        )

    def _reaches_learner(self) -> bool:
        """Whether chance and some opponent of the pool reach a decision of the learner's seat
        (either seat, where it is drawn) with positive probability: exact
        (:func:`~nashzoo.games.treemath.reaches_player`), asked once per opponent pool."""
        if self._reachable is None:
            seats = (0, 1) if self.seat_mode == "random" else (int(self.seat[0]),)
            self._reachable = any(
                tm.reaches_player(self.tree, seat, functools.partial(self._rows_of, k))
                for k in range(len(self._policies))
                for seat in seats
            )
        return self._reachable

    def _rows_of(self, k: int, infosets: np.ndarray) -> np.ndarray:
        """Opponent ``k``'s distributions at ``infosets``."""
        return self._opponent_rows(np.full(infosets.size, k), infosets)

    def move(self, copies: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The learner plays ``actions`` (legal action ids, one per copy) in ``copies``; then
        chance and the opponent play until each is at a learner decision or over. Returns
        whether each of ``copies`` is over (finished copies are not restarted)."""
        self.node[copies] = self.tree.decision_children(self.node[copies], actions)
        self.moves += int(copies.size)
        self._advance(copies)
        return self._player[self.node[copies]] == TERMINAL

    def _advance(self, copies: np.ndarray) -> None:
        """Chance and the opponent move in ``copies`` until each is at a learner decision or
        over."""
        tree = self.tree
        width = max(tree.num_actions, self._chance.probs.shape[1])
        while copies.size:
            node = self.node[copies]
            who = self._player[node].astype(np.int64)
            moving = (who != TERMINAL) & (who != self.seat[copies])
            copies, node, who = copies[moving], node[moving], who[moving]
            if not copies.size:
                return
            chance = who == CHANCE
            probs = np.zeros((copies.size, width))
            if chance.any():
                rows = self._chance.probs[self._chance.row[node[chance]]]
                probs[chance, : rows.shape[1]] = rows
            opponent = ~chance
            if opponent.any():
                rows = self._opponent_rows(
                    self._pool[copies[opponent]], self._infoset[node[opponent]]
                )
                probs[opponent, : rows.shape[1]] = rows
                self.moves += int(opponent.sum())
            # A chance node's draw is a child position, a decision's an action id.
            drawn = _sample(probs, self.rng)
            child = tree.child_start[node] + drawn
            if opponent.any():
                child[opponent] = tree.decision_children(node[opponent], drawn[opponent])
            self.node[copies] = child


def _sample(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row of ``probs`` (rows summing to one), never one of probability 0."""
    return tm.sample_cdf(np.cumsum(probs, axis=1), rng.random(len(probs)))
