"""Adapters from other libraries' agents to nashzoo Policies (nashzoo.agents.adapters), each with
the real library, trained a few hundred steps; plus `nashzoo eval` / `tournament` on an SB3 .zip.
RLlib pins its own Gymnasium, so its adapter is tested in its own venv (tests/test_rllib.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import nashzoo.envs  # noqa: E402, F401  (registers the Gymnasium ids)
from nashzoo.agents import TabularPolicy  # noqa: E402
from nashzoo.agents.adapters import from_network, from_sb3, from_tianshou  # noqa: E402
from nashzoo.agents.policy import PolicyError  # noqa: E402
from nashzoo.cli import main  # noqa: E402
from nashzoo.eval import evaluate, exploitability, nash_conv  # noqa: E402
from nashzoo.games import compile_tree, load_game  # noqa: E402

KUHN = compile_tree(load_game("kuhn_poker"))


def _table(policy) -> np.ndarray:
    return TabularPolicy.from_policy("kuhn_poker", policy).probs


# --- any network -------------------------------------------------------------------------------
def test_from_network_torch_module_logits_is_the_masked_softmax():
    torch.manual_seed(0)
    net = torch.nn.Linear(KUHN.infoset_tensors.shape[1], 2)
    net.train()
    probs = _table(from_network(net, "kuhn_poker"))
    with torch.no_grad():
        logits = net(torch.from_numpy(KUHN.infoset_tensors.astype(np.float32))).double().numpy()
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)  # Kuhn: all legal
    np.testing.assert_allclose(probs, expected, atol=1e-6)
    assert net.training  # the adapter restored the module's mode


def test_from_network_callable_probs_with_mask_drops_illegal_mass():
    seen = {}

    def always_raise(tensors, masks):  # probabilities, the last action first
        seen["mask"] = masks
        return np.tile([0.2, 0.3, 0.5], (len(tensors), 1))

    policy = from_network(always_raise, "leduc_poker", output="probs", with_mask=True)
    table = TabularPolicy.from_policy("leduc_poker", policy)
    tree = compile_tree(load_game("leduc_poker"))
    no_raise = ~tree.legal_mask[:, 2]
    assert seen["mask"].dtype == bool and no_raise.any()
    np.testing.assert_allclose(table.probs[no_raise], np.tile([0.4, 0.6, 0.0], (no_raise.sum(), 1)))
    with pytest.raises(ValueError, match="output must be 'logits', 'probs' or 'greedy'"):
        from_network(always_raise, "kuhn_poker", output="q")


def test_from_network_bad_outputs_are_clear_errors():
    with pytest.raises(PolicyError, match=r"returned shape \(12, 3\); expected \(12, 2\)"):
        _table(from_network(lambda t: np.zeros((len(t), 3)), "kuhn_poker"))
    with pytest.raises(PolicyError, match="no probability to any legal action"):
        _table(from_network(lambda t: np.zeros((len(t), 2)), "kuhn_poker", output="probs"))
    q_values = from_network(
        lambda t: np.tile([0.5, 0.9, 2.0], (len(t), 1)), "leduc_poker", output="greedy"
    )
    table = TabularPolicy.from_policy("leduc_poker", q_values).probs
    raise_legal = compile_tree(load_game("leduc_poker")).legal_mask[:, 2]
    np.testing.assert_array_equal(np.argmax(table, axis=1), np.where(raise_legal, 2, 1))
    with pytest.raises(PolicyError, match=r"\(logits\) returned NaN/inf values"):
        _table(from_network(lambda t: np.full((len(t), 2), np.nan), "kuhn_poker"))
    # -inf is a logit's probability 0, as long as a legal action is left
    never_check = from_network(lambda t: np.tile([-np.inf, 0.0], (len(t), 1)), "kuhn_poker")
    np.testing.assert_array_equal(_table(never_check)[:, 1], 1.0)
    with pytest.raises(PolicyError, match="-inf to every legal action"):
        _table(from_network(lambda t: np.full((len(t), 2), -np.inf), "kuhn_poker"))
    actor_critic = from_network(lambda t: (np.zeros((len(t), 2)), np.zeros(len(t))), "kuhn_poker")
    with pytest.raises(PolicyError, match=r"returned a tuple of 2.*net\(x\)\[0\]"):
        _table(actor_critic)


def test_a_networks_bad_row_is_named_by_its_information_set():
    """A network answers a batch of tensors, so its refusals said only "somewhere" (on Liar's
    dice: "function gives no probability to any legal action somewhere", among 24,576 sets);
    the evaluator, which knows what it asked, now names the first bad set and the game."""
    tree = compile_tree(load_game("kuhn_poker"))
    target = tree.infoset_keys[3]

    def one_bad_row(values: float):
        def network(tensors: np.ndarray) -> np.ndarray:
            out = np.ones((len(tensors), 2))
            # the rows are tensors here: find the target set's tensor among them
            bad = (tensors == tree.infoset_tensors[3]).all(axis=1)
            out[bad] = values
            return out

        return network

    for values, output, problem in [
        (0.0, "probs", "no probability to any legal action in 1 row"),
        (-1.0, "probs", "negative or non-finite probabilities in 1 row"),
        (-np.inf, "logits", "-inf to every legal action in 1 row"),
        (np.nan, "greedy", "NaN/inf values"),
    ]:
        policy = from_network(one_bad_row(values), "kuhn_poker", output=output)
        with pytest.raises(PolicyError, match=re.escape(problem)) as caught:
            nash_conv("kuhn_poker", policy)
        assert f"the first at information set {target!r} of kuhn_poker" in str(caught.value)


def test_a_network_of_nans_is_refused_by_every_reading_rule():
    """Greedy and regret matching read NaN as a choice (argmax takes it as the largest, regret
    matching as "not positive": uniform), so a broken network gave a normal-looking NashConv.
    Every rule now refuses it, as the softmax ones did."""
    import torch

    from nashzoo.agents import make_learner

    with pytest.raises(PolicyError, match=r"\(greedy\) returned NaN/inf values"):
        _table(from_network(lambda t: np.full((len(t), 2), np.nan), "kuhn_poker", output="greedy"))
    model = _sb3_model("dqn")
    with torch.no_grad():
        for parameter in model.policy.parameters():
            parameter.fill_(float("nan"))
    with pytest.raises(PolicyError, match="DQN's Q-network returned NaN/inf"):
        _table(from_sb3(model, "kuhn_poker"))
    deep = make_learner("deep_cfr", "kuhn_poker", 0, {"traversals": 8, "advantage_steps": 2})
    deep.step(TabularPolicy.uniform("kuhn_poker"))
    with torch.no_grad():
        for parameter in deep.advantage_net.parameters():
            parameter.fill_(float("nan"))
    with pytest.raises(PolicyError, match=r"advantage network .* returned NaN/inf"):
        _table(deep.current_policy())


def test_a_policy_for_one_seat_is_evaluated_on_that_seat_only():
    """A network labelled seat=0 never learned seat 1: materialised, seat 1 plays uniformly
    (as in a tabular learner's policy), and a list that gives it for seat 1 is refused. A
    bfloat16 network's outputs are read too."""
    import torch

    from nashzoo.eval import nash_conv

    bets = from_network(lambda t: np.tile([-3.0, 3.0], (len(t), 1)), "kuhn_poker", seat=0)
    table = TabularPolicy.from_policy("kuhn_poker", bets).probs
    tree = compile_tree(load_game("kuhn_poker"))
    assert (table[tree.infosets_of(0), 1] > 0.99).all()
    np.testing.assert_array_equal(table[tree.infosets_of(1)], 0.5)
    checks = from_network(lambda t: np.tile([3.0, -3.0], (len(t), 1)), "kuhn_poker", seat=1)
    assert nash_conv("kuhn_poker", [bets, checks]) > 0
    with pytest.raises(PolicyError, match=r"given for seat 0 of kuhn_poker plays seat 1"):
        nash_conv("kuhn_poker", [checks, bets])
    half = torch.nn.Linear(tree.infoset_tensors.shape[1], 2).to(torch.bfloat16)
    rows = TabularPolicy.from_policy("kuhn_poker", from_network(half, "kuhn_poker")).probs
    np.testing.assert_allclose(rows.sum(axis=1), 1.0)


# --- Stable-Baselines3 -------------------------------------------------------------------------
def _sb3_model(algo: str):
    pytest.importorskip("sb3_contrib")
    import gymnasium
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import A2C, DQN, PPO

    env = gymnasium.make("nashzoo/KuhnPoker-v0", seat="random")
    if algo == "maskable":
        model = MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=2, seed=0)
    elif algo == "ppo":
        model = PPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=2, seed=0)
    elif algo == "a2c":
        model = A2C("MlpPolicy", env, n_steps=16, seed=0)
    else:
        model = DQN("MlpPolicy", env, learning_starts=64, train_freq=4, seed=0)
    model.learn(total_timesteps=256)
    return model


