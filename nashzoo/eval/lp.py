"""Exact equilibria of two-player zero-sum games by the sequence-form linear program.

Koller, Megiddo & von Stengel (1994), "Fast algorithms for finding randomized strategies in game
trees", STOC; von Stengel (1996), "Efficient computation of behavior strategies", GEB 14.

A player's strategy is written as a *realization plan* ``x``: one number per sequence (the
empty sequence, and every (information set, legal action) pair of that player), the product of
the player's own action probabilities along it. Perfect recall makes the plans a polytope
``{x >= 0 : E x = e}`` (``x_empty = 1``; at every information set the actions' entries sum to the
entry of the sequence leading to it), and the expected payoff bilinear, ``x^T A y`` with
``A[s0, s1] = sum of pi_c(z) u_0(z)`` over terminals ``z`` whose last sequences are ``s0, s1``.

1. Build ``E, e`` and ``F, f`` for both players and the sparse payoff matrix ``A`` from the
   tree's sequence form (:func:`nashzoo.games.treemath.sequence_form`: each information set's
   parent sequence, each terminal's last sequences; vectorised, no walk of the tree).
2. Player 0 solves ``max_{x, q} f^T q`` s.t. ``F^T q - A^T x <= 0``, ``E x = e``, ``x >= 0``
   (the inner ``min_y x^T A y`` replaced by its LP dual); the optimum is the game value.
3. Player 1 solves the mirror LP ``min_{y, p} e^T p`` s.t. ``A y - E^T p <= 0``, ``F y = f``,
   ``y >= 0``.
4. Turn each realization plan into a behaviour strategy: ``pi(a | I) = x[I, a] / sum_b x[I, b]``
   (uniform where the plan never reaches ``I``).

Both LPs go to HiGHS through :func:`scipy.optimize.linprog` (dual simplex, so the answer is a
vertex computed to floating-point accuracy, not an interior-point approximation). The solution is
cached per game id and holds only read-only arrays.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from nashzoo.agents.policy import TabularPolicy
from nashzoo.games import CompiledTree, Game, compile_tree, load_game
from nashzoo.games import treemath as tm
from nashzoo.games.base import brief_repr, display_id
from nashzoo.games.cache import GameCache

_T = TypeVar("_T")

CONSTANT_SUM_TOLERANCE = 1e-9
"""Terminal payoff sums may spread by at most this (times the payoff scale) for a game to
count as constant-sum."""

_SMALLEST_ENTRY = 1e-8
"""The smallest nonzero scaled payoff sent to HiGHS: ten times its ``small_matrix_value``
(1e-9), below which it drops a matrix entry as if it were zero."""

_LARGEST_ENTRY = 1e14
"""The largest scaled payoff sent to HiGHS: a tenth of its ``large_matrix_value`` (1e15),
above which it refuses the model."""

_HIGHS_OPTIONS = {
    "presolve": True,
    "primal_feasibility_tolerance": 1e-10,
    "dual_feasibility_tolerance": 1e-10,
}


def constant_sum(game: Game | str) -> float | None:
    """The constant ``c`` every terminal's payoffs sum to (0 for zero-sum), or ``None``.

    Kept with the compiled tree (the evaluator asks at every call), so it follows the tree's
    cache: a game defined again gets its own tree and its own sum.
    """
    return tm.per_tree(compile_tree(load_game(game)), "constant_sum", _constant_sum)


def _constant_sum(tree: CompiledTree) -> float | None:
    sums = tree.terminal_utility.sum(axis=1)
    # relative at every scale
    if sums.size and float(np.ptp(sums)) <= CONSTANT_SUM_TOLERANCE * tree.largest_payoff:
        return float(sums.mean())
    return None


def require_two_player_constant_sum(game: Game, what: str) -> float:
    """Return the constant sum ``c`` of ``game`` or raise a ValueError saying why ``what`` is
    undefined for it."""
    if game.num_players != 2:
        raise ValueError(
            f"{what} is defined for two-player zero-sum (or constant-sum) games; {game.display_id} "
            f"has {game.num_players} players. Use nash_conv / exploitability instead."
        )
    c = constant_sum(game)
    if c is None:
        raise ValueError(
            f"{what} needs a zero-sum (or constant-sum) game, but the payoffs of {game.display_id} "
            "do not sum to a constant, so there is no single game value to compare against. "
            "Use nash_conv / exploitability instead."
        )
    return c


@dataclass(frozen=True)
class GameSolution:
    """An exact equilibrium of a two-player zero-sum (or constant-sum) game.

    Attributes:
        game_id: the solved game.
        value: read-only ``[2]`` array, the game value for each player.
        policy: an equilibrium joint policy (each seat's rows are a maxmin strategy).
    """

    game_id: str
    value: np.ndarray
    policy: TabularPolicy

    def __repr__(self) -> str:
        return brief_repr(self)


@dataclass(frozen=True)
class _PlanPolytope:
    """One player's realization-plan polytope ``{x >= 0 : E x = e}`` as LP columns and rows.
    Columns: 0 = the empty sequence, then one per legal (information set, action) pair;
    constraint rows: 0 = the empty sequence, then one per information set of the player."""

    flat_ids: np.ndarray  # [m - 1] flat id ``infoset * A + action`` of columns 1..m-1
    column_row: np.ndarray  # [m - 1] constraint row (1 + local infoset) of columns 1..m-1
    infosets: np.ndarray  # [k] the player's information sets (constraint rows 1..k)
    parent_column: np.ndarray  # [k] column of the sequence leading to each information set
    last_column: np.ndarray  # [Z] column of the player's last sequence before each terminal

    @property
    def size(self) -> int:
        return int(self.flat_ids.shape[0]) + 1

    def constraints(self) -> sparse.csr_array:
        """``E`` in ``E x = e``: ``x_empty = 1``, and at every information set the actions'
        entries minus the entry of the sequence leading there equal 0."""
        k = int(self.infosets.shape[0])
        rows = np.concatenate([[0], self.column_row, 1 + np.arange(k)])
        cols = np.concatenate([[0], np.arange(1, self.size), self.parent_column])
        vals = np.concatenate([[1.0], np.ones(self.size - 1), -np.ones(k)])
        return sparse.coo_array((vals, (rows, cols)), shape=(k + 1, self.size)).tocsr()

    def rhs(self) -> np.ndarray:
        out = np.zeros(int(self.infosets.shape[0]) + 1)
        out[0] = 1.0
        return out


def _plan_polytope(tree: CompiledTree, player: int) -> _PlanPolytope:
    """The polytope's columns from the tree's shared sequence form (parent and last sequences
    come from :func:`nashzoo.games.treemath.sequence_form`)."""
    sf = tm.sequence_form(tree)
    infosets = tree.infosets_of(player)
    legal = tree.legal_mask[infosets]
    grid = infosets[:, None] * tree.num_actions + np.arange(tree.num_actions)
    flat_ids = grid[legal]
    column_row = np.broadcast_to(1 + np.arange(infosets.shape[0])[:, None], grid.shape)[legal]
    column_of = np.full(tree.num_sequences + 1, -1, dtype=np.int64)
    column_of[flat_ids] = 1 + np.arange(flat_ids.shape[0])
    column_of[tree.num_sequences] = 0  # the empty sequence
    return _PlanPolytope(
        flat_ids=flat_ids,
        column_row=column_row,
        infosets=infosets,
        parent_column=column_of[sf.parent_sequence[infosets]],
        last_column=column_of[sf.last_sequence[player]],
    )


def _payoff_matrix(
    tree: CompiledTree, forms: tuple[_PlanPolytope, _PlanPolytope]
) -> sparse.csr_array:
    """``A[s0, s1]``: chance-weighted payoff to player 0 of terminals ending in ``s0, s1``."""
    weights = tree.terminal_chance_reach * tree.terminal_utility[:, 0]
    return sparse.coo_array(
        (weights, (forms[0].last_column, forms[1].last_column)),
        shape=(forms[0].size, forms[1].size),
    ).tocsr()  # duplicates are summed


def _solve(
    payoff: sparse.csr_array,
    own: sparse.csr_array,
    own_rhs: np.ndarray,
    other: sparse.csr_array,
    game_id: str,
    seat: int,
) -> tuple[np.ndarray, float]:
    """``max_{x, q} q_0`` s.t. ``other^T q - payoff^T x <= 0``, ``own x = own_rhs``, ``x >= 0``.

    ``payoff`` is from this seat's point of view (rows: this seat's sequences). Returns the
    realization plan ``x`` and the value.
    """
    m, n_other_rows = payoff.shape[0], other.shape[0]
    cost = np.zeros(m + n_other_rows)
    cost[m] = -1.0  # maximise q_empty
    a_ub = sparse.hstack([-payoff.T, other.T]).tocsr()
    a_eq = sparse.hstack([own, sparse.csr_array((own.shape[0], n_other_rows))]).tocsr()
    bounds = [(0.0, None)] * m + [(None, None)] * n_other_rows
    result = _interruptible(
        linprog,
        cost,
        A_ub=a_ub,
        b_ub=np.zeros(a_ub.shape[0]),
        A_eq=a_eq,
        b_eq=own_rhs,
        bounds=bounds,
        method="highs-ds",
        options=_HIGHS_OPTIONS,
    )
    if result.status != 0:
        raise RuntimeError(
            f"the sequence-form LP of {display_id(game_id)} (seat {seat}) failed: {result.message}"
        )
    return result.x[:m], float(-result.fun) + 0.0  # + 0.0: no '-0.0' values


def _interruptible(solver: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``solver(*args, **kwargs)`` in a thread of its own while this one waits in short sleeps:
    HiGHS holds no Python lock while it solves, but Python runs its Ctrl-C handler only between
    bytecodes of the main thread, which a direct call keeps inside C for as long as the solve
    takes (minutes on 13-rank Leduc: a Ctrl-C waited for the solver to return). A Ctrl-C now
    stops the wait at once; the solver thread, which cannot be stopped, finishes on its own
    (a daemon: it ends with the process)."""
    done: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(solver(*args, **kwargs))
        except BaseException as err:  # handed to the waiting thread
            failed.append(err)

    worker = threading.Thread(target=run, name="nashzoo-lp", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.1)
    if failed:
        raise failed[0]
    return done[0]  # type: ignore[no-any-return]


