"""The env and the rules agree on every history of every game, in both env modes.

Expected values come from the ``State`` API alone (``State.child`` from the root); the env is
driven through its public wrapped ``env()``, with the chance outcomes of each history forced
through ``reset(options={"chance_outcomes": ...})``. At every decision node and at the end the
two must give identical infoset keys, tensors, action masks, the agent to move and returns.
Every turn-based game is checked with the env stepping its lookup tables (``tabulate=True``) and
stepping the game's states (``tabulate=False``); the two modes also draw the same chance
outcomes from the same seed.

The env's action-mask rule, stated in ``State`` terms: the agent to move sees
``State.legal_actions_mask()``, every other agent zeros; in a simultaneous-move env (``rps_v0``,
``matrix_game_v0``) an agent not to move sees the legal mask of its information set where that is
one it acts at (the second mover before its turn). Masks cover the agent's own
``game.num_actions_of(p)`` action ids (fewer than ``game.num_actions`` for one side of a
non-square matrix game).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from nashzoo.envs import kuhn_poker_v0, leduc_holdem_v0, liars_dice_v0, matrix_game_v0, rps_v0
from nashzoo.games import Game, State, load_game


@dataclass(frozen=True)
class Expected:
    """What the env must show at one node, computed from the State."""

    to_move: str | None  # agent name, None at the end
    keys: tuple[str, ...]
    tensors: tuple[bytes, ...]
    masks: tuple[bytes, ...]
    returns: tuple[float, ...] | None  # only at terminals


@dataclass(frozen=True)
class GameViews:
    nodes: dict[tuple[int, ...], Expected]  # history -> expectation (decision/terminal nodes)
    terminals: list[tuple[tuple[int, ...], tuple[bool, ...]]]  # history, is-chance per action


def state_views(game: Game, masks_before_turn: bool) -> GameViews:
    states: list[tuple[State, tuple[bool, ...]]] = []
    stack: list[tuple[State, tuple[bool, ...]]] = [(game.new_initial_state(), ())]
    while stack:
        state, flags = stack.pop()
        states.append((state, flags))
        if not state.is_terminal():
            chance = state.is_chance_node()
            for action in state.legal_actions():
                stack.append((state.child(action), (*flags, chance)))

    def own_mask(state: State, p: int) -> bytes:
        mask = state.legal_actions_mask()
        assert not mask[game.num_actions_of(p) :].any()  # legal ids lie below num_actions_of
        return mask[: game.num_actions_of(p)].tobytes()

    decision_masks = {
        (s.current_player(), s.infoset_key(s.current_player())): own_mask(s, s.current_player())
        for s, _ in states
        if not s.is_terminal() and not s.is_chance_node()
    }
    nodes: dict[tuple[int, ...], Expected] = {}
    terminals = []
    for state, flags in states:
        if state.is_chance_node():
            continue
        players = range(game.num_players)
        keys = tuple(state.infoset_key(p) for p in players)
        mover = None if state.is_terminal() else state.current_player()
        masks = []
        for p in players:
            zeros = np.zeros(game.num_actions_of(p), dtype=np.int8).tobytes()
            if p == mover:
                masks.append(own_mask(state, p))
            elif mover is not None and masks_before_turn:
                masks.append(decision_masks.get((p, keys[p]), zeros))
            else:
                masks.append(zeros)
        history = tuple(state.history())
        nodes[history] = Expected(
            to_move=None if mover is None else f"player_{mover}",
            keys=keys,
            tensors=tuple(state.infoset_tensor(p).tobytes() for p in players),
            masks=tuple(masks),
            returns=tuple(state.returns().tolist()) if state.is_terminal() else None,
        )
        if state.is_terminal():
            terminals.append((history, flags))
    return GameViews(nodes, terminals)


def assert_env_shows(env: Any, want: Expected, where: tuple[int, ...]) -> None:
    assert env.unwrapped.history == list(where)
    for p, agent in enumerate(env.possible_agents):
        obs = env.observe(agent)
        assert obs["observation"].dtype == np.float32
        assert obs["action_mask"].dtype == np.int8
        assert env.infos[agent]["infoset_key"] == want.keys[p], (where, agent)
        assert obs["observation"].tobytes() == want.tensors[p], (where, agent)
        assert obs["action_mask"].tobytes() == want.masks[p], (where, agent)
    if want.to_move is not None:
        assert env.agent_selection == want.to_move, where
        assert not any(env.terminations.values())


def assert_env_ends(env: Any, want: Expected, where: tuple[int, ...]) -> None:
    assert want.returns is not None
    assert all(env.terminations.values())
    assert env.rewards == dict(zip(env.possible_agents, want.returns, strict=True)), where
    seen = {}
    for agent in env.agent_iter():
        _, reward, terminated, truncated, _ = env.last()
        assert terminated and not truncated
        seen[agent] = reward
        env.step(None)
    assert seen == dict(zip(env.possible_agents, want.returns, strict=True)), where
    assert env.agents == []


TURN_BASED: list[tuple[str, ModuleType, str, dict[str, Any]]] = [
    ("kuhn", kuhn_poker_v0, "kuhn_poker", {}),
    ("leduc", leduc_holdem_v0, "leduc_poker", {}),
    ("liars_dice_3", liars_dice_v0, "liars_dice", {"dice_sides": 3}),
    ("liars_dice_2x2", liars_dice_v0, "liars_dice", {"numdice": 2, "dice_sides": 2}),
]
CASES: list[tuple[str, ModuleType, str, dict[str, Any], dict[str, Any]]] = [
    ("rps", rps_v0, "rps", {}, {}),
    *((f"{n}_tables", m, g, p, {"tabulate": True}) for n, m, g, p in TURN_BASED),
    *((f"{n}_states", m, g, p, {"tabulate": False}) for n, m, g, p in TURN_BASED),
    ("matrix_2x3", matrix_game_v0, "matrix", {"row_payoffs": [[1, -2, 0], [0, 3, -1]]}, {}),
    ("matrix_3x1", matrix_game_v0, "matrix", {"row_payoffs": [[1], [2], [3]]}, {}),
    ("matrix_1x4", matrix_game_v0, "matrix", {"row_payoffs": [[1, -1, 2, 0]]}, {}),
    (
        "prisoners_dilemma",
        matrix_game_v0,
        "matrix",
        {"row_payoffs": [[3, 0], [5, 1]], "col_payoffs": [[3, 5], [0, 1]]},
        {},
    ),
]
_VIEWS: dict[tuple[str, bool], GameViews] = {}


def views_of(module: ModuleType, game_name: str, params: dict[str, Any]) -> GameViews:
    game = load_game(game_name, **params)
    parallel = hasattr(module, "parallel_env")  # the simultaneous-move envs
    if (game.id, parallel) not in _VIEWS:
        _VIEWS[game.id, parallel] = state_views(game, parallel)
    return _VIEWS[game.id, parallel]


@pytest.mark.parametrize(
    ("module", "game_name", "params", "env_kwargs"),
    [pytest.param(*c[1:], id=c[0]) for c in CASES],
)
def test_every_history_through_env_matches_state(
    module: ModuleType, game_name: str, params: dict[str, Any], env_kwargs: dict[str, Any]
) -> None:
    views = views_of(module, game_name, params)
    env = module.env(**params, **env_kwargs)
    assert env.unwrapped.tabulated is env_kwargs.get("tabulate", True)
    walk_every_history(env, views)


def walk_every_history(env: Any, views: GameViews) -> None:
    """Play every terminal history through ``env`` (its chance outcomes forced) and check
    what it shows at every decision node and at the end."""
    for history, flags in views.terminals:
        deal = [a for a, chance in zip(history, flags, strict=True) if chance]
        env.reset(seed=0, options={"chance_outcomes": deal})
        for i, (action, chance) in enumerate(zip(history, flags, strict=True)):
            if chance:
                continue
            prefix = history[:i]
            assert_env_shows(env, views.nodes[prefix], prefix)
            env.step(action)
        assert_env_shows(env, views.nodes[history], history)
        assert_env_ends(env, views.nodes[history], history)


@pytest.mark.parametrize("tabulate", [True, False])
def test_a_player_who_cannot_tell_it_waits_sees_zeros_in_both_modes(tabulate: bool) -> None:
    """OpenSpiel's dark_hex 2x2: after player 1 plays onto player 0's hidden stone, player 1
    moves again while player 0's key is the one it acts at. The tables showed player 0 the
    legal actions of that information set, the states zeros; both now show zeros (the
    turn-based rule), on every history."""
    pytest.importorskip("pyspiel")
    from nashzoo.envs import env as make_any_env

    game = load_game("openspiel:dark_hex(num_rows=2,num_cols=2)")
    env = make_any_env(game, tabulate=tabulate)
    env.reset(seed=0)
    env.step(3)
    env.step(3)  # onto player 0's hidden stone: player 1 again
    assert env.agent_selection == "player_1"
    assert env.infos["player_0"]["infoset_key"] == "..\n.x\n2\n0,3 "
    acts_there = state_views(game, masks_before_turn=True).nodes[3, 3].masks[0]
    assert list(acts_there) == [1, 1, 1, 0]  # a key player 0 acts at (the tables showed this)
    assert env.observe("player_0")["action_mask"].tolist() == [0, 0, 0, 0]
    assert env.observe("player_1")["action_mask"].tolist() == [1, 1, 1, 0]
    walk_every_history(env, state_views(game, masks_before_turn=False))


@pytest.mark.parametrize(
    ("module", "game_name", "params", "env_kwargs"),
    [pytest.param(*c[1:], id=c[0]) for c in CASES],
)
def test_random_env_play_stays_on_the_state_tree(
    module: ModuleType, game_name: str, params: dict[str, Any], env_kwargs: dict[str, Any]
) -> None:
    """Sampled (not forced) chance outcomes and random actions: every node the env reaches is
    a node of the State tree and looks the same, and every terminal is reached only legally."""
    views = views_of(module, game_name, params)
    env = module.env(**params, **env_kwargs)
    assert env.unwrapped.tabulated is env_kwargs.get("tabulate", True)
    rnd = random.Random(1)
    reached = set()
    for episode in range(300):
        env.reset(seed=episode)
        while env.agents and not env.terminations[env.agent_selection]:
            where = tuple(env.unwrapped.history)
            assert_env_shows(env, views.nodes[where], where)
            obs, *_ = env.last()
            legal = np.flatnonzero(obs["action_mask"]).tolist()
            env.step(legal[rnd.randrange(len(legal))])
        where = tuple(env.unwrapped.history)
        reached.add(where)
        assert_env_shows(env, views.nodes[where], where)
        assert_env_ends(env, views.nodes[where], where)
    assert reached <= {h for h, _ in views.terminals}
    if len(views.terminals) <= 30:
        assert len(reached) == len(views.terminals)  # small games: every ending is reached


@pytest.mark.parametrize(
    ("module", "params"),
    [
        pytest.param(kuhn_poker_v0, {}, id="kuhn"),
        pytest.param(leduc_holdem_v0, {}, id="leduc"),
        pytest.param(liars_dice_v0, {"dice_sides": 4}, id="liars_dice_4"),
        pytest.param(liars_dice_v0, {"numdice": 2, "dice_sides": 2}, id="liars_dice_2x2"),
    ],
)
def test_both_modes_play_the_same_seeded_games(module: ModuleType, params: dict[str, Any]) -> None:
    """Same seed, same actions: the tables and the states draw the same chance outcomes and
    show the same everything, episode after episode (reset without a seed keeps drawing)."""
    tables = module.env(tabulate=True, **params)
    states = module.env(tabulate=False, **params)
    rnd = random.Random(7)
    tables.reset(seed=3)
    states.reset(seed=3)
    for _ in range(200):
        while tables.agents:
            for env in (tables, states):
                assert env.unwrapped.history == tables.unwrapped.history
            assert states.agent_selection == tables.agent_selection
            assert states.rewards == tables.rewards and states.infos == tables.infos
            for agent in tables.possible_agents:
                ours, theirs = tables.observe(agent), states.observe(agent)
                assert ours.keys() == theirs.keys()
                for k in ours:
                    assert ours[k].dtype == theirs[k].dtype
                    assert ours[k].tobytes() == theirs[k].tobytes()
            obs, _, terminated, truncated, _ = tables.last()
            legal = np.flatnonzero(obs["action_mask"]).tolist()
            action = None if terminated or truncated else legal[rnd.randrange(len(legal))]
            tables.step(action)
            states.step(action)
        assert not states.agents
        tables.reset()
        states.reset()
