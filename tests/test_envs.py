"""PettingZoo environments: PettingZoo's own API/seed tests, registry, spaces, seeding, forced
chance outcomes, illegal actions (raise and penalize), the parallel view, rendering and keyword
argument errors."""

from __future__ import annotations

import copy
import pickle
import random
import re
import warnings
from collections import Counter
from inspect import signature
from types import ModuleType
from typing import Any

import numpy as np
import pettingzoo
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test
from pettingzoo.utils.wrappers import OrderEnforcingWrapper as PZOrderEnforcingWrapper

from nashzoo.envs import (
    ENV_MODULES,
    PETTINGZOO_REGISTRY,
    GameAECEnv,
    env_names,
    kuhn_poker_v0,
    leduc_holdem_v0,
    liars_dice_v0,
    make_env,
    matrix_game_v0,
    registry_id,
    rps_v0,
)
from nashzoo.games import IllegalActionError, load_game

# PettingZoo's api_test warns that Dict observations are not plain arrays; that is the layout
# PettingZoo's own classic environments use for action masks.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Observation space for each agent probably:UserWarning"),
    pytest.mark.filterwarnings("ignore:Observation is not a NumPy array:UserWarning"),
    # A 1 x n matrix game gives player_0 a single action, so a one-entry mask.
    pytest.mark.filterwarnings("ignore:Action mask is a single number:UserWarning"),
]

MODULE_KWARGS: list[tuple[ModuleType, dict[str, Any]]] = [
    (rps_v0, {}),
    (matrix_game_v0, {"preset": "biased_rps"}),
    (matrix_game_v0, {"row_payoffs": [[1, -2, 0], [0, 3, -1]]}),
    (matrix_game_v0, {"row_payoffs": [[1], [2], [3]]}),
    (matrix_game_v0, {"row_payoffs": [[1, -1, 2, 0]]}),
    (matrix_game_v0, {"row_payoffs": [[1, -2, 0], [0, 3, -1]], "pad_actions": True}),
    (matrix_game_v0, {"row_payoffs": [[1], [2], [3]], "pad_actions": True}),
    (kuhn_poker_v0, {}),
    (leduc_holdem_v0, {}),
    (kuhn_poker_v0, {"tabulate": False}),
    (leduc_holdem_v0, {"tabulate": False}),
    (liars_dice_v0, {}),
    (liars_dice_v0, {"dice_sides": 3}),
]
IDS = [
    *("rps", "matrix_biased_rps", "matrix_2x3", "matrix_3x1", "matrix_1x4"),
    *("matrix_2x3_padded", "matrix_3x1_padded", "kuhn", "leduc"),
    *("kuhn_states", "leduc_states", "liars_dice", "liars_dice_3_sides"),
]
PARALLEL = [(m, kw) for m, kw in MODULE_KWARGS if hasattr(m, "parallel_env")]
PARALLEL_IDS = [
    i for i, (m, _) in zip(IDS, MODULE_KWARGS, strict=True) if m in (rps_v0, matrix_game_v0)
]
J, Q, K = 0, 1, 2
Js, Jh, Qs, Qh, Ks, Kh = range(6)
F, C, R = 0, 1, 2


def snapshot(env: Any) -> tuple:
    """Everything an agent or trainer can read from an env."""
    return (
        env.unwrapped.history,
        env.agent_selection,
        list(env.agents),
        dict(env.rewards),
        dict(env.unwrapped._cumulative_rewards),
        dict(env.terminations),
        dict(env.truncations),
        {agent: dict(info) for agent, info in env.infos.items()},
        {
            agent: {k: v.tobytes() for k, v in env.observe(agent).items()}
            for agent in env.possible_agents
        },
    )


def random_episode(env: Any, rnd: random.Random) -> dict[str, float]:
    """Play one episode with uniformly random legal actions; return the final rewards."""
    final: dict[str, float] = {}
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, _ = env.last()
        if terminated or truncated:
            final[agent] = reward
            env.step(None)
            continue
        assert reward == 0  # rewards only when the game ends
        legal = np.flatnonzero(obs["action_mask"]).tolist()
        env.step(legal[rnd.randrange(len(legal))])
    return final


# --- PettingZoo's own tests ----------------------------------------------------------------
# In a non-square matrix game the row and column players have masks of their own lengths, on
# purpose (their own action spaces); api_test notes it with this warning and passes.
@pytest.mark.filterwarnings("ignore:Agents have different observation space sizes")
@pytest.mark.parametrize(("module", "kwargs"), MODULE_KWARGS, ids=IDS)
@pytest.mark.parametrize("illegal_action", ["raise", "penalize"])
def test_pettingzoo_api_test(module: ModuleType, kwargs: dict, illegal_action: str) -> None:
    api_test(module.env(illegal_action=illegal_action, **kwargs), num_cycles=300)
    api_test(module.raw_env(**kwargs), num_cycles=100)


@pytest.mark.parametrize(("module", "kwargs"), MODULE_KWARGS, ids=IDS)
@pytest.mark.parametrize("illegal_action", ["raise", "penalize"])
def test_pettingzoo_seed_test(module: ModuleType, kwargs: dict, illegal_action: str) -> None:
    seed_test(lambda: module.env(illegal_action=illegal_action, **kwargs), num_cycles=100)


