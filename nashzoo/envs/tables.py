"""The tables mode of :class:`~nashzoo.envs.aec.GameAECEnv` (``tabulate=True``): per game, the
lookup tables the env steps through instead of ``State`` objects.

The structure (who moves, the child per action, the legal actions, chance draws and their
cumulative probabilities, payoffs) is gathered in bulk from the arrays of
:func:`nashzoo.games.compile_tree`; what each player sees at each node (its information-set key,
tensor and action masks) is asked of the ``State`` once per node, one depth at a time, so only
two levels of States are alive. Built once per ``game.id`` (:func:`env_tables`), never mutated,
shared by every env over the game. The other mode, stepping the game's States with a memo of
the histories reached, is :mod:`nashzoo.envs.lazy`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nashzoo.games import CHANCE, Game, State, checks, compile_tree
from nashzoo.games import treemath as tm
from nashzoo.games.cache import GameCache
from nashzoo.games.tree import CompiledTree, readonly


@dataclass(frozen=True, eq=False)
class EnvTables:
    """Per-game lookup tables the env steps through (built once per ``game.id``).

    Never mutated after building: envs share them, ``copy.deepcopy`` of an env shares them,
    and pickling stores only the game. All per-node fields are Python lists indexed by the
    compiled tree's node index: list indexing with Python ints is several times faster than
    indexing numpy arrays element-wise.
    """

    game: Game
    player: list[int]  # node -> acting player, CHANCE or TERMINAL
    children: list[list[int]]  # node -> child node per action id, -1 where illegal
    legal: list[tuple[int, ...]]  # node -> legal action ids (empty at terminals)
    chance_children: list[tuple[int, ...]]  # chance node -> child node per outcome
    chance_outcomes: list[tuple[int, ...]]  # chance node -> outcome ids
    chance_cdf: list[list[float]]  # chance node -> cumulative probabilities
    returns: list[tuple[float, ...]]  # node -> returns (zeros before the end)
    parent: list[int]
    action: list[int]  # node -> action (or outcome) leading to it
    view: list[tuple[int, ...]]  # node -> view id per player
    view_key: list[str]  # view id -> State.infoset_key(player)
    view_tensor: list[np.ndarray]  # view id -> State.infoset_tensor(player) (read-only)
    view_mask: list[np.ndarray]  # view id -> int8 mask of game.num_actions_of(p) (read-only)
    view_mask_padded: list[np.ndarray]  # view id -> the same mask padded to game.num_actions

    @property
    def num_nodes(self) -> int:
        return len(self.player)

    def __deepcopy__(self, memo: dict) -> EnvTables:
        return self  # immutable and shared: a copied env keeps pointing at the same tables

    def __reduce__(self) -> tuple:
        return (env_tables, (self.game,))  # pickles as its game; rebuilt or reused on load

    def history(self, node: int) -> list[int]:
        """Actions and chance outcomes from the root to ``node``."""
        out = []
        while self.parent[node] >= 0:
            out.append(self.action[node])
            node = self.parent[node]
        return out[::-1]


def env_tables(game: Game) -> EnvTables:
    """The :class:`EnvTables` of ``game`` (built on first use, then cached per game)."""
    return _TABLES(game)


def _build_tables(game: Game) -> EnvTables:
    """The tables of ``game`` from its compiled tree: the structure (players, children, legal
    actions, chance draws, returns) gathered from the tree's arrays in bulk, with no Python
    work per node beyond list conversion; then what every player sees at every node, asked of
    the ``State`` once per node, one depth at a time (only two levels of States are alive)."""
    tree = compile_tree(game)
    player = tree.player.tolist()
    parent = tree.parent.tolist()
    action = tree.action.tolist()
    children, legal = _decision_tables(tree, game.num_actions)
    chance_children, chance_outcomes, chance_cdf = _chance_tables(tree, legal)
    returns = _returns_table(tree, game.num_players)
    view, view_key, view_tensor, view_mask, view_mask_padded = _views(game, tree, parent, action)
    return EnvTables(
        game=game,
        player=player,
        children=children,
        legal=legal,
        chance_children=chance_children,
        chance_outcomes=chance_outcomes,
        chance_cdf=chance_cdf,
        returns=returns,
        parent=parent,
        action=action,
        view=view,
        view_key=view_key,
        view_tensor=view_tensor,
        view_mask=view_mask,
        view_mask_padded=view_mask_padded,
    )


def _decision_tables(
    tree: CompiledTree, num_actions: int
) -> tuple[list[list[int]], list[tuple[int, ...]]]:
    """Per node: the child per action id at decision nodes (-1 where illegal; empty elsewhere)
    and the legal action ids of the node's information set (empty elsewhere)."""
    decision = tree.player >= 0
    nodes = np.flatnonzero(decision)
    rank = tree.legal_rank[tree.infoset[nodes], :num_actions]
    rows = iter(np.where(rank >= 0, tree.child_start[nodes, None] + rank, -1).tolist())
    no_children: list[int] = []
    children = [next(rows) if d else no_children for d in decision.tolist()]
    infoset_legal = [tuple(np.flatnonzero(row).tolist()) for row in tree.legal_mask]
    legal: list[tuple[int, ...]] = [
        infoset_legal[i] if i >= 0 else () for i in tree.infoset.tolist()
    ]
    return children, legal


