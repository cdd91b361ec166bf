"""Exact evaluation of policies over the compiled game tree.

NashConv as in Lanctot et al. (2017), "A Unified Game-Theoretic Approach to Multiagent
Reinforcement Learning", NeurIPS; exact best responses by backward induction over the
responder's information sets (perfect recall: an information set's value is the sum over its
histories; see Johanson et al. (2011), "Accelerating Best Response Calculation in Large Extensive
Games", IJCAI); game values by the sequence-form LP (:mod:`nashzoo.eval.lp`).

Everything here is a plain function of ``(game, policy)``:

1. turn the policy into one ``[num_infosets, num_actions]`` table (:func:`as_tabular`:
   materialising neural or callable policies, combining one policy per seat, validating every
   row and naming the first bad information set);
2. gather each player's reach probability of every terminal history from the table;
3. for each player, fix the best action at its deepest information sets first and move up,
   accumulating counterfactual values with the choices already made below;
4. NashConv is the sum of the best-response gains; per-seat numbers compare each best response
   with the LP game value.

Steps 2-4 are the vectorised kernels of :mod:`nashzoo.games.treemath`, with no Python call per
history.

Definitions (``u_p`` is player ``p``'s expected return, ``sigma`` the joint policy):

* best-response value ``BR_p(sigma) = max_{sigma'_p} u_p(sigma'_p, sigma_{-p})``;
* ``NashConv(sigma) = sum_p [BR_p(sigma) - u_p(sigma)]`` (zero exactly at a Nash equilibrium);
* ``exploitability(sigma) = NashConv(sigma) / num_players``. This is the convention of the
  literature's reference implementation, OpenSpiel (``open_spiel.python.algorithms.
  exploitability.exploitability`` returns NashConv divided by the number of players); in a
  two-player zero-sum game it equals the average over seats of what a best responder gains.
* ``seat_exploitability(sigma, s)`` (two-player constant-sum games only): how much seat ``s``'s
  strategy alone gives away against a best responder, relative to the game value,
  ``v_s - min_tau u_s(sigma_s, tau)``. With payoffs summing to ``c`` at every terminal,
  ``min_tau u_s(sigma_s, tau) = c - BR_o(sigma_s)`` for the opponent ``o``, so
  ``seat_exploitability = v_s + BR_o(sigma) - c``. It is zero exactly when ``sigma_s`` is a
  maxmin (equilibrium) strategy, does not depend on seat ``o``'s rows (which is what lets two
  different learners, one per seat, be compared), and the two seats' values sum to NashConv.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nashzoo.agents.policy import (
    BatchPolicy,
    Infoset,
    Policy,
    PolicyError,
    TabularPolicy,
    seat_of,
)
from nashzoo.eval.lp import (
    CHEAP_LP_TERMINALS,
    constant_sum,
    lp_is_cheap,
    lp_refusal,
    require_two_player_constant_sum,
    solve_game,
)
from nashzoo.games import CompiledTree, Game, compile_tree, load_game
from nashzoo.games import treemath as tm
from nashzoo.games.base import brief_repr, check_player, display_id, display_ids_apart
from nashzoo.games.tree import readonly

PolicyLike = (
    TabularPolicy
    | Policy
    | Sequence[Policy]
    | Mapping[str, Sequence[float]]
    | np.ndarray
    | Callable[[Infoset], Any]
)
"""What the evaluator accepts as a (joint) policy: see :func:`as_tabular`."""


def as_tabular(game: Game | str, policy: PolicyLike) -> TabularPolicy:
    """The joint policy as a validated :class:`TabularPolicy` of ``game``.

    Accepts a ``TabularPolicy`` of the same game, any :class:`Policy` (or callable on
    :class:`Infoset`, materialised by querying every information set), a sequence with one
    policy per seat (seat ``p``'s rows come from the ``p``-th one), a ``{infoset_key: probs}``
    mapping covering every information set, or a ``[num_infosets, num_actions]`` array in the
    compiled tree's row order.

    Raises:
        PolicyError: a policy for another game, a wrong shape, missing information sets, or a
            row that is not a distribution over its legal actions; the message names the
            offending information set and says how to fix it.
    """
    if isinstance(policy, TabularPolicy) and policy.game is game:
        return policy.check()  # the common case, before the look-ups below
    game = load_game(game)
    if isinstance(policy, TabularPolicy):
        if policy.game.id != game.id:
            theirs, ours = display_ids_apart(policy.game.id, game.id)
            raise PolicyError(
                f"the policy is for {theirs}, not {ours}; evaluate it "
                "on its own "
                "game or build a policy for this one"
            )
        # Rows built with validate=False (or by hand) are checked here, once per policy (it is
        # immutable): a few vectorised comparisons, cheaper than the evaluation itself.
        return policy.check()
    if isinstance(policy, np.ndarray):
        return TabularPolicy(game, policy)
    if isinstance(policy, Mapping):
        return TabularPolicy.from_dict(game, policy)
    if isinstance(policy, Sequence) and not isinstance(policy, (str, bytes)):
        if len(policy) and all(isinstance(p, (int, float, np.number)) for p in policy):
            raise PolicyError(
                "a list of numbers is not a policy; for one mixed strategy in a matrix game use "
                "nashzoo.agents.fixed_policy(game, [...]), or pass one policy per seat"
            )
        if len(policy) != game.num_players:
            raise PolicyError(
                f"{game.display_id} has {game.num_players} seats but {len(policy)} seat policies "
                "were given; pass exactly one policy per seat (or one joint policy)"
            )
        seats = [_seat_table(game, seat, p) for seat, p in enumerate(policy)]
        return TabularPolicy.joint(game, seats)
    if isinstance(policy, (Policy, BatchPolicy)) or callable(policy):
        return TabularPolicy.from_policy(game, policy)
    if hasattr(policy, "average_policy"):
        raise PolicyError(
            f"cannot evaluate a {type(policy).__name__} learner itself: pass its "
            "average_policy() (its output) or current_policy()"
        )
    raise PolicyError(
        f"cannot evaluate a {type(policy).__name__}: pass a TabularPolicy, a Policy, one policy "
        "per seat, a {infoset_key: probabilities} dict or a [num_infosets, num_actions] array"
    )


def _seat_table(game: Game, seat: int, policy: PolicyLike) -> TabularPolicy:
    """Seat ``seat``'s policy, asked (or checked) only on that seat's information sets: a
    ``{key: probs}`` mapping need only list them, and a Policy or callable is queried only
    there, so a policy that knows one seat can be evaluated against any other."""
    tree = compile_tree(game)
    rows = tree.infosets_of(seat)
    declared = seat_of(policy, game)
    if declared is not None and declared != seat:
        raise PolicyError(
            f"the policy given for seat {seat} of {game.display_id} plays seat {declared} (its "
            "seat attribute): list one policy per seat, in seat order"
        )
    if isinstance(policy, Mapping):
        missing = [tree.infoset_keys[i] for i in rows if tree.infoset_keys[i] not in policy]
        if missing:
            raise PolicyError(
                f"the policy for seat {seat} of {game.display_id} has no probabilities for "
                f"information set {missing[0]!r} ({len(missing)} missing); list every "
                "information set of that seat"
            )
        return TabularPolicy.from_dict(game, policy, default=TabularPolicy.uniform(game))
    if not isinstance(policy, (TabularPolicy, np.ndarray, Sequence)) and (
        isinstance(policy, (Policy, BatchPolicy)) or callable(policy)
    ):
        return TabularPolicy.from_policy(game, policy, rows=rows)
    if isinstance(policy, (np.ndarray, list, tuple)):
        # A bare table is read on the seat's rows only, as a mapping or a callable is: the
        # other rows (zeros, often, in a table of one seat's play) are set uniform first.
        try:
            table = np.array(policy, dtype=np.float64)
        except (TypeError, ValueError):
            table = None  # as_tabular names the problem
        if table is not None and table.shape == (tree.num_infosets, tree.num_actions):
            others = np.ones(tree.num_infosets, dtype=bool)
            others[rows] = False
            table[others] = TabularPolicy.uniform(game).probs[others]
            return as_tabular(game, table)
    return as_tabular(game, policy)


def _setup(game: Game | str, policy: PolicyLike) -> tuple[Game, CompiledTree, TabularPolicy]:
    game = load_game(game)
    table = as_tabular(game, policy)
    return game, table.tree, table


@dataclass(frozen=True)
class BestResponse:
    """An exact best response of one player.

    Attributes:
        player: the best-responding player.
        value: its expected return against the other players' parts of the input policy.
        policy: the input policy with ``player``'s rows replaced by a pure best response
            (ties go to the lowest action id; information sets the others never let ``player``
            reach get the lowest legal action).
    """

    player: int
    value: float
    policy: TabularPolicy


@dataclass(frozen=True)
class EvalReport:
    """Everything the evaluator knows about one joint policy, from one pass over the tree.

    Attributes:
        game_id: the evaluated game.
        nash_conv: ``sum_p BR_p - u_p`` (0 at a Nash equilibrium).
        exploitability: ``nash_conv / num_players`` (OpenSpiel's convention).
        on_policy_values: ``u_p`` when everyone follows the policy (read-only array).
        best_response_values: ``BR_p`` for each player (read-only array).
        seat_exploitability: per seat ``v_s + BR_o - c`` (see module docs), or ``None`` when
            the game is not two-player constant-sum, ``seats=False`` was asked, or the game's
            LP was too slow to solve unasked (then ``seat_note`` says so).
        game_value: the game value per player from the sequence-form LP, or ``None`` when
            seat exploitability was not computed.
        seat_note: why the per-seat numbers were left out: a two-player constant-sum game's
            when they were not asked for by name (``seats=None`` on a large game), any other
            game's when they were (``seats=True``); else ``None``.
    """

    game_id: str
    nash_conv: float
    exploitability: float
    on_policy_values: np.ndarray
    best_response_values: np.ndarray
    seat_exploitability: tuple[float, ...] | None = None
    game_value: np.ndarray | None = None
    seat_note: str | None = None

    def __repr__(self) -> str:
        return brief_repr(self)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready numbers (for CSV/JSON result files)."""
        out: dict[str, Any] = {
            "game": self.game_id,
            "nash_conv": self.nash_conv,
            "exploitability": self.exploitability,
        }
        for p, v in enumerate(self.on_policy_values):
            out[f"value_{p}"] = float(v)
        for p, v in enumerate(self.best_response_values):
            out[f"br_value_{p}"] = float(v)
        if self.seat_exploitability is not None:
            for p, v in enumerate(self.seat_exploitability):
                out[f"seat_exploitability_{p}"] = v
        return out

    def __str__(self) -> str:
        lines = [
            f"{display_id(self.game_id)}: NashConv {self.nash_conv:.6g}, "
            f"exploitability (NashConv / {len(self.on_policy_values)}) {self.exploitability:.6g}",
            "  on-policy values: " + ", ".join(f"{v:+.6g}" for v in self.on_policy_values),
            "  best-response values: " + ", ".join(f"{v:+.6g}" for v in self.best_response_values),
        ]
        if self.seat_exploitability is not None:
            lines.append(
                "  seat exploitability (value lost to a best responder): "
                + ", ".join(f"seat {p} {v:.6g}" for p, v in enumerate(self.seat_exploitability))
            )
        if self.seat_note is not None:
            lines.append(f"  seat exploitability: {self.seat_note}")
        return "\n".join(lines)


def _readonly(values: Any) -> np.ndarray:
    """A read-only float64 copy of ``values`` (results are shared, never mutated)."""
    return readonly(np.array(values, dtype=np.float64, copy=True))


def expected_returns(game: Game | str, policy: PolicyLike) -> np.ndarray:
    """Exact expected return of every player when all follow ``policy``.

    ``policy`` is a joint policy or a sequence with one policy per seat (see
    :func:`as_tabular`). Returns a ``[num_players]`` float array.
    """
    _, tree, table = _setup(game, policy)
    return tm.expected_returns(tree, table.probs)


def best_response(game: Game | str, policy: PolicyLike, player: int) -> BestResponse:
    """Exact best response of ``player`` to the other seats' parts of ``policy``."""
    game, tree, table = _setup(game, policy)
    player = check_player(game, player)
    value, br = tm.best_response(tree, table.probs, player)
    return BestResponse(player, value, TabularPolicy(game, br, validate=False))


def nash_conv(game: Game | str, policy: PolicyLike) -> float:
    """``sum_p max_{sigma'_p} u_p(sigma'_p, sigma_{-p}) - u_p(sigma)``: 0 at an equilibrium."""
    table = as_tabular(game, policy)
    return tm.nash_conv_value(table.tree, table.probs)


def exploitability(game: Game | str, policy: PolicyLike) -> float:
    """``NashConv / num_players``, the convention of OpenSpiel's ``exploitability``.

    In a zero-sum (or constant-sum) game this is the average a best responder gains. In a
    general-sum game, where OpenSpiel's ``exploitability`` refuses, nashzoo still gives the
    same formula (so races and training curves have one scale for every game), but it is then
    only NashConv rescaled, not what an exploiter gains; :func:`seat_exploitability` and
    :func:`solve_game` refuse such games."""
    table = as_tabular(game, policy)
    return tm.nash_conv_value(table.tree, table.probs) / table.game.num_players


def seat_exploitability(game: Game | str, policy: PolicyLike, seat: int) -> float:
    """How much a best responder gains against seat ``seat``'s strategy, relative to the game
    value: ``v_seat - min_tau u_seat(sigma_seat, tau)`` (see the module docs).

    Only ``seat``'s rows of ``policy`` change the number, but ``policy`` is checked whole like
    any joint policy (every row a distribution over its legal actions), so the other seat's
    rows must be valid too: pass ``[seat_policy, UniformPolicy()]`` (in seat order) when only
    one seat's strategy is at hand. Zero exactly when the seat plays a maxmin
    (equilibrium) strategy; in a two-player zero-sum game the two seats' values sum to NashConv.

    Raises:
        ValueError: the game is not two-player zero-sum (or constant-sum).
    """
    game, tree, table = _setup(game, policy)
    seat = check_player(game, seat)
    c = require_two_player_constant_sum(game, "seat exploitability")
    opponent = 1 - seat
    br_value, _ = tm.best_response(tree, table.probs, opponent)
    return float(solve_game(game).value[seat] + br_value - c)


def evaluate(game: Game | str, policy: PolicyLike, *, seats: bool | None = None) -> EvalReport:
    """NashConv, exploitability, values and per-seat exploitability in one pass.

    One tree, one on-policy pass and one best response per player; the game value for the
    per-seat numbers comes from the cached LP solution (:func:`nashzoo.eval.solve_game`), so
    only the first call on a game pays for the LP. ``seats=None`` (the default) computes the
    per-seat part where that LP is quick (:func:`nashzoo.eval.lp_is_cheap`: up to 300,000
    terminals) and otherwise leaves it out, saying why in
    ``seat_note``: on 13-rank Leduc the LP takes minutes where NashConv takes a fraction of a
    second. ``seats=True`` always solves it; ``seats=False`` never does. A game that is not
    two-player constant-sum has no value to measure a seat against: the per-seat part is left
    out, silently by default, and with ``seats=True`` ``seat_note`` says why.
    """
    game, tree, table = _setup(game, policy)
    conv, br_values, on_policy = tm.nash_conv(tree, table.probs)
    seat_values: tuple[float, ...] | None = None
    value: np.ndarray | None = None
    note: str | None = None
    c = constant_sum(game) if game.num_players == 2 else None
    if c is not None and seats is None:
        seats = lp_is_cheap(game)
        refusal = lp_refusal(game) if tree.num_terminals <= CHEAP_LP_TERMINALS else None
        if refusal is not None:  # the LP cannot hold its payoffs: NashConv without the seats
            note = f"not computed: {refusal}"
        elif not seats:
            note = (
                f"not computed: the game value needs the sequence-form LP of {game.display_id}'s "
                f"{tree.num_terminals:,} terminal histories, which may take many minutes; ask for "
                "it with seats=True (nashzoo eval --seats); it is solved once per process"
            )
    if seats and c is None:
        from nashzoo.eval.answers import no_value_reason

        note = (
            f"not computed: {game.display_id} {no_value_reason(game)}, so it has no game value "
            "to measure a seat against (NashConv above is the measure for it)"
        )
    if seats and c is not None:
        value = solve_game(game).value
        seat_values = tuple(float(value[s] + br_values[1 - s] - c) for s in range(2))
    return EvalReport(
        game_id=game.id,
        nash_conv=conv,
        exploitability=conv / game.num_players,
        on_policy_values=_readonly(on_policy),
        best_response_values=_readonly(br_values),
        seat_exploitability=seat_values,
        game_value=value,
        seat_note=note,
    )