@pytest.mark.parametrize("algo", ["maskable", "ppo", "a2c", "dqn"])
def test_from_sb3_model_and_zip_agree_with_the_models_own_actions(algo, tmp_path):
    model = _sb3_model(algo)
    path = tmp_path / f"{algo}.zip"
    model.save(path)
    table = _table(from_sb3(model, "kuhn_poker"))
    np.testing.assert_allclose(_table(from_sb3(path, "kuhn_poker")), table)
    np.testing.assert_allclose(table.sum(axis=1), 1.0)
    # The adapter's most likely action is the one the model itself plays deterministically.
    obs = KUHN.infoset_tensors.astype(np.float32)
    kwargs = {"action_masks": KUHN.legal_mask.copy()} if algo == "maskable" else {}
    actions, _ = model.predict(obs, deterministic=True, **kwargs)
    np.testing.assert_array_equal(np.argmax(table, axis=1), actions)
    assert 0.0 <= exploitability("kuhn_poker", from_sb3(path, "kuhn_poker")) <= 11 / 24 + 0.6


@pytest.mark.parametrize("algo", ["maskable", "ppo", "a2c", "dqn"])
def test_from_sb3_rows_sum_to_one_as_numpys_sampler_needs(algo):
    """PPO's and A2C's rows were torch's float32 softmax cast to float64, off from 1 by up to
    ~1e-7: ``rng.choice(p=...)`` (which allows ~1e-8) refused them ("Probabilities do not sum
    to 1") when a user sampled the policy read back from a model trained on the Gymnasium
    view."""
    from nashzoo.games.infoset import Infoset

    policy = from_sb3(_sb3_model(algo), "kuhn_poker")
    rng = np.random.default_rng(0)
    for i in range(len(KUHN.infoset_keys)):
        probs = policy.action_probabilities(Infoset.from_tree(KUHN, i))
        assert abs(probs.sum() - 1.0) <= 1e-12, (KUHN.infoset_keys[i], probs)
        rng.choice(probs.size, p=probs)


