"""Stable-Baselines3 baselines (``ppo``, ``dqn``): learning a best response, self-play snapshots,
cross-play, exact materialisation, checkpoints, determinism and the global RNG."""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")
torch.set_num_threads(1)

from stable_baselines3 import DQN  # noqa: E402

from nashzoo.agents import (  # noqa: E402
    CheckpointError,
    TabularPolicy,
    load_learner,
    make_learner,
)
from nashzoo.agents._torch_utils import TrainingDivergedError  # noqa: E402
from nashzoo.agents.fixed import fixed_policy  # noqa: E402
from nashzoo.agents.sb3_baseline import DQNLearner, PPOConfig, PPOLearner  # noqa: E402
from nashzoo.envs.single_agent import SingleAgentEnv  # noqa: E402
from nashzoo.eval import exploitability  # noqa: E402
from nashzoo.games import compile_tree, load_game  # noqa: E402
from nashzoo.train import train  # noqa: E402

RPS_OPPONENT = [0.3, 0.3, 0.4]  # best response: rock, worth 0.1
FAST_PPO = {"steps_per_iteration": 512, "learning_rate": 3e-3}
FAST_DQN = {"steps_per_iteration": 500, "learning_starts": 200, "exploration_steps": 1500}


def _seat_row(learner, policy):
    return TabularPolicy.from_policy(learner.game, policy).probs[learner.seat]


def test_ppo_against_a_fixed_rps_opponent_learns_rock():
    learner = PPOLearner("rps", 0, FAST_PPO, seed=0)
    opponent = fixed_policy("rps", RPS_OPPONENT)
    for _ in range(6):
        metrics = learner.step(opponent)
    row = _seat_row(learner, learner.average_policy())
    assert np.argmax(row) == 0 and row[0] > 0.6
    assert metrics["env_steps"] >= 2 * 512 and metrics["learner_steps"] == 512
    assert learner.iterations == 6 and learner.env_steps >= 6 * 1024


def test_dqn_against_a_fixed_rps_opponent_learns_rock_from_the_second_seat():
    learner = DQNLearner("rps", 1, FAST_DQN, seed=0)
    opponent = fixed_policy("rps", RPS_OPPONENT)
    for _ in range(4):
        learner.step(opponent)
    np.testing.assert_allclose(_seat_row(learner, learner.average_policy()), [1.0, 0.0, 0.0])
    # While training it still explores: epsilon-greedy around the greedy action.
    behaviour = _seat_row(learner, learner.current_policy())
    assert behaviour[0] < 1.0 and np.all(behaviour > 0.0)


def test_self_play_mode_plays_frozen_snapshots_and_learns_both_seats():
    config = {**FAST_PPO, "mode": "self_play", "snapshot_every": 2, "snapshot_pool": 2}
    learner = PPOLearner("kuhn_poker", 0, config, seed=1)
    seats = set()
    for _ in range(5):
        learner.step(TabularPolicy.uniform("kuhn_poker"))  # ignored in self-play mode
        seats.add(learner.env.seat)
        assert len(learner._snapshots) <= 2
    assert learner.env.episodes > 0
    joint = TabularPolicy.from_policy("kuhn_poker", learner.average_policy())
    assert 0.0 < exploitability("kuhn_poker", joint) < 1.0


def test_cross_play_in_the_trainer_and_plain_ppo_never_plays_illegal_actions():
    result = train(
        "leduc_poker",
        "ppo",
        "cfr_plus",
        iterations=2,
        config={**FAST_PPO, "masked": False, "steps_per_iteration": 256},
        seed=0,
        progress=False,
    )
    record = result.history[-1]
    assert 0.0 < record.exploitability < 5.0
    tree = compile_tree(load_game("leduc_poker"))
    probs = result.average_policy.probs
    assert np.all(probs[~tree.legal_mask] == 0.0)
    self_play = train("kuhn_poker", "dqn", iterations=2, config=FAST_DQN, seed=0, progress=False)
    assert self_play.history[-1].iteration == 2


