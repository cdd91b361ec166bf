"""``compile_tree(game)``: the whole game tree as flat numpy arrays (a
:class:`~nashzoo.games.compiled.CompiledTree`), enumerated once and cached per game.

Three ways in, one result (the same arrays, bit for bit, for the same game):

* a native game's vectorised builder (its ``compile_arrays()`` hook: the matrix games, Kuhn
  poker, Leduc hold'em, Liar's dice), which makes no Python object per history; a subclass of
  one of them under a name of its own is walked instead (:func:`own_builder`);
* the fast walk (``fast_walk``) over the States of any other game, and over raw ``pyspiel``
  states for a bridged OpenSpiel game: depth first, only the per-node numbers recorded, the
  breadth-first layout, reach probabilities, sequences and the perfect-recall check done
  afterwards with numpy;
* the checking walk here (:func:`walk_states`, the oracle): every history checked as it is
  visited, with the state in hand. When the fast walk meets anything wrong it gives up and
  this walk runs, so a malformed game is refused with the one-line error naming the history.
"""

from __future__ import annotations

import array
import contextlib
import contextvars
import dataclasses
import functools
import importlib
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from nashzoo._locks import ForkSafeLock
from nashzoo.games import checks, fast_walk, heap, limits
from nashzoo.games.base import CHANCE, TERMINAL, Game, GameTooLarge, State
from nashzoo.games.cache import GameCache
from nashzoo.games.compiled import (
    CompiledTree,
    InfosetLabels,
    first_seen_rank,
    given_labels,
    readonly,
    renumber_sequences,
)
from nashzoo.games.progress import WalkProgress

__all__ = [
    "CompiledTree",
    "InfosetLabels",
    "compile_checked",
    "compile_tree",
    "readonly",
    "walk_states",
]


def compile_tree(game: Game | str) -> CompiledTree:
    """Enumerate ``game`` (a Game, or a name :func:`~nashzoo.games.load_game` reads) once into
    a :class:`CompiledTree` (cached per game, see :mod:`nashzoo.games.cache`).

    Every history is checked on the way (see :mod:`nashzoo.games.checks`): a game with
    chance probabilities not summing to one, out-of-range or missing actions, malformed
    returns or imperfect recall raises a :class:`~nashzoo.games.base.GameDefinitionError`
    naming the history, instead of giving numbers that are silently wrong. A game too big
    for this machine's memory (or past ``NASHZOO_MAX_HISTORIES``) raises
    :class:`~nashzoo.games.base.GameTooLarge` instead of exhausting it
    (:mod:`nashzoo.games.limits`).
    """
    if not isinstance(game, Game):
        from nashzoo.games.registry import load_game  # the registry imports the games

        game = load_game(game)
    return _TREES(game)


def _compile(game: Game) -> CompiledTree:
    """A game offering ``compile_arrays()`` builds its own arrays (a native game's vectorised
    builder, or the bridge's walk over raw ``pyspiel`` states); any other game goes through the
    fast walk over its States. A game that counts its histories is first checked against
    :mod:`~nashzoo.games.limits` (a walk is checked as it goes). After a big tree, the
    build's freed memory goes back to the system (:mod:`~nashzoo.games.heap`)."""
    limits.check_counted_game(game)
    builder = own_builder(game)
    if builder is not None:
        tree = builder()
        limits.check_cap(game.id, tree.num_nodes)  # the cap holds for a built tree too
    else:
        checks.check_facts(game)
        tree = compile_checked(
            game, lambda: fast_walk.walk(game, game.new_initial_state(), fast_walk.state_ops(game))
        )
    heap.give_back_after_build(tree.num_nodes)  # the build's temporaries (the C heap keeps them)
    return tree


def own_builder(game: Game) -> Callable[[], CompiledTree] | None:
    """``game.compile_arrays`` when the builder was written for the game's rules, else ``None``
    (the game is then walked through its States, every history checked). A builder knows the
    rules of the class that declares it, not those of a subclass: a researcher's variant of
    Kuhn poker under a name of its own, with information sets that forget the betting, was
    compiled as plain Kuhn without a word. So a subclass with a ``name`` of its own is walked,
    unless it declares the hook again (``compile_arrays = KuhnPokerGame.compile_arrays``: no
    rule changed). A subclass that keeps the built-in's name claims its rules and its id
    (policies and checkpoints of one are taken for the other), so it keeps the builder and its
    layout: a walk numbers Liar's dice's information sets otherwise."""
    cls = type(game)
    owner = next((c for c in cls.__mro__ if "compile_arrays" in c.__dict__), None)
    if owner is None or owner.__dict__["compile_arrays"] is None:
        return None
    if owner is not cls and cls.name != getattr(owner, "name", None):
        return None
    return getattr(game, "compile_arrays")  # noqa: B009 (Game declares no such hook)