def test_a_recurrent_sb3_policy_is_refused_with_the_reason(tmp_path):
    """RecurrentPPO acts on its memory of the episode: no table to evaluate. It was loaded as
    a plain PPO and failed in torch's load_state_dict."""
    sb3_contrib = pytest.importorskip("sb3_contrib")
    import gymnasium

    env = gymnasium.make("nashzoo/KuhnPoker-v0", seat="random")
    model = sb3_contrib.RecurrentPPO("MlpLstmPolicy", env, n_steps=8, batch_size=8, seed=0)
    model.save(tmp_path / "rppo.zip")
    for given in (model, tmp_path / "rppo.zip"):
        with pytest.raises(PolicyError, match="RecurrentActorCriticPolicy: a recurrent policy"):
            from_sb3(given, "kuhn_poker")


def test_eval_and_tournament_read_an_sb3_zip(tmp_path, capsys):
    path = tmp_path / "ppo_kuhn.zip"
    model = _sb3_model("maskable")
    model.save(path)
    expected = evaluate("kuhn_poker", from_sb3(model, "kuhn_poker")).exploitability
    assert main(["eval", str(path), "--game", "kuhn_poker", "--json"]) == 0
    assert f"{expected:.6f}"[:6] in capsys.readouterr().out
    assert main(["eval", str(path)]) != 0  # no --game: a one-line error naming the fix
    assert "does not say its game" in capsys.readouterr().err
    argv = ["tournament", "uniform", str(path), "--game", "kuhn_poker", "--episodes", "0"]
    assert main([*argv, "--no-progress"]) == 0
    assert "ppo_kuhn" in capsys.readouterr().out