@pytest.mark.parametrize(("module", "kwargs"), PARALLEL, ids=PARALLEL_IDS)
def test_pettingzoo_parallel_tests(module: ModuleType, kwargs: dict) -> None:
    parallel_api_test(module.parallel_env(**kwargs), num_cycles=300)
    if kwargs.get("pad_actions"):
        return  # parallel_seed_test samples without the mask: padding ids are illegal by design
    # PettingZoo < 1.25's parallel_seed_test has no num_cycles (it runs its own fixed count).
    cycles = {"num_cycles": 100} if "num_cycles" in signature(parallel_seed_test).parameters else {}
    parallel_seed_test(lambda: module.parallel_env(**kwargs), **cycles)


# --- names, registry, spaces ---------------------------------------------------------------
def test_modules_names_and_metadata() -> None:
    assert env_names() == [
        "rps_v0",
        "matrix_game_v0",
        "kuhn_poker_v0",
        "leduc_holdem_v0",
        "liars_dice_v0",
    ]
    for name, module in ENV_MODULES.items():
        kwargs = {"preset": "rps"} if module is matrix_game_v0 else {}
        env = module.env(**kwargs)
        assert env.metadata["name"] == name
        assert env.metadata["is_parallelizable"] == hasattr(module, "parallel_env")
        assert set(env.metadata["render_modes"]) == {"ansi", "human"}
        assert isinstance(env.unwrapped, GameAECEnv)
        assert isinstance(env, PZOrderEnforcingWrapper)
        assert str(env) == name


@pytest.mark.skipif(not PETTINGZOO_REGISTRY, reason="PettingZoo < 1.27 has no env registry")
def test_pettingzoo_registry() -> None:
    assert registry_id("kuhn_poker_v0") == "nashzoo/kuhn_poker-v0"
    for name in env_names():
        assert registry_id(name) in pettingzoo.aec_registry
    env = pettingzoo.make("aec", "nashzoo/kuhn_poker-v0", render_mode="ansi")
    assert env.metadata["name"] == "kuhn_poker_v0"
    env.reset(seed=0)
    assert "Kuhn poker" in env.render()
    # PettingZoo's underscore spelling and the latest-version lookup work too.
    assert pettingzoo.make("aec", "nashzoo/leduc_holdem_v0").metadata["name"] == "leduc_holdem_v0"
    assert pettingzoo.make("aec", "nashzoo/leduc_holdem").metadata["name"] == "leduc_holdem_v0"
    par = pettingzoo.make("parallel", "nashzoo/matrix_game-v0", preset="matching_pennies")
    observations, _ = par.reset(seed=0)
    assert set(observations) == {"player_0", "player_1"}
    assert "nashzoo/rps-v0" in pettingzoo.parallel_registry
    assert "nashzoo/kuhn_poker-v0" not in pettingzoo.parallel_registry


def test_make_env() -> None:
    env = make_env("leduc_holdem_v0")
    assert env.metadata["name"] == "leduc_holdem_v0"
    assert make_env("nashzoo/kuhn_poker-v0").metadata["name"] == "kuhn_poker_v0"
    par = make_env("rps_v0", parallel=True)
    assert par.metadata["name"] == "rps_v0"
    with pytest.raises(ValueError, match="valid envs: rps_v0, matrix_game_v0"):
        make_env("chess_v6")
    with pytest.raises(ValueError, match=r"turn-based.*rps_v0, matrix_game_v0"):
        make_env("kuhn_poker_v0", parallel=True)


@pytest.mark.parametrize(("module", "kwargs"), MODULE_KWARGS, ids=IDS)
def test_spaces(module: ModuleType, kwargs: dict) -> None:
    env = module.env(**kwargs)
    game = env.unwrapped.game
    assert env.possible_agents == ["player_0", "player_1"]
    for p, agent in enumerate(env.possible_agents):
        space = env.observation_space(agent)
        assert space["observation"].shape == (game.infoset_tensor_size,)
        assert space["observation"].dtype == np.float32
        size = game.num_actions if kwargs.get("pad_actions") else game.num_actions_of(p)
        assert space["action_mask"].shape == (size,)
        assert space["action_mask"].dtype == np.int8
        assert env.action_space(agent).n == size
    assert env.observation_space("player_0") is not env.observation_space("player_1")
    env.reset(seed=3)
    for agent in env.possible_agents:
        obs = env.observe(agent)
        assert env.observation_space(agent).contains(obs)
        obs["observation"][0] = 7  # copies: writing to them cannot corrupt the env
    assert env.observation_space("player_0").contains(env.observe("player_0"))


# --- seeding and chance --------------------------------------------------------------------
def deals(env: Any, n: int) -> list[tuple[str, str]]:
    out = []
    for _ in range(n):
        env.reset()
        out.append((env.infos["player_0"]["infoset_key"], env.infos["player_1"]["infoset_key"]))
    return out


