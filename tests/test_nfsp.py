"""NFSP: self-play and cross-play smoke runs, determinism, checkpoints, bad input, convergence."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from nashzoo.agents import CheckpointError, TabularPolicy, load_learner, make_learner  # noqa: E402
from nashzoo.agents._torch_utils import TrainingDivergedError  # noqa: E402
from nashzoo.agents.nfsp import NFSP, NFSPConfig  # noqa: E402
from nashzoo.agents.policy import Infoset, PolicyError  # noqa: E402
from nashzoo.agents.replay_memory import CircularBuffer  # noqa: E402
from nashzoo.eval import expected_returns, exploitability  # noqa: E402
from nashzoo.games import compile_tree, load_game  # noqa: E402
from nashzoo.train import train  # noqa: E402

SMALL = {"episodes_per_step": 64, "lanes": 16, "min_buffer_to_learn": 64, "learn_every": 16}


def _pair(game="kuhn_poker", config=SMALL, seed=0):
    return [NFSP(game, p, config, seed=seed + p) for p in range(2)]


def _run(learners, steps):
    metrics = []
    for _ in range(steps):
        metrics.append(learners[0].step(learners[1].current_policy()))
        metrics.append(learners[1].step(learners[0].current_policy()))
    return metrics


def _table(learners):
    game = learners[0].game
    return TabularPolicy.joint(game, [lr.average_policy() for lr in learners]).probs


def test_self_play_through_the_trainer_on_kuhn_and_leduc():
    for game in ("kuhn_poker", "leduc_poker"):
        result = train(game, "nfsp", iterations=3, config=SMALL, seed=1, progress=False)
        record = result.history[-1]
        assert record.iteration == 3
        assert 0.0 < record.exploitability < 5.0
        learner = make_learner("nfsp", game, 0, SMALL)
        assert learner.learns and learner.name == "nfsp"


def test_cross_play_against_cfr_and_work_counters():
    result = train(
        "kuhn_poker", "nfsp", "cfr_plus", iterations=4, config=SMALL, seed=0, progress=False
    )
    assert 0.0 <= result.history[-1].exploitability < 1.0
    learner = NFSP("kuhn_poker", 1, SMALL, seed=3)
    opponent = make_learner("cfr", "kuhn_poker", 0)
    metrics = learner.step(opponent.current_policy())
    # 64 Kuhn episodes: seat 1 moves once or twice per episode, seat 0 once or twice.
    assert 64 <= metrics["own_transitions"] <= 128
    assert 128 <= metrics["env_steps"] <= 192
    assert metrics["iterations"] == 1 and metrics["episodes"] == 64
    assert metrics["nodes_touched"] == 0  # model-free: the tree is never read


@pytest.mark.parametrize(
    ("options", "transitions", "reservoir", "pinned"),
    [
        # "reservoir": best-response decisions held (samples), information sets with one (infoset)
        ({"play": "tree"}, [79, 64, 81, 64, 80, 64], 5, 0.43717),
        ({"play": "tree", "memory": "samples"}, [79, 64, 78, 64, 84, 64], 21, 0.40734),
        ({"play": "env"}, [78, 64, 86, 64, 91, 64], 23, 0.43662),
    ],
)
def test_first_steps_are_pinned_for_a_fixed_seed(options, transitions, reservoir, pinned):
    # Both ways of playing and both memories are pinned: the same game, other random draws.
    learners = _pair(config={**SMALL, **options}, seed=0)
    metrics = _run(learners, 3)
    # Seat 1 moves exactly once per Kuhn episode; seat 0 once or twice.
    assert [m["own_transitions"] for m in metrics] == transitions
    assert learners[0].own_steps == sum(transitions[::2])
    assert len(learners[0].reservoir) == reservoir
    assert exploitability("kuhn_poker", _table(learners)) == pytest.approx(pinned, abs=1e-4)


def test_same_seed_same_run_different_seed_different_run():
    a, b, c = _pair(seed=5), _pair(seed=5), _pair(seed=6)
    for learners in (a, b, c):
        _run(learners, 4)
    np.testing.assert_array_equal(_table(a), _table(b))
    for name, array in a[0].replay.state_arrays("").items():
        np.testing.assert_array_equal(array, b[0].replay.state_arrays("")[name])
    assert not np.array_equal(_table(a), _table(c))


def test_save_load_resumes_exactly(tmp_path):
    learners = _pair(seed=2)
    _run(learners, 3)
    path = tmp_path / "nfsp.npz"
    learners[0].save(path)
    restored = load_learner(path, "kuhn_poker")
    assert isinstance(restored, NFSP) and restored.seat == 0
    assert restored.work() == learners[0].work()
    assert restored.config == learners[0].config
    opponent = learners[1].current_policy()
    m_live = learners[0].step(opponent)
    m_restored = restored.step(opponent)
    assert m_live == m_restored
    game = learners[0].game
    live = TabularPolicy.from_policy(game, learners[0].average_policy()).probs
    again = TabularPolicy.from_policy(game, restored.average_policy()).probs
    np.testing.assert_array_equal(live, again)


def test_checkpoints_of_other_games_learners_and_corrupt_files_are_refused(tmp_path):
    learner = NFSP("leduc_poker", 0, SMALL)
    path = tmp_path / "leduc.npz"
    learner.save(path)
    with pytest.raises(CheckpointError, match="trained on leduc_poker, not on kuhn_poker"):
        NFSP.load(path, "kuhn_poker")
    cfr = make_learner("cfr", "kuhn_poker", 0)
    cfr.save(tmp_path / "cfr.npz")
    with pytest.raises(CheckpointError, match="'cfr' checkpoint, not 'nfsp'"):
        NFSP.load(tmp_path / "cfr.npz")
    broken = tmp_path / "broken.npz"
    broken.write_bytes(path.read_bytes()[:200])
    with pytest.raises(CheckpointError, match="not a readable nashzoo checkpoint"):
        load_learner(broken)


def test_wrong_observation_sizes_are_refused():
    learner = NFSP("kuhn_poker", 0, SMALL)
    policy = learner.average_policy()
    leduc = compile_tree(load_game("leduc_poker"))
    with pytest.raises(PolicyError, match="size 11"):
        policy.action_probabilities(Infoset.from_tree(leduc, 0))
    with pytest.raises(PolicyError, match="size 11"):
        TabularPolicy.from_policy("leduc_poker", policy)


def test_nan_loss_stops_training_and_keeps_the_last_good_checkpoint(tmp_path):
    learners = _pair(seed=4)
    _run(learners, 2)
    path = tmp_path / "good.npz"
    learners[0].save(path)
    good = path.read_bytes()
    with torch.no_grad():
        learners[0].q_net[0].weight[0, 0] = float("nan")
    with pytest.raises(TrainingDivergedError, match=r"Q-network loss became nan at learner step 3"):
        learners[0].step(learners[1].current_policy())
    with pytest.raises(TrainingDivergedError, match="refusing to write a checkpoint"):
        learners[0].save(path)
    assert path.read_bytes() == good
    assert load_learner(path).iterations == 2


def test_min_buffer_is_bounded_by_the_capacity_the_memory_gets():
    """With replay_capacity "auto", the bound on min_buffer_to_learn is the capacity of the
    memory the learner ends up with: 300,000 fits the per-information-set replay (5,000,000)
    and is refused, naming both numbers, for the sampled one (200,000)."""
    config = {**SMALL, "min_buffer_to_learn": 300_000}
    learner = NFSP("kuhn_poker", 0, {**config, "memory": "infoset"})
    assert learner.replay_capacity == 5_000_000
    with pytest.raises(ValueError, match=r"min_buffer_to_learn \(300,000\) exceeds .*200,000"):
        NFSP("kuhn_poker", 0, {**config, "memory": "samples"})
    with pytest.raises(ValueError, match="min_buffer_to_learn"):
        NFSPConfig(min_buffer_to_learn=6_000_000)


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match="anticipatory"):
        NFSPConfig(anticipatory=1.5)
    with pytest.raises(ValueError, match="optimizer"):
        NFSPConfig(optimizer="rmsprop")
    with pytest.raises(ValueError, match="hidden_sizes"):
        NFSPConfig(hidden_sizes=(0,))
    for hidden in ("64", [32.5], (True,)):  # were read as (6, 4), (32,) and (1,)
        with pytest.raises(ValueError, match="hidden_sizes must be"):
            NFSPConfig(hidden_sizes=hidden)
    with pytest.raises(ValueError, match="unknown nfsp config fields"):
        NFSP("kuhn_poker", 0, {"learning_rate": 0.1})
    with pytest.raises(ValueError, match=r"replay_fraction must be in \(0, 1\], 'auto' or None"):
        NFSPConfig(replay_fraction=0.0)
    with pytest.raises(ValueError, match="replay_fraction"):
        NFSPConfig(replay_fraction="2%")
    with pytest.raises(ValueError, match="replay_window_min"):
        NFSPConfig(replay_window_min=0)
    with pytest.raises(ValueError, match="rl_learning_rate must be a positive number"):
        NFSPConfig(rl_learning_rate=True)  # a bool is not a rate
    for flag in ("greedy_sl_targets", "double_q"):  # "no" was read by its truth value: on
        with pytest.raises(ValueError, match=f"NFSPConfig.{flag} must be true or false, got 'no'"):
            NFSPConfig(**{flag: "no"})
    assert not NFSPConfig(greedy_sl_targets=np.False_).greedy_sl_targets
    config = NFSPConfig(rl_learning_rate=np.float32(0.05), anticipatory=np.float64(0.2))
    assert config.to_dict()["rl_learning_rate"] == pytest.approx(0.05)  # numpy numbers are too


def test_replay_window_grows_with_play_between_its_bounds():
    fixed = NFSP("kuhn_poker", 0, {"replay_capacity": 5_000, "replay_fraction": None})
    window = {"replay_capacity": 5_000, "replay_fraction": 0.1, "replay_window_min": 300}
    grown = NFSP("kuhn_poker", 0, window)
    for own_steps, expected in ((0, 300), (2_000, 300), (20_000, 2_000), (10**6, 5_000)):
        fixed.own_steps = grown.own_steps = own_steps
        assert fixed.replay_window == 5_000
        assert grown.replay_window == expected
    learners = [
        NFSP("kuhn_poker", p, {**SMALL, "replay_fraction": 0.5, "replay_window_min": 64}, seed=p)
        for p in range(2)
    ]
    metrics = _run(learners, 3)
    assert all(np.isfinite(m["rl_loss"]) for m in metrics[2:])


def test_q_target_options_are_validated():
    with pytest.raises(ValueError, match="q_targets must be 'one_step', 'greedy_return'"):
        NFSPConfig(q_targets="n_step")
    for bad in (0.0, -1.0, float("inf"), True, "13"):
        with pytest.raises(ValueError, match="reward_scale must be 'auto'"):
            NFSPConfig(reward_scale=bad)
    assert NFSP("leduc_poker", 0, {"reward_scale": "game"}).reward_scale == 13.0
    assert NFSP("kuhn_poker", 0, {"reward_scale": "game"}).reward_scale == 2.0
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="rl_lr_decay_updates must be a positive integer"):
            NFSPConfig(rl_lr_decay_updates=bad)
    with pytest.raises(ValueError, match="sl_lr_decay_updates"):
        NFSPConfig(sl_lr_decay_updates=-5)
    with pytest.raises(ValueError, match="double_q must be true or false"):
        NFSPConfig(double_q="yes")


def test_double_q_bootstraps_from_the_target_networks_value_of_the_online_greedy_action():
    # Double DQN: the next decision's action is the Q-network's argmax (legal actions only),
    # its value the target network's; the plain target takes the target network's own max.
    learners = [NFSP("leduc_poker", p, {**SMALL, "double_q": p == 0}, seed=3) for p in (0, 1)]
    _run(learners, 3)
    double, plain = learners
    plain.q_net.load_state_dict(double.q_net.state_dict())
    plain.target_net.load_state_dict(double.target_net.state_dict())
    b = double._batch(double.replay.sample(256, np.random.default_rng(0)))
    captured = {}
    for learner in (double, plain):
        learner._q_pass.backward = lambda inputs, grad, learner=learner: None
        loss = learner._q_gradients(b)
        captured[learner.config.double_q] = loss
    with torch.no_grad():
        q_online = double.q_net(b["s2"]).masked_fill(~b["mask2"], -torch.inf)
        q_target = double.target_net(b["s2"])
        rows = torch.arange(q_target.shape[0])
        nxt = {
            True: q_target[rows, q_online.argmax(dim=1)],
            False: q_target.masked_fill(~b["mask2"], -torch.inf).amax(dim=1),
        }
        q = double.q_net(b["s"])[rows, b["a"]]
    for flag, values in nxt.items():
        target = b["r"] + torch.where(b["done"], torch.zeros_like(values), values)
        assert captured[flag] == pytest.approx(float(((q - target) ** 2).mean()), rel=1e-5)
    assert not torch.equal(nxt[True][~b["done"]], nxt[False][~b["done"]])  # they differ here


def test_q_targets_choose_where_each_decision_bootstraps():
    """Two episodes staged interleaved: decisions 0 -> 2 -> 3 (episode 0) and 1 -> 4
    (episode 1); decisions 2 and 4 played their greedy action, decision 3 did not."""
    rollout = {
        "next": np.array([2, 4, 3, -1, -1]),
        "a": np.array([0, 1, 1, 0, 2]),
        "greedy": np.array([1, 0, 1, 1, 2]),
    }
    expected = {
        "one_step": [2, 4, 3, -1, -1],
        "greedy_return": [3, -1, 3, -1, -1],  # 0 skips greedy 2, stops at non-greedy 3
        "monte_carlo": [-1, -1, -1, -1, -1],
    }
    for mode, rows in expected.items():
        learner = NFSP("kuhn_poker", 0, {"q_targets": mode})
        assert learner._bootstrap_rows(rollout).tolist() == rows, mode


def test_q_targets_and_reward_scale_change_only_what_the_q_network_regresses_on():
    """The first step plays identically (same seed, untrained networks); what is stored as
    the Q-network's targets differs as the options say."""
    # play and store only, in rows (where each field can be read back)
    config = {**SMALL, "min_buffer_to_learn": 10_000, "memory": "samples"}
    opponent = NFSP("leduc_poker", 1, config, seed=9).current_policy()
    stored = {}
    for label, extra in (
        ("one_step", {}),
        ("scaled", {"reward_scale": 4.0}),
        ("greedy_return", {"q_targets": "greedy_return"}),
        ("monte_carlo", {"q_targets": "monte_carlo"}),
    ):
        learner = NFSP("leduc_poker", 0, {**config, **extra}, seed=3)
        learner.step(opponent)
        n = len(learner.replay)
        stored[label] = {k: v[:n].copy() for k, v in learner.replay.data.items()}
    base = stored["one_step"]
    np.testing.assert_array_equal(stored["scaled"]["s"], base["s"])
    np.testing.assert_allclose(stored["scaled"]["r"] * 4.0, base["r"])
    assert np.abs(base["r"]).max() > 1.0  # Leduc's payoffs
    mc = stored["monte_carlo"]
    assert mc["done"].all() and (~base["done"]).any()
    # every episode's return reaches all of its decisions: the non-final ones too
    assert np.count_nonzero(mc["r"]) > np.count_nonzero(base["r"])
    gr = stored["greedy_return"]
    np.testing.assert_array_equal(gr["a"], base["a"])
    # bootstrapping less often than one-step, more often than Monte Carlo
    assert base["done"].sum() < gr["done"].sum() < mc["done"].sum()


