"""Exact evaluation over the compiled game tree.

Plain functions of ``(game, policy)``: expected returns, exact best responses, NashConv,
exploitability (= NashConv / num_players, OpenSpiel's convention), per-seat exploitability, and
the exact value and equilibrium of two-player zero-sum games by the sequence-form LP. All of them
accept a joint policy or one policy per seat (see :func:`as_tabular`). :func:`evaluate` gives
them in one report; with ``seats=None`` (the default) the per-seat numbers, which need the game's
value, are computed only where the LP is quick (:func:`lp_is_cheap`), and ``seats=True`` asks
for them anyway (``nashzoo eval --seats``).

Imported on their own, as they need extras or more than ``(game, policy)``:
:mod:`nashzoo.eval.tournament` (round robins: exact payoffs, and sampled matches with a 95%
interval; kept pairing by pairing in a folder that a resume finishes,
:mod:`nashzoo.eval.tournament_folder`), :mod:`nashzoo.eval.plots` (the PNGs, the ``plot`` extra) and
:mod:`nashzoo.eval.openspiel` (policies to and from OpenSpiel's).
"""

from nashzoo.eval.exact import (
    BestResponse,
    EvalReport,
    PolicyLike,
    as_tabular,
    best_response,
    evaluate,
    expected_returns,
    exploitability,
    nash_conv,
    seat_exploitability,
)
from nashzoo.eval.lp import GameSolution, constant_sum, lp_is_cheap, lp_refusal, solve_game

__all__ = [
    "BestResponse",
    "EvalReport",
    "GameSolution",
    "PolicyLike",
    "as_tabular",
    "best_response",
    "constant_sum",
    "evaluate",
    "expected_returns",
    "exploitability",
    "lp_is_cheap",
    "lp_refusal",
    "nash_conv",
    "seat_exploitability",
    "solve_game",
]
