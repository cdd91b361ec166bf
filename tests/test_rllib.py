"""The RLlib adapter with RLlib itself: PPO with RLlib's action-masking RLModule trained a few
hundred steps on the Gymnasium view of Kuhn poker. RLlib pins its own Gymnasium, so it lives in
its own venv (`make test-rllib`); without ray[rllib] this file is skipped."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ray.rllib", exc_type=ImportError)
torch = pytest.importorskip("torch")

import ray  # noqa: E402
from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # noqa: E402
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (  # noqa: E402
    ActionMaskingTorchRLModule,
)
from ray.tune.registry import register_env  # noqa: E402

from nashzoo.agents import TabularPolicy  # noqa: E402
from nashzoo.agents.adapters import from_rllib  # noqa: E402
from nashzoo.envs.single_agent import MaskedObservation, SingleAgentEnv  # noqa: E402
from nashzoo.eval import evaluate  # noqa: E402
from nashzoo.games import compile_tree, load_game  # noqa: E402


@pytest.fixture(scope="module")
def algo():
    register_env(
        "nashzoo_kuhn_masked", lambda _: MaskedObservation(SingleAgentEnv("kuhn_poker", "random"))
    )
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    config = (
        PPOConfig()
        .environment("nashzoo_kuhn_masked")
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=200, minibatch_size=50, num_epochs=2)
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=ActionMaskingTorchRLModule, model_config={"fcnet_hiddens": [32]}
            )
        )
        .debugging(seed=0)
    )
    algorithm = config.build_algo()
    for _ in range(2):  # 400 env steps
        algorithm.train()
    yield algorithm
    algorithm.stop()
    ray.shutdown()


def test_from_rllib_algorithm_matches_the_masking_module(algo):
    tree = compile_tree(load_game("kuhn_poker"))
    policy = from_rllib(algo, "kuhn_poker")
    table = TabularPolicy.from_policy("kuhn_poker", policy).probs
    module = algo.get_module()
    obs = {
        "observations": torch.tensor(tree.infoset_tensors),
        "action_mask": torch.tensor(tree.legal_mask, dtype=torch.float32),
    }
    with torch.no_grad():
        logits = module.forward_inference({"obs": obs})["action_dist_inputs"].double().numpy()
    expected = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(table, expected / expected.sum(axis=1, keepdims=True), atol=1e-6)
    greedy = TabularPolicy.from_policy(
        "kuhn_poker", from_rllib(module, "kuhn_poker", deterministic=True)
    )
    np.testing.assert_array_equal(np.argmax(greedy.probs, axis=1), np.argmax(logits, axis=1))
    assert 0.0 <= evaluate("kuhn_poker", policy).exploitability <= 1.0


def test_from_rllib_refuses_other_objects():
    with pytest.raises(TypeError, match="RLModule or an RLlib Algorithm"):
        from_rllib(object(), "kuhn_poker")
