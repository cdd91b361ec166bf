"""``compile_tree(game)``: the whole game tree as flat numpy arrays, enumerated once.

This is the fast path every full-width solver and the exact evaluator share. Nodes are stored in
breadth-first order, so every node comes after its parent and the nodes of depth ``d`` are the
slice ``level_starts[d]:level_starts[d + 1]``.

Besides the per-node arrays, the tree keeps a *sequence-form view of the terminals*: for every
terminal history ``z`` and every player ``p``, ``terminal_sequences[p][z]`` lists the flat indices
``infoset * num_actions + action`` of the moves ``p`` made on the way to ``z`` (in order, padded
with ``num_sequences``, an index that always reads probability 1). With that, reach probabilities,
counterfactual values and best responses are a handful of gathers, cumulative products and
``np.bincount`` calls over a ``[num_terminals, max_moves]`` matrix (see ``treemath``), with no
Python call per node.

Arrays are read-only, and the result is cached per game id: it is shared, never mutated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nashzoo.games import checks
from nashzoo.games.base import CHANCE, TERMINAL, Game
from nashzoo.games.cache import GameCache


@dataclass(frozen=True, eq=False)
class CompiledTree:
    """Flat arrays describing every history of a game. Build with :func:`compile_tree`."""

    game_id: str
    num_players: int
    num_actions: int
    # --- nodes (breadth-first order) ---------------------------------------------------------
    parent: np.ndarray  # [N] int32, -1 at the root
    depth: np.ndarray  # [N] int32
    player: np.ndarray  # [N] int8: player id, CHANCE (-1) or TERMINAL (-4)
    infoset: np.ndarray  # [N] int32 infoset of the acting player, -1 at chance/terminal nodes
    action: np.ndarray  # [N] int32 action (or chance outcome) leading here from the parent
    chance_prob: np.ndarray  # [N] float64 probability of that edge if the parent is chance, else 1
    children: np.ndarray  # [N, B] int32 child node per action/outcome id, -1 where none
    utility: np.ndarray  # [N, P] float64 returns at terminal nodes, zeros elsewhere
    level_starts: np.ndarray  # [max_depth + 2] int64 offsets of each depth
    # --- information sets --------------------------------------------------------------------
    infoset_player: np.ndarray  # [I] int8
    infoset_depth: np.ndarray  # [I] int32: number of moves the player made before this infoset
    legal_mask: np.ndarray  # [I, A] bool
    infoset_tensors: np.ndarray  # [I, D] float32
    infoset_keys: tuple[str, ...]
    # --- terminals in sequence form ----------------------------------------------------------
    terminal_nodes: np.ndarray  # [Z] int32 node index of each terminal
    terminal_utility: np.ndarray  # [Z, P] float64
    terminal_chance_reach: np.ndarray  # [Z] float64 product of chance probabilities on the path
    terminal_sequences: tuple[np.ndarray, ...]  # per player [Z, L_p] int64 flat sequence ids
    infoset_index: dict[str, int] = field(repr=False)

    @property
    def num_nodes(self) -> int:
        return int(self.parent.shape[0])

    @property
    def num_infosets(self) -> int:
        return int(self.infoset_player.shape[0])

    @property
    def num_terminals(self) -> int:
        return int(self.terminal_nodes.shape[0])

    @property
    def num_sequences(self) -> int:
        """``num_infosets * num_actions``: also the padding id that reads probability 1."""
        return self.num_infosets * self.num_actions

    @property
    def num_decision_nodes(self) -> int:
        return int(np.count_nonzero(self.player >= 0))

    def infosets_of(self, player: int) -> np.ndarray:
        """Indices of ``player``'s information sets."""
        return np.flatnonzero(self.infoset_player == player)

    def index_of(self, key: str) -> int:
        """Index of the information set with this key (KeyError naming the key otherwise)."""
        try:
            return self.infoset_index[key]
        except KeyError:
            raise KeyError(f"no information set {key!r} in {self.game_id}") from None