def test_same_seed_same_game_and_no_global_rng() -> None:
    np.random.seed(123)
    random.seed(123)
    np_state, py_state = np.random.get_state()[1].copy(), random.getstate()
    a, b = kuhn_poker_v0.env(), kuhn_poker_v0.env()
    a.reset(seed=7)
    b.reset(seed=7)
    assert deals(a, 50) == deals(b, 50)
    a.reset(seed=8)
    b.reset(seed=9)
    assert deals(a, 50) != deals(b, 50)
    assert len(set(deals(a, 50))) == 6  # reset() without a seed keeps drawing fresh deals
    np.testing.assert_array_equal(np.random.get_state()[1], np_state)
    assert random.getstate() == py_state
    assert isinstance(a.unwrapped.np_random, np.random.Generator)


def test_chance_outcomes_follow_the_game_probabilities() -> None:
    env = kuhn_poker_v0.env()
    env.reset(seed=2026)
    counts = Counter(deals(env, 6000))
    assert len(counts) == 6
    assert all(850 < c < 1150 for c in counts.values()), counts  # 1000 each, sd ~29
    env = leduc_holdem_v0.env()
    env.reset(seed=11)
    public = Counter()
    for _ in range(3000):
        env.reset(options={"chance_outcomes": [Js, Qs]})
        env.step(C)
        env.step(C)
        public[env.infos["player_0"]["infoset_key"].split("|")[1]] += 1
    assert set(public) == {"Jh", "Qh", "Ks", "Kh"}  # the dealt cards are out of the deck
    assert all(650 < c < 850 for c in public.values()), public  # 750 each


@pytest.mark.parametrize("tabulate", [True, False])
def test_forced_chance_outcomes(tabulate: bool) -> None:
    env = kuhn_poker_v0.env(tabulate=tabulate)
    env.reset(seed=0, options={"chance_outcomes": [K, J]})
    assert env.infos == {"player_0": {"infoset_key": "K|"}, "player_1": {"infoset_key": "J|"}}
    env.step(0)
    before = snapshot(env)
    with pytest.raises(ValueError, match=r"history \[1\]; possible outcomes are: 0, 2"):
        env.reset(seed=1, options={"chance_outcomes": [Q, Q]})
    with pytest.raises(ValueError, match="sequence of integers"):
        env.reset(options={"chance_outcomes": ["K"]})
    assert snapshot(env) == before  # a refused reset changes nothing
    env.reset(options={"unknown option": 1})  # PettingZoo's api_test passes arbitrary options
    # Forced outcomes run out: the rest is drawn at random (the private cards stay as forced).
    env = leduc_holdem_v0.env(tabulate=tabulate)
    env.reset(options={"chance_outcomes": [Qh]})
    assert env.infos["player_0"]["infoset_key"] == "Qh|?|"


@pytest.mark.parametrize("tabulate", [True, False])
def test_forced_outcomes_no_play_can_use_are_refused_at_reset(tabulate: bool) -> None:
    """Leduc [Js, Ks, Js] (the public card is player 0's card) was accepted, then the legal
    check that ends round one raised IllegalActionError and a raise went on along another
    path; Kuhn [J, Q, K, K, K] dealt J, Q and dropped the rest silently. Both are refused at
    reset, changing nothing."""
    env = leduc_holdem_v0.env(tabulate=tabulate)
    env.reset(seed=0, options={"chance_outcomes": [Qh, Ks]})
    before = snapshot(env)
    with pytest.raises(ValueError) as refused:
        env.reset(seed=1, options={"chance_outcomes": [Js, Ks, Js]})
    assert not isinstance(refused.value, IllegalActionError)
    assert str(refused.value) == (
        "forced chance outcome 0 (options['chance_outcomes'][2]) is not possible at any of the "
        "5 chance nodes play can reach (e.g. history [0, 4, 1, 1]); possible outcomes are: "
        "1, 2, 3, 5"
    )
    with pytest.raises(ValueError, match=r"gives 4 outcomes, but every play of leduc_poker ends "):
        env.reset(options={"chance_outcomes": [Js, Ks, Qh, Kh]})
    assert snapshot(env) == before
    kuhn = kuhn_poker_v0.env(tabulate=tabulate)
    with pytest.raises(ValueError, match=r"ends after using at most 2 .*drop the last 3$"):
        kuhn.reset(seed=0, options={"chance_outcomes": [J, Q, K, K, K]})
    # A full deal is kept when a fold ends the hand before the public card: the last card was
    # for the plays that reach it (a duplicate match's deal).
    env.reset(seed=0, options={"chance_outcomes": [Qh, Ks, Js]})
    env.step(R)
    env.step(F)
    assert env.unwrapped.history == [Qh, Ks, R, F] and all(env.terminations.values())
    env.reset(seed=0, options={"chance_outcomes": [Qh, Ks, Js]})
    env.step(C)
    env.step(C)
    assert env.unwrapped.history == [Qh, Ks, C, C, Js]


