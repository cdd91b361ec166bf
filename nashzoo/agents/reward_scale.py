"""The reward scale of the neural and RL learners (``reward_scale`` in NFSP's, Deep CFR's, PPO's,
DQN's and MMD-PPO's configs): their networks learn payoffs divided by it.

Greedy actions and regret matching do not change when every payoff is divided by the same
number, but the networks' training does: Adam's steps, SB3's gradient clipping at 0.5 and the
losses' size all assume targets of order one. Measured on Kuhn poker with every payoff times
``k`` (2026-11-27, one seed): Deep CFR after 10 iterations reached NashConv/k 0.08 at ``k=1`` and
0.61 at ``k=1e6``; PPO at ``k=1e6`` stayed within 0.003 of uniform, where at ``k=1`` it moved
0.46; MMD-PPO at ``k=1e-6`` stayed at uniform (its pull to the magnet, ``alpha``, is in reward
units and swamped the rewards). Divided by the game's largest payoff, each learned at every
scale as at ``k=1``.

``"auto"`` (the default) divides by the game's largest absolute payoff only where that is
outside :data:`AUTO_BAND` (a game paying thousands of chips, or thousandths), and by 1
otherwise, so the games the defaults were tuned on (Kuhn's largest payoff 2, Leduc's 13,
Liar's dice's 1) train exactly as before. ``"game"`` always divides by the largest payoff; a
number divides by itself. The largest payoff is read from the compiled tree, so for a game too
big to compile ``"auto"`` is 1 and ``"game"`` is refused.
"""

from __future__ import annotations

from typing import Any, Literal

from nashzoo.agents.tree_play import fits
from nashzoo.games import Game, compile_tree
from nashzoo.games.base import is_finite_number

__all__ = ["AUTO_BAND", "RewardScale", "check_reward_scale", "resolve_reward_scale"]

RewardScale = float | Literal["auto", "game"]

AUTO_BAND = (0.01, 100.0)
"""Largest payoffs within this range train unscaled under ``"auto"``."""


def check_reward_scale(value: Any, label: str) -> None:
    """Refuse a ``reward_scale`` that is neither ``"auto"``, ``"game"`` nor a positive finite
    number; ``label`` names the field (``"NFSPConfig.reward_scale"``)."""
    if value in ("auto", "game"):
        return
    if isinstance(value, bool) or not (is_finite_number(value) and value > 0):
        raise ValueError(
            f"{label} must be 'auto' (the default: the game's largest absolute payoff where that "
            f"is below {AUTO_BAND[0]:g} or above {AUTO_BAND[1]:g}, else 1), 'game' (always that "
            f"payoff) or a positive finite number, got {value!r}"
        )


def resolve_reward_scale(setting: Any, game: Game, label: str) -> float:
    """The number the learner divides payoffs by (see the module docstring); ``label`` names
    the field in an error."""
    if setting not in ("auto", "game"):
        return float(setting)
    if not fits(game):
        if setting == "game":
            raise ValueError(
                f"{label}='game' reads the largest payoff from the compiled tree, and "
                f"{game.display_id} is too big to compile: give the scale as a number"
            )
        return 1.0
    largest = compile_tree(game).largest_payoff
    if largest == 0.0:  # nothing to learn, and nothing to divide by
        return 1.0
    if setting == "game":
        return largest
    low, high = AUTO_BAND
    return 1.0 if low <= largest <= high else largest
