"""Identical spaces for every agent (``pad_actions=True``) and the multi-agent libraries that need
them: SuperSuit's vector envs and Tianshou's ``PettingZooEnv`` (each skipped when not installed)."""

from __future__ import annotations

import numpy as np
import pytest

from nashzoo.envs import kuhn_poker_v0, matrix_game_v0
from nashzoo.games import IllegalActionError

ROWS_2X3 = {"row_payoffs": [[1, -2, 0], [0, 3, -1]]}  # player_0 has 2 actions, player_1 has 3


def test_pad_actions_gives_identical_spaces_and_masks_the_extra_ids() -> None:
    plain = matrix_game_v0.env(**ROWS_2X3)
    assert plain.action_space("player_0").n == 2 and plain.action_space("player_1").n == 3
    env = matrix_game_v0.env(pad_actions=True, **ROWS_2X3)
    assert env.action_space("player_0") == env.action_space("player_1")
    assert env.observation_space("player_0") == env.observation_space("player_1")
    env.reset(seed=0)
    obs, *_ = env.last()
    np.testing.assert_array_equal(obs["action_mask"], [1, 1, 0])  # row player: id 2 is padding
    with pytest.raises(IllegalActionError, match=r"legal actions are: 0 .*, 1 "):
        env.step(2)
    env.step(1)
    np.testing.assert_array_equal(env.observe("player_1")["action_mask"], [1, 1, 1])
    env.step(2)
    assert env.rewards == {"player_0": -1.0, "player_1": 1.0}  # row 1, column 2
    # Games whose seats already agree are unchanged.
    assert kuhn_poker_v0.env(pad_actions=True).action_space("player_0").n == 2


def test_pad_actions_penalize_mode_ends_the_game_on_a_padding_id() -> None:
    env = matrix_game_v0.env(pad_actions=True, illegal_action="penalize", **ROWS_2X3)
    env.reset(seed=0)
    env.step(2)  # inside Discrete(3), masked out: terminate with penalty (logged by PettingZoo)
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": -1.0, "player_1": 0.0}


def test_supersuit_vector_env_needs_and_accepts_padded_spaces() -> None:
    ss = pytest.importorskip("supersuit")
    with pytest.raises(AssertionError):
        ss.pettingzoo_env_to_vec_env_v1(matrix_game_v0.parallel_env(**ROWS_2X3))
    vec = ss.pettingzoo_env_to_vec_env_v1(matrix_game_v0.parallel_env(pad_actions=True, **ROWS_2X3))
    envs = ss.concat_vec_envs_v1(vec, 2, num_cpus=0, base_class="gymnasium")
    obs, _ = envs.reset(seed=0)
    assert obs["action_mask"].shape == (4, 3)  # 2 copies x 2 agents, 3 padded ids
    np.testing.assert_array_equal(obs["action_mask"][0], [1, 1, 0])
    _, rewards, terminations, _, _ = envs.step(np.array([1, 2, 0, 0]))
    np.testing.assert_array_equal(rewards, [-1, 1, 1, -1])
    assert terminations.all()


def test_tianshou_pettingzoo_env_needs_and_accepts_padded_spaces() -> None:
    ts_env = pytest.importorskip("tianshou.env")
    with pytest.raises(AssertionError, match="must be identical"):
        ts_env.PettingZooEnv(matrix_game_v0.env(**ROWS_2X3))
    env = ts_env.PettingZooEnv(matrix_game_v0.env(pad_actions=True, **ROWS_2X3))
    obs, _ = env.reset(seed=0)
    assert obs["agent_id"] == "player_0" and obs["mask"] == [True, True, False]
    obs, *_ = env.step(0)
    assert obs["agent_id"] == "player_1" and obs["mask"] == [True, True, True]
    _, rewards, terminated, _, _ = env.step(1)
    assert terminated and list(rewards) == [-2.0, 2.0]
    vec = ts_env.DummyVectorEnv(
        [lambda: ts_env.PettingZooEnv(matrix_game_v0.env(pad_actions=True, **ROWS_2X3))] * 2
    )
    assert len(vec.reset(seed=0)[0]) == 2