def test_forced_outcomes_too_far_to_check_are_named_when_left_unused(monkeypatch) -> None:
    """The states mode searches at most SEARCH_MAX_NODES nodes for a play that uses them all
    (a game too big to tabulate may be too big to search); past that, outcomes a play leaves
    unused are named in a warning at the end."""
    from nashzoo.envs import aec

    monkeypatch.setattr(aec, "SEARCH_MAX_NODES", 3)
    env = kuhn_poker_v0.env(tabulate=False)
    env.reset(seed=0, options={"chance_outcomes": [J, Q, K]})
    env.step(0)
    with pytest.warns(UserWarning, match="1 forced chance outcomes were not used: this play"):
        env.step(0)


# --- illegal actions -----------------------------------------------------------------------
@pytest.mark.parametrize("tabulate", [True, False])
def test_illegal_action_raises_changes_nothing_and_retry_works(tabulate: bool) -> None:
    env = leduc_holdem_v0.env(tabulate=tabulate)
    env.reset(seed=5, options={"chance_outcomes": [Qh, Ks]})
    before = snapshot(env)
    for bad in (F, 3, -1, "raise", 1.5, 1.0, "1", True, np.True_, None, np.array([1, 2])):
        with pytest.raises(IllegalActionError) as info:
            env.step(bad)
        assert isinstance(info.value, ValueError)
        assert "1 (call), 2 (raise)" in str(info.value)
        assert "player_0" in str(info.value)
        assert snapshot(env) == before
    env.step(np.int64(R))  # numpy integers and 0-d integer arrays are fine
    env.step(np.array(C))
    history = env.unwrapped.history
    assert history[:4] == [Qh, Ks, R, C]
    assert len(history) == 5 and history[4] not in (Qh, Ks)  # the public card, drawn
    assert env.agent_selection == "player_0"  # round two


def test_step_with_an_action_after_the_end_is_refused() -> None:
    env = kuhn_poker_v0.env()
    env.reset(seed=0)
    env.step(1)
    env.step(1)
    assert all(env.terminations.values())
    with pytest.raises(ValueError, match="only valid action is None"):
        env.step(0)


GAMES_FOR_PROPERTIES = [
    (kuhn_poker_v0, {}),
    (leduc_holdem_v0, {}),
    (leduc_holdem_v0, {"tabulate": False}),
    (liars_dice_v0, {}),
    (matrix_game_v0, {"row_payoffs": [[1, -2, 0], [0, 3, -1]]}),
]


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(which=st.sampled_from(range(len(GAMES_FOR_PROPERTIES))), seed=st.integers(0, 10**6))
def test_illegal_actions_leave_env_unchanged_property(which: int, seed: int) -> None:
    """At every step of a random game, every illegal action raises and changes nothing, and
    the env then plays on exactly like a twin env that never saw the illegal actions (same
    chance outcomes too: no random draw was consumed)."""
    module, kwargs = GAMES_FOR_PROPERTIES[which]
    env, twin = module.env(**kwargs), module.env(**kwargs)
    env.reset(seed=seed)
    twin.reset(seed=seed)
    rnd = random.Random(seed)
    num_actions = env.unwrapped.game.num_actions
    while not env.terminations[env.agent_selection]:
        mask = env.observe(env.agent_selection)["action_mask"]
        n = len(mask)  # the agent's own action count (smaller for one side of a non-square game)
        illegal = [a for a in range(-1, num_actions + 2) if not 0 <= a < n or not mask[a]]
        before = snapshot(env)
        for bad in illegal:
            with pytest.raises(IllegalActionError):
                env.step(bad)
            assert snapshot(env) == before
        legal = np.flatnonzero(mask).tolist()
        action = legal[rnd.randrange(len(legal))]
        env.step(action)
        twin.step(action)
        assert snapshot(env) == snapshot(twin)
    rewards = dict(env.rewards)
    assert rewards == dict(twin.rewards)
    if env.unwrapped.game.name != "matrix" or env.unwrapped.game.zero_sum:
        assert sum(rewards.values()) == pytest.approx(0.0)


def test_penalize_mode_terminates_with_minus_one() -> None:
    env = leduc_holdem_v0.env(illegal_action="penalize")
    env.reset(seed=0, options={"chance_outcomes": [Qh, Ks]})
    env.step(C)
    assert env.agent_selection == "player_1"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(9 - 9)  # player_1 may check or raise here, not fold
    assert all(env.terminations.values())
    assert env.unwrapped.history == [Qh, Ks, C]  # the illegal move itself was not played
    final = {}
    for agent in env.agent_iter():
        _, reward, terminated, _, _ = env.last()
        assert terminated
        final[agent] = reward
        env.step(None)
    assert final == {"player_0": 0.0, "player_1": -1.0}
    # Out of the action space is an AssertionError in this mode, as with PettingZoo's
    # AssertOutOfBoundsWrapper.
    env.reset(seed=0)
    with pytest.raises(AssertionError, match="not in action space"):
        env.step(3)


