"""TreeVecEnv: the single-agent view played over the compiled tree, checked against the game's
own States (every observation, mask and reward of every copy) and against exact values."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from nashzoo.agents import TabularPolicy
from nashzoo.agents.fixed import fixed_policy
from nashzoo.agents.sb3_baseline import PPOLearner
from nashzoo.agents.tree_vec_env import TreeVecEnv
from nashzoo.eval import expected_returns
from nashzoo.games import IllegalActionError, compile_tree, load_game
from nashzoo.games.base import CHANCE, TERMINAL, Game, State
from nashzoo.games.infoset import PolicyError


def _state_at(game, tree, node):
    """The game's own State at ``node``, replayed from the root through the tree's edges."""
    path = []
    while node > 0:
        path.append(int(tree.action[node]))
        node = int(tree.parent[node])
    state = game.new_initial_state()
    for action in reversed(path):
        state = state.child(action)
    return state


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
def test_every_step_is_what_the_game_shows(game_name, monkeypatch):
    # Random legal play of 8 copies, seats drawn per episode: at every step each copy's
    # observation and mask are the game's own information-set tensor and legal actions of the
    # learner's seat at that history, and each finished episode pays the game's return there.
    game = load_game(game_name)
    tree = compile_tree(game)
    opponent = TabularPolicy.uniform(game)
    env = TreeVecEnv(game, 8, "random", opponent, seed=3)
    finished_nodes = []
    start = env._start

    def recording_start(envs):
        finished_nodes.append((envs.copy(), env.play.node[envs].copy(), env.play.seat[envs].copy()))
        start(envs)

    obs = env.reset()
    monkeypatch.setattr(env, "_start", recording_start)
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(60):
        masks = env.action_masks()
        for i in range(env.num_envs):
            state = _state_at(game, tree, env.play.node[i])
            seat = int(env.play.seat[i])
            assert state.current_player() == seat
            np.testing.assert_array_equal(obs[i], state.infoset_tensor(seat))
            assert np.flatnonzero(masks[i]).tolist() == state.legal_actions()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        finished_nodes.clear()
        obs, rewards, dones, infos = env.step(actions)
        done_envs = np.flatnonzero(dones)
        if done_envs.size:
            copies, nodes, seats = finished_nodes[0]
            assert copies.tolist() == done_envs.tolist()
            for i, node, seat in zip(copies, nodes, seats, strict=True):
                state = _state_at(game, tree, node)
                assert state.is_terminal()
                assert rewards[i] == np.float32(state.returns()[seat])
                assert infos[i]["episode"]["r"] == pytest.approx(float(state.returns()[seat]))
        assert not rewards[~dones].any()
        episodes += int(dones.sum())
    assert episodes > 50


def test_mean_return_matches_the_exact_value():
    # Seat 1 of Kuhn poker, the learner uniform and the opponent always betting: the mean
    # return over many episodes is the exact expected return of that joint policy.
    game = load_game("kuhn_poker")
    tree = compile_tree(game)
    bet = np.tile([0.0, 1.0], (tree.num_infosets, 1))
    opponent = TabularPolicy(game, bet)
    env = TreeVecEnv(game, 256, 1, opponent, seed=11)
    env.reset()
    rng = np.random.default_rng(1)
    total, count = 0.0, 0
    for _ in range(400):
        masks = env.action_masks()
        actions = (rng.random(env.num_envs) < 0.5).astype(np.int64)
        _, rewards, dones, _ = env.step(actions)
        total += float(rewards[dones].sum())
        count += int(dones.sum())
    joint = TabularPolicy.joint(game, [opponent, TabularPolicy.uniform(game)])
    exact = float(expected_returns(game, joint)[1])
    assert masks.all()  # every Kuhn decision allows both actions
    assert count > 50_000
    assert total / count == pytest.approx(exact, abs=0.02)
    assert env.return_sum == pytest.approx(total)


def test_illegal_actions_are_remapped_or_refused():
    game = load_game("leduc_poker")  # fold (0) is illegal when no bet is faced
    env = TreeVecEnv(game, 2, 0, seed=0)
    env.reset()
    before = env.play.node.copy()
    refusing = TreeVecEnv(game, 2, 0, seed=0, illegal_action="raise")
    refusing.reset()
    kept = refusing.play.node.copy()
    with pytest.raises(IllegalActionError, match="not legal for copy 0"):
        refusing.step(np.array([0, 1]))
    np.testing.assert_array_equal(refusing.play.node, kept)  # nothing was played
    with pytest.raises(IllegalActionError, match="integer ids"):
        refusing.step(np.array([0.5, 1.0]))
    tree = compile_tree(game)
    for outside in (7, -1):  # refused in either mode, as SingleAgentEnv refuses it (was remapped)
        for which in (env, refusing):
            with pytest.raises(IllegalActionError, match=f"action {outside} of copy 1 is outside"):
                which.step(np.array([1, outside]))
    np.testing.assert_array_equal(env.play.node, before)  # nothing was played
    env.step(np.array([0, 0]))  # fold, illegal here: remapped
    for node, start in zip(env.play.node, before, strict=True):
        while tree.parent[node] != start:  # the opponent may have answered: walk back
            node = tree.parent[node]
        assert tree.action[node] == 1  # check, the lowest-numbered legal action


_NOT_INTEGER_IDS = [
    np.array([1.0, 0.0]),  # whole-number floats: SingleAgentEnv refuses 1.0, so the tree does
    [1.0, 0.0],
    1.0,
    np.array([0.5, 1.0]),
    np.array([True, False]),  # True is not action 1 (SingleAgentEnv refuses it too)
    np.array(["1", "0"]),
    np.array([1.0, None], dtype=object),
    np.array([1 + 0j, 0j]),
    None,
]


@pytest.mark.parametrize("mode", ["remap", "raise"])
@pytest.mark.parametrize("actions", _NOT_INTEGER_IDS, ids=repr)
def test_actions_that_are_not_integer_ids_are_refused_as_single_agent_env_refuses_them(
    mode, actions
):
    """Floats were cast when whole (``1.0`` played action 1), bools and strings played as
    numbers, where ``SingleAgentEnv`` (the copies on a big game) refuses every one: the same
    error now, in both modes, and nothing played."""
    from nashzoo.envs.single_agent import SingleAgentEnv

    env = TreeVecEnv("kuhn_poker", 2, 0, seed=0, illegal_action=mode)
    env.reset()
    node, moves = env.play.node.copy(), env.moves
    with pytest.raises(IllegalActionError, match=r"integer ids \(not floats, strings or bools\)"):
        env.step(actions)
    np.testing.assert_array_equal(env.play.node, node)
    assert env.moves == moves
    single = SingleAgentEnv("kuhn_poker", seat=0, illegal_action=mode)
    single.reset(seed=0)
    first = np.asarray(actions).reshape(-1)[0] if actions is not None else None
    with pytest.raises(IllegalActionError, match="integer id"):
        single.step(first)


def test_whole_number_floats_are_told_the_cast():
    env = TreeVecEnv("kuhn_poker", 2, 0, seed=0)
    env.reset()
    with pytest.raises(IllegalActionError, match=r"dtype float64\); cast whole-number floats"):
        env.step(np.array([1.0, 0.0]))
    with pytest.raises(IllegalActionError) as refused:
        env.step(np.array([1.5, 0.0]))  # no cast makes 1.5 an action: no advice to cast
    assert "cast" not in str(refused.value)


@pytest.mark.parametrize("actions", [1, np.int64(1), np.array(1), np.array([1]), [1, 0, 1]])
def test_one_id_is_needed_for_each_copy(actions):
    """A scalar, or an array of the wrong length, was ``cannot reshape array of size 1 into
    shape (2,)`` from numpy."""
    env = TreeVecEnv("kuhn_poker", 2, 0, seed=0)
    env.reset()
    node = env.play.node.copy()
    with pytest.raises(IllegalActionError, match="one id for each of the 2 copies, got"):
        env.step(actions)
    np.testing.assert_array_equal(env.play.node, node)


def test_integer_ids_of_any_width_and_python_ints_play_alike():
    seen = []
    for actions in (
        np.array([1, 0]),
        np.array([1, 0], dtype=np.int8),
        np.array([1, 0], dtype=np.uint8),
        np.array([1, 0], dtype=np.uint64),
        [1, 0],
        (np.int32(1), 0),
        np.array([[1], [0]]),  # one id per copy, as a column
        np.array([1, 0], dtype=object),  # Python ints, as SingleAgentEnv takes each
    ):
        env = TreeVecEnv("kuhn_poker", 2, 0, seed=5)
        env.reset()
        env.step(actions)
        seen.append((env.play.node.tolist(), env.moves))
    assert all(one == seen[0] for one in seen)
    with pytest.raises(IllegalActionError, match="action 2361183241434822606848 of copy 0 is out"):
        env.step([2**71, 0])  # a Python int no int64 holds (was OverflowError inside numpy)
    single = TreeVecEnv("kuhn_poker", 1, 0, seed=5)  # one copy: one id, even a bare int
    single.reset()
    single.step(1)
    assert single.moves >= 1


def test_a_step_before_reset_is_refused():
    """Before ``reset()`` the copies sat at the root, a chance node: ``step([0, 0])`` played
    chance's first outcome (a fixed deal) as if it were the learner's move."""
    env = TreeVecEnv("kuhn_poker", 2, 0, seed=0)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        env.step(np.array([0, 0]))
    assert env.moves == 0
    env.reset()
    env.step(np.array([0, 0]))


def test_the_observation_space_has_the_games_declared_bounds():
    """A game may declare wider tensor bounds than [0, 1] (chip counts, say); the copies of
    SingleAgentEnv show them, and TreeVecEnv, which the SB3 learners use instead for a small
    tree, said Box(0, 1) whatever the game declared."""
    from nashzoo.envs.single_agent import SingleAgentEnv
    from nashzoo.games.kuhn import KuhnPokerGame

    wide = type("WideKuhn", (KuhnPokerGame,), {"infoset_tensor_bounds": (0.0, 3.0)})()
    space = TreeVecEnv(wide, 2, seed=0).observation_space
    assert space == SingleAgentEnv(wide).observation_space
    assert (space.low.min(), space.high.max()) == (0.0, 3.0)


def test_bad_settings_and_opponents_are_refused():
    with pytest.raises(ValueError, match="seat must be"):
        TreeVecEnv("kuhn_poker", 2, seat=2)
    with pytest.raises(ValueError, match="num_envs"):
        TreeVecEnv("kuhn_poker", 0)
    with pytest.raises(ValueError, match="pool is empty"):
        TreeVecEnv("kuhn_poker", 2, opponent=[])
    with pytest.raises(PolicyError, match="leduc_poker"):
        TreeVecEnv("kuhn_poker", 2, opponent=TabularPolicy.uniform("leduc_poker"))
    env = TreeVecEnv("kuhn_poker", 2)
    with pytest.raises(AttributeError, match="vec_env='copies'"):
        env.env_method("render")


def test_ppo_plays_the_tree_by_default_and_copies_on_request():
    opponent = fixed_policy("kuhn_poker", TabularPolicy.uniform("kuhn_poker").to_dict())
    config = {"steps_per_iteration": 64, "n_envs": 4, "n_epochs": 1}
    on_tree = PPOLearner("kuhn_poker", 0, config, seed=2)
    copies = PPOLearner("kuhn_poker", 0, {**config, "vec_env": "copies"}, seed=2)
    single = PPOLearner("kuhn_poker", 0, {**config, "n_envs": 1}, seed=2)
    assert isinstance(on_tree.model.env, TreeVecEnv) and on_tree.envs == []
    assert not isinstance(copies.model.env, TreeVecEnv) and len(copies.envs) == 4
    assert single.vec_env is None and len(single.envs) == 1
    forced = PPOLearner("kuhn_poker", 0, {**config, "n_envs": 1, "vec_env": "tree"}, seed=2)
    assert isinstance(forced.model.env, TreeVecEnv) and forced.model.env.num_envs == 1
    assert forced.step(opponent)["learner_steps"] == 64
    for learner in (on_tree, copies):
        metrics = learner.step(opponent)
        assert metrics["learner_steps"] == 64 and metrics["episodes"] >= 64 // 3
        assert metrics["env_steps"] > 64
    with pytest.raises(ValueError, match="vec_env must be"):
        PPOLearner("kuhn_poker", 0, {**config, "vec_env": "fast"})


def test_auto_plays_the_tree_up_to_two_million_histories():
    from nashzoo.agents.tree_vec_env import MAX_HISTORIES, fits

    assert fits(load_game("leduc_poker"))  # size unknown to the game: the env's rule
    assert fits(load_game("liars_dice"))  # 294,883 histories
    assert not fits(load_game("liars_dice(dice_sides=9)"))  # 42,467,257: never compiled here
    assert MAX_HISTORIES == 2_000_000


def test_auto_plays_through_the_envs_under_a_cap_on_compiles(monkeypatch):
    """Under ``NASHZOO_MAX_HISTORIES`` (README's setting for a shared machine) NFSP and the SB3
    learners compiled Liar's dice anyway and were refused, with a message saying they do not
    need the tree (review of the scale ladder); they now play through the envs."""
    from nashzoo.agents.tree_vec_env import fits
    from nashzoo.games import limits

    monkeypatch.setenv(limits.MAX_HISTORIES_VARIABLE, "200000")
    assert not fits(load_game("liars_dice"))  # 294,883 histories, counted by the game
    assert fits(load_game("kuhn_poker"))
    monkeypatch.delenv(limits.MAX_HISTORIES_VARIABLE)
    with limits.history_cap(5_000):
        assert not fits(load_game("leduc_poker"))  # 9,457, counted only up to the cap
    with limits.history_cap(10_000):
        assert fits(load_game("leduc_poker"))
    monkeypatch.setenv(limits.MAX_HISTORIES_VARIABLE, "200000")
    from nashzoo.games.infoset import UniformPolicy

    config = {"n_envs": 2, "steps_per_iteration": 16, "batch_size": 8, "n_epochs": 1}
    learner = PPOLearner("liars_dice", 0, config, seed=0)
    assert not isinstance(learner.model.env, TreeVecEnv)
    assert learner.step(UniformPolicy())["learner_steps"] == 16
    # A game that does not count itself (Leduc, 9,457): its env steps states, and the learners
    # play there too, where Leduc's env asked for its tables and was refused (review)
    monkeypatch.setenv(limits.MAX_HISTORIES_VARIABLE, "1000")
    from nashzoo.envs import env

    capped = env("leduc_poker")
    capped.reset(seed=0)
    assert not capped.unwrapped.tabulated
    learner = PPOLearner("leduc_poker", 0, config, seed=0)
    assert learner.step(UniformPolicy())["learner_steps"] == 16


def test_a_fixed_seat_never_asks_the_opponent_about_the_learners_own_sets():
    from nashzoo.games.infoset import Policy

    class SeatOneOnly(Policy):
        def action_probabilities(self, infoset):
            if infoset.player != 1:
                raise AssertionError(f"asked about {infoset.key}, a set of the learner's seat")
            return infoset.legal_mask / infoset.legal_mask.sum()

    env = TreeVecEnv("kuhn_poker", 4, 0, SeatOneOnly(), seed=0)
    env.reset()
    _, _, dones, _ = env.step(np.zeros(4, dtype=np.int64))
    assert dones.shape == (4,)
    # Drawn seats: the opponent plays seat 0 in some copies and is asked there (lazily, the
    # first time play reaches such a set: here at the reset, as seat 0 moves first in Kuhn).
    drawn = TreeVecEnv("kuhn_poker", 4, "random", SeatOneOnly(), seed=0)
    with pytest.raises(PolicyError, match="learner's seat"):
        drawn.reset()


class _CoinState(State):
    """A coin (chance) decides who plays: heads, player 1 alone; tails, player 0 then player 1.
    Seat 0 never moves in half the episodes; in ``_SeatOneOnlyGame``, never at all."""

    def __init__(self, game, history):
        super().__init__(game)
        self._history = history

    def current_player(self):
        h = self._history
        if not h:
            return CHANCE
        if h[0] == 0 or not self.game.seat0_moves:
            return 1 if len(h) == 1 else TERMINAL
        return {1: 0, 2: 1}.get(len(h), TERMINAL)

    def legal_actions(self):
        return [] if self.is_terminal() else [0, 1]

    def chance_outcomes(self):
        return [(0, 0.5), (1, 0.5)]

    def _child(self, action):
        return _CoinState(self.game, (*self._history, action))

    def returns(self):
        if not self.is_terminal():
            return np.zeros(2)
        sign = 1.0 if self._history[-1] == 1 else -1.0
        return np.array([sign, -sign])

    def history(self):
        return list(self._history)

    def infoset_key(self, player):
        return f"{player}:{''.join(map(str, self._history[1:]))}"

    def infoset_tensor(self, player):
        moves = [*self._history[1:], 0, 0]
        return np.array([player, len(self._history[1:]), *moves[:2]], dtype=np.float32)

    def describe(self, player=None):
        return str(self._history)


class _CoinGame(Game):
    name = "coin_skip"
    num_actions = 2
    action_names = ("a", "b")
    infoset_tensor_size = 4
    seat0_moves = True

    def new_initial_state(self):
        return _CoinState(self, ())


class _SeatOneOnlyGame(_CoinGame):
    name = "coin_seat_one_only"
    seat0_moves = False


def test_episodes_where_the_learner_never_moves_are_counted_paid_and_skipped():
    game = _CoinGame()
    env = TreeVecEnv(game, 64, 0, seed=4)  # uniform opponent
    obs = env.reset()
    tree = compile_tree(game)
    assert (tree.player[env.play.node] == 0).all()  # every copy waits at a seat-0 decision
    np.testing.assert_array_equal(obs[:, :2], np.tile([0, 0], (64, 1)))
    # About half the coins skipped seat 0: those episodes were started and paid already.
    assert 90 < env.episodes < 200
    skipped = env.episodes - 64
    assert abs(env.return_sum) <= skipped  # each skipped episode paid +-1
    with pytest.raises(ValueError, match="seat 0 of coin_seat_one_only never moves"):
        TreeVecEnv(_SeatOneOnlyGame(), 2, 0, seed=0)  # named at once, from the tree


@pytest.mark.parametrize("learner", ["ppo", "dqn"])
def test_the_single_agent_env_names_a_seat_that_never_moves_at_once(learner):
    """PPO and DQN train on SingleAgentEnv, which drew 100,000 episodes (a minute) before
    saying the seat never got to move, where the compiled tree (a tabulated env has it) tells
    at once; TreePlay and so NFSP already said so."""
    from nashzoo.agents import make_learner
    from nashzoo.envs.single_agent import SingleAgentEnv

    with pytest.raises(ValueError, match="seat 0 of coin_seat_one_only never moves"):
        SingleAgentEnv(_SeatOneOnlyGame(), 0)
    with pytest.raises(ValueError, match="seat 0 of coin_seat_one_only never moves"):
        make_learner(learner, _SeatOneOnlyGame(), 0)
    assert SingleAgentEnv(_SeatOneOnlyGame(), "random").reset(seed=0)  # seat 1 moves


def test_a_smaller_pool_set_mid_episode_takes_over_at_once():
    # Copies in the middle of an episode play on against the new pool; one whose drawn
    # opponent is gone draws again from it (no index past the pool's end).
    game = load_game("kuhn_poker")
    tree = compile_tree(game)
    bets = np.zeros((tree.num_infosets, game.num_actions))
    bets[:, 1] = 1.0  # Kuhn: action 1 bets (or calls), legal everywhere
    uniform = TabularPolicy.uniform(game)
    env = TreeVecEnv(game, 16, 0, [uniform, uniform, uniform], seed=1)
    env.reset()
    assert (env.play._pool > 0).any()
    env.set_opponent(TabularPolicy(game, bets))
    assert (env.play._pool == 0).all()
    _, _, dones, _ = env.step(np.zeros(16, dtype=np.int64))  # seat 0 checks; seat 1 answers
    # The new opponent bets after every check, so no copy is over and each waits at seat 0.
    assert not dones.any()
    assert all(int(tree.action[n]) == 1 for n in env.play.node)
