"""The Gymnasium single-agent view: checkers, turn routing, rewards, masks, seeding."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from nashzoo.agents.fixed import fixed_policy
from nashzoo.agents.policy import PolicyError, TabularPolicy, UniformPolicy
from nashzoo.envs import GYMNASIUM_IDS
from nashzoo.envs.single_agent import SingleAgentEnv, remap_illegal
from nashzoo.games import IllegalActionError

ROCK, PAPER, SCISSORS = 0, 1, 2


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker", "rps"])
@pytest.mark.parametrize("seat", [0, 1, "random"])
def test_passes_gymnasium_and_sb3_checkers(game, seat):
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the test
        gymnasium_check_env(SingleAgentEnv(game, seat), skip_render_check=True)
        sb3_checker.check_env(SingleAgentEnv(game, seat), warn=True)


def test_reward_includes_the_loss_caused_by_the_opponents_last_move():
    env = SingleAgentEnv("rps", seat=0, opponent=fixed_policy("rps", [0, 1, 0]))  # always paper
    obs, info = env.reset(seed=0)
    assert info["seat"] == 0 and info["infoset_key"] == "p0"
    np.testing.assert_array_equal(obs, [1, 0, 0, 0, 0])  # seat one-hot, no own move yet
    _, reward, terminated, truncated, info = env.step(ROCK)
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(ROCK)


def test_second_seat_sees_the_opponent_move_first_and_is_paid():
    env = SingleAgentEnv("rps", seat=1, opponent=fixed_policy("rps", [1, 0, 0]))  # always rock
    env.reset(seed=0)
    assert env.moves == 1  # the opponent already moved inside reset()
    _, reward, terminated, _, _ = env.step(PAPER)
    assert reward == 1.0 and terminated
    assert env.episodes == 1 and env.return_sum == 1.0


def test_kuhn_fold_after_bet_is_paid_on_the_learners_step():
    always_bet = fixed_policy("kuhn_poker", {k: [0.0, 1.0] for k in _kuhn_keys(1)}, seats=1)
    env = SingleAgentEnv("kuhn_poker", seat=0, opponent=always_bet)
    env.reset(seed=1)
    _, reward, terminated, _, info = env.step(0)  # check; the opponent bets
    assert reward == 0.0 and not terminated and info["infoset_key"].endswith("|pb")
    _, reward, terminated, _, _ = env.step(0)  # fold to the bet
    assert reward == -1.0 and terminated


def test_action_masks_and_illegal_actions_in_leduc():
    env = SingleAgentEnv("leduc_poker", seat=0)
    _, info = env.reset(seed=3)
    np.testing.assert_array_equal(env.action_masks(), [False, True, True])  # no bet to fold to
    np.testing.assert_array_equal(info["action_mask"], env.action_masks())
    moves = env.moves
    _, _, _, _, info = env.step(0)  # fold is illegal here: played as the lowest legal (call)
    assert info["illegal_action"] == 0
    assert env.moves > moves
    strict = SingleAgentEnv("leduc_poker", seat=0, illegal_action="raise")
    strict.reset(seed=3)
    with pytest.raises(IllegalActionError, match=r"legal actions are \[1, 2\]"):
        strict.step(0)
    # Non-integers are refused in both modes, never cast (1.9 is not 1, True is not 1).
    for mode_env in (env, strict):
        for bad in (1.9, "1", True, None):
            with pytest.raises(IllegalActionError, match="integer id"):
                mode_env.step(bad)
    strict.step(np.int64(1))  # numpy integers are fine


@pytest.mark.parametrize(
    ("action", "hint"),
    [
        (1.0, r"\(cast a whole-number float: 1, not 1.0\)"),
        (np.float32(2.0), r"\(cast a whole-number float: 2, not 2.0\)"),
        (np.array([1]), r"\(it is a batch of one: pass the one id it holds\)"),
        ([1], r"\(it is a batch of one: pass the one id it holds\)"),
        (np.array([1.0]), r"batch of one: pass the one id it holds; cast a whole-number float"),
        (1.5, r"legal actions are \[1, 2\]$"),  # no cast makes 1.5 an action
        (True, r"legal actions are \[1, 2\]$"),
    ],
    ids=repr,
)
def test_an_action_holding_an_id_is_refused_with_the_fix(action, hint):
    """``1.0`` and ``[1]`` (a policy's float output, a batch of one) were refused with the legal
    actions but no word on what to pass instead; nothing is played either way."""
    env = SingleAgentEnv("leduc_poker", seat=0)
    env.reset(seed=3)
    moves = env.moves
    with pytest.raises(IllegalActionError, match=hint):
        env.step(action)
    assert env.moves == moves


def test_same_seed_same_episodes_and_seat_random_uses_both_seats():
    def rollout(seed):
        env = SingleAgentEnv("leduc_poker", seat="random")
        env.reset(seed=seed)
        trace = []
        for _ in range(200):
            mask = env.action_masks()
            _, reward, done, _, info = env.step(int(np.flatnonzero(mask)[-1]))
            trace.append((info["seat"], info["infoset_key"], reward))
            if done:
                env.reset()
        return trace

    first = rollout(7)
    assert first == rollout(7)
    assert first != rollout(8)
    assert {seat for seat, _, _ in first} == {0, 1}


def test_opponent_pool_draws_one_policy_per_episode():
    rock, paper = fixed_policy("rps", [1, 0, 0]), fixed_policy("rps", [0, 1, 0])
    env = SingleAgentEnv("rps", seat=0, opponent=[rock, paper])
    env.reset(seed=0)
    rewards = []
    for _ in range(100):
        rewards.append(env.step(ROCK)[1])
        env.reset()
    assert set(rewards) == {0.0, -1.0}
    assert 30 < rewards.count(0.0) < 70


def test_bad_arguments_are_refused_with_clear_errors():
    for seat in (2, True):
        with pytest.raises(ValueError, match="seat must be"):
            SingleAgentEnv("kuhn_poker", seat=seat)
    with pytest.raises(ValueError, match="illegal_action"):
        SingleAgentEnv("kuhn_poker", illegal_action="ignore")
    with pytest.raises(PolicyError, match="leduc_poker"):
        SingleAgentEnv("kuhn_poker", opponent=TabularPolicy.uniform("leduc_poker"))
    with pytest.raises(PolicyError, match="must be a Policy"):
        SingleAgentEnv("kuhn_poker", opponent=object())
    # The usual mistakes name the call that makes a Policy of them (a file, a network or
    # function, an SB3 model); they were "got str", "got function".
    hints = [
        ("avg.json", r"load_policy_file\('avg.json', 'kuhn_poker'\)"),
        (lambda tensors: tensors, r"from_network\(fn, 'kuhn_poker'\)"),
        (SimpleNamespace(policy=None, predict=print), r"from_sb3\(model, 'kuhn_poker'\)"),
    ]
    for opponent, hint in hints:
        with pytest.raises(PolicyError, match=hint):
            gymnasium.make("nashzoo/KuhnPoker-v0", opponent=opponent)
    # A class passes the Policy protocol check; it failed only at the opponent's first move.
    with pytest.raises(PolicyError, match=r"got the class UniformPolicy.*UniformPolicy\(\.\.\.\)"):
        SingleAgentEnv("kuhn_poker", opponent=UniformPolicy)
    with pytest.raises(RuntimeError, match="reset"):
        SingleAgentEnv("kuhn_poker").step(0)


def test_render_shows_the_learners_view():
    env = SingleAgentEnv("kuhn_poker", seat=1, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert "player 0 card: hidden" in text and "to move: player 1" in text


def test_remap_illegal_moves_mass_to_the_lowest_legal_action():
    probs = np.array([[0.5, 0.2, 0.3], [0.1, 0.6, 0.3]])
    masks = np.array([[False, True, True], [True, True, False]])
    np.testing.assert_allclose(remap_illegal(probs, masks), [[0, 0.7, 0.3], [0.4, 0.6, 0]])
    np.testing.assert_allclose(remap_illegal(probs[0], masks[0]), [0, 0.7, 0.3])


def _kuhn_keys(player):
    from nashzoo.games import compile_tree, load_game

    tree = compile_tree(load_game("kuhn_poker"))
    return [tree.infoset_keys[i] for i in tree.infosets_of(player)]


@pytest.mark.parametrize("rows", [[[1], [2], [3]], [[1, -1, 2, 0]]])
def test_non_square_matrix_game_masks_cover_all_game_actions(rows):
    """The AEC agents of a non-square game have their own (shorter) masks; the single-agent
    view keeps one Discrete(game.num_actions) space for both seats and widens them."""
    from nashzoo.games import load_game

    game = load_game("matrix", row_payoffs=rows)
    m, n = len(rows), len(rows[0])
    for seat, own in ((0, m), (1, n)):
        env = SingleAgentEnv(game, seat=seat, opponent=TabularPolicy.uniform(game))
        _, info = env.reset(seed=seat)
        assert env.action_space.n == game.num_actions == max(m, n)
        want = [a < own for a in range(game.num_actions)]
        assert env.action_masks().tolist() == want
        assert info["action_mask"].tolist() == want
        _, reward, terminated, _, _ = env.step(own - 1)
        assert terminated and reward in {
            float(v) * (1 if seat == 0 else -1) for r in rows for v in r
        }


# --- Gymnasium registration ------------------------------------------------------------------
GYM_KWARGS = {"nashzoo/MatrixGame-v0": {"row_payoffs": [[1, -1, 0], [-1, 1, 2]]}}


def test_every_game_is_registered_with_gymnasium():
    import gymnasium

    from nashzoo.envs import ENV_MODULES, GYMNASIUM_IDS, gymnasium_id

    assert gymnasium_id("kuhn_poker_v0") == "nashzoo/KuhnPoker-v0"
    assert gymnasium_id("leduc_holdem_v0") == "nashzoo/LeducHoldem-v0"
    assert gymnasium_id("rps_v0") == "nashzoo/RPS-v0"
    assert sorted(GYMNASIUM_IDS.values()) == sorted(m.GAME for m in ENV_MODULES.values())
    for env_id in GYMNASIUM_IDS:
        assert gymnasium.spec(env_id).entry_point == "nashzoo.envs.single_agent:SingleAgentEnv"
    # The module prefix imports nashzoo.envs itself (for callers that never imported it).
    env = gymnasium.make("nashzoo.envs:nashzoo/KuhnPoker-v0")
    assert env.spec.id == "nashzoo/KuhnPoker-v0"


@pytest.mark.parametrize("env_id", list(GYMNASIUM_IDS))  # every game nashzoo ships
@pytest.mark.parametrize("seat", [0, 1, "random"])
def test_gymnasium_make_passes_both_checkers(env_id, seat):
    import gymnasium

    kwargs = {"seat": seat, "opponent": UniformPolicy(), **GYM_KWARGS.get(env_id, {})}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the test, except the one
        # Gymnasium's checker always gives for a made env: it notes the wrappers make() applies.
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version")
        env = gymnasium.make(env_id, **kwargs)
        assert env.spec.id == env_id and env.spec.kwargs["seat"] == seat
        assert isinstance(env.unwrapped, SingleAgentEnv)
        gymnasium_check_env(env, skip_render_check=True)
        sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
        sb3_checker.check_env(gymnasium.make(env_id, **kwargs), warn=True)


def test_gymnasium_make_kwargs_reach_the_env():
    import gymnasium

    always_paper = fixed_policy("rps", [0, 1, 0])
    env = gymnasium.make("nashzoo/RPS-v0", seat=1, opponent=always_paper, render_mode="ansi")
    _, info = env.reset(seed=0)
    assert info["seat"] == 1 and info["infoset_key"] == "p1"
    assert "rps" in env.render()
    _, reward, terminated, _, _ = env.step(SCISSORS)
    assert reward == 1.0 and terminated
    matrix = gymnasium.make("nashzoo/MatrixGame-v0", preset="matching_pennies")
    assert matrix.unwrapped.game.num_actions == 2
    with pytest.raises(ValueError, match="seat must be 0, 1 or 'random'"):
        gymnasium.make("nashzoo/KuhnPoker-v0", seat=2)


def test_maskable_ppo_trains_on_a_made_env():
    pytest.importorskip("sb3_contrib")
    import gymnasium
    from sb3_contrib import MaskablePPO

    env = gymnasium.make("nashzoo/KuhnPoker-v0", seat="random")
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0)
    model.learn(total_timesteps=64)  # reads action_masks() through make()'s wrappers
    assert model.num_timesteps == 64


def test_masked_observation_puts_the_mask_in_the_observation():
    import gymnasium

    from nashzoo.envs.single_agent import MaskedObservation

    env = MaskedObservation(gymnasium.make("nashzoo/LeducHoldem-v0", seat=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version")
        gymnasium_check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"observations", "action_mask"} and obs["action_mask"].dtype == np.float32
    np.testing.assert_array_equal(obs["action_mask"], [0, 1, 1])  # no bet to fold to yet
    obs, *_ = env.step(2)  # raise
    np.testing.assert_array_equal(obs["action_mask"], env.unwrapped.action_masks())
    with pytest.raises(ValueError, match="must differ"):
        MaskedObservation(SingleAgentEnv("kuhn_poker"), obs_key="x", mask_key="x")


def test_gymnasium_make_any_game():
    import gymnasium

    from nashzoo.games import load_game

    game = load_game("matrix", row_payoffs=[[1, -1, 0], [-1, 1, 2]])  # any Game, or its name
    env = gymnasium.make("nashzoo/Game-v0", game=game, seat=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version")
        gymnasium_check_env(env, skip_render_check=True)
    assert env.spec.id == "nashzoo/Game-v0" and env.unwrapped.game is game
    assert gymnasium.make("nashzoo/Game-v0", game="leduc_poker").unwrapped.game.num_actions == 3
    with pytest.raises(TypeError, match="game"):
        gymnasium.make("nashzoo/Game-v0")  # the game is required


def test_an_opponent_that_raises_is_named_with_the_information_set():
    class Broken(UniformPolicy):
        def action_probabilities(self, infoset):
            raise ZeroDivisionError("division by zero")

    env = SingleAgentEnv("kuhn_poker", seat=1, opponent=Broken())
    with pytest.raises(PolicyError, match=r"the opponent failed at '.\|' \(ZeroDivisionError"):
        env.reset(seed=0)


def test_rgb_array_names_the_make_vec_env_fix_and_seeds_are_checked():
    """SB3's make_vec_env asks for render_mode='rgb_array' by default: the error says how to
    pass None. A seed that numpy would refuse is named as the seed."""
    import gymnasium

    import nashzoo.envs  # noqa: F401 - registers the ids
    from nashzoo.envs import kuhn_poker_v0

    with pytest.raises(ValueError, match=r"env_kwargs=\{'render_mode': None\}"):
        gymnasium.make("nashzoo/KuhnPoker-v0", render_mode="rgb_array")
    env = kuhn_poker_v0.env()
    for seed in (-1, 1.5, True):
        with pytest.raises(ValueError, match="seed must be a non-negative integer"):
            env.reset(seed=seed)


def test_an_action_outside_the_space_is_refused_even_when_remapping():
    from nashzoo.envs.single_agent import SingleAgentEnv
    from nashzoo.games import IllegalActionError

    env = SingleAgentEnv("kuhn_poker", seat=0)
    env.reset(seed=0)
    for action in (5, -1):
        with pytest.raises(IllegalActionError, match=r"outside the action space Discrete\(2\)"):
            env.step(action)
    env.step(1)  # the episode goes on: the refused actions changed nothing


def test_reset_options_force_the_deal_and_unknown_keys_are_refused():
    """reset(options=...) was ignored: a forced Kuhn deal [K, J] gave seat 0 J, Q or K, and
    {"nonsense": 1} passed. Now the deal reaches the PettingZoo env, bad options are refused
    before anything changes, and a forced deal where the seat does not move is named, not
    drawn again."""
    env = SingleAgentEnv("kuhn_poker", seat=0)
    keys = {
        env.reset(seed=s, options={"chance_outcomes": [2, 0]})[1]["infoset_key"] for s in range(10)
    }
    assert keys == {"K|"}
    _, info = SingleAgentEnv("kuhn_poker", seat=1).reset(options={"chance_outcomes": [2, 0]})
    assert info["infoset_key"].startswith("J|")
    before = (env.episodes, env._aec.history, env.np_random.bit_generator.state)
    for options, match in (
        ({"nonsense": 1}, r"unknown options 'nonsense'; the only one is 'chance_outcomes'"),
        ({"chance_outcomes": [1, 1]}, r"history \[1\]; possible outcomes are: 0, 2"),
        ({"chance_outcomes": [0, 1, 2]}, r"ends after using at most 2"),
        ([2, 0], r"options must be a dict or None"),
    ):
        with pytest.raises(ValueError, match=match):
            env.reset(seed=5, options=options)
        assert (env.episodes, env._aec.history, env.np_random.bit_generator.state) == before
    env.reset(options={})  # what Gymnasium's checker passes
    env.reset(options={"chance_outcomes": []})