def compile_tree(game: Game) -> CompiledTree:
    """Enumerate ``game`` once into a :class:`CompiledTree` (cached per game, see
    :mod:`nashzoo.games.cache`).

    Every history is checked on the way (see :mod:`nashzoo.games.checks`): a game with
    chance probabilities not summing to one, out-of-range or missing actions, malformed
    returns or imperfect recall raises a :class:`~nashzoo.games.base.GameDefinitionError`
    naming the history, instead of giving numbers that are silently wrong.
    """
    return _TREES(game)


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _compile(game: Game) -> CompiledTree:
    num_players, num_actions = game.num_players, game.num_actions
    parent: list[int] = []
    depth: list[int] = []
    player: list[int] = []
    infoset: list[int] = []
    action: list[int] = []
    chance_prob: list[float] = []
    edges: list[tuple[int, int, int]] = []  # (parent node, action, child node)
    terminal_nodes: list[int] = []
    terminal_utility: list[np.ndarray] = []
    terminal_chance: list[float] = []
    terminal_paths: list[list[tuple[int, ...]]] = [[] for _ in range(num_players)]
    keys: list[str] = []
    index: dict[str, int] = {}
    iset_player: list[int] = []
    iset_depth: list[int] = []
    iset_mask: list[np.ndarray] = []
    iset_tensor: list[np.ndarray] = []
    iset_signature: list[tuple[int, int, tuple[int, ...], int]] = []  # for the recall check

    # Each frontier entry: (state, parent, action, edge prob, chance reach, per-player sequences)
    frontier = [(game.new_initial_state(), -1, -1, 1.0, 1.0, tuple(() for _ in range(num_players)))]
    level_starts = [0]
    current_depth = 0
    while frontier:
        next_frontier = []
        for state, par, act, prob, reach, paths in frontier:
            node = len(parent)
            parent.append(par)
            depth.append(current_depth)
            action.append(act)
            chance_prob.append(prob)
            if par >= 0:
                edges.append((par, act, node))
            who = checks.check_player(game, state, state.current_player())
            player.append(who)
            if who == TERMINAL:
                infoset.append(-1)
                terminal_nodes.append(node)
                terminal_utility.append(checks.check_returns(game, state, state.returns()))
                terminal_chance.append(reach)
                for p in range(num_players):
                    terminal_paths[p].append(paths[p])
            elif who == CHANCE:
                infoset.append(-1)
                for outcome, p_outcome in checks.check_chance(game, state, state.chance_outcomes()):
                    child = state._child(outcome)
                    next_frontier.append(
                        (child, node, outcome, p_outcome, reach * p_outcome, paths)
                    )
            else:
                key = state.infoset_key(who)
                legal = checks.check_legal(game, state, who, state.legal_actions())
                own = paths[who]
                signature = (who, len(own), tuple(legal), own[-1] if own else -1)
                iset = index.get(key)
                if iset is None:
                    iset = index[key] = len(keys)
                    keys.append(key)
                    iset_player.append(who)
                    iset_depth.append(len(own))
                    iset_signature.append(signature)
                    mask = np.zeros(num_actions, dtype=bool)
                    mask[legal] = True
                    iset_mask.append(mask)
                    iset_tensor.append(state.infoset_tensor(who))
                elif iset_signature[iset] != signature:
                    checks.check_recall(game, state, key, iset_signature[iset], signature)
                infoset.append(iset)
                for a in legal:
                    seq = iset * num_actions + a
                    child_paths = tuple(
                        (*path, seq) if p == who else path for p, path in enumerate(paths)
                    )
                    next_frontier.append((state._child(a), node, a, 1.0, reach, child_paths))
        level_starts.append(len(parent))
        frontier = next_frontier
        current_depth += 1

    num_nodes = len(parent)
    num_infosets = len(keys)
    branching = max([num_actions] + [a + 1 for _, a, _ in edges])
    children = np.full((num_nodes, branching), -1, dtype=np.int32)
    if edges:
        e = np.asarray(edges, dtype=np.int64)
        children[e[:, 0], e[:, 1]] = e[:, 2]
    utility = np.zeros((num_nodes, num_players))
    utility[terminal_nodes] = np.asarray(terminal_utility)
    pad = num_infosets * num_actions
    sequences = []
    for p in range(num_players):
        width = max(1, max(len(path) for path in terminal_paths[p]))
        seqs = np.full((len(terminal_nodes), width), pad, dtype=np.int64)
        for z, path in enumerate(terminal_paths[p]):
            seqs[z, : len(path)] = path
        sequences.append(_readonly(seqs))
    tensor_size = getattr(game, "infoset_tensor_size", 0)
    tensors = (
        np.stack(iset_tensor).astype(np.float32)
        if iset_tensor
        else np.zeros((0, tensor_size), dtype=np.float32)
    )
    return CompiledTree(
        game_id=game.id,
        num_players=num_players,
        num_actions=num_actions,
        parent=_readonly(np.asarray(parent, dtype=np.int32)),
        depth=_readonly(np.asarray(depth, dtype=np.int32)),
        player=_readonly(np.asarray(player, dtype=np.int8)),
        infoset=_readonly(np.asarray(infoset, dtype=np.int32)),
        action=_readonly(np.asarray(action, dtype=np.int32)),
        chance_prob=_readonly(np.asarray(chance_prob, dtype=np.float64)),
        children=_readonly(children),
        utility=_readonly(utility),
        level_starts=_readonly(np.asarray(level_starts, dtype=np.int64)),
        infoset_player=_readonly(np.asarray(iset_player, dtype=np.int8)),
        infoset_depth=_readonly(np.asarray(iset_depth, dtype=np.int32)),
        legal_mask=_readonly(np.asarray(iset_mask, dtype=bool).reshape(num_infosets, num_actions)),
        infoset_tensors=_readonly(tensors),
        infoset_keys=tuple(keys),
        terminal_nodes=_readonly(np.asarray(terminal_nodes, dtype=np.int32)),
        terminal_utility=_readonly(utility[terminal_nodes].copy()),
        terminal_chance_reach=_readonly(np.asarray(terminal_chance, dtype=np.float64)),
        terminal_sequences=tuple(sequences),
        infoset_index=index,
    )


_TREES: GameCache[CompiledTree] = GameCache(_compile)
