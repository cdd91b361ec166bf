"""The env's states mode: a game's ``State`` objects stepped one move at a time, with a bounded
memo of the histories reached, for games too big to tabulate.

:class:`~nashzoo.envs.aec.GameAECEnv` either tabulates the whole tree up front (the tables mode)
or, here, builds a :class:`Node` for each history when play first reaches it: the ``State``
plus what the env reads there (player to move, legal actions, keys, chance distribution,
returns) and the children reached so far. Openings are replayed constantly (every episode
starts at the root), so after a few episodes most steps cost what a table lookup costs, while
memory stays bounded: once :data:`MEMO_MAX_NODES` nodes exist the memo starts again from the
root. Every field of a node is a function of its ``State``, so forgetting changes nothing that
play shows.

Whether an env tabulates (``tabulate="auto"``) is :func:`small_enough`: at most
:data:`TABULATE_MAX_HISTORIES` histories, from ``Game.num_histories()`` when the game knows its
size, else counted lazily up to that limit (once per game).
"""

from __future__ import annotations

from itertools import accumulate

import numpy as np

from nashzoo.games import CHANCE, TERMINAL, Game, State, checks
from nashzoo.games.cache import GameCache
from nashzoo.games.limits import history_limit

TABULATE_MAX_HISTORIES = 100_000
"""``tabulate="auto"`` tabulates games with at most this many histories (Leduc has 9,457; the
default Liar's dice, 294,883, is stepped through its states)."""
MEMO_MAX_NODES = 1 << 16
"""Nodes the states mode remembers before it forgets them all and starts again. Each env has
its own memo (shared only with its copies), of about 1.2 KB a node once full: some 75 MB for
Liar's dice with two dice each, so 64 such envs in one process hold some 4.6 GB. One memo
shared by every env of a game was tried (2026-11-27) and reverted: with three envs of Liar's
dice stepped in turn in one process, the first played 20-25% fewer episodes a second
(``benchmarks/bench_env.py``), for reasons not pinned down."""


def small_enough(game: Game) -> bool:
    """Whether ``tabulate="auto"`` uses the tables for ``game`` (decided once per game), never
    past a cap on compiles (``NASHZOO_MAX_HISTORIES``, read at each call): under one, Leduc's
    env used to ask for its tables and be refused."""
    size = _COUNTED(game)
    cap = history_limit()
    return size <= TABULATE_MAX_HISTORIES and (cap is None or size <= cap)


def _histories(game: Game) -> int:
    """``game``'s histories: exact up to :data:`TABULATE_MAX_HISTORIES`, past it the count
    stops one above."""
    size = game.num_histories()
    if size is None:
        size = count_histories(game, TABULATE_MAX_HISTORIES + 1)
    return size


def count_histories(game: Game, stop: int) -> int:
    """The number of histories of ``game``, or ``stop`` once the count reaches it."""
    count = 0
    stack = [game.new_initial_state()]
    while stack and count < stop:
        state = stack.pop()
        count += 1
        if not state.is_terminal():
            stack.extend(state._child(a) for a in state.legal_actions())
    return count


class Node:
    """One history reached in play: its ``State`` and what the env reads there.

    ``outcomes``/``cdf`` are the chance outcomes in id order and their running probability
    sums (the last set to 1), the same draw rule as the tables; ``kids`` maps each action
    taken so far to its node; ``views`` holds each player's view once asked
    (:meth:`NodeMemo.view`).
    """

    __slots__ = (
        "cdf",
        "keys",
        "kids",
        "legal",
        "outcomes",
        "player",
        "returns",
        "state",
        "views",
    )

    def __init__(self, state: State, num_players: int) -> None:
        self.state = state
        self.player = who = state.current_player()
        self.kids: dict[int, Node] = {}
        self.keys: list[str] = []
        self.legal: tuple[int, ...] = ()
        self.outcomes: tuple[int, ...] = ()
        self.cdf: list[float] = []
        self.returns: list[float] = []
        self.views: list[tuple[np.ndarray, np.ndarray] | None] = [None] * num_players
        if who == CHANCE:
            pairs = sorted(state.chance_outcomes())
            self.outcomes = tuple(o for o, _ in pairs)
            self.cdf = list(accumulate(p for _, p in pairs))
            self.cdf[-1] = 1.0  # a uniform draw in [0, 1) always lands
            return
        try:
            self.keys = [state.infoset_key(p) for p in range(num_players)]
        except Exception:  # asked again, one by one, for the message naming what envs need
            self.keys = [checks.view_key(state.game, state, p) for p in range(num_players)]
        if not all(key.__class__ is str for key in self.keys):
            self.keys = [checks.view_key(state.game, state, p) for p in range(num_players)]
        if who == TERMINAL:
            self.returns = state.returns().tolist()
        else:
            self.legal = tuple(state.legal_actions())

    def __deepcopy__(self, memo: dict) -> Node:
        return self  # a pure function of an immutable State: copies share it

    def __reduce__(self) -> tuple:
        return (Node, (self.state, self.state.game.num_players))


class NodeMemo:
    """The nodes reached so far from the root of one game, and the views shown there.

    Shared by an env and its ``copy.deepcopy`` copies (it only ever holds values computed from
    the rules); pickles as its game and starts empty on load.
    """

    def __init__(self, game: Game) -> None:
        self.game = game
        self._players = game.num_players
        self._forget()

    def _forget(self) -> None:
        self.root = Node(self.game.new_initial_state(), self._players)
        self._size = 1
        self._views: dict[tuple[int, str, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._masks: dict[tuple[tuple[int, ...], int], np.ndarray] = {}

    def child(self, node: Node, action: int) -> Node:
        """The node after the legal ``action`` at ``node``."""
        kid = node.kids.get(action)
        if kid is None:
            if self._size >= MEMO_MAX_NODES:
                self._forget()  # ``node`` lives on (the caller holds it); its parents go
            kid = node.kids[action] = Node(node.state._child(action), self._players)
            self._size += 1
        return kid

    def view(self, node: Node, player: int, num_actions: int) -> tuple[np.ndarray, np.ndarray]:
        """Read-only ``(tensor, mask)`` of ``player`` at ``node``: its infoset tensor, and its
        legal mask over ``num_actions`` ids when it is to move there (zeros otherwise).

        Both depend only on the information set, so they are kept per (player, key, to move)
        and shared by every node of that information set; a mask also by its legal actions, as
        many information sets share them.
        """
        view = node.views[player]
        if view is not None:
            return view
        mover = node.player == player
        cache_key = (player, node.keys[player], mover)
        view = self._views.get(cache_key)
        if view is None:
            legal = node.legal if mover else ()
            mask = self._masks.get((legal, num_actions))
            if mask is None:
                mask = np.zeros(num_actions, dtype=np.int8)
                mask[[a for a in legal if a < num_actions]] = 1
                mask.setflags(write=False)
                self._masks[(legal, num_actions)] = mask
            tensor = checks.view_tensor(node.state.game, node.state, player)
            tensor.setflags(write=False)
            view = self._views[cache_key] = (tensor, mask)
        node.views[player] = view
        return view

    def __deepcopy__(self, memo: dict) -> NodeMemo:
        return self

    def __reduce__(self) -> tuple:
        return (NodeMemo, (self.game,))


_COUNTED: GameCache[int] = GameCache(_histories)