def compile_checked(game: Game, fast: Callable[[], CompiledTree]) -> CompiledTree:
    """``fast()`` (a fast walk, which gives up on anything wrong), or, when it gives up, the
    checking walk :func:`walk_states`, which raises the one-line error naming the history (or,
    should the fast walk have given up on a sound game, returns the same tree)."""
    try:
        return fast()
    except GameTooLarge:  # the checking walk would meet the same limit, twice as late
        raise
    except Exception:  # whatever it was, the checking walk says it with the state in hand
        pass
    return walk_states(game)


def walk_states(game: Game) -> CompiledTree:
    """The checking walk: ``game``'s States depth first, every history checked as it is
    visited (with the state in hand, so an error names its history), then the nodes (and
    information sets) put in breadth-first order. The oracle every other way of compiling is
    tested against, and what explains a game the fast walk gave up on."""
    walk = _Walk(game)
    stack = [
        (
            game.new_initial_state(),
            -1,
            -1,
            1.0,
            1.0,
            (-1,) * game.num_players,
            (0,) * game.num_players,
            0,
        )
    ]
    with WalkProgress(game.id, lambda: fast_walk.estimated_size(game)) as progress:
        look_again = progress(0)
        while stack:
            stack.extend(reversed(walk.visit(*stack.pop())))
            if len(walk.parent) >= look_again:
                look_again = progress(len(walk.parent))
    return walk.finish()


_Entry = tuple[Any, int, int, float, float, tuple[int, ...], tuple[int, ...], int]
"""A stack entry: (state, parent node, action from the parent, edge probability, chance
reach, each player's last sequence so far (-1: none), each player's number of moves so far,
depth)."""