def _behaviour(
    tree: CompiledTree, form: _PlanPolytope, plan: np.ndarray, probs: np.ndarray
) -> None:
    """Write the behaviour strategy of a realization plan into ``probs`` (in place)."""
    rows = np.zeros((tree.num_infosets, tree.num_actions))
    rows.reshape(-1)[form.flat_ids] = np.maximum(plan[1:], 0.0)
    mine = rows[form.infosets]
    total = mine.sum(axis=1, keepdims=True)
    legal = tree.legal_mask[form.infosets]
    uniform = legal / legal.sum(axis=1, keepdims=True)
    reached = total > 1e-13
    probs[form.infosets] = np.where(reached, mine / np.where(reached, total, 1.0), uniform)


#: Games with at most this many terminal histories have their value solved by default where a
#: caller only wants it as a reference (the Trainer's and ``evaluate``'s per-seat
#: exploitability); ``solve_game`` warns before a bigger one. The LP's payoff
#: matrix has one entry per terminal: Liar's dice (147,420 terminals) solves in about 4 CPU s, while
#: 13-rank Leduc through the OpenSpiel bridge (704,600) kept HiGHS busy for over four minutes
#: before it was stopped.
CHEAP_LP_TERMINALS = 300_000


def lp_is_cheap(game: Game | str) -> bool:
    """Whether :func:`solve_game` is quick enough to run unasked (see
    :data:`CHEAP_LP_TERMINALS`) and can solve the game at all (:func:`lp_refusal`: payoffs
    whose sizes range over more than the solver holds, such as a chance probability of 1e-300
    beside payoffs of 1, are refused); ``solve_game`` itself solves any size it is given. By
    the game alone, not by what this process has solved already, so that a run decides the
    same way in every process."""
    game = load_game(game)
    return _terminals(game) <= CHEAP_LP_TERMINALS and lp_refusal(game) is None