@pytest.mark.parametrize("tabulate", [True, False])
def test_is_legal_agrees_with_the_action_mask_and_end_with_penalty_ends_the_game(
    tabulate: bool,
) -> None:
    """The env's public surface that the wrappers use: ``is_legal`` says what the mover's mask
    says in both modes, and ``end_with_penalty`` ends the game without playing a move."""
    raw = leduc_holdem_v0.raw_env(tabulate=tabulate)
    raw.reset(seed=0, options={"chance_outcomes": [Qh, Ks]})
    raw.step(C)
    mask = raw.observe(raw.agent_selection)["action_mask"]
    assert [raw.is_legal(a) for a in range(mask.size)] == [bool(m) for m in mask]
    assert not raw.is_legal(0)  # player_1 may check or raise here, not fold
    raw.end_with_penalty("player_1", -2.0)
    assert all(raw.terminations.values()) and all(raw.truncations.values())
    assert raw.rewards == {"player_0": 0, "player_1": -2.0}
    assert raw.history == [Qh, Ks, C]


def pettingzoo_classic_penalize(module: ModuleType, kwargs: dict) -> Any:
    """The raw env under PettingZoo's own classic terminate-with-penalty stack."""
    from pettingzoo.utils import wrappers

    env = wrappers.TerminateIllegalWrapper(module.raw_env(**kwargs), illegal_reward=-1)
    return PZOrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(env))


def penalize_snapshot(env: Any) -> tuple:
    return (*snapshot(env), env.last()[1:] if env.agents else None)


@pytest.mark.parametrize(("module", "kwargs"), MODULE_KWARGS, ids=IDS)
def test_penalize_mode_matches_pettingzoos_classic_wrapper_stack(
    module: ModuleType, kwargs: dict
) -> None:
    """Side by side with PettingZoo's TerminateIllegalWrapper + AssertOutOfBoundsWrapper +
    OrderEnforcingWrapper over the same raw env, random play with illegal moves mixed in
    (masked-out ids, out-of-space ids, dead steps with an action) shows the same everything:
    observations, rewards, terminations, truncations, infos, agent order, errors, warnings."""
    from pettingzoo.utils.env_logger import EnvLogger

    ours, theirs = (
        module.env(illegal_action="penalize", **kwargs),
        pettingzoo_classic_penalize(module, kwargs),
    )
    assert isinstance(ours, PZOrderEnforcingWrapper) and ours.env is ours.unwrapped  # one wrapper
    rnd = random.Random(7)
    penalties = 0
    for episode in range(60):
        ours.reset(seed=episode)
        theirs.reset(seed=episode)
        assert penalize_snapshot(ours) == penalize_snapshot(theirs)
        for agent in ours.agent_iter():
            assert agent == theirs.agent_selection
            obs, _, terminated, truncated, _ = ours.last()
            size = ours.action_space(agent).n
            mask = obs["action_mask"]
            if terminated or truncated:
                if rnd.random() < 0.2:  # a dead agent stepping with an action: same error
                    for env in (ours, theirs):
                        with pytest.raises(ValueError, match="only valid action is None"):
                            env.step(0)
                action = None
            else:
                roll = rnd.random()
                illegal = [a for a in range(size) if not mask[a]]
                if roll < 0.1:  # outside the action space: both assert, nothing changes
                    bad = rnd.choice([size, -1, 1.5, None])
                    before = penalize_snapshot(ours)
                    for env in (ours, theirs):
                        with pytest.raises(AssertionError, match="not in action space"):
                            env.step(bad)
                    assert penalize_snapshot(ours) == before == penalize_snapshot(theirs)
                if roll < 0.3 and illegal:
                    action = rnd.choice(illegal)
                    penalties += 1
                else:
                    action = rnd.choice(np.flatnonzero(mask).tolist())
            EnvLogger.flush()
            ours.step(action)
            ours_log = list(EnvLogger.mqueue)
            EnvLogger.flush()
            theirs.step(action)
            assert ours_log == list(EnvLogger.mqueue)
            assert penalize_snapshot(ours) == penalize_snapshot(theirs)
        assert theirs.agents == []
    if module is leduc_holdem_v0:  # the only game here with masked-out ids inside the space
        assert penalties > 10


def test_penalize_and_raise_modes_play_legal_games_identically() -> None:
    a, b = kuhn_poker_v0.env(), kuhn_poker_v0.env(illegal_action="penalize")
    a.reset(seed=4)
    b.reset(seed=4)
    for i in range(50):
        assert random_episode(a, random.Random(i)) == random_episode(b, random.Random(i))
        a.reset()
        b.reset()


# --- the parallel (simultaneous-move) view -------------------------------------------------
def test_parallel_matrix_game() -> None:
    row, col = [[3, 0], [5, 1]], [[3, 5], [0, 1]]
    par = matrix_game_v0.parallel_env(row_payoffs=row, col_payoffs=col)
    for a in range(2):
        for b in range(2):
            observations, infos = par.reset(seed=0)
            for agent in ("player_0", "player_1"):
                assert observations[agent]["action_mask"].tolist() == [1, 1]
            assert infos["player_1"]["infoset_key"] == "p1"
            _, rewards, terminations, truncations, _ = par.step({"player_0": a, "player_1": b})
            assert rewards == {"player_0": row[a][b], "player_1": col[a][b]}
            assert all(terminations.values()) and not any(truncations.values())
            assert par.agents == []


