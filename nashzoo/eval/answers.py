"""The exact answers ``nashzoo games GAME`` shows for one game: each player's value (from the
sequence-form LP, :func:`~nashzoo.eval.lp.solve_game`), the NashConv of the equilibrium it
finds, and the exploitability of uniform play.

The LP is solved only where it is quick (:func:`~nashzoo.eval.lp.lp_is_cheap`, at most
:data:`~nashzoo.eval.lp.CHEAP_LP_TERMINALS` terminal histories), as ``evaluate`` does for its
per-seat numbers; over that, the note says so and names ``nashzoo solve``, which solves any size
(warning first). A game that has no single value (more than two players, payoffs that do not sum
to a constant) gets the reason instead.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from nashzoo.agents.fixed import uniform_policy
from nashzoo.eval import lp
from nashzoo.eval.exact import exploitability, nash_conv
from nashzoo.eval.lp import constant_sum, lp_is_cheap, solve_game
from nashzoo.games import Game, compile_tree, load_game


@dataclasses.dataclass(frozen=True)
class GameAnswers:
    """What is known exactly about a game's equilibria.

    Attributes:
        value: the game value for each player (``None``: not solved, see ``note``).
        equilibrium_nash_conv: the NashConv of the equilibrium the LP found (about 1e-15
            times the largest payoff; ``None`` when not solved).
        uniform_exploitability: the exploitability (NashConv / players) of uniform play.
        note: why ``value`` is missing, or ``None``.
    """

    value: tuple[float, ...] | None
    equilibrium_nash_conv: float | None
    uniform_exploitability: float
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": None if self.value is None else list(self.value),
            "equilibrium_nash_conv": self.equilibrium_nash_conv,
            "uniform_exploitability": self.uniform_exploitability,
            "value_note": self.note,
        }


def game_answers(game: Game | str) -> GameAnswers:
    """The answers for ``game`` (compiled: give it one whose size was counted), the LP solved
    only where it is quick (see the module docs)."""
    game = load_game(game)
    uniform = exploitability(game, uniform_policy(game))
    reason = no_value_reason(game)
    if reason is not None:
        return GameAnswers(None, None, uniform, f"no single value: it {reason}")
    if not lp_is_cheap(game):
        terminals = int(compile_tree(game).terminal_nodes.size)
        return GameAnswers(
            None,
            None,
            uniform,
            f"not solved here: {terminals:,} terminal histories, over the "
            f"{lp.CHEAP_LP_TERMINALS:,} whose LP solves in seconds; nashzoo solve solves it "
            "(it may take minutes)",
        )
    solution = solve_game(game)
    value = tuple(float(v) for v in solution.value)
    return GameAnswers(value, nash_conv(game, solution.policy), uniform)


def no_value_reason(game: Game) -> str | None:
    """Why ``game`` has no single value (``"has 3 players"``, ``"is general-sum: ..."``), to
    follow its name in a message; ``None`` for a two-player zero-sum (or constant-sum) game."""
    if game.num_players != 2:
        return f"has {game.num_players} players"
    if constant_sum(game) is None:
        return "is general-sum: its payoffs do not sum to a constant"
    return None
