"""Numbers in words at any payoff scale: a game paying 1e-6 or 1e6 ranks, prints and reports
as the same game paying 1 does (the tables' decimals and the ties follow the payoffs' size)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from nashzoo.eval.numbers import format_number, payoff_decimals, payoff_spec, rank_by
from nashzoo.eval.tournament import load_entrant, round_robin
from nashzoo.games import CHANCE, TERMINAL, Game, State

BIASED_RPS = [[0, -1, 2], [1, 0, -1], [-1, 1, 0]]


def _scaled(scale: float) -> str:
    rows = [[v * scale for v in row] for row in BIASED_RPS]
    return f"matrix(row_payoffs={rows})"


@pytest.mark.parametrize(
    ("values", "decimals"),
    [([2.0], 3), ([13.0, -1.0], 3), ([2e-6], 8), ([-0.04], 4), ([1e6], 3), ([0.0], 3), ([], 3)],
)
def test_decimals_show_three_significant_digits_of_the_largest_payoff(values, decimals):
    assert payoff_decimals(values) == decimals
    assert payoff_decimals([1e-30]) == 12  # at most twelve, however small
    assert payoff_spec([2e-6]) == "+.8f" and payoff_spec([2e-6], sign=False, extra=1) == ".9f"
    assert format_number(float("nan"), "+.3f") == "+nan"  # no rounding of what is not a number


def test_ties_are_relative_to_the_scores_size():
    # 1e6 apart by rounding noise: a tie, ordered by name; 1e-13 apart at a 1e-13 scale: not
    assert rank_by([1e6 + 2e-9, 1e6, -2e6], ["b", "a", "c"], scale=2e6) == (1, 0, 2)
    assert rank_by([1e-13, 3e-13, -4e-13], ["a", "b", "c"], scale=4e-13) == (1, 0, 2)
    assert rank_by([5.6e-17, -5.6e-17, 0.0], ["b", "c", "a"], scale=1.0) == (2, 0, 1)


@pytest.mark.parametrize("scale", [1e-13, 1e-6, 1e6])
def test_a_tournament_ranks_and_prints_a_scaled_game_as_the_unscaled_one(scale):
    """Tie-breaking by ``round(score, 12)`` ranked uniform above the equilibrium once payoffs
    were 1e-13 (every score rounded to 0, then names decided); the table printed every cell of
    a 1e-6 game as +0.000 and ran the cells of a 1e6 one into each other."""
    specs = ("uniform", "z_equilibrium=equilibrium", "rock=fixed:1,0,0")

    def ranked(game: str) -> list[str]:
        result = round_robin(game, [load_entrant(game, s) for s in specs])
        return [result.names[i] for i in result.ranking]

    assert ranked(_scaled(scale)) == ranked(_scaled(1.0)) == ["rock", "z_equilibrium", "uniform"]
    game = _scaled(scale)
    result = round_robin(game, [load_entrant(game, s) for s in specs], episodes=4, seed=0)
    table = result.table()
    shown = format_number(result.exact[2, 0], payoff_spec(result.exact.ravel()))
    assert float(shown) == pytest.approx(scale / 6, rel=1e-2) and shown in table  # rock-uniform
    rows = table.splitlines()[-3:]
    assert len({len(row) for row in rows}) == 1  # columns as wide as their widest cell
    for row in rows:  # each cell stands apart from the next
        assert all(cell.strip() for cell in row.split("  ") if cell)


@pytest.mark.parametrize(
    ("scale", "note"),
    [(1.0, None), (1e-6, "too coarse for it"), (1e6, "too fine for it")],
)
def test_a_race_report_reads_the_payoffs_at_their_own_scale(tmp_path, scale, note):
    """At 1e-6 the cross-play table was all +0.000 and "neither earns from the other"; at
    either end the thresholds (0.1 ... 0.001, payoff units) were all met at once or never, and
    nothing said so. Now the decimals follow the game's largest payoff and the report names
    ``--thresholds`` where the defaults do not suit it."""
    from nashzoo.train.race import RaceConfig, run_race

    cfg = RaceConfig(
        game=_scaled(scale),
        learners=("cfr", "xfp"),
        seeds=1,
        budget_seconds=None,
        budget_iterations=3,
        cross_play=True,
        out=str(tmp_path / "race"),
        backend="serial",
        plots=False,
    )
    text = run_race(cfg, progress=False).markdown
    assert ("--thresholds E1,E2" in text) == (note is not None)
    if note is not None:
        assert note in text and f"largest payoff is {2 * scale:.3g}" in text
    assert "neither earns" not in text  # three iterations: one side is still ahead
    earned = text.split(" earns ")[1].split(" per game")[0]
    assert float(earned) > 0.01 * scale and len(earned.split(".")[1]) == payoff_decimals([scale])


def test_the_thresholds_note_names_games_paying_thousands_as_the_readme_says():
    """README: "for a game paying thousands or thousandths ... the report says when the
    thresholds do not suit the game"; a game paying 1,000 got no note (the cut was 10,000)."""
    from nashzoo.train.race.summary import _thresholds_note

    defaults = (0.1, 0.05, 0.01, 0.001)
    for payoff in (0.2, 1.0, 2.0, 13.0, 100.0):  # rock-paper-scissors ... Leduc ... 100 chips
        assert _thresholds_note(defaults, payoff) == []
    for payoff, what in ((1000.0, "too fine"), (0.001, "too coarse"), (0.19, "too coarse")):
        assert f"they are {what} for it" in _thresholds_note(defaults, payoff)[0]
    assert _thresholds_note((100.0, 10.0, 1.0), 1000.0) == []  # the README's own levels suit it