def test_parallel_non_square_masks_and_illegal_joint_actions() -> None:
    par = matrix_game_v0.parallel_env(row_payoffs=[[1, -2, 0], [0, 3, -1]])
    observations, _ = par.reset(seed=0)
    assert observations["player_0"]["action_mask"].tolist() == [1, 1]
    assert observations["player_1"]["action_mask"].tolist() == [1, 1, 1]
    # Player 0 legal, player 1 illegal: nothing is applied (player 0 has not moved).
    with pytest.raises(IllegalActionError, match="player_1"):
        par.step({"player_0": 1, "player_1": 3})
    with pytest.raises(IllegalActionError, match=r"0 \(a0\), 1 \(a1\)"):
        par.step({"player_0": 2, "player_1": 0})
    with pytest.raises(ValueError, match="missing 'player_1'"):
        par.step({"player_0": 1})
    with pytest.raises(IllegalActionError, match="player_0"):
        par.step({"player_0": True, "player_1": 1})  # a bool is not action 1
    with pytest.raises(IllegalActionError, match="player_1"):
        par.step({"player_0": 1, "player_1": 1.0})
    assert par.unwrapped.history == []
    _, rewards, *_ = par.step({"player_0": 1, "player_1": 1})
    assert rewards == {"player_0": 3.0, "player_1": -3.0}


@pytest.mark.parametrize("rows", [[[1], [2], [3]], [[1, -1, 2, 0]], [[1, -2, 0], [0, 3, -1]]])
def test_non_square_agents_have_their_own_action_spaces(rows: list[list[int]]) -> None:
    m, n = len(rows), len(rows[0])
    par = matrix_game_v0.parallel_env(row_payoffs=rows)
    assert (par.action_space("player_0").n, par.action_space("player_1").n) == (m, n)
    assert par.observation_space("player_0")["action_mask"].shape == (m,)
    assert par.observation_space("player_1")["action_mask"].shape == (n,)
    # Unmasked sampling (what PettingZoo's parallel_seed_test does) only picks usable ids.
    par.reset(seed=0)
    for agent in par.possible_agents:
        par.action_space(agent).seed(1)
    for _ in range(30):
        observations, _ = par.reset()
        for agent, obs in observations.items():
            assert obs["action_mask"].all()  # every id of the space is legal
            assert par.observation_space(agent).contains(obs)
        actions = {a: int(par.action_space(a).sample()) for a in par.agents}
        _, rewards, *_ = par.step(actions)
        assert rewards["player_0"] == rows[actions["player_0"]][actions["player_1"]]
    # The raw AEC env agrees, and out-of-space ids are illegal actions.
    env = matrix_game_v0.env(row_payoffs=rows)
    env.reset(seed=0)
    with pytest.raises(IllegalActionError, match="legal actions are"):
        env.step(m)
    env.step(m - 1)
    assert env.observe("player_1")["action_mask"].tolist() == [1] * n
    with pytest.raises(IllegalActionError, match="legal actions are"):
        env.step(n)


def test_parallel_env_supports_only_raise_mode() -> None:
    with pytest.raises(ValueError, match="only illegal_action='raise'"):
        rps_v0.parallel_env(illegal_action="penalize")
    with pytest.raises(ValueError, match="illegal_action must be one of"):
        rps_v0.parallel_env(illegal_action="ignore")


# --- rendering -----------------------------------------------------------------------------
def test_render_ansi_kuhn_views() -> None:
    env = kuhn_poker_v0.env(render_mode="ansi")
    env.reset(seed=0, options={"chance_outcomes": [Q, K]})
    text = env.render()
    assert text.startswith("[kuhn_poker_v0]")
    assert "player 0 card: Q" in text and "player 1 card: K" in text
    assert "betting: (none yet)" in text and "to move: player 0" in text
    env.step(1)
    env.step(0)  # player 1 folds
    text = env.render()
    assert "betting: bet, pass" in text
    assert "result: player 0 +1, player 1 -1" in text

    seat = kuhn_poker_v0.env(render_mode="ansi", render_agent="player_0")
    seat.reset(seed=0, options={"chance_outcomes": [Q, K]})
    text = seat.render()
    assert "player 0 card: Q" in text and "player 1 card: hidden" in text
    seat.step(1)
    seat.step(0)
    assert "player 1 card: hidden" in seat.render()  # a fold shows no cards
    seat.reset(options={"chance_outcomes": [Q, K]})
    seat.step(1)
    seat.step(1)
    text = seat.render()
    assert "player 1 card: K" in text  # a showdown shows both
    assert "result: player 0 -2, player 1 +2" in text


def test_render_ansi_leduc_shows_public_card_and_rounds() -> None:
    env = leduc_holdem_v0.env(render_mode="ansi", render_agent="player_1")
    env.reset(seed=0, options={"chance_outcomes": [Qh, Ks, Js]})
    text = env.render()
    assert "player 0 card: hidden" in text and "player 1 card: Ks" in text
    assert "public card: not dealt yet" in text
    env.step(R)
    env.step(C)
    text = env.render()
    assert "public card: Js" in text
    assert "round 1 betting: raise, call" in text
    assert "pot: 6" in text


