"""A copied learner (pickle, ``copy.deepcopy``: what a worker process receives with
``Trainer(processes=2)``) learns exactly as the original does. A learner that kept a numpy view
into one of its own buffers broke this: the copy's view became an array of its own, so the
copy wrote its strategies where nothing read them (es_mccfr, found 2026-11-27)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from nashzoo.agents import TabularPolicy, make_learner

CASES = [
    ("regret_matching", "rps", {}),
    ("cfr", "kuhn_poker", {}),
    ("cfr_plus", "kuhn_poker", {}),
    ("dcfr", "kuhn_poker", {}),
    # A pickled full-width learner on Leduc failed at its first step: the table it recycles came
    # back from the pickle as a view of the pickle's bytes, which cannot be made writeable.
    ("cfr_plus", "leduc_poker", {}),
    ("xfp", "kuhn_poker", {}),
    ("os_mccfr", "kuhn_poker", {"trajectories_per_step": 64}),
    ("es_mccfr", "kuhn_poker", {"trajectories_per_step": 64}),
    ("os_mccfr", "leduc_poker", {"trajectories_per_step": 64}),
    ("es_mccfr", "leduc_poker", {"trajectories_per_step": 64}),
]


def test_every_built_in_table_learner_is_a_case():
    """A new tabular or sampling learner must be added to CASES (with a game and a budget that
    suit it): copies of learners broke silently before this test existed. Only nashzoo's own:
    a plugin another test registers in this process is not one (which tests share a process
    changes from run to run)."""
    from nashzoo.agents.registry import is_nashzoos, learner_class, learning_learner_names

    tables = set()
    for name in learning_learner_names():
        try:
            cls = learner_class(name)
            if is_nashzoos(cls) and cls.kind in ("tabular", "sampling"):
                tables.add(name)
        except ImportError:  # a learner of an extra not installed: none is tabular
            continue
    assert tables <= {name for name, _, _ in CASES}, "add the new learner to CASES"


def _copied(thing, how):
    return copy.deepcopy(thing) if how == "deepcopy" else pickle.loads(pickle.dumps(thing))


def _train(pair, steps):
    a, b = pair
    for _ in range(steps):
        a.step(b.current_policy())
        b.step(a.current_policy())
    return [np.array(lr.average_policy().probs) for lr in pair]


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
@pytest.mark.parametrize(("name", "game", "config"), CASES)
def test_a_copied_learner_learns_as_the_original(name, game, config, how):
    pair = [make_learner(name, game, seat, config, seed=seat + 1) for seat in (0, 1)]
    _train(pair, 3)
    copies = [_copied(lr, how) for lr in pair]
    original, copied = _train(pair, 10), _train(copies, 10)
    for mine, theirs in zip(original, copied, strict=True):
        np.testing.assert_array_equal(mine, theirs)


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copy_keeps_policies_and_a_learners_strategy_read_only(how):
    """numpy's copy of a read-only array is writeable: a copied policy's rows could be written
    after they were checked (NashConv 21 on Kuhn, from a policy still marked checked), and a
    copied learner's live strategy through the policy it hands out, changing its next step;
    a pickled ``fixed`` learner played what was written into its policy (found 2026-11-28)."""
    opponent = TabularPolicy.uniform("kuhn_poker")
    learner = make_learner("cfr", "kuhn_poker", 0, seed=0)
    learner.step(opponent)
    learner.current_policy()
    clone = _copied(learner, how)
    fixed = _copied(make_learner("fixed", "rps", 0, {"strategy": [0.2, 0.3, 0.5]}), how)
    policies = [_copied(opponent, how), clone.current_policy(), clone.average_policy()]
    for policy in [*policies, fixed.average_policy(), fixed.current_policy()]:
        with pytest.raises(ValueError, match="read-only"):
            policy.probs[0] = 0.5
    np.testing.assert_array_equal(fixed.current_policy().probs[0], [0.2, 0.3, 0.5])


NEURAL = {  # a budget of a few decisions: what is checked is the copy, not the learning
    "nfsp": {"hidden_sizes": [8], "episodes_per_step": 8, "batch_size": 16,
             "min_buffer_to_learn": 16, "replay_window_min": 16, "learn_every": 4},
    "deep_cfr": {"advantage_hidden": [8], "strategy_hidden": [8], "traversals": 8,
                 "strategy_traversals": 4, "advantage_steps": 2, "strategy_steps": 2,
                 "batch_size": 16},
    "ppo": {"steps_per_iteration": 16, "batch_size": 8, "n_epochs": 1, "net_arch": [8]},
    "dqn": {"steps_per_iteration": 16, "learning_starts": 8, "batch_size": 8,
            "buffer_size": 200, "net_arch": [8], "train_freq": 4, "exploration_steps": 64},
    "mmd_ppo": {"steps_per_iteration": 32, "n_envs": 4, "batch_size": 16, "n_epochs": 1,
                "net_arch": [8]},
}  # fmt: skip


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
@pytest.mark.parametrize("name", sorted(NEURAL))
def test_a_copied_neural_learner_learns_as_the_original(name, how):
    """``copy.deepcopy`` of a ``ppo`` learner after a step raised RuntimeError ("Only Tensors
    created explicitly by the user (graph leaves) support the deepcopy protocol"): SB3 kept
    the last training minibatch's action distribution, autograd graph and all (found
    2026-11-28 by a stateful probe of copies, checkpoints and steps)."""
    pytest.importorskip("torch")
    if name in ("ppo", "dqn", "mmd_ppo"):
        pytest.importorskip("stable_baselines3")
    opponent = TabularPolicy.uniform("kuhn_poker")
    learner = make_learner(name, "kuhn_poker", 0, NEURAL[name], seed=1)
    learner.step(opponent)
    clone = _copied(learner, how)
    tables = []
    for lr in (learner, clone):
        for _ in range(2):
            lr.step(opponent)
        tables.append(TabularPolicy.from_policy("kuhn_poker", lr.average_policy()).probs)
    np.testing.assert_array_equal(*tables)