def _chance_tables(
    tree: CompiledTree, legal: list[tuple[int, ...]]
) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]], list[list[float]]]:
    """Per node: the chance outcomes in the order the game lists them (id order in every
    built-in game), their children and cumulative probabilities
    (empty at decision and terminal nodes); also writes each chance node's outcomes into
    ``legal``."""
    num_nodes = tree.num_nodes
    chance_children: list[tuple[int, ...]] = [()] * num_nodes
    chance_outcomes: list[tuple[int, ...]] = [()] * num_nodes
    no_cdf: list[float] = []
    chance_cdf: list[list[float]] = [no_cdf] * num_nodes
    chance = np.flatnonzero(tree.player == CHANCE)
    if chance.size:
        start = tree.child_start
        action = tree.action.tolist()
        cdfs = np.cumsum(tm.chance_rows(tree).probs, axis=1).tolist()
        for node, cdf in zip(chance.tolist(), cdfs, strict=True):
            kids = range(int(start[node]), int(start[node + 1]))
            legal[node] = chance_outcomes[node] = tuple(action[c] for c in kids)
            chance_children[node] = tuple(kids)
            cdf = cdf[: len(kids)]
            cdf[-1] = 1.0  # guard against rounding: a uniform draw in [0, 1) always lands
            chance_cdf[node] = cdf
    return chance_children, chance_outcomes, chance_cdf


def _returns_table(tree: CompiledTree, num_players: int) -> list[tuple[float, ...]]:
    """Per node: every player's return at terminal nodes, zeros elsewhere."""
    returns: list[tuple[float, ...]] = [(0.0,) * num_players] * tree.num_nodes
    for node, row in zip(tree.terminal_nodes.tolist(), tree.terminal_utility.tolist(), strict=True):
        returns[node] = tuple(row)
    return returns


_Views = tuple[
    list[tuple[int, ...]], list[str], list[np.ndarray], list[np.ndarray], list[np.ndarray]
]
"""Node -> view ids, and per view id: key, tensor, mask, padded mask."""


def _views(game: Game, tree: CompiledTree, parent: list[int], action: list[int]) -> _Views:
    """Every node's view id per player, and each view's key, tensor and masks, from the States.

    A view is one (player, ``State.infoset_key(player)``); its tensor is read from the first
    State showing it, and its mask is the legal mask of that key's information set when the
    player owns one (zeros otherwise; the env shows it to an agent not to move only in a
    simultaneous-move env), also padded to ``game.num_actions`` (``pad_actions``).
    States are made level by level (breadth-first order: a level's parents are the level
    before), so only two levels are alive at once."""
    players = range(game.num_players)
    ids: list[dict[str, int]] = [{} for _ in players]
    view_key: list[str] = []
    view_tensor: list[np.ndarray] = []
    view_mask: list[np.ndarray] = []
    view_mask_padded: list[np.ndarray] = []
    view: list[tuple[int, ...]] = []
    sizes = [game.num_actions_of(p) for p in players]
    starts = tree.level_starts.tolist()
    level: list[State] = [game.new_initial_state()]
    for depth in range(len(starts) - 1):
        if depth:
            base = starts[depth - 1]
            above = level
            level = [
                above[parent[n] - base]._child(action[n])
                for n in range(starts[depth], starts[depth + 1])
            ]
        for state in level:
            node_ids = []
            for p in players:
                key = checks.view_key(game, state, p)
                vid = ids[p].get(key)
                if vid is None:
                    vid = ids[p][key] = len(view_key)
                    view_key.append(key)
                    view_tensor.append(readonly(checks.view_tensor(game, state, p)))
                    mask = np.zeros(sizes[p], dtype=np.int8)
                    iset = tree.infoset_index.get(key)
                    if iset is not None and tree.infoset_player[iset] == p:
                        mask[np.flatnonzero(tree.legal_mask[iset])] = 1  # ids < num_actions_of(p)
                    view_mask.append(readonly(mask))
                    padded = np.zeros(game.num_actions, dtype=np.int8)
                    padded[: mask.size] = mask
                    view_mask_padded.append(readonly(padded))
                node_ids.append(vid)
            view.append(tuple(node_ids))
    return view, view_key, view_tensor, view_mask, view_mask_padded


_TABLES: GameCache[EnvTables] = GameCache(_build_tables)