def test_render_human_prints(capsys: pytest.CaptureFixture[str]) -> None:
    env = rps_v0.env(render_mode="human")
    env.reset(seed=0)
    assert env.render() is None
    assert "[rps_v0]" in capsys.readouterr().out
    env.step(0)
    env.step(1)
    assert env.render() is None
    assert "player 0 gets -1, player 1 gets 1" in capsys.readouterr().out


def test_render_human_prints_on_reset_and_every_move(capsys: pytest.CaptureFixture[str]) -> None:
    """Like PettingZoo's classic envs: no render() call needed in "human" mode."""
    env = kuhn_poker_v0.env(render_mode="human")
    env.reset(seed=0, options={"chance_outcomes": [Q, K]})
    out = capsys.readouterr().out
    assert out.count("[kuhn_poker_v0]") == 1 and "betting: (none yet)" in out
    env.step(1)
    out = capsys.readouterr().out
    assert out.count("[kuhn_poker_v0]") == 1 and "betting: bet" in out
    env.step(0)
    out = capsys.readouterr().out
    assert "result: player 0 +1, player 1 -1" in out
    for _ in env.agent_iter():  # leaving a finished game prints nothing more
        env.step(None)
    assert capsys.readouterr().out == ""
    with pytest.raises(IllegalActionError):  # a refused move changes nothing and prints nothing
        env.reset(seed=0, options={"chance_outcomes": [Q, K]})
        capsys.readouterr()
        env.step(5)
    assert capsys.readouterr().out == ""
    # "ansi" and no render mode print nothing by themselves; "ansi" returns the text.
    for mode in ("ansi", None):
        quiet = kuhn_poker_v0.env(render_mode=mode)
        quiet.reset(seed=0)
        quiet.step(1)
        assert capsys.readouterr().out == ""
        if mode == "ansi":
            assert quiet.render().startswith("[kuhn_poker_v0]")


def test_render_without_mode_warns() -> None:
    env = kuhn_poker_v0.env()
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None


