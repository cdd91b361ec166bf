"""Policies between nashzoo and OpenSpiel, both ways (needs ``pip install 'nashzoo[openspiel]'``).

Two kinds of games line up with an OpenSpiel game, one information set for one:

* **bridged games** (``load_game("openspiel:...")``, :mod:`nashzoo.games.openspiel`): their
  information-set keys *are* OpenSpiel's ``information_state_string``, so the map is the
  compiled tree's own key index, with no walk of anything;
* **twins**: nashzoo's native Kuhn poker, Leduc poker and Liar's dice use the same encoding as
  OpenSpiel's ``kuhn_poker``, ``leduc_poker`` and ``liars_dice`` (same deal order, same action
  ids, the same parameters). For them both trees are walked in parallel once per game, checking
  at every node that they agree (player to move, legal actions, chance probabilities, returns)
  and recording which OpenSpiel information-state string belongs to which nashzoo information
  set.

With that map a policy moves between the two libraries exactly:

* :func:`to_openspiel` turns any nashzoo policy into an OpenSpiel python ``TabularPolicy``
  and :func:`to_pyspiel` into the C++ ``pyspiel.TabularPolicy`` (for ``pyspiel.nash_conv`` and
  the other C++ algorithms; built straight from the keys, without OpenSpiel's tree walk);
* :func:`from_openspiel` turns an OpenSpiel policy (a python or C++ ``TabularPolicy`` by key, any
  other python ``Policy`` by asking it at one state per information set) into a nashzoo
  ``TabularPolicy``, so agents trained with OpenSpiel get nashzoo's exact evaluation.

A ``TabularPolicy`` knows its game, so ``to_openspiel(policy)`` and ``from_openspiel(os_policy)``
need no game argument (an OpenSpiel policy then maps to the bridged game of its own game).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nashzoo.agents.policy import PolicyError, TabularPolicy
from nashzoo.eval.exact import PolicyLike, as_tabular
from nashzoo.games import CompiledTree, Game, compile_tree, load_game
from nashzoo.games.base import CHANCE, TERMINAL, display_id
from nashzoo.games.cache import GameCache
from nashzoo.games.openspiel import OpenSpielGame, import_pyspiel, is_pyspiel_game

OPENSPIEL_NAMES: dict[str, str] = {
    "kuhn_poker": "kuhn_poker",
    "leduc_poker": "leduc_poker",
    "liars_dice": "liars_dice",
}
"""nashzoo game name -> OpenSpiel game name, for the native games whose trees are identical
(loaded with the same parameters: ``liars_dice(dice_sides=4)`` is OpenSpiel's
``liars_dice(dice_sides=4)``)."""


@dataclass(frozen=True)
class InfosetMap:
    """How one game's information sets line up between OpenSpiel and nashzoo.

    Attributes:
        openspiel_game: the ``pyspiel.Game``.
        index: OpenSpiel information-state string -> nashzoo infoset index.
        states: one OpenSpiel state per nashzoo infoset (what OpenSpiel policies are asked) for
            a twin; ``None`` for a bridged game, whose states come from OpenSpiel's own
            ``TabularPolicy`` when a policy needs them.
    """

    openspiel_game: Any
    index: dict[str, int]
    states: tuple[Any, ...] | None


def infoset_map(game: Game | str) -> InfosetMap:
    """The OpenSpiel <-> nashzoo information-set map of ``game`` (built once; cached)."""
    game = load_game(game)
    if isinstance(game, OpenSpielGame):
        return InfosetMap(game.openspiel_game, compile_tree(game).infoset_index, None)
    return _TWIN_MAPS(game)


def _build_twin_map(game: Game) -> InfosetMap:
    """Walk ``game`` and its OpenSpiel twin side by side, checking that they agree at every
    history, and map each OpenSpiel information-set string to the nashzoo infoset index."""
    if game.name not in OPENSPIEL_NAMES:
        raise ValueError(
            f"no OpenSpiel twin for {game.display_id}; supported: {', '.join(OPENSPIEL_NAMES)} and "
            "every game loaded through the bridge (load_game('openspiel:<game string>'))"
        )
    os_game = import_pyspiel().load_game(OPENSPIEL_NAMES[game.name], game.params)
    tree = compile_tree(game)
    index: dict[str, int] = {}
    states: list[Any] = [None] * tree.num_infosets
    stack = [(game.new_initial_state(), os_game.new_initial_state())]
    while stack:
        ours, theirs = stack.pop()
        actions = _match_twin_node(tree, os_game, ours, theirs, index, states)
        stack.extend((ours.child(a), theirs.child(a)) for a in actions)
    if len(index) != tree.num_infosets:
        raise AssertionError(
            f"{game.display_id}: {tree.num_infosets} infosets, OpenSpiel has {len(index)}"
        )
    return InfosetMap(os_game, index, tuple(states))


def _match_twin_node(
    tree: CompiledTree,
    os_game: Any,
    ours: Any,
    theirs: Any,
    index: dict[str, int],
    states: list[Any],
) -> list[int]:
    """Check that nashzoo's state ``ours`` and OpenSpiel's ``theirs`` agree (terminal returns,
    chance outcomes, player to move, legal actions); at a decision node record the OpenSpiel
    infoset string in ``index`` and the first OpenSpiel state of the infoset in ``states``.
    Returns the actions to walk next (none at a terminal)."""
    who = ours.current_player()

    def mismatch(what: str) -> AssertionError:
        return AssertionError(
            f"{display_id(tree.game_id)} and OpenSpiel's {os_game} differ at history "
            f"{ours.history()}: {what}"
        )

    if who == TERMINAL:
        if not theirs.is_terminal() or not np.allclose(ours.returns(), theirs.returns()):
            raise mismatch("terminal returns")
        return []
    if who == CHANCE:
        if not theirs.is_chance_node() or not np.allclose(
            ours.chance_outcomes(), theirs.chance_outcomes()
        ):
            raise mismatch("chance outcomes")
        return [action for action, _ in ours.chance_outcomes()]
    if theirs.current_player() != who or ours.legal_actions() != theirs.legal_actions():
        raise mismatch("player to move or legal actions")
    key = theirs.information_state_string(who)
    mine = tree.index_of(ours.infoset_key(who))
    if index.setdefault(key, mine) != mine:
        raise mismatch(f"OpenSpiel infoset {key!r} spans two nashzoo infosets")
    if states[mine] is None:
        states[mine] = theirs
    return ours.legal_actions()


_TWIN_MAPS: GameCache[InfosetMap] = GameCache(_build_twin_map)


def _split(first: Any, second: Any, what: str) -> tuple[Any, Any]:
    """``(game, policy)`` from ``f(game, policy)`` or ``f(policy)`` (a policy that knows its
    game: a nashzoo ``TabularPolicy`` or an OpenSpiel python policy)."""
    if second is not None:
        return first, second
    game = getattr(first, "game", None)
    if isinstance(game, Game):
        return game, first
    if is_pyspiel_game(game):
        return load_game(game), first
    raise PolicyError(
        f"{what}(policy) needs a policy that knows its game (a TabularPolicy); for "
        f"{type(first).__name__} pass the game too: {what}(game, policy)"
    )


def to_openspiel(game: Game | str | PolicyLike, policy: PolicyLike | None = None) -> Any:
    """A nashzoo policy as an ``open_spiel.python.policy.TabularPolicy`` (exact copy).

    Call it as ``to_openspiel(game, policy)``, or ``to_openspiel(tabular_policy)``.
    """
    import_pyspiel()  # an ImportError naming the extra when open_spiel is missing
    from open_spiel.python.policy import TabularPolicy as OpenSpielTabular

    of_game, joint = _split(game, policy, "to_openspiel")
    table = as_tabular(of_game, joint)
    mapping = infoset_map(table.game)
    out = OpenSpielTabular(mapping.openspiel_game)
    rows = np.empty(len(out.state_lookup), dtype=np.int64)
    for key, row in out.state_lookup.items():
        rows[row] = mapping.index[key]
    out.action_probability_array[:] = table.probs[rows]
    return out


def to_pyspiel(game: Game | str | PolicyLike, policy: PolicyLike | None = None) -> Any:
    """A nashzoo policy as a C++ ``pyspiel.TabularPolicy`` (for ``pyspiel.nash_conv``).

    Built directly from the information-set keys and legal actions (no OpenSpiel tree walk).
    Call it as ``to_pyspiel(game, policy)``, or ``to_pyspiel(tabular_policy)``.
    """
    of_game, joint = _split(game, policy, "to_pyspiel")
    table = as_tabular(of_game, joint)
    mapping = infoset_map(table.game)
    legal, probs = table.tree.legal_mask, table.probs
    entries = {}
    for key, i in mapping.index.items():
        actions = np.flatnonzero(legal[i])
        entries[key] = list(zip(actions.tolist(), probs[i, actions].tolist(), strict=True))
    return import_pyspiel().TabularPolicy(entries)


def from_openspiel(game: Game | str | Any, policy: Any = None) -> TabularPolicy:
    """An OpenSpiel policy as a nashzoo ``TabularPolicy``.

    Call it as ``from_openspiel(game, policy)``, or ``from_openspiel(os_policy)`` for an
    OpenSpiel python policy (it knows its game; the result is for the bridged game). Tabular
    policies (python ``TabularPolicy`` or C++ ``pyspiel.TabularPolicy``) are read by key; any
    other python ``Policy`` is asked ``action_probabilities(state)`` at one OpenSpiel state of
    each information set.

    Raises:
        PolicyError: a policy of another game (keys or actions that do not exist here) or
            one that misses information sets.
    """
    game, policy = _split(game, policy, "from_openspiel")
    game = load_game(game)
    mapping = infoset_map(game)
    tree = compile_tree(game)
    if hasattr(policy, "state_lookup") and hasattr(policy, "action_probability_array"):
        table = policy.action_probability_array
        rows = {key: table[row] for key, row in policy.state_lookup.items()}
        return _from_rows(game, tree, mapping, rows)
    if hasattr(policy, "policy_table"):
        rows = {key: dict(pairs) for key, pairs in policy.policy_table().items()}
        return _from_rows(game, tree, mapping, rows)
    probs = np.zeros((tree.num_infosets, tree.num_actions))
    for i, state in enumerate(_states(mapping)):
        _fill(probs, i, policy.action_probabilities(state), tree, game)
    return TabularPolicy(game, probs)


def _simultaneous_hint(game: Game) -> str:
    """For a simultaneous-move OpenSpiel game, which nashzoo plays turn by turn: that its
    information states are the turn-based game's, on which the policy must be built."""
    if not game.id.startswith("openspiel:turn_based_simultaneous_game("):
        return ""
    return (
        " (a simultaneous-move game is played turn by turn, with the information states of "
        "pyspiel.convert_to_turn_based(game): build the policy on game.openspiel_game)"
    )


