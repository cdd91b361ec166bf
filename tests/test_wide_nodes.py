"""Wide nodes cost their own width, not every node's: the learners, the envs and the evaluator
find children through ``CompiledTree.child_start`` (the breadth-first layout keeps a node's
children together), never through the dense ``[N, B]`` ``children`` table, which on a
1000x1000 matrix game is 4 GB and failed MCCFR with numpy's MemoryError at 2000x2000."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from nashzoo.games import CHANCE, TERMINAL, Game, State, compile_tree, load_game
from nashzoo.games import treemath as tm
from nashzoo.games.matrix import MatrixGame

SMALL_GAMES = ["kuhn_poker", "leduc_poker", "liars_dice(dice_sides=3)", "matrix(preset='rps')"]


class WideDeal(Game):
    """Chance deals player 0 one of ``m`` cards (card ``k`` with probability proportional to
    ``k + 1``); player 0 bets or checks seeing it; player 1, seeing only that, folds or calls.
    ``7m + 1`` histories, one chance node ``m`` wide and every other node two wide."""

    name = "wide_deal"
    num_actions = 2
    action_names = ("a", "b")
    infoset_tensor_size = 1

    def __init__(self, m: int = 2000) -> None:
        super().__init__({"m": m})
        self.m = m

    def new_initial_state(self) -> State:
        return WideDealState(self, ())


class WideDealState(State):
    def __init__(self, game: WideDeal, moves: tuple[int, ...]) -> None:
        super().__init__(game)
        self.moves = moves

    def current_player(self) -> int:
        return (CHANCE, 0, 1, TERMINAL)[len(self.moves)]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        total = self.game.m * (self.game.m + 1) / 2
        return [(k, (k + 1) / total) for k in range(self.game.m)]

    def legal_actions(self) -> list[int]:
        return [0, 1] if len(self.moves) in (1, 2) else []

    def _child(self, action: int) -> State:
        return WideDealState(self.game, (*self.moves, action))

    def returns(self) -> np.ndarray:
        card, bet, call = self.moves
        stake = (1 + bet) * (1 + call)
        win = stake if card >= self.game.m // 2 else -stake
        return np.array([win, -win], dtype=float) if call or not bet else np.array([1.0, -1.0])

    def history(self) -> list[int]:
        return list(self.moves)

    def describe(self, player: int | None = None) -> str:
        return f"wide deal {self.moves}"

    def infoset_key(self, player: int) -> str:
        return f"{self.moves[0]}" if player == 0 else f"bet={self.moves[1]}"

    def infoset_tensor(self, player: int) -> np.ndarray:
        return np.array([self.moves[0] / self.game.m if player == 0 else self.moves[1]])


@pytest.mark.parametrize("spec", SMALL_GAMES)
def test_child_ranges_and_ranks_agree_with_the_dense_table(spec):
    """``child_start``, ``legal_rank`` and the chance rows say what the dense table says."""
    tree = compile_tree(load_game(spec))
    dense = tree.children
    start = tree.child_start
    for node in range(tree.num_nodes):
        kids = dense[node][dense[node] >= 0]
        assert kids.tolist() == list(range(start[node], start[node + 1]))
    decision = np.flatnonzero(tree.player >= 0)
    rows, cols = np.nonzero(tree.legal_mask[tree.infoset[decision]])
    np.testing.assert_array_equal(
        tree.decision_children(decision[rows], cols), dense[decision[rows], cols]
    )
    chance = tm.chance_rows(tree)
    for node in chance.nodes.tolist():
        kids = np.arange(start[node], start[node + 1])
        row = chance.probs[chance.row[node]]
        np.testing.assert_array_equal(row[: kids.size], tree.chance_prob[kids])
        assert not row[kids.size :].any()


def _wide_matrix(n: int) -> MatrixGame:
    return MatrixGame(row_payoffs=np.random.default_rng(0).normal(size=(n, n)).round(2).tolist())


def test_nothing_builds_the_dense_children_table_on_a_wide_matrix_game():
    """Every learner that walks the tree, the tree-play env of NFSP and PPO, the tabulated
    PettingZoo env and the terminal spans: none builds ``children`` (200x200: 40,201 rows of
    200; 1000x1000 would be 4 GB)."""
    from nashzoo.agents import make_learner
    from nashzoo.agents.tree_play import TreePlay
    from nashzoo.envs.tables import env_tables

    game = _wide_matrix(200)
    tree = compile_tree(game)
    small = {
        "deep_cfr": {
            "traversals": 4,
            "strategy_traversals": 4,
            "advantage_steps": 1,
            "strategy_steps": 1,
            "batch_size": 8,
        },
        "nfsp": {"episodes_per_step": 4},
    }
    for name in ("es_mccfr", "os_mccfr", "deep_cfr", "nfsp"):
        seats = [make_learner(name, game, seat, small.get(name), seed=0) for seat in (0, 1)]
        for _ in range(2):
            seats[0].step(seats[1].current_policy())
            seats[1].step(seats[0].current_policy())
    play = TreePlay(game, copies=8, seat="random", rng=np.random.default_rng(0))
    play.start(np.arange(8))
    env_tables(game)
    tm.terminal_spans(tree)
    assert "children" not in vars(tree)


def test_a_wide_chance_node_widens_only_its_own_run_of_sampler_slots():
    """External sampling kept, per sampled node, one slot per id up to the widest node's: one
    chance node of 2,000 outcomes gave each of player 1's 4,000 two-action nodes 2,000 slots
    (8 million), and every information set a row of 2,000 in the table of distributions. Now
    each depth's run is as wide as its own nodes' ids, plus one, and each row its own width."""
    from nashzoo.agents import make_learner
    from nashzoo.agents.mccfr_sampling import CountSampler
    from nashzoo.games import register_game, unregister_game

    register_game("wide_deal", WideDeal)
    try:
        game = load_game("wide_deal(m=2000)")
        tree = compile_tree(game)
        assert tree.num_nodes == 14_001
        learners = [make_learner("es_mccfr", game, seat, seed=0) for seat in (0, 1)]
        for _ in range(3):
            learners[0].step(learners[1].current_policy())
            learners[1].step(learners[0].current_policy())
        for learner in learners:
            sampler = learner._tables.regret_pass
            assert isinstance(sampler, CountSampler)
            assert sampler.num_slots <= 4 * tree.num_nodes
            # the distributions: rows of their own widths, not 2,004 rows of 2,000
            assert learner._tables._table.flat.size <= 4 * tree.num_nodes
        assert "children" not in vars(tree)
    finally:
        unregister_game("wide_deal")


class Unsorted(Game):
    """Player 0 picks one of three actions, listing them as [2, 0, 1]; player 1, seeing it,
    answers with one of two, listed as [1, 0]. Payoff to player 0: ``10 * a0 + a1``. Legal
    actions out of id order are accepted as long as every node of an information set lists
    them alike."""

    name = "unsorted_moves"
    num_actions = 3
    action_names = ("x", "y", "z")
    infoset_tensor_size = 1

    def new_initial_state(self) -> State:
        return UnsortedState(self, ())


class UnsortedState(State):
    def __init__(self, game: Unsorted, moves: tuple[int, ...]) -> None:
        super().__init__(game)
        self.moves = moves

    def current_player(self) -> int:
        return (0, 1, TERMINAL)[len(self.moves)]

    def legal_actions(self) -> list[int]:
        return ([2, 0, 1], [1, 0], [])[len(self.moves)]

    def _child(self, action: int) -> State:
        return UnsortedState(self.game, (*self.moves, action))

    def returns(self) -> np.ndarray:
        win = 10.0 * self.moves[0] + self.moves[1]
        return np.array([win, -win])

    def history(self) -> list[int]:
        return list(self.moves)

    def describe(self, player: int | None = None) -> str:
        return f"unsorted {self.moves}"

    def infoset_key(self, player: int) -> str:
        seen = self.moves[0] if player == 1 and self.moves else None
        return f"p{player} saw {seen}"

    def infoset_tensor(self, player: int) -> np.ndarray:
        return np.array([self.moves[0] / 2 if player == 1 and self.moves else 0.0])


def test_legal_actions_listed_out_of_id_order_reach_their_own_children():
    """The children of a node are stored in the order its legal actions are listed; the
    lookup by action id assumed ascending ids, so a game listing [2, 0, 1] went, silently, to
    another action's child: in the envs, in NFSP's and PPO's tree play, in Deep CFR's walks."""
    from nashzoo.agents.tree_play import TreePlay
    from nashzoo.envs import env

    game = Unsorted()
    tree = compile_tree(game)
    dense = tree.children
    decision = np.flatnonzero(tree.player >= 0)
    rows, cols = np.nonzero(tree.legal_mask[tree.infoset[decision]])
    np.testing.assert_array_equal(
        tree.decision_children(decision[rows], cols), dense[decision[rows], cols]
    )
    for a0 in range(3):
        for a1 in range(2):
            play = env(game, tabulate=True)
            play.reset(seed=0)
            play.step(a0)
            play.step(a1)
            assert play.rewards["player_0"] == 10 * a0 + a1
            tree_play = TreePlay(game, copies=1, seat=0, rng=np.random.default_rng(0))
            tree_play.start(np.arange(1))
            tree_play.move(np.arange(1), np.array([a0]))  # player 1 answers from its policy
            assert tree_play.payoffs(np.arange(1))[0] // 10 == a0
    walks = tm.sampled_walks(tree).walk(0, tm.uniform_strategy(tree), 4, np.random.default_rng(0))
    for before, depth in itertools.pairwise(walks):  # Deep CFR's walks: each node
        parents = before.node[depth.parent]  # is its parent's child for its action
        np.testing.assert_array_equal(depth.node, dense[parents, depth.action])


def test_a_policy_keeps_its_games_tree_one_object_past_the_cache():
    """The caches keep the 16 games used last; a policy still holding an older game's tree
    must get that same tree back from compile_tree (its rows are read by index only when the
    trees are one object: by tensor, a game whose sets share tensors was refused)."""
    import gc
    import weakref

    from nashzoo.agents import TabularPolicy

    policy = TabularPolicy.uniform(_wide_matrix(3))
    for n in range(4, 24):
        compile_tree(_wide_matrix(n))
    assert compile_tree(policy.game) is policy.tree
    tree = compile_tree(_wide_matrix(30))
    tm.sampled_walks(tree)  # cached per tree: it must not keep the tree alive
    dropped = weakref.ref(tree)
    del tree
    for n in range(31, 51):
        compile_tree(_wide_matrix(n))
    gc.collect()
    assert dropped() is None