def lp_refusal(game: Game | str) -> str | None:
    """Why :func:`solve_game` would refuse the payoffs of a two-player constant-sum ``game``
    (the sizes of its sequence-form payoff entries range over more than the LP solver holds),
    or ``None``; computed once per game (it builds the LP's payoff matrix, not its solution)."""
    return _REFUSALS(load_game(game))


def _refusal(game: Game) -> str | None:
    if game.num_players != 2:
        return None  # solve_game refuses such a game on other grounds
    tree = compile_tree(game)
    payoff = _payoff_matrix(tree, (_plan_polytope(tree, 0), _plan_polytope(tree, 1)))
    try:
        _payoff_exponent(payoff.data, game.id)
    except ValueError as err:
        return str(err)
    return None


def _terminals(game: Game) -> int:
    return int(compile_tree(game).terminal_nodes.size)


def solve_game(game: Game | str) -> GameSolution:
    """Exact equilibrium and value of a two-player zero-sum (or constant-sum) game.

    Solves the two sequence-form LPs (see the module docs) once per game and caches the
    result; the returned arrays are read-only, so the cached solution is safe to share.
    A game over :data:`CHEAP_LP_TERMINALS` terminal histories may keep the solver busy for
    many minutes, with no progress to show: a ``UserWarning`` says so before it starts. A
    Ctrl-C stops the wait at once (the solver finishes in a background thread, its result
    dropped).

    Raises:
        ValueError: the game has more than two players or is not constant-sum.
    """
    game = load_game(game)
    if game not in _SOLUTIONS:
        require_two_player_constant_sum(game, "solve_game")  # refused before any warning
        terminals = _terminals(game)
        if terminals > CHEAP_LP_TERMINALS:
            warnings.warn(
                f"solve_game: {game.display_id} has {terminals:,} terminal histories, over the "
                f"{CHEAP_LP_TERMINALS:,} whose sequence-form LP solves in seconds; it may take "
                "many minutes (13-rank Leduc's 704,600: over four), with no progress to show "
                "(Ctrl-C stops it). The solution is cached for the rest of this process",
                UserWarning,
                stacklevel=2,
            )
    return _SOLUTIONS(game)