def _from_rows(
    game: Game, tree: CompiledTree, mapping: InfosetMap, rows: dict[str, Any]
) -> TabularPolicy:
    probs = np.zeros((tree.num_infosets, tree.num_actions))
    seen = np.zeros(tree.num_infosets, dtype=bool)
    for key, row in rows.items():
        i = mapping.index.get(key)
        if i is None:
            raise PolicyError(
                f"the OpenSpiel policy has information state {key!r}, which {game.display_id} does "
                "not have; convert a policy of this game" + _simultaneous_hint(game)
            )
        _fill(probs, i, row if isinstance(row, dict) else dict(enumerate(row)), tree, game)
        seen[i] = True
    if not seen.all():
        missing = tree.infoset_keys[int(np.argmin(seen))]
        raise PolicyError(
            f"the OpenSpiel policy misses {int((~seen).sum())} information sets of "
            f"{game.display_id} "
            f"(e.g. {missing!r}); convert a policy that covers the whole game"
        )
    return TabularPolicy(game, probs)


def _fill(probs: np.ndarray, i: int, answer: dict, tree: CompiledTree, game: Game) -> None:
    for action, p in answer.items():
        if not 0 <= int(action) < tree.num_actions:
            if p == 0:
                continue
            raise PolicyError(
                f"the OpenSpiel policy gives action {action} at {tree.infoset_keys[i]!r}; "
                f"{game.display_id} has {tree.num_actions} actions"
            )
        probs[i, int(action)] = float(p)


def _states(mapping: InfosetMap) -> tuple[Any, ...]:
    """One OpenSpiel state per nashzoo information set, in the tree's order."""
    if mapping.states is not None:
        return mapping.states
    from open_spiel.python.policy import TabularPolicy as OpenSpielTabular

    tabular = OpenSpielTabular(mapping.openspiel_game)
    states: list[Any] = [None] * len(mapping.index)
    for key, row in tabular.state_lookup.items():
        states[mapping.index[key]] = tabular.states[row]
    return tuple(states)