class _Walk:
    """The generic enumeration: :meth:`visit` records one history (in depth-first order) and
    returns its children; :meth:`finish` reorders everything breadth first."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self.parent = array.array("i")
        self.player = array.array("b")
        self.infoset = array.array("i")
        self.action = array.array("i")
        self.chance_prob = array.array("d")
        self.depth = array.array("i")
        self.terminal_nodes = array.array("q")
        self.terminal_utility = array.array("d")
        self.terminal_chance = array.array("d")
        self.terminal_last = array.array("q")
        self.keys: list[str] = []
        self.index: dict[str, int] = {}
        self.iset_player: list[int] = []
        self.iset_depth: list[int] = []
        self.iset_parent: list[int] = []
        self.iset_mask: list[np.ndarray] = []
        self.iset_tensor: list[np.ndarray] = []
        self.signature: list[tuple[int, int, tuple[int, ...], int]] = []  # for the recall check
        self.legal_of: list[list[int]] = []  # legal actions of each information set

    def visit(
        self,
        state: State,
        par: int,
        act: int,
        prob: float,
        reach: float,
        last: tuple[int, ...],
        moves: tuple[int, ...],
        depth: int,
    ) -> list[_Entry]:
        """Record one history; return its children's entries, in action order."""
        game = self.game
        node = len(self.parent)
        self.parent.append(par)
        self.action.append(act)
        self.chance_prob.append(prob)
        self.depth.append(depth)
        if depth > checks.MAX_DEPTH:
            raise checks.too_deep(game, state)
        who = checks.check_player(game, state, state.current_player())
        self.player.append(who)
        if who == TERMINAL:
            self.infoset.append(-1)
            self.terminal_nodes.append(node)
            self.terminal_utility.extend(checks.check_returns(game, state, state.returns()))
            self.terminal_chance.append(reach)
            self.terminal_last.extend(last)
            return []
        if who == CHANCE:
            self.infoset.append(-1)
            outcomes = checks.check_chance(game, state, state.chance_outcomes())
            return [
                (state._child(o), node, o, p, reach * p, last, moves, depth + 1)
                for o, p in outcomes
            ]
        iset = self._infoset(state, who, last[who], moves[who])
        self.infoset.append(iset)
        next_moves = (*moves[:who], moves[who] + 1, *moves[who + 1 :])
        base = iset * game.num_actions
        return [
            (
                state._child(a),
                node,
                a,
                1.0,
                reach,
                (*last[:who], base + a, *last[who + 1 :]),
                next_moves,
                depth + 1,
            )
            for a in self.legal_of[iset]
        ]

    def _infoset(self, state: State, who: int, last: int, moves: int) -> int:
        key = checks.check_key(self.game, state, who, state.infoset_key(who))
        legal = checks.check_legal(self.game, state, who, state.legal_actions())
        signature = (who, moves, tuple(legal), last)
        iset = self.index.get(key)
        if iset is None:
            iset = self.index[key] = len(self.keys)
            self.keys.append(key)
            self.iset_player.append(who)
            self.iset_depth.append(moves)
            self.iset_parent.append(last)
            self.signature.append(signature)
            self.legal_of.append(legal)
            mask = np.zeros(self.game.num_actions, dtype=bool)
            mask[legal] = True
            self.iset_mask.append(mask)
            self.iset_tensor.append(
                checks.check_tensor(self.game, state, who, state.infoset_tensor(who))
            )
        elif self.signature[iset] != signature:
            checks.check_recall(self.game, state, key, self.signature[iset], signature, self.keys)
        return iset

    def finish(self) -> CompiledTree:
        """The arrays in breadth-first order: nodes by depth (a stable sort of the depth-first
        order, which within one depth is already parent-then-action order), information sets
        numbered by their first breadth-first node."""
        game, num_actions, players = self.game, self.game.num_actions, self.game.num_players
        depth = np.frombuffer(self.depth, dtype=np.int32)
        order = np.argsort(depth, kind="stable")  # breadth-first position -> depth-first id
        position = np.empty_like(order)
        position[order] = np.arange(order.size)
        infoset = np.frombuffer(self.infoset, dtype=np.int32)[order].astype(np.int64)
        decision = infoset >= 0
        rank = first_seen_rank(infoset[decision], len(self.keys))
        renumbered = np.argsort(rank)  # new id -> old id
        pad = len(self.keys) * num_actions
        parent = np.frombuffer(self.parent, dtype=np.int32)[order]
        parent = np.where(parent >= 0, position[np.maximum(parent, 0)], -1)
        terminals = position[np.frombuffer(self.terminal_nodes, dtype=np.int64)]
        by_node = np.argsort(terminals, kind="stable")
        utility = np.frombuffer(self.terminal_utility).reshape(-1, players)[by_node]
        last = np.frombuffer(self.terminal_last, dtype=np.int64).reshape(-1, players)[by_node]
        keys, tensors = self._renumbered_labels(renumbered)
        mask = np.asarray(self.iset_mask, dtype=bool).reshape(len(self.keys), num_actions)
        tree = CompiledTree(
            game_id=game.id,
            num_players=players,
            num_actions=num_actions,
            parent=readonly(parent.astype(np.int32)),
            player=readonly(np.frombuffer(self.player, dtype=np.int8)[order]),
            infoset=readonly(np.where(decision, rank[np.maximum(infoset, 0)], -1).astype(np.int32)),
            action=readonly(np.frombuffer(self.action, dtype=np.int32)[order]),
            chance_prob=readonly(np.frombuffer(self.chance_prob)[order]),
            level_starts=readonly(np.concatenate(([0], np.cumsum(np.bincount(depth))))),
            infoset_player=readonly(np.asarray(self.iset_player, dtype=np.int8)[renumbered]),
            infoset_depth=readonly(np.asarray(self.iset_depth, dtype=np.int32)[renumbered]),
            infoset_parent_sequence=readonly(
                renumber_sequences(self.iset_parent, rank, num_actions, pad)[renumbered]
            ),
            legal_mask=readonly(mask[renumbered]),
            terminal_nodes=readonly(np.sort(terminals).astype(np.int32)),
            terminal_utility=readonly(utility),
            terminal_chance_reach=readonly(np.frombuffer(self.terminal_chance)[by_node]),
            terminal_last_sequence=readonly(
                np.ascontiguousarray(renumber_sequences(last, rank, num_actions, pad).T)
            ),
            infoset_labels=functools.partial(given_labels, keys, tensors),
        )
        tree.__dict__["infoset_index"] = {key: i for i, key in enumerate(keys)}
        return tree

    def _renumbered_labels(self, renumbered: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
        """The information sets' keys and tensors in the new numbering (``renumbered``: new id
        -> old id)."""
        keys = tuple(self.keys[i] for i in renumbered)
        tensor_size = getattr(self.game, "infoset_tensor_size", 0)
        tensors = (
            np.stack(self.iset_tensor).astype(np.float32)[renumbered]
            if self.iset_tensor
            else np.zeros((0, tensor_size), dtype=np.float32)
        )
        return keys, tensors


_TREES: GameCache[CompiledTree] = GameCache(_compile)


def pickled_tree_state(
    tree: CompiledTree,
) -> tuple[dict[str, Any], tuple[tuple[str, ...], np.ndarray] | None, str | None, str]:
    """What a pickled tree carries: its stored fields, its labels once computed (a bridged
    game's are a walk of the game to compute again), the class of the game it was compiled
    for as ``module:qualname`` (where the cache knows it) and nashzoo's version."""
    fields = {field.name: getattr(tree, field.name) for field in dataclasses.fields(tree)}
    game_class = _TREES.game_class_of(tree)
    name = None if game_class is None else f"{game_class.__module__}:{game_class.__qualname__}"
    return fields, tree.__dict__.get("_labels"), name, _version()


def unpickled_tree(
    fields: dict[str, Any],
    labels: tuple[tuple[str, ...], np.ndarray] | None,
    game_class: str | None,
    version: str,
) -> CompiledTree:
    """A pickled tree back: this process's tree of the game where it holds an equal one, else
    the unpickled tree, read-only again.

    "The game" is the one of the class the tree was compiled for (``game_class``, looked up
    here by its name), never another class's under the same id: a subclass of a user's game
    that keeps its name (and so its id) with other information-set keys or tensors has equal
    arrays, and its learner or policy came back holding the other class's tree, with that
    game's keys. The held tree must be equal array for array (and label for label where both
    have computed theirs), so a tree of other rules is never taken for it.

    The unpickled tree is kept as the game's only inside :func:`adopting_pickled_trees` (a
    ``processes=2`` worker taking the learner its caller sent just now, which then uses the
    tree the learner came with instead of compiling the game a second time). Kept after any
    other unpickling, a pickle saved before the game's rules were edited (a policy pickled to
    a file, read back in a new session) made the old tree the game's for the rest of the
    process: ``compile_tree`` and ``solve_game`` served the old rules' numbers, for a user's
    game and, within one nashzoo version, for a built-in one."""
    stored: dict[str, Any] = {
        k: readonly(v) if isinstance(v, np.ndarray) else v for k, v in fields.items()
    }
    tree = CompiledTree(**stored)
    if labels is not None:
        tree.__dict__["_labels"] = (labels[0], readonly(labels[1]))
    cls = _game_class(game_class)
    if cls is None:
        return tree
    held = _TREES.held(cls, tree.game_id)
    if held is not None and same_tree(held, tree):
        return held
    if _ADOPTING.get() and version == _version():
        _TREES.keep_if_absent(cls, tree.game_id, tree)
        if _TREES.held(cls, tree.game_id) is tree:
            return tree
    return _one_of_the_unpickled(cls, tree)


_UNPICKLED: weakref.WeakValueDictionary[tuple[type, str], CompiledTree] = (
    weakref.WeakValueDictionary()
)
"""Per game, the last tree unpickled here that is not the game's own (see below)."""
_UNPICKLED_LOCK = ForkSafeLock()


def _one_of_the_unpickled(cls: type, tree: CompiledTree) -> CompiledTree:
    """``tree``, or an equal tree unpickled here before and still in use: a process that sent
    a sweep's runs to a pool and never compiled the game itself got each run's result back on
    a tree of its own (eight copies of the tree for eight seeds). These trees are never served
    as the game's (``compile_tree`` builds its own); they are shared as a held one is, equal
    array for array and label for label where both have computed theirs."""
    key = (cls, tree.game_id)
    with _UNPICKLED_LOCK:
        earlier = _UNPICKLED.get(key)
        if earlier is not None and same_tree(earlier, tree):
            return earlier
        _UNPICKLED[key] = tree
    return tree


_ADOPTING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "nashzoo_adopting_pickled_trees", default=False
)