def _solve_game(game: Game) -> GameSolution:
    c = require_two_player_constant_sum(game, "solve_game")
    tree = compile_tree(game)
    forms = (_plan_polytope(tree, 0), _plan_polytope(tree, 1))
    payoff = _payoff_matrix(tree, forms)
    exponent = _payoff_exponent(payoff.data, game.id)
    payoff.data = np.ldexp(payoff.data, exponent)
    e, f = forms[0].constraints(), forms[1].constraints()
    x, value0 = _solve(payoff, e, forms[0].rhs(), f, game.id, 0)
    value0 = float(np.ldexp(value0, -exponent)) + 0.0
    # Player 1 maximises -x^T A y, i.e. the same LP on the negated, transposed payoff.
    y, neg_value0 = _solve((-payoff.T).tocsr(), f, forms[1].rhs(), e, game.id, 1)
    probs = np.zeros((tree.num_infosets, tree.num_actions))
    _behaviour(tree, forms[0], x, probs)
    _behaviour(tree, forms[1], y, probs)
    value = np.array([value0, c - value0])
    value.setflags(write=False)
    del neg_value0  # equals -value0 up to solver accuracy; value0 is the one reported
    return GameSolution(game.id, value, TabularPolicy(game, probs))


def _payoff_exponent(entries: np.ndarray, game_id: str) -> int:
    """The power of two ``k`` the LP's payoff entries are multiplied by (``np.ldexp``: exact,
    and never out of range, where ``2.0**k`` itself may be).

    HiGHS works to absolute tolerances (1e-10 here), drops matrix entries under 1e-9 and
    refuses those over 1e15. ``k`` puts the largest entry in [0.5, 1), so payoffs of 1e-9 or
    1e15 solve as those of 1 do, unless that would take the smallest nonzero entry under
    :data:`_SMALLEST_ENTRY`: then the nearest ``k`` that keeps it there (a big-M row of
    ``-1e9`` beside Rock-Paper-Scissors' 1s had the 1s dropped, and the game solved as if they
    were 0). A range no ``k`` fits (over 1e22) is refused rather than solved wrong.
    """
    magnitudes = np.abs(entries[entries != 0.0])
    if magnitudes.size == 0:
        return 0
    largest, smallest = float(magnitudes.max()), float(magnitudes.min())
    exponent = -int(np.frexp(largest)[1])  # largest * 2**exponent in [0.5, 1)
    lift = int(np.ceil(np.log2(_SMALLEST_ENTRY) - np.log2(smallest)))  # smallest up to 1e-8
    exponent = max(exponent, lift)
    # in logarithms: a lift of a 1e-300 entry took ldexp of the largest past float's range
    if np.log2(largest) + exponent > np.log2(_LARGEST_ENTRY):
        raise ValueError(
            f"solve_game: the nonzero payoffs of {display_id(game_id)}, each times the chance "
            f"of reaching it, range from {smallest:.3g} to {largest:.3g} in size, a ratio over "
            f"the {_LARGEST_ENTRY / _SMALLEST_ENTRY:.0e} the LP solver holds at once; round "
            "the smallest payoffs (or chance probabilities) to 0, or make the largest payoffs "
            "smaller"
        )
    return exponent


_SOLUTIONS: GameCache[GameSolution] = GameCache(_solve_game)
_REFUSALS: GameCache[str | None] = GameCache(_refusal)