# --- keyword arguments and wrapper order ---------------------------------------------------
@pytest.mark.parametrize(
    ("factory", "kwargs", "match"),
    [
        (kuhn_poker_v0.env, {"foo": 1}, "unknown keyword arguments \\['foo'\\]; valid: "),
        (
            kuhn_poker_v0.env,
            {"preset": "rps"},
            "illegal_action, pad_actions, render_agent, render_mode",
        ),
        (kuhn_poker_v0.raw_env, {"illegal_action": "penalize"}, "option of kuhn_poker_v0.env"),
        (leduc_holdem_v0.env, {"illegal_action": "ignore"}, "'raise', 'penalize'"),
        (leduc_holdem_v0.env, {"render_mode": "rgb_array"}, "'ansi', 'human'"),
        (rps_v0.env, {"render_agent": "player_2"}, "'player_0', 'player_1'"),
        (rps_v0.env, {"row_payoffs": [[1]]}, "unknown keyword"),
        (matrix_game_v0.env, {}, "preset=NAME or row_payoffs"),
        (matrix_game_v0.env, {"preset": "nope"}, "valid presets"),
        (
            matrix_game_v0.parallel_env,
            {"payoffs": [[1]]},
            "col_payoffs, illegal_action, pad_actions",
        ),
        (matrix_game_v0.raw_env, {"row_payoffs": [[1, 2], [3]]}, "rectangular"),
        (kuhn_poker_v0.env, {"tabulate": "yes"}, "tabulate must be 'auto', True or False"),
        (rps_v0.env, {"tabulate": False}, "simultaneous-move.*use tabulate=True"),
        (liars_dice_v0.env, {"numdice": 0}, "numdice must be an integer >= 1"),
        (liars_dice_v0.env, {"dice_sides": 2.5}, "dice_sides must be an integer >= 2"),
        (liars_dice_v0.env, {"sides": 4}, "unknown keyword.*bidding_rule, dice_sides"),
    ],
)
def test_bad_kwargs_are_clear_value_errors(factory: Any, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        factory(**kwargs)


def test_generic_env_over_any_game() -> None:
    env = GameAECEnv(load_game("matrix", preset="matching_pennies"), name="pennies_v0")
    env.reset(seed=0)
    env.step(0)
    env.step(0)
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert GameAECEnv("kuhn_poker").metadata["name"] == "kuhn_poker"
    with pytest.raises(ValueError, match="valid games"):
        GameAECEnv("chess")


def test_game_state_and_legal_actions() -> None:
    env = leduc_holdem_v0.env()
    env.reset(seed=1, options={"chance_outcomes": [Jh, Kh]})
    env.step(R)
    raw = env.unwrapped
    state = raw.game_state()
    assert state.history() == [Jh, Kh, R] == raw.history
    assert raw.legal_actions() == state.legal_actions() == [F, C, R]


@pytest.mark.parametrize("tabulate", [True, False])
def test_copy_and_pickle_continue_identically(tabulate: bool) -> None:
    env = leduc_holdem_v0.env(tabulate=tabulate)
    env.reset(seed=21)
    env.step(C)
    for clone in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        assert clone.unwrapped._tables is env.unwrapped._tables  # shared, not copied
        original = copy.deepcopy(env)
        for action in (R, C, C, C):  # round one ends: both draw the same public card
            original.step(action)
            clone.step(action)
            assert snapshot(clone) == snapshot(original)
    assert env.unwrapped.history[2:] == [C]  # the copies did not move the original


def test_order_enforcing_wrapper_keeps_pettingzoo_checks() -> None:
    env = kuhn_poker_v0.env()
    with pytest.raises(AttributeError, match="agent_selection cannot be accessed before reset"):
        _ = env.agent_selection
    with pytest.raises(AttributeError, match="cannot be accessed before reset"):
        _ = env.terminations
    with pytest.raises(AssertionError, match="reset\\(\\) needs to be called before step"):
        env.step(0)
    with pytest.raises(AssertionError, match="before observe"):
        env.last()
    env.reset(seed=0)
    iterator = iter(env.agent_iter())
    next(iterator)
    with pytest.raises(AssertionError, match="need to call step\\(\\) or reset\\(\\)"):
        next(iterator)
    with pytest.raises(AttributeError, match="'_node'"):  # private: not forwarded to the env
        _ = env._node


# --- tables or states --------------------------------------------------------------------
def test_auto_mode_tabulates_small_games_and_steps_states_of_big_ones(monkeypatch) -> None:
    from nashzoo.envs import tables

    assert kuhn_poker_v0.env().unwrapped.tabulated
    assert leduc_holdem_v0.env().unwrapped.tabulated
    assert liars_dice_v0.env(dice_sides=4).unwrapped.tabulated  # 8,181 histories

    def no_compiling(game: Any) -> None:
        raise AssertionError(f"{game.id} was compiled")

    monkeypatch.setattr(tables, "compile_tree", no_compiling)
    env = liars_dice_v0.env()  # 294,883 histories: stepped through its states
    assert not env.unwrapped.tabulated
    env.reset(seed=0)
    for _ in env.agent_iter():  # always the highest legal action: the strongest bid, then Liar
        obs, _, terminated, _, _ = env.last()
        env.step(None if terminated else int(np.flatnonzero(obs["action_mask"])[-1]))
    assert env.unwrapped.history[2:] == [11, 12]


def test_auto_mode_counts_a_game_without_a_size_lazily(monkeypatch) -> None:
    from nashzoo.envs import lazy
    from nashzoo.games import LiarsDiceGame

    class Unsized(LiarsDiceGame):
        def num_histories(self) -> None:
            return None

    assert lazy.count_histories(Unsized(dice_sides=4), 10**6) == 8181
    assert lazy.count_histories(Unsized(dice_sides=4), 100) == 100  # stops at the limit
    monkeypatch.setattr(lazy, "_COUNTED", lazy.GameCache(lazy._histories))
    monkeypatch.setattr(lazy, "TABULATE_MAX_HISTORIES", 1146)
    assert not GameAECEnv(Unsized(dice_sides=3)).tabulated  # 1,147 histories
    monkeypatch.setattr(lazy, "_COUNTED", lazy.GameCache(lazy._histories))
    monkeypatch.setattr(lazy, "TABULATE_MAX_HISTORIES", 1147)
    assert GameAECEnv(Unsized(dice_sides=3)).tabulated


def test_a_parallel_step_with_an_action_for_an_unknown_agent_is_refused() -> None:
    env = matrix_game_v0.parallel_env(preset="rps")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions for \['player_2'\], which are not live"):
        env.step({"player_0": 0, "player_1": 1, "player_2": 0})
    _, rewards, *_ = env.step({"player_0": 0, "player_1": 1})
    assert rewards == {"player_0": -1.0, "player_1": 1.0}


@pytest.mark.parametrize("tabulate", [True, False])
def test_raw_env_before_reset_and_unknown_agents_are_named(tabulate: bool) -> None:
    """Before the first reset() a raw env has no game: it said so only in render(); observe(),
    history and game_state() read the tables' node -1 (a game that never happened) or raised
    AttributeError in the states mode. An unknown agent was a bare KeyError."""
    raw = kuhn_poker_v0.raw_env(tabulate=tabulate)
    reads = {
        "observe()": lambda: raw.observe("player_0"),
        "history": lambda: raw.history,
        "game_state()": raw.game_state,
        "legal_actions()": raw.legal_actions,
        "step()": lambda: raw.step(0),
        "last()": raw.last,
        "is_legal()": lambda: raw.is_legal(0),
    }
    for what, read in reads.items():
        with pytest.raises(RuntimeError, match=rf"call reset\(\) before {re.escape(what)}"):
            read()
    raw.reset(seed=0)
    for read in (
        lambda: raw.observe("player_7"),
        lambda: raw.action_space("player_7"),
        lambda: raw.observation_space(7),
    ):
        with pytest.raises(ValueError, match=r"unknown agent .*\['player_0', 'player_1'\]"):
            read()


def test_parallel_step_after_the_end_says_the_episode_is_over() -> None:
    env = rps_v0.parallel_env()
    env.reset(seed=0)
    env.step({"player_0": 0, "player_1": 1})
    with pytest.raises(RuntimeError, match=r"the episode is over; call reset\(\)"):
        env.step({"player_0": 0, "player_1": 1})  # was: "... which are not live agents []"
