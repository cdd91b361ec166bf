"""Interoperability with OpenSpiel (optional: needs ``pip install 'nashzoo[bench]'``).

nashzoo's Kuhn poker, Leduc poker and Liar's dice use the same encoding as OpenSpiel's
``kuhn_poker``, ``leduc_poker`` and ``liars_dice`` (same deal order, same action ids, the same
parameters), so their histories are identical. This module
walks both trees in parallel once per game, checking at every node that they agree (player to
move, legal actions, chance probabilities, returns), and records which OpenSpiel information-state
string belongs to which nashzoo information set. With that map a policy moves between the two
libraries exactly:

* :func:`to_openspiel` turns any nashzoo policy into an OpenSpiel python ``TabularPolicy``
  (and :func:`to_pyspiel` into the C++ ``pyspiel.TabularPolicy``), e.g. to check nashzoo's
  NashConv against ``pyspiel.nash_conv``;
* :func:`from_openspiel` turns an OpenSpiel policy into a nashzoo ``TabularPolicy``, so agents
  trained with OpenSpiel get nashzoo's exact evaluation.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from nashzoo.agents.policy import PolicyError, TabularPolicy
from nashzoo.eval.exact import PolicyLike, as_tabular
from nashzoo.games import Game, compile_tree, load_game
from nashzoo.games.base import CHANCE, TERMINAL

OPENSPIEL_NAMES: dict[str, str] = {
    "kuhn_poker": "kuhn_poker",
    "leduc_poker": "leduc_poker",
    "liars_dice": "liars_dice",
}
"""nashzoo game name -> OpenSpiel game name, for the games whose trees are identical (loaded
with the same parameters: ``liars_dice(dice_sides=4)`` is OpenSpiel's
``liars_dice(dice_sides=4)``)."""


def _pyspiel() -> Any:
    try:
        import pyspiel
    except ImportError as err:
        raise ImportError(
            f"OpenSpiel interop needs open_spiel: pip install 'nashzoo[bench]' ({err})"
        ) from None
    return pyspiel


@dataclass(frozen=True)
class InfosetMap:
    """How one game's information sets line up between OpenSpiel and nashzoo.

    Attributes:
        openspiel_game: the loaded ``pyspiel.Game``.
        index: OpenSpiel information-state string -> nashzoo infoset index.
        states: one OpenSpiel state per nashzoo infoset (what OpenSpiel policies are asked).
    """

    openspiel_game: Any
    index: dict[str, int]
    states: tuple[Any, ...]


_MAPS: dict[str, InfosetMap] = {}
_LOCK = threading.Lock()


def infoset_map(game: Game | str) -> InfosetMap:
    """Walk nashzoo's and OpenSpiel's trees in parallel (once per game; cached)."""
    game = load_game(game)
    with _LOCK:
        cached = _MAPS.get(game.id)
    if cached is None:
        cached = _build_map(game)
        with _LOCK:
            cached = _MAPS.setdefault(game.id, cached)
    return cached


def _build_map(game: Game) -> InfosetMap:
    if game.name not in OPENSPIEL_NAMES:
        raise ValueError(
            f"no OpenSpiel twin for {game.id}; supported: {', '.join(OPENSPIEL_NAMES)}"
        )
    pyspiel = _pyspiel()
    os_game = pyspiel.load_game(OPENSPIEL_NAMES[game.name], game.params)
    tree = compile_tree(game)
    index: dict[str, int] = {}
    states: list[Any] = [None] * tree.num_infosets
    stack = [(game.new_initial_state(), os_game.new_initial_state())]
    while stack:
        ours, theirs = stack.pop()
        who = ours.current_player()

        def mismatch(what: str, ours: Any = ours, theirs: Any = theirs) -> AssertionError:
            return AssertionError(
                f"{game.id} and OpenSpiel's {os_game} differ at history {ours.history()}: {what}"
            )

        if who == TERMINAL:
            if not theirs.is_terminal() or not np.allclose(ours.returns(), theirs.returns()):
                raise mismatch("terminal returns")
            continue
        if who == CHANCE:
            if not theirs.is_chance_node() or not np.allclose(
                ours.chance_outcomes(), theirs.chance_outcomes()
            ):
                raise mismatch("chance outcomes")
            actions = [a for a, _ in ours.chance_outcomes()]
        else:
            if theirs.current_player() != who or ours.legal_actions() != theirs.legal_actions():
                raise mismatch("player to move or legal actions")
            key = theirs.information_state_string(who)
            mine = tree.index_of(ours.infoset_key(who))
            if index.setdefault(key, mine) != mine:
                raise mismatch(f"OpenSpiel infoset {key!r} spans two nashzoo infosets")
            if states[mine] is None:
                states[mine] = theirs
            actions = ours.legal_actions()
        for a in actions:
            stack.append((ours.child(a), theirs.child(a)))
    if len(index) != tree.num_infosets:
        raise AssertionError(f"{game.id}: {tree.num_infosets} infosets, OpenSpiel has {len(index)}")
    return InfosetMap(os_game, index, tuple(states))


def to_openspiel(game: Game | str, policy: PolicyLike) -> Any:
    """A nashzoo policy as an ``open_spiel.python.policy.TabularPolicy`` (exact copy)."""
    from open_spiel.python.policy import TabularPolicy as OpenSpielTabular

    table = as_tabular(game, policy)
    mapping = infoset_map(table.game)
    out = OpenSpielTabular(mapping.openspiel_game)
    rows = np.empty(len(out.state_lookup), dtype=np.int64)
    for key, row in out.state_lookup.items():
        rows[row] = mapping.index[key]
    out.action_probability_array[:] = table.probs[rows]
    return out


def to_pyspiel(game: Game | str, policy: PolicyLike) -> Any:
    """A nashzoo policy as a C++ ``pyspiel.TabularPolicy`` (for ``pyspiel.nash_conv``)."""
    from open_spiel.python.policy import python_policy_to_pyspiel_policy

    return python_policy_to_pyspiel_policy(to_openspiel(game, policy))


def from_openspiel(game: Game | str, policy: Any) -> TabularPolicy:
    """An OpenSpiel policy (python ``Policy``, e.g. a ``TabularPolicy``) as a nashzoo one.

    Each nashzoo information set is answered by the policy's ``action_probabilities`` at one
    OpenSpiel state of that information set.
    """
    game = load_game(game)
    mapping = infoset_map(game)
    tree = compile_tree(game)
    probs = np.zeros((tree.num_infosets, tree.num_actions))
    for i, state in enumerate(mapping.states):
        answer = policy.action_probabilities(state)
        for action, p in answer.items():
            if not 0 <= int(action) < tree.num_actions:
                raise PolicyError(
                    f"the OpenSpiel policy gives action {action} at {tree.infoset_keys[i]!r}; "
                    f"{game.id} has {tree.num_actions} actions"
                )
            probs[i, int(action)] = float(p)
    return TabularPolicy(game, probs)