def test_reward_scale_auto_leaves_the_tuned_games_alone_and_divides_the_far_ones():
    from nashzoo.agents.reward_scale import check_reward_scale, resolve_reward_scale
    from nashzoo.games import load_game

    def scale(setting, game):
        return resolve_reward_scale(setting, load_game(game), "X.reward_scale")

    assert scale("auto", "kuhn_poker") == scale("auto", "leduc_poker") == 1.0
    assert scale("game", "leduc_poker") == 13.0 and scale(4, "kuhn_poker") == 4.0
    assert scale("auto", _scaled(1e6)) == 2e6 and scale("auto", _scaled(1e-6)) == 2e-6
    from nashzoo.agents import make_learner

    for name in ("nfsp", "deep_cfr", "ppo", "dqn", "mmd_ppo"):  # "auto" is every default
        assert make_learner(name, _scaled(1e6), 0).reward_scale == 2e6
        assert make_learner(name, "kuhn_poker", 0).reward_scale == 1.0
    for bad in (0, -1.0, float("inf"), True, "big"):
        with pytest.raises(ValueError, match=r"X\.reward_scale must be 'auto'"):
            check_reward_scale(bad, "X.reward_scale")


@pytest.mark.parametrize(
    ("learner", "config"),
    [
        ("deep_cfr", {"traversals": 50, "strategy_traversals": 20, "advantage_steps": 8}),
        ("ppo", {"steps_per_iteration": 64, "batch_size": 32, "n_epochs": 2}),
        ("dqn", {"steps_per_iteration": 64, "learning_starts": 16}),
        ("mmd_ppo", {"steps_per_iteration": 64, "batch_size": 32, "n_epochs": 2}),
    ],
)
def test_the_neural_learners_learn_a_game_paying_millions_as_one_paying_millionths(learner, config):
    """Unscaled, Deep CFR degraded as payoffs grew (NashConv/k 0.61 at 1e6 against 0.08 at 1),
    PPO stayed at uniform at 1e6 and MMD-PPO at 1e-6. With ``reward_scale="auto"`` the networks
    see the same rewards at both scales, so they learn the same policy."""
    from nashzoo.train import train

    policies = [
        train(_scaled(k), learner, iterations=2, seed=0, config=config).average_policy.probs
        for k in (1e-6, 1e6)
    ]
    np.testing.assert_allclose(policies[0], policies[1], atol=1e-5)


@pytest.mark.parametrize("learner", ["nfsp", "deep_cfr", "ppo", "dqn", "mmd_ppo"])
def test_a_checkpoint_from_before_reward_scale_resumes_unscaled(tmp_path, learner):
    """A checkpoint written before ``reward_scale`` existed learned unscaled rewards: it
    resumes with 1, not with today's "auto" (which divides a game paying 1e6 by 2e6)."""
    import json

    from nashzoo.agents import load_learner, make_learner

    game = _scaled(1e6)
    make_learner(learner, game, 0, {"reward_scale": 1.0}, seed=0).save(tmp_path / "new.npz")
    with np.load(tmp_path / "new.npz") as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays["__meta__"]))
    del meta["config"]["reward_scale"]
    arrays["__meta__"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "old.npz", **arrays)
    assert load_learner(tmp_path / "old.npz", game).reward_scale == 1.0
    assert load_learner(tmp_path / "new.npz", game).reward_scale == 1.0


def test_settings_before_they_existed_are_only_those_the_learners_config_has(tmp_path):
    """A plugin subclassing a learner inherits its list of settings older checkpoints lack; a
    setting its own config does not have must not be put into the config (which would then
    be refused as an unknown field)."""
    from nashzoo.agents.cfr import CFR

    class Subclass(CFR):  # not registered: loaded through its own class
        # CFR's config has no such field
        settings_before_they_existed: ClassVar[dict[str, Any]] = {"reward_scale": 1.0}

    learner = Subclass("kuhn_poker", 0)
    learner.step(learner.current_policy())
    learner.save(tmp_path / "sub.npz")
    restored = Subclass.load(tmp_path / "sub.npz")
    np.testing.assert_array_equal(restored.average_policy().probs, learner.average_policy().probs)


