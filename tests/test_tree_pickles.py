"""A compiled tree sent to another process and back (pickle, ``copy``): what it carries, and
that it comes back as the receiving process's own tree of the game where that one is equal.

Pickled whole, a learner's tree came back from a ``processes=2`` worker as a second copy
(found 2026-11-29): the learner then stepped on the copy, building the sequence form, the
compiled kernels' index and NashConv's index a second time beside the cached tree's, and each
policy it handed out held the copy too. A worker, for its part, compiled the game again though
its learner had arrived with the tree.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys

import numpy as np
import pytest
from user_games import MatchingPennies, MatchingPenniesState

from nashzoo.agents import TabularPolicy, make_learner
from nashzoo.games import clear_caches, compile_tree, load_game
from nashzoo.games import tree as tree_module
from nashzoo.games.compiled import CompiledTree, readonly


def _trees_in(thing: object) -> list[CompiledTree]:
    """Every compiled tree reachable from ``thing`` through nashzoo's own objects."""
    found: list[CompiledTree] = []
    seen: set[int] = set()
    stack = [thing]
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, (np.ndarray, str, bytes, int, float)):
            continue
        seen.add(id(item))
        if isinstance(item, CompiledTree):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif type(item).__module__.startswith("nashzoo"):
            stack.extend(getattr(item, "__dict__", {}).values())
    return found


@pytest.mark.parametrize("name", ["cfr_plus", "dcfr", "os_mccfr", "es_mccfr", "xfp"])
@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_copied_learner_steps_on_this_processs_tree(name, how):
    game = load_game("leduc_poker")
    learner = make_learner(name, game, 0)
    learner.step(make_learner(name, game, 1).current_policy())
    back = pickle.loads(pickle.dumps(learner)) if how == "pickle" else copy.deepcopy(learner)
    tree = compile_tree(game)
    held = [*_trees_in(back), back.current_policy().tree, back.average_policy().tree]
    assert held and all(t is tree for t in held)


def test_a_pickled_policy_comes_back_on_the_cached_tree():
    policy = TabularPolicy.uniform("kuhn_poker")
    back = pickle.loads(pickle.dumps(policy))
    assert back.tree is policy.tree is compile_tree("kuhn_poker")
    np.testing.assert_array_equal(back.probs, policy.probs)
    assert copy.copy(policy.tree) is policy.tree


def test_a_tree_pickles_without_its_derived_tables_and_comes_back_read_only():
    tree = compile_tree("leduc_poker")
    bare = len(pickle.dumps(tree))
    derived = (tree.child_start, tree.legal_rank, tree.depth, tree.children, tree.utility)
    assert len(pickle.dumps(tree)) == bare  # the derived tables are not sent
    data = pickle.dumps(tree)
    clear_caches()  # no tree of Leduc here: a worker's learner's is kept as the game's
    with tree_module.adopting_pickled_trees():
        back = pickle.loads(data)
    assert back is not tree
    assert not set(vars(back)) & {"child_start", "legal_rank", "depth", "children", "utility"}
    for field in dataclasses.fields(tree):
        value = getattr(back, field.name)
        if isinstance(value, np.ndarray):
            assert not value.flags.writeable, field.name
            np.testing.assert_array_equal(value, getattr(tree, field.name))
    np.testing.assert_array_equal(back.child_start, derived[0])
    assert back.infoset_keys == tree.infoset_keys
    assert compile_tree("leduc_poker") is back