def test_from_sb3_refuses_a_model_of_another_game():
    model = _sb3_model("maskable")
    with pytest.raises(PolicyError, match="leduc_poker has information-set tensors of shape"):
        from_sb3(model, "leduc_poker")


def test_from_sb3_checks_epsilon_and_seat():
    """epsilon is DQN's exploration (a number in [0, 1]); seat labels the policy (a player)."""
    dqn, ppo = _sb3_model("dqn"), _sb3_model("ppo")
    for bad in (1.5, -0.1, "a", True):
        with pytest.raises(ValueError, match=r"epsilon must be a number in \[0, 1\]"):
            from_sb3(dqn, "kuhn_poker", epsilon=bad)
    with pytest.raises(ValueError, match="epsilon applies to DQN"):
        from_sb3(ppo, "kuhn_poker", epsilon=0.1)
    for bad in ("x", 2, -1, True):
        with pytest.raises(ValueError, match="seat must be None"):
            from_sb3(ppo, "kuhn_poker", seat=bad)
    assert from_sb3(dqn, "kuhn_poker", seat=1, epsilon=0.2).seat == 1


# --- Tianshou ----------------------------------------------------------------------------------
def test_from_tianshou_dqn_trained_on_the_pettingzoo_env():
    pytest.importorskip("tianshou")
    from tianshou.algorithm import DQN, MARLRandomDiscreteMaskedOffPolicyAlgorithm
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch, Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv, PettingZooEnv
    from tianshou.trainer import OffPolicyTrainerParams
    from tianshou.utils.net.common import Net

    from nashzoo.envs import kuhn_poker_v0

    def make_env():
        return PettingZooEnv(kuhn_poker_v0.env())

    env = make_env()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    np.random.seed(0)
    net = Net(
        state_shape=env.observation_space["observation"].shape, action_shape=2, hidden_sizes=[32]
    )
    policy = DiscreteQLearningPolicy(
        model=net, action_space=env.action_space, eps_training=0.2, eps_inference=0.05
    )
    learner = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), target_update_freq=50)
    agents = [learner, MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)]
    marl = MultiAgentOffPolicyAlgorithm(algorithms=agents, env=env)
    train_envs = DummyVectorEnv([make_env for _ in range(2)])
    train_envs.seed(0)
    collector = Collector[CollectStats](
        marl, train_envs, VectorReplayBuffer(2000, 2), exploration_noise=True
    )
    collector.reset()
    collector.collect(n_step=64)
    marl.run_training(
        OffPolicyTrainerParams(
            training_collector=collector,
            test_collector=None,
            max_epochs=1,
            epoch_num_steps=300,
            collection_step_num_env_steps=10,
            batch_size=32,
            update_step_num_gradient_steps_per_sample=0.2,
            test_in_training=False,
            show_progress=False,
            verbose=False,
            multi_agent_return_reduction=lambda rews: rews[:, 0],
        )
    )
    adapted = from_tianshou(learner, "kuhn_poker", seat=0)
    table = _table(adapted)
    rows = KUHN.infosets_of(0)
    # Greedy action (what Tianshou plays without exploration) gets 1 - eps + eps/2.
    policy.eval()
    obs = Batch(obs=KUHN.infoset_tensors[rows].copy(), mask=KUHN.legal_mask[rows].copy())
    batch = Batch(obs=obs, info={})
    with torch.no_grad():
        acts = policy(batch).act
    np.testing.assert_allclose(table[rows, :][np.arange(len(rows)), acts], 0.975)
    np.testing.assert_allclose(table.sum(axis=1), 1.0)
    report = evaluate("kuhn_poker", TabularPolicy.joint("kuhn_poker", [adapted, adapted]))
    assert 0.0 <= report.exploitability <= 1.0