class TinyDeal(Game):
    """Chance deals card 1 but for a 1e-300 chance of card 0; player 0, seeing the card,
    bets or checks; a bet wins 1 on card 1 and loses 1 on card 0. Its LP payoff entries range
    from 1e-300 to 1: over what the LP solver holds."""

    name = "tiny_deal"
    num_actions = 2
    action_names = ("check", "bet")
    infoset_tensor_size = 1

    def __init__(self) -> None:
        super().__init__({})

    def new_initial_state(self) -> State:
        return TinyDealState(self, ())


class TinyDealState(State):
    def __init__(self, game: Game, moves: tuple[int, ...]) -> None:
        super().__init__(game)
        self.moves = moves

    def current_player(self) -> int:
        return (CHANCE, 0, TERMINAL)[len(self.moves)]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        return [(0, 1e-300), (1, 1.0)]

    def legal_actions(self) -> list[int]:
        return [0, 1] if len(self.moves) == 1 else []

    def _child(self, action: int) -> State:
        return TinyDealState(self.game, (*self.moves, action))

    def returns(self) -> np.ndarray:
        card, bet = self.moves
        win = float(bet) * (1.0 if card else -1.0)
        return np.array([win, -win])

    def history(self) -> list[int]:
        return list(self.moves)

    def describe(self, player: int | None = None) -> str:
        return f"tiny deal {self.moves}"

    def infoset_key(self, player: int) -> str:
        return f"card {self.moves[0]}"

    def infoset_tensor(self, player: int) -> np.ndarray:
        return np.array([float(self.moves[0])])


def test_a_game_the_lp_cannot_hold_is_evaluated_without_its_seats():
    """A chance probability of 1e-300 beside payoffs of 1: `train`'s final evaluation (and
    `evaluate`'s default) asked the LP for the game value, which refuses such a range, so the
    run failed at its end after an overflow warning; the seats are now left out, saying why."""
    import warnings

    from nashzoo.agents import TabularPolicy
    from nashzoo.eval import evaluate, lp_is_cheap, lp_refusal
    from nashzoo.train import train

    game = TinyDeal()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ldexp overflowed on the way to the refusal
        report = evaluate(game, TabularPolicy.uniform(game))
        result = train(game, "cfr_plus", iterations=5, progress=False)
    assert report.nash_conv == pytest.approx(0.5)  # betting on card 1 is worth 1, uniform 0.5
    assert report.seat_exploitability is None and "range from 1e-300 to 1" in report.seat_note
    assert result.final.seat_exploitability is None and result.nash_conv < 0.5
    assert not lp_is_cheap(game) and "solve_game" in (lp_refusal(game) or "")
    with pytest.raises(ValueError, match="a ratio over the 1e\\+22"):
        evaluate(game, TabularPolicy.uniform(game), seats=True)  # asked for: the refusal
    assert lp_refusal("kuhn_poker") is None and lp_is_cheap("kuhn_poker")


def test_a_learner_whose_sums_overflow_writes_no_checkpoint(tmp_path):
    """Payoffs of 1.7e307: CFR's regrets overflow to infinity within a few iterations.
    The checkpoint was written, and then refused as corrupt by the reader."""
    from nashzoo.agents.base import TrainingDivergedError
    from nashzoo.train import Trainer

    huge = 1.7e307  # the row player's second action loses it whatever the column
    game = f"matrix(row_payoffs=[[{huge}, {huge}], [{-huge}, {-huge}]])"
    trainer = Trainer(game, "cfr", "cfr", final_eval=False, progress=False)
    trainer.run(iterations=1)
    trainer.save(tmp_path / "run.npz")
    kept = (tmp_path / "run.npz").read_bytes()
    with np.errstate(over="ignore", invalid="ignore"):
        trainer.run(iterations=5)  # its regret falls by 3.4e307 a step: -inf at the sixth
    with pytest.raises(TrainingDivergedError, match=r"'regrets' holds \d+ non-finite value"):
        trainer.save(tmp_path / "run.npz")
    assert (tmp_path / "run.npz").read_bytes() == kept  # the last good checkpoint stays
    Trainer.load(tmp_path / "run.npz")


def test_a_game_the_lp_holds_builds_its_payoff_matrix_once(monkeypatch):
    """``lp_refusal`` is computed once per game; for a game the LP holds (its answer None) the
    cache took None for "not built yet" and built the payoff matrix again on every call, twice
    in each ``evaluate`` of a policy."""
    from nashzoo.agents import TabularPolicy
    from nashzoo.eval import evaluate, lp, lp_refusal
    from nashzoo.games import load_game

    built: list[int] = []
    original = lp._payoff_matrix

    def counted(*args):
        built.append(1)
        return original(*args)

    monkeypatch.setattr(lp, "_payoff_matrix", counted)
    game = load_game("matrix", row_payoffs=[[1.25, -0.75], [-0.5, 0.625]])  # no other test's
    assert lp_refusal(game) is None and lp_refusal(game) is None
    evaluate(game, TabularPolicy.uniform(game))
    evaluate(game, TabularPolicy.uniform(game))
    assert sum(built) == 2  # the refusal's check once, the game value's LP once