def test_learning_rates_fall_like_one_over_sqrt_updates_after_the_horizon():
    config = {**SMALL, "rl_lr_decay_updates": 4, "sl_lr_decay_updates": 10**6}
    learners = [NFSP("kuhn_poker", p, config, seed=p) for p in range(2)]
    _run(learners, 3)
    learner = learners[0]
    assert learner.rl_updates > 4
    rl_group, sl_group = learner.optimizer.param_groups
    # the rate set before the last update, from the count before it
    assert rl_group["lr"] == pytest.approx(1e-3 * np.sqrt(4 / (learner.rl_updates - 1)))
    assert sl_group["lr"] == pytest.approx(1e-3)


def test_sl_every_skips_average_network_updates():
    learners = [NFSP("kuhn_poker", p, {**SMALL, "sl_every": 3}, seed=p) for p in range(2)]
    _run(learners, 3)
    learner = learners[0]
    assert learner.rl_updates > 6
    assert learner.sl_updates == -(-learner.rl_updates // 3)  # updates 0, 3, 6, ...
    with pytest.raises(ValueError, match="sl_every"):
        NFSPConfig(sl_every=0)


def test_sample_recent_draws_only_from_the_newest_entries():
    buffer = CircularBuffer(10, {"x": ((), np.int64)})
    buffer.add({"x": np.arange(4)})
    rng = np.random.default_rng(0)
    assert set(buffer.sample_recent(200, 100, rng)["x"].tolist()) == {0, 1, 2, 3}
    buffer.add({"x": np.arange(4, 13)})  # wraps: holds 3..12, newest last
    assert set(buffer.sample_recent(300, 4, rng)["x"].tolist()) == {9, 10, 11, 12}
    assert set(buffer.sample_recent(500, 10, rng)["x"].tolist()) == set(range(3, 13))


def test_policies_are_frozen_copies_and_memories_are_arrays():
    learner, other = _pair(config={**SMALL, "memory": "samples"}, seed=0)
    before = learner.average_policy()
    table_before = TabularPolicy.from_policy("kuhn_poker", before).probs
    _run([learner, other], 2)
    np.testing.assert_array_equal(
        TabularPolicy.from_policy("kuhn_poker", before).probs, table_before
    )
    assert isinstance(learner.replay.data["s"], np.ndarray)
    assert learner.replay.data["s"].shape == (learner.replay_capacity, 11)
    assert learner.memory_bytes_per_entry == {"replay": 103, "reservoir": 54}
    # with memory="infoset": 20 bytes a transition, 24 an information set (weight, 2 sums)
    assert NFSP("kuhn_poker", 0, SMALL).memory_bytes_per_entry == {"replay": 12, "reservoir": 24}
    behaviour = TabularPolicy.from_policy("kuhn_poker", learner.current_policy()).probs
    assert np.all(behaviour[learner.tree.infosets_of(0)] > 0.0)  # mixes in exploration


def test_converges_on_kuhn_in_400_iterations():
    """A fixed work budget (under half a minute on this project's 2-core machine); tests never
    time anything, the speed is in benchmarks/bench_neural.py. With the defaults (memory
    "infoset": 512 episodes per iteration, one update per 64 own transitions) seed 0 is at 0.13
    after 100 iterations, 0.062 after 200 and 0.023 after 400 (uniform: 0.46)."""
    result = train("kuhn_poker", "nfsp", iterations=400, seed=0, progress=False)
    assert result.history[-1].exploitability < 0.05
    assert result.history[-1].exploitability == pytest.approx(0.0234, abs=0.012)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown without CUDA")
def test_asking_for_cuda_without_it_is_a_clear_error():
    with pytest.raises(ValueError, match="no CUDA device"):
        NFSP("kuhn_poker", 0, {"device": "cuda"})
    assert NFSP("kuhn_poker", 0, {"device": "auto"}).device.type == "cpu"


@pytest.mark.parametrize("rows", [[[1], [2], [3]], [[1, -1, 2, 0]]])
def test_runs_on_non_square_matrix_games(rows):
    """Env agents of a non-square game have masks of their own length; NFSP widens them to
    the game's actions (its networks output ``game.num_actions`` values)."""
    game = load_game("matrix", row_payoffs=rows)
    learners = _pair(game)
    _run(learners, 2)
    for p, learner in enumerate(learners):
        probs = learner.average_policy().action_probabilities(
            Infoset.from_tree(compile_tree(game), compile_tree(game).infosets_of(p)[0])
        )
        assert probs.shape == (game.num_actions,)
        assert probs[game.num_actions_of(p) :].sum() == 0
        # Acting on the env's own (shorter) observation works too.
        from nashzoo.envs import matrix_game_v0

        env = matrix_game_v0.env(row_payoffs=rows)
        env.reset(seed=0)
        if p == 1:
            env.step(0)
        action = learner.average_policy().act(env.observe(f"player_{p}"), np.random.default_rng(0))
        assert 0 <= action < game.num_actions_of(p)


@pytest.mark.parametrize(("game_name", "seat"), [("kuhn_poker", 1), ("leduc_poker", 0)])
def test_tree_play_stages_the_games_own_decisions_and_pays_its_returns(game_name, seat):
    # Play over the compiled tree (eta 0: the learner samples its average network) against a
    # fixed, non-uniform opponent: every staged decision is one of the learner's information
    # sets with its legal actions, each episode's decisions chain in order, and the mean return
    # of 6,000 episodes matches the exact expected return of the two policies.
    game = load_game(game_name)
    tree = compile_tree(game)
    config = {"episodes_per_step": 6000, "anticipatory": 0.0, "play": "tree"}
    learner = NFSP(game, seat, config, seed=5)
    assert learner._tree_play is not None and learner._envs == []
    rng = np.random.default_rng(1)
    probs = rng.random((tree.num_infosets, game.num_actions)) * tree.legal_mask
    opponent = TabularPolicy(game, probs / probs.sum(axis=1, keepdims=True))
    rollout = learner._play(opponent)
    own = tree.infosets_of(seat)
    known = {tree.infoset_tensors[i].tobytes(): tree.legal_mask[i] for i in own}
    for tensor, mask in zip(rollout["s"], rollout["mask"], strict=True):
        np.testing.assert_array_equal(known[tensor.tobytes()], mask)
    assert rollout["mask"][np.arange(len(rollout["a"])), rollout["a"]].all()  # legal actions
    nxt, episode = rollout["next"], rollout["episode"]
    linked = np.flatnonzero(nxt >= 0)
    assert (episode[nxt[linked]] == episode[linked]).all() and (nxt[linked] > linked).all()
    linked = nxt >= 0
    assert np.bincount(episode[~linked], minlength=6000).tolist() == [1] * 6000  # one last each
    joint = [opponent, opponent]
    joint[seat] = learner.average_policy()
    exact = float(expected_returns(game, joint)[seat])
    returns = rollout["returns"]
    assert abs(returns.mean() - exact) < 4 * returns.std() / np.sqrt(returns.size)
    assert rollout["env_steps"] > len(rollout["a"])  # the opponent's moves are counted too


def test_play_option_chooses_tree_or_envs_and_is_validated(monkeypatch):
    assert NFSP("kuhn_poker", 0, {"play": "auto"}, seed=0)._tree_play is not None
    monkeypatch.setattr("nashzoo.agents.nfsp.fits", lambda game: False)  # a game too big
    assert NFSP("kuhn_poker", 0, {"play": "auto"}, seed=0)._tree_play is None
    assert NFSP("kuhn_poker", 0, {"play": "tree"}, seed=0)._tree_play is not None
    monkeypatch.undo()
    env_learner = NFSP("kuhn_poker", 0, {"play": "env", "lanes": 4}, seed=0)
    assert env_learner._tree_play is None and len(env_learner._envs) == 4
    with pytest.raises(ValueError, match="play must be 'auto', 'tree' or 'env'"):
        NFSPConfig(play="gpu")


def test_env_play_still_learns_and_resumes_exactly(tmp_path):
    # The default plays over the tree (test_save_load_resumes_exactly); the envs' path, used
    # for games too big to compile, resumes draw for draw too.
    learners = _pair(config={**SMALL, "play": "env"})
    _run(learners, 3)
    path = tmp_path / "env.npz"
    learners[0].save(path)
    twin = load_learner(path, "kuhn_poker")
    opponent = learners[1].current_policy()
    assert learners[0].step(opponent) == twin.step(opponent)


class _ConstantPolicy:
    """An opponent that answers ``value`` for every action (a bad one for nan, -1 and 0)."""

    def __init__(self, value):
        self.value = value

    def action_probabilities(self, infoset):
        return np.full(len(infoset.legal_mask), self.value)


@pytest.mark.parametrize("play", ["tree", "env"])
@pytest.mark.parametrize("value", [float("nan"), -1.0, 0.0])
def test_a_bad_opponent_answer_is_refused_naming_the_set_and_nothing_is_stored(play, value):
    learner = NFSP("kuhn_poker", 0, {**SMALL, "play": play}, seed=0)
    learner.step(learner.current_policy())
    before = (learner.own_steps, len(learner.replay), len(learner.reservoir))
    with pytest.raises(PolicyError, match=r"information set '[JQK]\|[pb]+'|at '[JQK]\|[pb]+'"):
        learner.step(_ConstantPolicy(value))
    assert (learner.own_steps, len(learner.replay), len(learner.reservoir)) == before


@pytest.mark.parametrize(
    "config",
    [{}, {"rl_loss": "huber", "hidden_sizes": [16, 8], "reward_scale": 0.1}],
)
def test_manual_gradients_equal_autograds(config):
    # NFSP's update computes its losses' gradients without autograd (ManualMLP); on the same
    # batch they must be autograd's gradients of the DQN loss and of the masked cross-entropy.
    import torch.nn.functional as F

    config = {**SMALL, "memory": "samples", **config}
    learner = NFSP("leduc_poker", 0, config, seed=3)
    learners = [learner, NFSP("leduc_poker", 1, config, seed=4)]
    _run(learners, 3)  # memories filled by real play, networks moved off their start
    rng = np.random.default_rng(0)
    q_batch = learner._batch(learner.replay.sample(256, rng))
    sl_batch = learner._batch(learner.reservoir.sample(256, rng))
    learner.optimizer.zero_grad(set_to_none=True)
    with torch.no_grad():
        rl = learner._q_gradients(q_batch)
        sl = learner._average_gradients(sl_batch)
    manual = [p.grad.clone() for p in (*learner.q_net.parameters(), *learner.avg_net.parameters())]

    learner.optimizer.zero_grad(set_to_none=True)
    b = q_batch
    q = learner.q_net(b["s"]).gather(1, b["a"].unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        q2 = learner.target_net(b["s2"]).masked_fill(~b["mask2"], -torch.inf).amax(dim=1)
        target = b["r"] + torch.where(b["done"], torch.zeros_like(q2), q2)
    loss_fn = F.mse_loss if learner.config.rl_loss == "mse" else F.smooth_l1_loss
    rl_loss = loss_fn(q, target)
    logits = learner.avg_net(sl_batch["s"]).masked_fill(~sl_batch["mask"], -1e9)
    sl_loss = F.cross_entropy(logits, sl_batch["a"])
    (rl_loss + sl_loss).backward()
    auto = [p.grad for p in (*learner.q_net.parameters(), *learner.avg_net.parameters())]
    assert rl == pytest.approx(float(rl_loss.detach()), rel=1e-5)
    assert sl == pytest.approx(float(sl_loss.detach()), rel=1e-5)
    assert any(float(g.abs().max()) > 1e-4 for g in auto)  # not a comparison of zeros
    for m, a in zip(manual, auto, strict=True):
        torch.testing.assert_close(m, a, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("options", [{}, {"betas": (0.5, 0.9), "eps": 1e-3}])
def test_lean_adam_step_is_torchs_fused_step_bit_for_bit(options):
    # NFSP steps its optimiser through optimizer_step, which skips torch.optim's bookkeeping
    # around the fused Adam kernel; the parameters and moments must come out identical to
    # optimizer.step()'s, including steps where one group has no gradients (sl_every > 1).
    from nashzoo.agents._torch_utils import _lean_adam, optimizer_step
    from nashzoo.agents.torch_networks import build_mlp

    nets = [[build_mlp(5, (4,), 3, np.random.default_rng(k)) for k in range(2)] for _ in range(2)]
    optimizers = [
        torch.optim.Adam(
            [{"params": list(q.parameters()), "lr": 1e-2}, {"params": list(a.parameters())}],
            lr=3e-3,
            fused=True,
            **options,
        )
        for q, a in nets
    ]
    rng = np.random.default_rng(0)
    for step in range(6):
        grads = [
            torch.from_numpy(rng.normal(size=p.shape).astype(np.float32))
            for p in (*nets[0][0].parameters(), *nets[0][1].parameters())
        ]
        for (q, a), optimizer in zip(nets, optimizers, strict=True):
            optimizer.zero_grad(set_to_none=True)
            params = [*q.parameters(), *(a.parameters() if step % 3 else [])]
            for p, g in zip(params, grads, strict=False):
                p.grad = g.clone()
        # torch sets a parameter's state up at its first gradient (the second group's: step 1)
        assert _lean_adam(optimizers[1]) == (step >= 2)
        optimizers[0].step()
        optimizer_step(optimizers[1])
        for p, r in zip(
            (*nets[0][0].parameters(), *nets[0][1].parameters()),
            (*nets[1][0].parameters(), *nets[1][1].parameters()),
            strict=True,
        ):
            assert torch.equal(p, r)
    for p, r in zip(optimizers[0].state.values(), optimizers[1].state.values(), strict=True):
        assert all(torch.equal(p[k], r[k]) for k in ("step", "exp_avg", "exp_avg_sq"))
    assert not _lean_adam(torch.optim.SGD(nets[0][0].parameters(), lr=0.1))
    learners = _pair(seed=0)  # and NFSP's own optimiser takes the lean path once it has state
    _run(learners, 3)
    assert learners[0].rl_updates > 1 and _lean_adam(learners[0].optimizer)


def test_liars_dice_self_play_over_the_tree():
    # Rung 3 of the scale ladder (24,576 information sets): the opponent is asked only where
    # play goes, and a few steps of self-play learn.
    learners = [NFSP("liars_dice", p, {**SMALL, "min_buffer_to_learn": 32}, seed=p) for p in (0, 1)]
    metrics = _run(learners, 3)
    assert learners[0]._tree_play is not None
    assert metrics[-1]["updates"] > 0 and np.isfinite(metrics[-1]["rl_loss"])
    asked = learners[0]._tree_play._known.sum()
    assert 0 < asked < compile_tree(load_game("liars_dice")).num_infosets // 4


# --- memory="infoset": the losses over whole memories from sums per information set -----------
INFOSET = {**SMALL, "memory": "infoset"}


def _ring(rng, num_sets, num_actions, batches):
    """Random transitions added to an InfosetReplay of capacity 50 (which wraps), and the
    list of them in order."""
    from nashzoo.agents.replay_memory import InfosetReplay

    replay = InfosetReplay(50, num_sets, num_actions)
    transitions = []
    for n in batches:
        ids = rng.integers(num_sets, size=n)
        actions = rng.integers(num_actions, size=n)
        rewards = rng.normal(size=n).astype(np.float32)
        nxt = np.where(rng.random(n) < 0.5, -1, rng.integers(num_sets, size=n))
        replay.add(ids, actions, rewards, nxt)
        transitions += list(zip(ids, actions, rewards, nxt, strict=True))
    return replay, transitions


def test_infoset_replay_loss_is_the_mean_squared_error_over_the_window():
    rng = np.random.default_rng(1)
    replay, transitions = _ring(rng, 7, 3, (30, 25, 12))
    assert len(replay) == 50 and replay.added == 67
    values, q = rng.normal(size=7), rng.normal(size=(7, 3))

    def loss(batch):
        rows, counts, sums, weights, constant = batch
        return float((weights[:, None] * (counts * q[rows] - 2 * sums) * q[rows]).sum() + constant)

    for window in (40, 50, 80):  # a window longer than the ring holds all of it
        replay.refresh(window, values, 0.9)
        recent = transitions[-min(window, 50) :]
        brute = np.mean(
            [(q[i, a] - r - (0.9 * values[j] if j >= 0 else 0.0)) ** 2 for i, a, r, j in recent]
        )
        assert loss(replay.batch(100, rng)) == pytest.approx(brute, rel=1e-9)
        # Fewer rows than the window's sets: drawn in proportion to their transitions, an
        # unbiased estimate (the mean of many draws of 2 sets approaches the exact loss).
        draws = np.mean([loss(replay.batch(2, rng)) for _ in range(4000)])
        assert draws == pytest.approx(brute, rel=0.03)
    replay.add(np.array([0]), np.array([0]), np.array([0.0]), np.array([-1]))
    assert replay.stale
    with pytest.raises(RuntimeError, match="refresh"):
        replay.batch(10, rng)


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 70), st.integers(1, 90), st.booleans()), min_size=1, max_size=12
    ),
    seed=st.integers(0, 2**16),
)
def test_infoset_replay_window_sums_follow_any_sequence_of_adds_and_windows(steps, seed):
    # The window's sums are kept per (decision, next information set) pair and updated only by
    # the transitions entering and leaving it; after any sequence of adds (wrapping the ring of
    # 50) and windows (growing, shrinking, longer than the ring), they are the sums counted
    # afresh over the window's transitions.
    from nashzoo.agents.replay_memory import InfosetReplay

    rng = np.random.default_rng(seed)
    num_sets, num_actions = 6, 3
    replay = InfosetReplay(50, num_sets, num_actions)
    transitions: list[tuple[int, int, float, int]] = []
    for n, window, refresh in steps:
        ids, actions = rng.integers(num_sets, size=n), rng.integers(num_actions, size=n)
        rewards = rng.integers(-3, 4, size=n).astype(np.float32) / 2
        nxt = np.where(rng.random(n) < 0.4, -1, rng.integers(num_sets, size=n))
        replay.add(ids, actions, rewards, nxt)
        transitions += list(zip(ids, actions, rewards, nxt, strict=True))
        if not (refresh and transitions):
            continue
        values = rng.normal(size=num_sets)
        replay.refresh(window, values, 0.9)
        counts = np.zeros((num_sets, num_actions))
        sums = np.zeros((num_sets, num_actions))
        square = 0.0
        for i, a, r, j in transitions[-min(window, 50) :]:
            y = float(r) + (0.9 * values[j] if j >= 0 else 0.0)
            counts[i, a] += 1
            sums[i, a] += y
            square += y * y
        got_counts, got_sums, visited, got_square = replay._stats
        np.testing.assert_array_equal(got_counts, counts)
        np.testing.assert_allclose(got_sums, sums, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(visited, np.flatnonzero(counts.sum(axis=1)))
        assert got_square == pytest.approx(square, rel=1e-12, abs=1e-12)


def test_infoset_replay_pickles_its_held_transitions_only_and_goes_on_the_same():
    # A learner sent to a worker process is pickled: the replay sends what it holds (not its
    # whole ring of zeros), and the copy, its ring laid out anew, continues exactly as the
    # original (same window sums after more adds that wrap the ring again).
    import pickle

    from nashzoo.agents.replay_memory import InfosetReplay

    rng = np.random.default_rng(3)
    replay, _ = _ring(rng, 7, 3, (30, 25, 12))
    values = rng.normal(size=7)
    replay.refresh(40, values, 1.0)
    copy = pickle.loads(pickle.dumps(replay))
    big = InfosetReplay(1_000_000, 7, 3)  # a 12 MB ring holding 10 transitions
    big.add(np.arange(10) % 7, np.zeros(10, dtype=int), np.ones(10), np.full(10, -1))
    assert len(pickle.dumps(big)) < 4_000
    for n, window in ((20, 45), (41, 30), (5, 50)):
        batch = (
            rng.integers(7, size=n),
            rng.integers(3, size=n),
            rng.normal(size=n),
            rng.integers(-1, 7, size=n),
        )
        for r in (replay, copy):
            r.add(*batch)
            r.refresh(window, values, 1.0)
        for ours, theirs in zip(replay._stats, copy._stats, strict=True):
            np.testing.assert_array_equal(ours, theirs)


def test_infoset_memory_gradients_are_autograds_over_every_stored_sample():
    # The Q-network's loss is the mean squared DQN error over every transition of the window,
    # the average network's the cross-entropy over every best-response decision so far: the
    # same losses over rows, one per sample, give the same gradients under autograd.
    import torch.nn.functional as F

    learners = _pair("leduc_poker", INFOSET, seed=3)
    _run(learners, 3)
    learner = learners[0]
    assert learner.infoset_memory
    learner.optimizer.zero_grad(set_to_none=True)
    with torch.no_grad():
        rl = learner._infoset_q_gradients(learner.replay)
        sl = learner._infoset_average_gradients(learner.reservoir)
    params = (*learner.q_net.parameters(), *learner.avg_net.parameters())
    manual = [p.grad.clone() for p in params]

    a_count = learner.num_actions
    state = learner.replay.state_arrays("")
    window = min(learner.replay_window, len(learner.replay))
    keys, rewards, nxt = (torch.as_tensor(state[k][-window:]) for k in ("keys", "rewards", "next"))
    inputs, legal = learner._all_inputs, learner._all_legal
    with torch.no_grad():
        values = learner.target_net(inputs).masked_fill(~legal, -torch.inf).amax(dim=1)
    target = rewards + torch.where(nxt >= 0, values[nxt.clamp(min=0)], torch.zeros(()))
    q = learner.q_net(inputs[keys // a_count]).gather(1, (keys % a_count).unsqueeze(1))
    learner.optimizer.zero_grad(set_to_none=True)
    rl_loss = F.mse_loss(q.squeeze(1), target)
    counts = learner.reservoir.sums  # one-hot targets: per set, each action's count
    sets, actions = np.nonzero(counts)
    repeat = counts[sets, actions].astype(np.int64)
    rows = torch.as_tensor(np.repeat(sets, repeat))
    chosen = torch.as_tensor(np.repeat(actions, repeat))
    logits = learner.avg_net(inputs[rows]).masked_fill(~legal[rows], -1e9)
    sl_loss = F.cross_entropy(logits, chosen)
    (rl_loss + sl_loss).backward()
    assert rows.numel() > 50 and window > 100  # many samples per set, not a trivial case
    assert rl == pytest.approx(float(rl_loss.detach()), rel=1e-4)
    assert sl == pytest.approx(float(sl_loss.detach()), rel=1e-5)
    for m, p in zip(manual, params, strict=True):
        torch.testing.assert_close(m, p.grad, rtol=1e-3, atol=1e-5)


def test_memory_option_chooses_infoset_sums_where_played_over_the_tree():
    assert NFSP("kuhn_poker", 0, SMALL).infoset_memory  # "auto", over the tree
    assert not NFSP("kuhn_poker", 0, {**SMALL, "memory": "samples"}).infoset_memory
    assert not NFSP("kuhn_poker", 0, {**SMALL, "play": "env"}).infoset_memory
    assert not NFSP("kuhn_poker", 0, {**SMALL, "double_q": True}).infoset_memory
    with pytest.raises(ValueError, match="needs play over the compiled tree"):
        NFSP("kuhn_poker", 0, {**INFOSET, "play": "env"})
    with pytest.raises(ValueError, match="cannot use double_q or the Huber loss"):
        NFSPConfig(memory="infoset", rl_loss="huber")
    with pytest.raises(ValueError, match="'auto', 'infoset' or 'samples'"):
        NFSPConfig(memory="rows")


def test_infoset_memory_resumes_exactly_and_refuses_foreign_replays(tmp_path):
    learners = _pair(config=INFOSET, seed=2)
    _run(learners, 3)
    path = tmp_path / "nfsp.npz"
    learners[0].save(path)
    restored = load_learner(path, "kuhn_poker")
    assert restored.infoset_memory
    opponent = learners[1].current_policy()
    assert learners[0].step(opponent) == restored.step(opponent)
    game = learners[0].game
    live = TabularPolicy.from_policy(game, learners[0].average_policy()).probs
    np.testing.assert_array_equal(
        live, TabularPolicy.from_policy(game, restored.average_policy()).probs
    )
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    key = next(k for k in arrays if k.endswith("replay/keys"))
    arrays[key] = arrays[key].copy()
    arrays[key][0] = 10_000
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(CheckpointError, match="information sets or actions this game does not"):
        load_learner(tmp_path / "bad.npz")


def test_infoset_checkpoint_keeps_the_window_only_and_resumes_exactly(tmp_path):
    # The window is a fraction of all play, so its start only moves forward: a checkpoint keeps
    # the window's transitions, not the whole ring, and training resumes as if uninterrupted.
    config = {**INFOSET, "replay_fraction": 0.2, "replay_window_min": 100, "replay_capacity": 5000}
    learners = _pair("leduc_poker", config, seed=5)
    _run(learners, 6)
    learner = learners[0]
    assert learner.replay_window < len(learner.replay)
    path = tmp_path / "nfsp.npz"
    learner.save(path)
    with np.load(path) as data:
        assert data["replay/keys"].size == learner.replay_window
    restored = load_learner(path, "leduc_poker")
    opponent = learners[1].current_policy()
    for _ in range(4):
        assert learner.step(opponent) == restored.step(opponent)
    game = learner.game
    np.testing.assert_array_equal(
        TabularPolicy.from_policy(game, learner.average_policy()).probs,
        TabularPolicy.from_policy(game, restored.average_policy()).probs,
    )


def test_a_checkpoint_from_before_the_memory_option_resumes_with_its_sampled_rows(tmp_path):
    # Checkpoints written before ``memory`` existed have no such key in their config and hold
    # rows; they must load as what they were trained with, not as the new default. Likewise
    # ``play`` (before it, episodes were played in PettingZoo envs: resuming such a checkpoint
    # with "auto" played over the tree and gave NashConv 1.053 where the old code gave 1.009).
    learners = _pair(config={**SMALL, "memory": "samples", "play": "env"}, seed=4)
    _run(learners, 2)
    path = tmp_path / "nfsp.npz"
    learners[0].save(path)
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays["__meta__"]))
    del meta["config"]["memory"], meta["config"]["play"]
    arrays["__meta__"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "old.npz", **arrays)
    restored = load_learner(tmp_path / "old.npz", "kuhn_poker")
    assert not restored.infoset_memory and restored.config.memory == "samples"
    assert restored.config.play == "env" and not restored._plays_on_tree()
    opponent = learners[1].current_policy()
    assert learners[0].step(opponent) == restored.step(opponent)


@pytest.mark.parametrize("power", [0.0, 1.0, 2.0])
def test_average_weight_power_weights_each_steps_best_response_play_by_t_to_the_power(power):
    learners = _pair(config={**INFOSET, "average_weight_power": power, "anticipatory": 0.5})
    memory = learners[0].reservoir
    added: list[tuple[int, float]] = []
    add = memory.add

    def spy(rows, targets, weight):
        added.append((len(rows), weight))
        add(rows, targets, weight)

    memory.add = spy
    _run(learners, 4)
    assert [w for _, w in added] == [float(t) ** power for t in range(1, 5)]
    # The memory holds the weighted sums: total weight = sum over steps of t^p x decisions.
    assert memory.weight.sum() == pytest.approx(sum(n * w for n, w in added))
    np.testing.assert_allclose(memory.sums.sum(axis=1), memory.weight)


def test_average_weight_power_is_validated_and_needs_the_infoset_memory():
    for bad in (-1.0, 9.0, True, "linear"):
        with pytest.raises(ValueError, match=r"average_weight_power must be a number in \[0, 8\]"):
            NFSPConfig(average_weight_power=bad)
    with pytest.raises(ValueError, match="use memory='infoset'"):
        NFSPConfig(average_weight_power=1.0, memory="samples")
    with pytest.raises(ValueError, match="needs memory='infoset'"):
        NFSP("kuhn_poker", 0, {**SMALL, "average_weight_power": 1.0, "play": "env"})


def test_the_current_policy_plays_as_the_learner_does_with_one_mode_per_episode():
    """NFSP picks best response (probability eta) or its average once per episode. Its
    materialised current policy reaches every history with the learner's own probability, so
    its value against any opponent is eta * V(best response) + (1 - eta) * V(average); the
    per-information-set mixture it used to be was off (Kuhn: -0.110 against -0.132)."""
    from nashzoo.agents.network_policy import masked_softmax_np
    from nashzoo.agents.nfsp_behaviour import epsilon_greedy_probs
    from nashzoo.eval import expected_returns
    from nashzoo.games import compile_tree, load_game

    game = load_game("kuhn_poker")
    tree = compile_tree(game)
    config = {"hidden_sizes": [16], "episodes_per_step": 64}
    a, b = (make_learner("nfsp", game, seat, config, seed=seat + 1) for seat in (0, 1))
    for _ in range(6):
        a.step(b.current_policy())
        b.step(a.current_policy())
    play = a.current_policy()
    mine = tree.infosets_of(0)
    tensors, masks = tree.infoset_tensors[mine], tree.legal_mask[mine]
    modes = []
    for rows in (
        epsilon_greedy_probs(play.q_net(tensors), masks, play.epsilon),
        masked_softmax_np(play.avg_net(tensors), masks),
    ):
        probs = np.array(TabularPolicy.uniform(game).probs)
        probs[mine] = rows
        modes.append(TabularPolicy(game, probs))
    always_bet = TabularPolicy(game, np.where(tree.legal_mask, [0.0, 1.0], 0.0))
    values = [expected_returns(game, [mode, always_bet])[0] for mode in modes]
    expected = play.eta * values[0] + (1 - play.eta) * values[1]
    table = TabularPolicy.from_policy(game, play)
    assert expected_returns(game, [table, always_bet])[0] == pytest.approx(expected, abs=1e-12)
