"""``mmd_ppo``: Magnetic Mirror Descent on MaskablePPO. The regulariser is exactly
``ent_coef * H(pi) - alpha * KL(pi || magnet)``; the learner self-plays, refreshes its magnet,
checkpoints its magnet, and on rock-paper-scissors its last iterate approaches the equilibrium."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")
torch.set_num_threads(1)

from nashzoo.agents import TabularPolicy, load_learner, make_learner  # noqa: E402
from nashzoo.agents.base import CheckpointError  # noqa: E402
from nashzoo.agents.mmd_ppo import MMDPPOConfig, MMDPPOLearner  # noqa: E402
from nashzoo.eval import exploitability  # noqa: E402

FAST = {"steps_per_iteration": 256, "n_envs": 8, "magnet_every": 2}


def _regulariser(learner, obs, masks):
    actions = torch.zeros(obs.shape[0], dtype=torch.long)
    _, _, reg = learner.model.policy.evaluate_actions(obs, actions, action_masks=masks)
    return reg.detach().numpy()


def test_the_entropy_slot_holds_entropy_minus_alpha_times_the_reverse_kl_to_the_magnet():
    learner = MMDPPOLearner("leduc_poker", 0, {"alpha": 0.3, "ent_coef": 0.1}, seed=0)
    model = learner.model
    obs = torch.randn(5, learner.input_size)
    masks = np.array([[1, 1, 1], [0, 1, 1], [1, 1, 0], [1, 0, 1], [1, 1, 1]], dtype=bool)
    probs = model.policy.get_distribution(obs, action_masks=masks).distribution.probs
    p = probs.detach().double().numpy()
    logp = np.log(np.where(masks, p, 1.0))
    entropy = -(p * logp).sum(axis=1)
    kl_uniform = (p * (logp + np.log(masks.sum(axis=1, keepdims=True)))).sum(axis=1)
    np.testing.assert_allclose(
        _regulariser(learner, obs, masks), 0.1 * entropy - 0.3 * kl_uniform, atol=1e-5
    )
    model.refresh_magnet()  # the magnet is now the policy itself: no KL left
    np.testing.assert_allclose(_regulariser(learner, obs, masks), 0.1 * entropy, atol=1e-5)


def test_rps_last_iterate_stays_nearer_the_equilibrium_than_plain_ppo_self_play():
    def distances(name, config):
        config = {"steps_per_iteration": 128, "learning_rate": 3e-3, "batch_size": 64, **config}
        learner = make_learner(name, "rps", 0, config, seed=0)
        out = []
        for _ in range(8):
            learner.step(TabularPolicy.uniform("rps"))  # ignored: self-play
            row = TabularPolicy.from_policy("rps", learner.average_policy()).probs[0]
            out.append(np.abs(row - 1 / 3).max())
        return np.array(out)

    mmd = distances("mmd_ppo", {"alpha": 0.5, "magnet_every": 0, "alpha_decay": 0, "n_envs": 1})
    ppo = distances(
        "ppo", {"mode": "self_play", "snapshot_every": 1, "snapshot_pool": 1, "n_epochs": 4}
    )
    assert mmd.max() < 0.11 and ppo.max() > 0.3  # PPO drifts toward one action, MMD does not
    assert mmd.mean() < 0.5 * ppo.mean()


def test_kuhn_self_play_refreshes_the_magnet_and_checkpoints_it(tmp_path):
    learner = make_learner("mmd_ppo", "kuhn_poker", 1, FAST, seed=3)
    assert learner.model.policy.magnet is None  # uniform magnet before the first refresh
    for _ in range(3):
        learner.step(TabularPolicy.uniform("kuhn_poker"))
    assert learner.model.policy.magnet is not None
    joint = TabularPolicy.from_policy("kuhn_poker", learner.average_policy())
    assert 0.0 < exploitability("kuhn_poker", joint) < 1.0
    learner.save(tmp_path / "mmd.npz")
    restored = load_learner(tmp_path / "mmd.npz")
    assert isinstance(restored, MMDPPOLearner) and restored.iterations == 3
    for key, value in learner.model.policy.magnet.state_dict().items():
        torch.testing.assert_close(restored.model.policy.magnet.state_dict()[key], value)
    a, b = learner.step(joint), restored.step(joint)
    assert a["mean_return"] == pytest.approx(b["mean_return"])


def test_alpha_and_the_learning_rate_anneal_together_as_one_over_the_square_root_of_t():
    config = {"steps_per_iteration": 64, "n_envs": 4, "alpha": 2.0, "alpha_decay": 3}
    learner = make_learner("mmd_ppo", "kuhn_poker", 0, config, seed=0)
    lr = learner.config.learning_rate
    for t in range(4):
        learner.step(TabularPolicy.uniform("kuhn_poker"))
        # step t (0-based) trains with alpha * sqrt(decay / (decay + t))
        scale = np.sqrt(3 / (3 + t))
        assert learner.model.policy.alpha == pytest.approx(2.0 * scale)
        assert learner.model.lr_schedule(1.0) == pytest.approx(lr * scale)
    assert learner.model.policy.magnet is None  # magnet_every=0: the uniform magnet throughout
    slower = make_learner("mmd_ppo", "kuhn_poker", 0, {**config, "lr_power": 0.5}, seed=0)
    for t in range(2):
        slower.step(TabularPolicy.uniform("kuhn_poker"))
        scale = np.sqrt(3 / (3 + t))
        assert slower.model.policy.alpha == pytest.approx(2.0 * scale)
        assert slower.model.lr_schedule(1.0) == pytest.approx(lr * scale**0.5)


def test_the_ema_network_moves_by_its_rate_and_serves_as_magnet_and_output(tmp_path):
    config = {
        "steps_per_iteration": 64,
        "n_envs": 4,
        "ema_rate": 0.25,
        "magnet": "ema",
        "output": "ema",
    }
    learner = make_learner("mmd_ppo", "kuhn_poker", 0, config, seed=0)
    policy = learner.model.policy
    assert policy.magnet is learner.ema  # the magnet is the moving average itself
    for key, value in learner.ema.state_dict().items():  # which starts at the initial network
        torch.testing.assert_close(value, policy.state_dict()[key])
    before = {k: v.clone() for k, v in learner.ema.state_dict().items()}
    learner.step(TabularPolicy.uniform("kuhn_poker"))
    trained = policy.state_dict()
    assert any(not torch.equal(before[k], trained[k]) for k in before)
    for key, value in learner.ema.state_dict().items():
        torch.testing.assert_close(value, 0.75 * before[key] + 0.25 * trained[key])
    output = TabularPolicy.from_policy("kuhn_poker", learner.average_policy()).probs
    ema = TabularPolicy.from_policy("kuhn_poker", learner._policy(0.0, learner.ema)).probs
    network = TabularPolicy.from_policy("kuhn_poker", learner.network_policy()).probs
    np.testing.assert_allclose(output, ema)
    assert np.abs(output - network).max() > 1e-4
    learner.step(TabularPolicy.uniform("kuhn_poker"))
    # self-play plays the network (the snapshot taken at the start of the second step)
    snapshot = TabularPolicy.from_policy("kuhn_poker", learner._snapshots[-1]).probs
    np.testing.assert_allclose(snapshot, network)
    learner.save(tmp_path / "ema.npz")
    restored = load_learner(tmp_path / "ema.npz")
    assert restored.model.policy.magnet is restored.ema
    for key, value in learner.ema.state_dict().items():
        torch.testing.assert_close(restored.ema.state_dict()[key], value)
    with pytest.raises(CheckpointError, match="holds no moving average"):
        restored._load_extra_state({"magnet": None}, {})  # a checkpoint without the average


def test_an_ema_output_leaves_training_as_it_was():
    def run(extra):
        config = {"steps_per_iteration": 64, "n_envs": 4, **extra}
        learner = make_learner("mmd_ppo", "kuhn_poker", 0, config, seed=5)
        for _ in range(2):
            learner.step(TabularPolicy.uniform("kuhn_poker"))
        return learner

    plain, smoothed = run({}), run({"ema_rate": 0.1, "output": "ema"})
    for key, value in plain.model.policy.state_dict().items():
        torch.testing.assert_close(smoothed.model.policy.state_dict()[key], value)
    assert smoothed.model.policy.magnet is None  # the uniform magnet
    a = TabularPolicy.from_policy("kuhn_poker", plain.average_policy()).probs
    b = TabularPolicy.from_policy("kuhn_poker", smoothed.average_policy()).probs
    assert np.abs(a - b).max() > 1e-4


def test_polynomial_decay_averaging_moves_the_ema_by_its_schedule():
    # ema_eta = 3: the first step copies the network ((1 + 3) / (1 + 3) = 1), the second moves
    # 4/5 of the way, and from the step where 4 / (t + 3) falls below ema_rate, ema_rate.
    config = {"steps_per_iteration": 64, "n_envs": 4, "ema_rate": 0.3, "ema_eta": 3.0}
    learner = make_learner("mmd_ppo", "kuhn_poker", 0, config, seed=1)
    rates = []
    for _ in range(12):
        rates.append(learner._ema_rate())
        before = {k: v.clone() for k, v in learner.ema.state_dict().items()}
        learner.step(TabularPolicy.uniform("kuhn_poker"))
        if len(rates) <= 2:
            trained = learner.model.policy.state_dict()
            for key, value in learner.ema.state_dict().items():
                expected = (1 - rates[-1]) * before[key] + rates[-1] * trained[key]
                torch.testing.assert_close(value, expected)
    assert rates[:3] == [1.0, 0.8, pytest.approx(4 / 6)]
    assert rates[-1] == 0.3 and min(rates) == 0.3  # 4 / (t + 3) < 0.3 from t = 11 on


def test_config_validation():
    with pytest.raises(ValueError, match="alpha"):
        MMDPPOConfig(alpha=-1.0)
    with pytest.raises(ValueError, match="magnet_every"):
        MMDPPOConfig(magnet_every=-2)
    with pytest.raises(ValueError, match="masked"):
        MMDPPOConfig(masked=False)
    with pytest.raises(ValueError, match="lr_power"):
        MMDPPOConfig(lr_power=-1.0)
    with pytest.raises(ValueError, match="ema_rate"):
        MMDPPOConfig(ema_rate=1.5)
    with pytest.raises(ValueError, match="set ema_rate too"):
        MMDPPOConfig(ema_eta=3.0)
    with pytest.raises(ValueError, match="ema_eta must be"):
        MMDPPOConfig(ema_rate=0.01, ema_eta=-1.0)
    with pytest.raises(ValueError, match="needs the moving average"):
        MMDPPOConfig(output="ema")
    with pytest.raises(ValueError, match="needs the moving average"):
        MMDPPOConfig(magnet="ema")
    with pytest.raises(ValueError, match="set one of them"):
        MMDPPOConfig(ema_rate=0.1, magnet="ema", magnet_every=5)
    with pytest.raises(ValueError, match="output must be one of"):
        MMDPPOConfig(output="average", ema_rate=0.1)  # type: ignore[arg-type]
    assert MMDPPOConfig().mode == "self_play"
