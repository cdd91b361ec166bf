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
    suit it): copies of learners broke silently before this test existed."""
    from nashzoo.agents.registry import learner_class, learning_learner_names

    tables = set()
    for name in learning_learner_names():
        try:
            if learner_class(name).kind in ("tabular", "sampling"):
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