def test_side_by_side_envs_are_the_same_single_agent_view(monkeypatch):
    # n_envs copies of SingleAgentEnv (vec_env="copies"): every column of the rollout is
    # exactly what one SingleAgentEnv, seeded as Stable-Baselines3 seeds that copy, shows for
    # the same actions (observations, legal actions, rewards, episode ends), against the same
    # opponent. (The copies over the compiled tree: tests/test_tree_vec_env.py.)
    opponent = fixed_policy("leduc_poker", TabularPolicy.uniform("leduc_poker").to_dict())
    learner = PPOLearner(
        "leduc_poker", 1, {"steps_per_iteration": 96, "n_envs": 4, "vec_env": "copies"}, seed=5
    )
    seeds = []
    seed_vec_env = learner.model.env.seed
    monkeypatch.setattr(learner.model.env, "seed", lambda s: seeds.append(s) or seed_vec_env(s))
    metrics = learner.step(opponent)
    buffer = learner.model.rollout_buffer
    # PPO's training pass flattened these per env (env-major); put them back to [step, env].
    observations, actions, masks = (
        np.swapaxes(x.reshape(4, 24, -1), 0, 1)
        for x in (buffer.observations, buffer.actions, buffer.action_masks)
    )
    assert buffer.rewards.shape == (24, 4) and metrics["learner_steps"] == 96
    episodes = 0
    for column in range(4):
        env = SingleAgentEnv("leduc_poker", 1, opponent)
        obs, _ = env.reset(seed=seeds[0] + column)
        for t in range(24):
            np.testing.assert_array_equal(observations[t, column], obs)
            assert masks[t, column].astype(bool).tolist() == env.action_masks().tolist()
            obs, reward, done, _, _ = env.step(int(actions[t, column, 0]))
            assert buffer.rewards[t, column] == np.float32(reward)
            if done:
                obs, _ = env.reset()
        episodes += env.episodes
    assert metrics["episodes"] == episodes


@pytest.mark.parametrize(
    ("cls", "config", "seat"),
    [
        (PPOLearner, FAST_PPO, 1),
        # n_envs copies over the compiled tree (TreeVecEnv), reseeded every step
        (PPOLearner, {**FAST_PPO, "n_envs": 4, "mode": "self_play"}, 0),
        (DQNLearner, {**FAST_DQN, "mode": "self_play"}, 1),
        # Seat 0 faces bets after checking, so its transitions bootstrap from the target network;
        # refits every 64 steps fall at other steps after a resume unless the refit clock is
        # restored with the checkpoint (SB3's own private counter is not).
        (DQNLearner, {**FAST_DQN, "target_update_interval": 64}, 0),
    ],
)
def test_save_load_resumes_exactly_and_is_deterministic(tmp_path, cls, config, seat):
    opponent = fixed_policy("kuhn_poker", TabularPolicy.uniform("kuhn_poker").to_dict())
    learner = cls("kuhn_poker", seat, config, seed=7)
    twin = cls("kuhn_poker", seat, config, seed=7)
    for _ in range(2):
        learner.step(opponent)
        twin.step(opponent)
    np.testing.assert_array_equal(
        _seat_row(learner, learner.average_policy()), _seat_row(twin, twin.average_policy())
    )
    path = tmp_path / "sb3.npz"
    learner.save(path)
    restored = load_learner(path, "kuhn_poker")
    assert type(restored) is cls and restored.work() == learner.work()
    m_live, m_restored = learner.step(opponent), restored.step(opponent)
    assert m_live == m_restored
    table = TabularPolicy.from_policy("kuhn_poker", learner.average_policy()).probs
    again = TabularPolicy.from_policy("kuhn_poker", restored.average_policy()).probs
    np.testing.assert_array_equal(table, again)
    live, resumed = learner.model.policy.state_dict(), restored.model.policy.state_dict()
    assert all(torch.equal(live[k], resumed[k]) for k in live)


def test_dqn_refits_its_target_network_at_the_same_steps_as_stable_baselines3(monkeypatch):
    # The learner keys target refits on the public num_timesteps instead of SB3's private call
    # counter (so checkpoints restore it); within one run the two clocks must agree exactly
    # (a gradient step after every env step, so a refit one step early or late shows).
    config = {**FAST_DQN, "target_update_interval": 64, "train_freq": 1}
    opponent = fixed_policy("kuhn_poker", TabularPolicy.uniform("kuhn_poker").to_dict())
    ours = DQNLearner("kuhn_poker", 0, config, seed=3)
    stock = DQNLearner("kuhn_poker", 0, config, seed=3)
    monkeypatch.setattr(stock.model, "_on_step", functools.partial(DQN._on_step, stock.model))
    for _ in range(2):
        assert ours.step(opponent) == stock.step(opponent)
    for mine, theirs in zip(
        ours.model.q_net_target.parameters(), stock.model.q_net_target.parameters(), strict=True
    ):
        assert torch.equal(mine, theirs)