def test_a_worker_uses_the_tree_its_learner_came_with_instead_of_compiling_again(tmp_path):
    """Through the worker's own loop (``seat_worker._serve``), in a process of its own."""
    learner = make_learner("cfr_plus", "kuhn_poker", 0)
    path = tmp_path / "learner.pkl"
    path.write_bytes(pickle.dumps(learner))
    script = f"""
import multiprocessing
from nashzoo.games import compile_tree
from nashzoo.games import tree as tree_module
from nashzoo.train.seat_worker import _serve

def refuse(game):
    raise AssertionError("compiled again")

tree_module._TREES._build = refuse
mine, theirs = multiprocessing.Pipe()
mine.send(("start", open({str(path)!r}, "rb").read()))
mine.send(("close", None))
_serve(theirs)
assert mine.recv() == ("ok", None), "start"
status, (how, data, _) = mine.recv()
assert status == "ok" and how == "pickle", status
import pickle
learner = pickle.loads(data)
assert compile_tree(learner.game) is learner.tree is learner._tree
learner.step(learner.current_policy())
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_a_tree_of_other_payoffs_under_the_same_id_is_neither_taken_nor_kept():
    tree = compile_tree("kuhn_poker")
    other = dataclasses.replace(tree, terminal_utility=readonly(tree.terminal_utility * 2))
    back = pickle.loads(pickle.dumps(other))
    assert back is not tree
    np.testing.assert_array_equal(back.terminal_utility, tree.terminal_utility * 2)
    assert compile_tree("kuhn_poker") is tree
    assert not tree_module.same_tree(tree, other)
    assert tree_module.same_tree(
        tree, tree_module.unpickled_tree(*tree_module.pickled_tree_state(tree))
    )


def test_a_pickle_of_rules_edited_since_does_not_become_the_games_tree():
    """A policy pickled to a file, the game's rules edited, the file read back in a new
    session: its tree was kept as the game's (the class found by name, the version the same),
    and ``compile_tree``, ``solve_game`` and every learner after it served the old rules'
    numbers (coin bluff's value 1/3 after its fold payoff went from 1 to 5, where it is 0)."""
    tree = compile_tree("kuhn_poker")
    old_rules = dataclasses.replace(tree, terminal_utility=readonly(tree.terminal_utility * 2))
    fields, labels, game_class, version = tree_module.pickled_tree_state(tree)
    fields["terminal_utility"] = old_rules.terminal_utility
    assert game_class == "nashzoo.games.kuhn:KuhnPokerGame"
    clear_caches()  # a new session: no tree of Kuhn here yet
    back = tree_module.unpickled_tree(fields, labels, game_class, version)
    np.testing.assert_array_equal(back.terminal_utility, tree.terminal_utility * 2)
    fresh = compile_tree("kuhn_poker")
    assert fresh is not back
    np.testing.assert_array_equal(fresh.terminal_utility, tree.terminal_utility)
    assert pickle.loads(pickle.dumps(back)) is not fresh  # other payoffs: not taken for it


def test_results_unpickled_where_the_game_is_not_compiled_share_one_tree():
    """A sweep's parent that sends its runs to a pool and never compiles the game got each
    run's result back on a tree of its own: one tree per seed, where one is enough. They share
    one, which is still not served as the game's."""
    results = [pickle.dumps(TabularPolicy.uniform("leduc_poker")) for _ in range(3)]
    clear_caches()  # the parent: no tree of Leduc here
    back = [pickle.loads(data) for data in results]
    assert back[0].tree is back[1].tree is back[2].tree
    assert compile_tree("leduc_poker") is not back[0].tree
    assert pickle.loads(results[0]).tree is compile_tree("leduc_poker")  # the game's, now


class _OtherKeysState(MatchingPenniesState):
    def infoset_key(self, player: int) -> str:
        return ("first", "second")[player]

    def infoset_tensor(self, player: int) -> np.ndarray:
        return np.eye(2, dtype=np.float32)[1 - player]


class _MatchingOtherKeys(MatchingPennies):
    """A variant that keeps its parent's name, and so its id: same arrays, other keys and
    tensors."""

    @property
    def state_class(self) -> type[MatchingPenniesState]:
        return _OtherKeysState


def test_a_tree_comes_back_as_its_own_classs_not_as_a_same_named_games():
    """A learner or policy of a subclass that keeps its parent's name came back holding the
    parent's tree (equal arrays; the labels compared only where both had computed theirs),
    and so answered with the parent's information-set keys and tensors."""
    parent, variant = MatchingPennies(), _MatchingOtherKeys()
    assert parent.id == variant.id
    assert compile_tree(parent).infoset_keys == ("p0", "p1")  # labels computed on one side
    policy = TabularPolicy.uniform(variant)
    back = pickle.loads(pickle.dumps(policy))
    assert back.tree is policy.tree is compile_tree(variant)
    assert back.tree.infoset_keys == ("first", "second")
    np.testing.assert_array_equal(back.tree.infoset_tensors, [[0, 1], [1, 0]])


def test_a_tree_pickled_after_clear_caches_is_not_kept_as_the_games():
    """``clear_caches()`` is how a notebook says the rules changed under the same classes: a
    tree compiled before it, still held, is not made the game's anywhere it is sent."""
    tree = compile_tree("kuhn_poker")
    clear_caches()
    back = pickle.loads(pickle.dumps(tree))
    assert back is not tree and compile_tree("kuhn_poker") is not back


def test_a_tree_from_another_nashzoo_is_not_kept_as_the_games():
    tree = compile_tree("kuhn_poker")
    fields, labels, game_class, _ = tree_module.pickled_tree_state(tree)
    assert game_class == "nashzoo.games.kuhn:KuhnPokerGame"
    clear_caches()
    back = tree_module.unpickled_tree(fields, labels, game_class, "0.0.0")
    assert compile_tree("kuhn_poker") is not back  # built here, not another version's
    assert tree_module.same_tree(back, compile_tree("kuhn_poker"))


@pytest.mark.parametrize(
    "name",
    [
        None,
        "",
        "no_such_module_here:Game",
        "nashzoo.games.kuhn:NoSuchGame",
        "tests.x:f.<locals>.Game",
        "nashzoo.games.kuhn:np",
    ],
)
def test_a_game_class_not_found_here_is_none(name):
    assert tree_module._game_class(name) is None


def test_two_processes_leave_one_tree_of_the_game():
    from nashzoo.train import Trainer

    trainer = Trainer("kuhn_poker", "cfr_plus", "xfp", schedule="simultaneous", processes=2)
    trainer.run(iterations=2)
    tree = compile_tree("kuhn_poker")
    held = [*_trees_in(trainer.learners[1]), trainer.learners[1].average_policy().tree]
    assert held and all(t is tree for t in held)