@contextlib.contextmanager
def adopting_pickled_trees() -> Iterator[None]:
    """Within it, a tree unpickled for a game this process has no tree of yet becomes the
    game's (:func:`unpickled_tree`): only for a pickle made just now by the same code (a
    ``processes=2`` worker's learner, sent by its caller), never a file or a pickle of
    unknown age, which may hold the tree of rules edited since."""
    token = _ADOPTING.set(True)
    try:
        yield
    finally:
        _ADOPTING.reset(token)


def same_tree(a: CompiledTree, b: CompiledTree) -> bool:
    """Whether two trees are the same game's, array for array (dtypes and shapes too), with
    the same information-set labels where both have computed theirs."""
    if a is b:
        return True
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            if not (
                isinstance(y, np.ndarray)
                and x.dtype == y.dtype
                and x.shape == y.shape
                and np.array_equal(x, y)
            ):
                return False
        elif field.name != "infoset_labels" and x != y:
            return False
    mine, theirs = a.__dict__.get("_labels"), b.__dict__.get("_labels")
    if mine is not None and theirs is not None:
        return mine[0] == theirs[0] and np.array_equal(mine[1], theirs[1])
    return True


def _game_class(name: str | None) -> type | None:
    """The Game class named ``module:qualname``, or ``None`` where it cannot be found here (a
    class local to a function, a notebook's)."""
    if not name or "<locals>" in name:
        return None
    module_name, _, qualname = name.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return found if isinstance(found, type) and issubclass(found, Game) else None


def _version() -> str:
    from nashzoo import __version__

    return __version__