def test_the_callers_global_random_state_is_left_alone():
    np.random.seed(123)
    random.seed(123)
    torch.manual_seed(123)
    expected = (np.random.random(), random.random(), torch.rand(1).item())
    np.random.seed(123)
    random.seed(123)
    torch.manual_seed(123)
    learner = PPOLearner("rps", 0, {"steps_per_iteration": 64}, seed=0)
    learner.step(fixed_policy("rps", RPS_OPPONENT))
    learner.current_policy()
    assert (np.random.random(), random.random(), torch.rand(1).item()) == expected


@pytest.mark.parametrize("name", ["ppo", "dqn", "mmd_ppo"])
def test_training_and_resuming_leave_no_logger_folders_in_the_temporary_directory(
    tmp_path, monkeypatch, name
):
    # Stable-Baselines3's default logger makes an SB3-<timestamp> folder per learn() call.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    learner = make_learner(name, "rps", 0, {"steps_per_iteration": 64}, seed=0)
    opponent = fixed_policy("rps", RPS_OPPONENT)
    learner.step(opponent)
    learner.save(tmp_path / "learner.npz")
    load_learner(tmp_path / "learner.npz").step(opponent)
    assert [p.name for p in scratch.iterdir() if p.name.startswith("SB3-")] == []


def test_divergence_is_reported_and_checkpoints_of_other_learners_are_refused(tmp_path):
    learner = PPOLearner("rps", 0, {"steps_per_iteration": 64}, seed=0)
    learner.save(tmp_path / "ppo.npz")
    with pytest.raises(CheckpointError, match="'ppo' checkpoint, not 'dqn'"):
        DQNLearner.load(tmp_path / "ppo.npz")
    with pytest.raises(CheckpointError, match="trained on rps, not on kuhn_poker"):
        load_learner(tmp_path / "ppo.npz", "kuhn_poker")
    with torch.no_grad():
        next(learner.model.policy.parameters()).fill_(float("nan"))
    with pytest.raises(TrainingDivergedError, match="learner step 1"):
        learner.step(fixed_policy("rps", RPS_OPPONENT))
    with pytest.raises(TrainingDivergedError, match="refusing to write a checkpoint"):
        learner.save(tmp_path / "ppo.npz")
    assert load_learner(tmp_path / "ppo.npz").iterations == 0


def test_config_validation_and_registry_names():
    with pytest.raises(ValueError, match="mode"):
        PPOConfig(mode="league")
    with pytest.raises(ValueError, match="steps_per_iteration"):
        PPOConfig(steps_per_iteration=1)
    with pytest.raises(ValueError, match="n_envs"):
        PPOConfig(n_envs=0)
    with pytest.raises(ValueError, match="multiple of n_envs"):
        PPOConfig(steps_per_iteration=100, n_envs=8)
    assert make_learner("ppo", "kuhn_poker", 0).name == "ppo"
    assert make_learner("dqn", "kuhn_poker", 1).learns


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("gae_lambda", 2.0, "gae_lambda must be in"),
        ("clip_range", 0.0, "clip_range must be positive"),
        ("ent_coef", -1.0, "ent_coef must be >= 0"),
        ("batch_size", True, "batch_size must be a positive integer"),  # a bool is not a count
        ("masked", "no", "masked must be true or false"),  # was read by its truth value: on
    ],
)
def test_ppo_fields_out_of_range_are_refused(field, value, message):
    with pytest.raises(ValueError, match=message):
        PPOConfig(**{field: value})


def test_a_ppo_batch_size_that_leaves_a_minibatch_of_one_is_refused():
    """MaskablePPO normalises each minibatch's advantages by their spread: a minibatch of one
    sample turned the network into NaN (512 decisions in minibatches of 73 leave 1)."""
    from nashzoo.agents.sb3_baseline import PPOConfig

    for settings in ({"batch_size": 73}, {"steps_per_iteration": 2, "batch_size": 1}):
        with pytest.raises(ValueError, match="leaves a minibatch of one decision") as caught:
            PPOConfig(**settings)
        assert "choose a batch_size of at least 2 that does not leave 1 over" in str(caught.value)
    with pytest.raises(ValueError, match=r"\(e\.g\. 74\)"):
        PPOConfig(batch_size=73)
    assert PPOConfig(batch_size=74).batch_size == 74
    assert PPOConfig(batch_size=73, masked=False).batch_size == 73  # plain PPO skips a single
