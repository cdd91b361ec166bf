"""TabularPolicy: constructors, materialisation, JSON round trip and validation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from nashzoo.agents import BatchPolicy, Infoset, Policy, PolicyError, TabularPolicy
from nashzoo.games import compile_tree, load_game


def kuhn_tree():
    return compile_tree(load_game("kuhn_poker"))


def test_uniform_rows_are_uniform_over_legal_actions() -> None:
    policy = TabularPolicy.uniform("leduc_poker")
    tree = compile_tree(load_game("leduc_poker"))
    assert policy.probs.shape == (936, 3)
    np.testing.assert_allclose(policy.probs.sum(axis=1), 1.0)
    assert np.all(policy.probs[~tree.legal_mask] == 0.0)
    legal_counts = tree.legal_mask.sum(axis=1)
    np.testing.assert_allclose(policy.probs.max(axis=1), 1.0 / legal_counts)


def test_probs_are_read_only_and_rows_are_copies() -> None:
    policy = TabularPolicy.uniform("kuhn_poker")
    with pytest.raises(ValueError):
        policy.probs[0, 0] = 1.0
    row = policy.row("K|")
    row[:] = 7.0
    assert policy.row("K|").tolist() == [0.5, 0.5]
    info = Infoset.from_tree(kuhn_tree(), 0)
    got = policy.action_probabilities(info)
    got[:] = 0.0
    assert policy.action_probabilities(info).tolist() == [0.5, 0.5]


def test_from_dict_round_trip() -> None:
    tree = kuhn_tree()
    rng = np.random.default_rng(3)
    table = {}
    for key in tree.infoset_keys:
        p = rng.random()
        table[key] = [p, 1.0 - p]
    policy = TabularPolicy.from_dict("kuhn_poker", table)
    assert policy.to_dict() == table  # stored exactly, not renormalised
    for key, row in table.items():
        np.testing.assert_allclose(policy.row(key), row)


def test_from_dict_with_default_fills_missing_rows() -> None:
    uniform = TabularPolicy.uniform("kuhn_poker")
    policy = TabularPolicy.from_dict("kuhn_poker", {"K|": [0.0, 1.0]}, default=uniform)
    assert policy.row("K|").tolist() == [0.0, 1.0]
    assert policy.row("J|").tolist() == [0.5, 0.5]


def test_from_dict_rows_must_be_numbers_and_nan_is_not_missing() -> None:
    uniform = TabularPolicy.uniform("kuhn_poker")
    for row, message in (
        (["a", "b"], r"'K\|': probabilities must be numbers, got 'a'"),
        (["0.5", "0.5"], r"'K\|': probabilities must be numbers"),
        ([True, False], r"'K\|': probabilities must be numbers, got True"),
        ({"check": 1.0}, r"'K\|': expected a list of 2 probabilities, got dict"),
        ([float("nan"), 1.0], r"'K\|' has negative or non-finite"),
    ):
        with pytest.raises(PolicyError, match=message):
            TabularPolicy.from_dict("kuhn_poker", {"K|": row}, default=uniform)
    assert TabularPolicy.from_dict("kuhn_poker", {"K|": np.array([0.25, 0.75])}, default=uniform)
    with pytest.raises(PolicyError, match="default policy is for rps, not kuhn_poker"):
        TabularPolicy.from_dict("kuhn_poker", {}, default=TabularPolicy.uniform("rps"))


def test_from_dict_errors_name_the_infoset() -> None:
    with pytest.raises(PolicyError, match=r"'X\|' does not exist in kuhn_poker"):
        TabularPolicy.from_dict("kuhn_poker", {"X|": [1.0, 0.0]})
    with pytest.raises(PolicyError, match=r"'K\|': expected 2 probabilities, got shape \(3,\)"):
        TabularPolicy.from_dict("kuhn_poker", {"K|": [1.0, 0.0, 0.0]})
    with pytest.raises(PolicyError, match=r"no probabilities for information set .*11 missing"):
        TabularPolicy.from_dict("kuhn_poker", {"K|": [1.0, 0.0]})


def test_from_callable_materialises_every_infoset() -> None:
    tree = kuhn_tree()
    seen: list[str] = []

    def bet_with_kings(info: Infoset) -> np.ndarray:
        seen.append(info.key)
        assert info.tensor.shape == (11,)
        return np.array([0.0, 1.0]) if info.key.startswith("K") else np.array([1.0, 0.0])

    policy = TabularPolicy.from_policy("kuhn_poker", bet_with_kings)
    assert sorted(seen) == sorted(tree.infoset_keys)
    assert policy.row("K|pb").tolist() == [0.0, 1.0]
    assert policy.row("Q|b").tolist() == [1.0, 0.0]


class TensorPolicy:
    """A Policy that reads only the tensor (like a neural network would)."""

    def action_probabilities(self, infoset: Infoset) -> np.ndarray:
        king = infoset.tensor[4] == 1.0  # Kuhn tensor: [2:5] is the one-hot card
        return np.array([0.25, 0.75]) if king else np.array([0.75, 0.25])


def test_from_policy_object_and_tensor_lookup() -> None:
    policy = TabularPolicy.from_policy("kuhn_poker", TensorPolicy())
    assert policy.row("K|p").tolist() == [0.25, 0.75]
    assert policy.row("J|").tolist() == [0.75, 0.25]
    # a TabularPolicy answers an infoset given only by its tensor
    tree = kuhn_tree()
    index = tree.index_of("Q|pb")
    anonymous = Infoset(0, "", tree.infoset_tensors[index], tree.legal_mask[index])
    assert policy.action_probabilities(anonymous).tolist() == [0.75, 0.25]
    # and materialising a TabularPolicy gives the same object back
    assert TabularPolicy.from_policy("kuhn_poker", policy) is policy


class BatchTensorPolicy(TensorPolicy):
    """TensorPolicy that also answers batches, counting the batch calls."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def action_probabilities_batch(
        self, players: np.ndarray, tensors: np.ndarray, legal_masks: np.ndarray
    ) -> np.ndarray:
        self.batches.append(len(tensors))
        king = tensors[:, 4] == 1.0
        return np.where(king[:, None], [0.25, 0.75], [0.75, 0.25])


def test_a_batch_policy_is_materialised_in_one_call() -> None:
    batched = BatchTensorPolicy()
    assert isinstance(batched, BatchPolicy) and isinstance(batched, Policy)
    assert not isinstance(TensorPolicy(), BatchPolicy)
    policy = TabularPolicy.from_policy("kuhn_poker", batched)
    assert batched.batches == [12]
    np.testing.assert_array_equal(
        policy.probs, TabularPolicy.from_policy("kuhn_poker", TensorPolicy()).probs
    )
    seat_rows = kuhn_tree().infosets_of(1)
    TabularPolicy.from_policy("kuhn_poker", batched, rows=seat_rows)
    assert batched.batches == [12, 6]


def test_from_policy_errors_name_the_infoset() -> None:
    with pytest.raises(PolicyError, match=r"returned shape \(3,\) at information set 'J\|'"):
        TabularPolicy.from_policy("kuhn_poker", lambda info: np.ones(3) / 3)
    with pytest.raises(PolicyError, match=r"failed at information set 'Q\|'.*KeyError"):
        TabularPolicy.from_policy("kuhn_poker", lambda info: {"J|": [1.0, 0.0]}[info.key])
    with pytest.raises(PolicyError, match=r"'J\|' does not sum to one"):
        TabularPolicy.from_policy("kuhn_poker", lambda info: np.array([0.5, 0.6]))
    with pytest.raises(PolicyError, match="policy is for kuhn_poker, not leduc_poker"):
        TabularPolicy.from_policy("leduc_poker", TabularPolicy.uniform("kuhn_poker"))


def test_constructor_validation() -> None:
    with pytest.raises(PolicyError, match=r"needs shape \(12, 2\)"):
        TabularPolicy("kuhn_poker", np.full((12, 3), 1 / 3))
    bad = np.full((936, 3), 1 / 3)
    with pytest.raises(PolicyError, match="puts probability on an illegal action"):
        TabularPolicy("leduc_poker", bad)
    nan = np.array(TabularPolicy.uniform("kuhn_poker").probs)
    nan[5] = [np.nan, 1.0]
    with pytest.raises(PolicyError, match="non-finite"):
        TabularPolicy("kuhn_poker", nan)


def test_joint_asks_each_seat_only_about_its_own_information_sets() -> None:
    def seat1_only(infoset: Infoset) -> np.ndarray:
        assert infoset.player == 1, "seat 1 only"
        return np.array([0.0, 1.0]) * infoset.legal_mask

    joint = TabularPolicy.joint("kuhn_poker", [TabularPolicy.uniform("kuhn_poker"), seat1_only])
    tree = joint.tree
    assert (joint.probs[tree.infosets_of(1), 1] == 1).all()
    assert (joint.probs[tree.infosets_of(0)] == 0.5).all()

    def bad_seat1(infoset: Infoset) -> np.ndarray:
        return np.array([0.7, 0.7]) if infoset.player == 1 else np.array([0.5, 0.5])

    with pytest.raises(PolicyError, match="does not sum to one"):
        TabularPolicy.joint("kuhn_poker", [TabularPolicy.uniform("kuhn_poker"), bad_seat1])


def test_act_takes_an_infoset_or_an_env_observation() -> None:
    from nashzoo.envs import kuhn_poker_v0

    env = kuhn_poker_v0.env()
    env.reset(seed=3)
    obs, *_ = env.last()
    policy = TabularPolicy.from_dict(
        "kuhn_poker",
        {"K|": [0.0, 1.0], "Q|": [0.0, 1.0], "J|": [0.0, 1.0]},
        default=TabularPolicy.uniform("kuhn_poker"),
    )
    assert policy.act(obs, np.random.default_rng(0)) == 1  # found by its tensor
    with pytest.raises(PolicyError, match="observation dict with 'observation'"):
        policy.act([0.5, 0.5], np.random.default_rng(0))


def test_joint_takes_each_seats_rows() -> None:
    tree = kuhn_tree()
    bet = TabularPolicy.from_policy("kuhn_poker", lambda info: np.array([0.0, 1.0]))
    passive = TabularPolicy.from_policy("kuhn_poker", lambda info: np.array([1.0, 0.0]))
    joint = TabularPolicy.joint("kuhn_poker", [bet, passive])
    np.testing.assert_array_equal(joint.probs[tree.infosets_of(0)], bet.probs[tree.infosets_of(0)])
    np.testing.assert_array_equal(
        joint.probs[tree.infosets_of(1)], passive.probs[tree.infosets_of(1)]
    )
    with pytest.raises(PolicyError, match="2 seats, got 1"):
        TabularPolicy.joint("kuhn_poker", [bet])


def test_act_samples_with_an_explicit_generator() -> None:
    tree = kuhn_tree()
    policy = TabularPolicy.from_dict(
        "kuhn_poker", {"K|": [0.2, 0.8]}, default=TabularPolicy.uniform("kuhn_poker")
    )
    info = Infoset.from_tree(tree, tree.index_of("K|"))
    draws = [policy.act(info, np.random.default_rng(s)) for s in range(400)]
    again = [policy.act(info, np.random.default_rng(s)) for s in range(400)]
    assert draws == again
    assert 0.7 < np.mean(draws) < 0.9


# --- JSON persistence --------------------------------------------------------------------------
def test_save_load_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    tree = compile_tree(load_game("leduc_poker"))
    probs = rng.random(tree.legal_mask.shape) * tree.legal_mask
    policy = TabularPolicy("leduc_poker", probs / probs.sum(axis=1, keepdims=True))
    path = tmp_path / "sub" / "policy.json"
    policy.save(path)
    loaded = TabularPolicy.load(path)
    np.testing.assert_array_equal(loaded.probs, policy.probs)
    assert loaded.game.id == "leduc_poker"
    assert TabularPolicy.load(path, "leduc").probs.shape == (936, 3)
    payload = json.loads(path.read_text())
    assert payload["format"] == "nashzoo.TabularPolicy/1"
    assert payload["action_names"] == ["fold", "call", "raise"]
    assert not list(tmp_path.glob("sub/.*.tmp"))  # atomic write left no temp file


def test_a_saved_policy_is_streamed_as_json_dumps_writes_it(tmp_path: Path) -> None:
    """Writing the file whole (its rows as Python lists, then the text, then its bytes) took
    five to twelve times its size: a 506 MB policy of a 42-million-history Liar's dice raised the
    process by 6 GB at the end of its run. It is now streamed a few hundred rows at a time,
    byte for byte what ``json.dumps(payload, indent=1)`` writes."""
    import tracemalloc

    from nashzoo.io import write_policy_file
    from nashzoo.io.policy_file import _ROWS_PER_CHUNK

    def whole(game, table):  # the file as it was written before
        payload = json.loads(_written(tmp_path, game, {}))
        payload["policy"] = {key: list(row) for key, row in table.items()}
        return json.dumps(payload, indent=1)

    rng = np.random.default_rng(3)
    game = load_game("liars_dice")  # 24,576 rows: several chunks
    tree = compile_tree(game)
    probs = rng.random(tree.legal_mask.shape) * tree.legal_mask
    policy = TabularPolicy(game, probs / probs.sum(axis=1, keepdims=True))
    assert tree.num_infosets > 3 * _ROWS_PER_CHUNK
    assert len(tree.infoset_keys) == tree.num_infosets  # the keys, made when first asked
    tracemalloc.start()
    policy.save(tmp_path / "p.json")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    text = (tmp_path / "p.json").read_text()
    assert text == whole(game, policy.to_dict())
    assert peak < len(text) / 4  # held whole, the text alone is the file's size
    kuhn = load_game("kuhn_poker")
    for table in ({}, {'a "quoted" key, é': [1, 0.5], "no actions": []}):
        assert _written(tmp_path, kuhn, table) == whole(kuhn, table)
    old = (tmp_path / "p.json").read_bytes()

    def failing():
        yield "kuhn key", [0.5, 0.5]
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        write_policy_file(tmp_path / "p.json", kuhn, failing())
    assert (tmp_path / "p.json").read_bytes() == old  # a failed write leaves the old file
    assert not list(tmp_path.glob(".*.tmp"))


def _written(folder: Path, game, table) -> str:
    from nashzoo.io import write_policy_file

    write_policy_file(folder / "t.json", game, table)
    return (folder / "t.json").read_text()


def test_save_load_matrix_game_with_params(tmp_path: Path) -> None:
    game = load_game("matrix", preset="matching_pennies")
    policy = TabularPolicy.from_dict(game, {"p0": [0.25, 0.75], "p1": [0.5, 0.5]})
    policy.save(tmp_path / "mp.json")
    loaded = TabularPolicy.load(tmp_path / "mp.json")
    assert loaded.game.id == game.id
    np.testing.assert_array_equal(loaded.probs, policy.probs)


def test_load_refuses_another_game(tmp_path: Path) -> None:
    TabularPolicy.uniform("kuhn_poker").save(tmp_path / "kuhn.json")
    with pytest.raises(PolicyError, match="policy for kuhn_poker, not for leduc_poker"):
        TabularPolicy.load(tmp_path / "kuhn.json", "leduc_poker")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda text: text[: len(text) // 2], "not a readable policy JSON file"),
        (lambda text: "[1, 2, 3]", "not a nashzoo TabularPolicy file"),
        (lambda text: text.replace('"kuhn_poker"', '"chess"', 1), "cannot rebuild its game"),
        (lambda text: text.replace('"bet"', '"raise"'), "action names .* do not match"),
        (lambda text: text.replace('"K|pb"', '"K|pbb"'), r"'K\|pbb' does not exist"),
        (lambda text: text.replace("0.5,", "0.9,", 1), "does not sum to one"),
        (lambda text: text.replace('"game_params": {}', '"game_params": [1, 2]'), "mapping"),
        (lambda text: text.replace('"game": "kuhn_poker",', ""), "field 'game' is missing"),
        (lambda text: text.replace("0.5,", '"half",', 1), "must map to a list of numbers"),
    ],
)
def test_corrupt_files_are_refused_with_a_message(tmp_path: Path, mutate, message: str) -> None:
    path = tmp_path / "policy.json"
    TabularPolicy.uniform("kuhn_poker").save(path)
    path.write_text(mutate(path.read_text()))
    with pytest.raises(PolicyError, match=message) as error:
        TabularPolicy.load(path)
    assert str(path) in str(error.value)  # every message names the file


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="no policy JSON file at"):
        TabularPolicy.load(tmp_path / "nothing.json")
    (tmp_path / "binary.json").write_bytes(b"\x80\x81\xff\x00")
    with pytest.raises(PolicyError, match="not a readable policy JSON file"):
        TabularPolicy.load(tmp_path / "binary.json")


def test_atomic_writes_get_normal_permissions(tmp_path):
    import os
    import stat

    from nashzoo.io import atomic_write_bytes

    umask = os.umask(0o022)
    try:
        atomic_write_bytes(tmp_path / "x.json", b"{}")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "x.json").stat().st_mode) == 0o644
    assert (tmp_path / "x.json").read_bytes() == b"{}"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]  # no temporary file left behind


def test_a_policy_is_checked_once(monkeypatch) -> None:
    """Policies are immutable, so the evaluator checks one at most once: the constructor's
    check counts, and a policy built without one is checked the first time it is evaluated."""
    from nashzoo.agents import policy as module
    from nashzoo.eval import nash_conv

    calls = []
    real = module.checked_exact
    monkeypatch.setattr(module, "checked_exact", lambda *a, **k: calls.append(1) or real(*a, **k))
    game = load_game("kuhn_poker")
    checked = TabularPolicy(game, TabularPolicy.uniform(game).probs)
    assert checked.checked and len(calls) == 1
    nash_conv(game, checked)
    nash_conv("kuhn_poker", checked)
    assert len(calls) == 1
    unchecked = TabularPolicy(game, checked.probs, validate=False)
    assert not unchecked.checked
    first = nash_conv(game, unchecked)
    assert unchecked.checked and len(calls) == 2
    assert nash_conv(game, unchecked) == first and len(calls) == 2


def test_adopt_wraps_the_table_without_a_copy() -> None:
    from nashzoo.eval import nash_conv

    game = load_game("kuhn_poker")
    tree = compile_tree(game)
    table = np.array(TabularPolicy.uniform(game).probs)
    adopted = TabularPolicy.adopt(game, tree, table)
    assert adopted.probs is table and not table.flags.writeable and not adopted.checked
    assert adopted.row("K|").tolist() == [0.5, 0.5]
    bad = np.array(table)
    bad[tree.index_of("K|")] = [0.9, 0.9]
    with pytest.raises(PolicyError, match=r"'K\|' does not sum to one"):
        nash_conv(game, TabularPolicy.adopt(game, tree, bad))


def test_a_batch_answer_of_the_wrong_shape_is_refused_with_the_shapes():
    class Wide(Policy):
        def action_probabilities(self, infoset):
            return infoset.legal_mask / infoset.legal_mask.sum()

        def action_probabilities_batch(self, players, tensors, legal_masks):
            return np.ones((len(players), legal_masks.shape[1] + 1))

    assert isinstance(Wide(), BatchPolicy)
    with pytest.raises(PolicyError, match=r"shape \(12, 3\); expected \(12, 2\)"):
        TabularPolicy.from_policy("kuhn_poker", Wide())


def test_rows_within_the_tolerance_are_made_exact_and_exact_rows_keep_every_bit():
    from nashzoo.agents.policy import sample_action

    uniform = TabularPolicy.uniform("kuhn_poker")
    again = TabularPolicy("kuhn_poker", uniform.probs)
    assert again.probs.tobytes() == uniform.probs.tobytes()
    rounded = uniform.probs.copy()
    rounded[0] = [-5e-7, 1 + 5e-7]  # accepted by the check (1e-6)
    rounded[1] = [0.5 + 9e-7, 0.5]
    for policy in (
        TabularPolicy("kuhn_poker", rounded),
        TabularPolicy("kuhn_poker", rounded, validate=False).check(),
    ):
        assert policy.probs[0].tolist() == [0.0, 1.0]
        assert policy.probs[1].sum() == pytest.approx(1.0, abs=1e-15)
    rng = np.random.default_rng(0)
    assert {sample_action(np.array([-5e-7, 1 + 5e-7]), rng) for _ in range(20)} == {1}


def test_a_policy_file_with_a_key_written_twice_is_refused(tmp_path):
    path = tmp_path / "policy.json"
    TabularPolicy.uniform("kuhn_poker").save(path)
    text = path.read_text().replace('"J|":', '"J|": [0.0, 1.0], "J|":', 1)
    path.write_text(text)
    with pytest.raises(Exception, match="key 'J\\|' appears twice in one object"):
        TabularPolicy.load(path)


def test_a_failing_batch_and_arrays_that_are_not_real_numbers_are_named() -> None:
    from nashzoo.eval import nash_conv

    class Broken(BatchTensorPolicy):
        def action_probabilities_batch(self, players, tensors, legal_masks):
            raise RuntimeError("boom")

    with pytest.raises(PolicyError, match=r"failed answering 12 information sets .* boom"):
        nash_conv("kuhn_poker", Broken())
    uniform = TabularPolicy.uniform("kuhn_poker").probs
    for dtype in (complex, str, object):
        with pytest.raises(PolicyError, match="must be real numbers"):
            nash_conv("kuhn_poker", uniform.astype(dtype))
    with pytest.raises(PolicyError, match="failed at information set 'J\\|'"):
        nash_conv("kuhn_poker", lambda infoset: ["a", "b"])
    assert nash_conv("kuhn_poker", uniform.astype(np.float32)) == pytest.approx(11 / 12)


def test_a_policy_file_may_spell_its_game_id_another_way(tmp_path):
    game = load_game("matrix(row_payoffs=[[1, -1], [-1, 1]])")
    path = tmp_path / "policy.json"
    TabularPolicy.uniform(game).save(path)
    payload = json.loads(path.read_text())
    payload["game_id"] = "matrix(row_payoffs=[[1, -1], [-1, 1]])"  # integers, as typed
    path.write_text(json.dumps(payload))
    assert TabularPolicy.load(path).game.id == game.id
    payload["game_id"] = "kuhn_poker"
    path.write_text(json.dumps(payload))
    with pytest.raises(Exception, match="'game_id' says kuhn_poker but its game rebuilds as"):
        TabularPolicy.load(path)


def _compiled_or_skip():
    from nashzoo.games.treemath import _jit

    if not _jit.ENABLED:
        pytest.skip("numba is not installed (or NASHZOO_PURE_NUMPY=1): the numpy checks only")
    return _jit


@pytest.mark.parametrize("width", range(1, 129))
def test_the_compiled_row_sum_adds_as_numpy_does(width: int) -> None:
    """``made_exact`` leaves a row alone when numpy's sum of it is within 1e-12 of one; the
    compiled check must add in the same order to decide the same, bit for bit."""
    _jit = _compiled_or_skip()
    rng = np.random.default_rng(width)
    rows = rng.random((40, width)) * 10.0 ** rng.integers(-9, 9, size=(40, width))
    rows[::3] /= rows[::3].sum(axis=1, keepdims=True)  # near one, where the last bit decides
    expected = rows.sum(axis=1)
    for row, total in zip(rows, expected, strict=True):
        assert _jit._sum_as_numpy(np.ascontiguousarray(row), width) == total


_WITHIN = (1e-13, 5e-13)  # changes too small to matter: the row stays as it is
_LOOSE = (2e-12, 3e-9, 4e-7, 9e-7)  # a distribution only within the tolerance: made exact
_OFF = (2e-6, 1e-3)  # not a distribution


def _perturbed_table(tree, seed: int, worst: int) -> np.ndarray:
    """A table whose worst row is of kind ``worst``: 0 exact (or off by rounding), 1 a
    distribution only within the tolerance (a small negative, a little on an illegal action,
    a sum off by up to 1e-6), 2 none (NaN, infinity, too negative, too much on an illegal
    action, a sum off by more); the other rows of kinds up to it, each kind tried."""
    rng = np.random.default_rng(seed)
    table = (rng.random(tree.legal_mask.shape) + 0.01) * tree.legal_mask
    table /= table.sum(axis=1, keepdims=True)
    rows = rng.permutation(tree.num_infosets)[: max(1, tree.num_infosets // 10)]
    for k, i in enumerate(rows):
        level = worst if k == 0 else int(rng.integers(worst + 1))
        legal = np.flatnonzero(tree.legal_mask[i])
        illegal = np.flatnonzero(~tree.legal_mask[i])
        a = legal[rng.integers(legal.size)]
        size = float(rng.choice((_WITHIN, _LOOSE, _OFF)[level]))
        how = int(rng.integers(5 if level == 2 else 4))
        if how == 0:
            table[i, a] += size
        elif how == 1:
            table[i, a] -= size
        elif how == 2 and level and legal.size > 1:  # a negative, its row's sum kept
            b = legal[legal != a][0]
            table[i, b] += table[i, a] + size
            table[i, a] = -size
        elif how == 3 and level and illegal.size:
            table[i, illegal[0]] = size * rng.choice([-1.0, 1.0])
        elif how < 4:
            table[i, a] += size
        else:
            table[i, a] = rng.choice([np.nan, np.inf, -np.inf])
    return table


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "liars_dice(dice_sides=3)"])
def test_the_compiled_check_decides_as_the_numpy_checks(name: str, monkeypatch) -> None:
    """One compiled pass answers what the whole-table check and ``made_exact`` answer with
    several numpy passes: which tables pass, and which pass only within the tolerance."""
    from nashzoo.agents import policy as module
    from nashzoo.games import treemath as tm

    _jit = _compiled_or_skip()
    tree = compile_tree(load_game(name))
    seen = set()
    for seed in range(90):
        table = _perturbed_table(tree, seed, worst=seed % 3)
        status = tm.distribution_status(tree, table, 1e-6, 1e-12)
        monkeypatch.setattr(_jit, "ENABLED", False)
        assert tm.distribution_status(tree, table, 1e-6, 1e-12) is None
        passes = module._all_distributions(tree, table)
        exact = passes and module.made_exact(tree, table) is table
        plain = module.made_exact(tree, table) if passes else None
        monkeypatch.setattr(_jit, "ENABLED", True)
        assert status == (0 if exact else 1 if passes else 2), seed
        seen.add(status)
        assert module._all_distributions(tree, table) == passes
        if passes:
            assert module.made_exact(tree, table).tobytes() == plain.tobytes()
    assert seen == {0, 1, 2}


def test_the_joint_of_checked_policies_is_not_checked_again(monkeypatch) -> None:
    """A trainer's evaluation joins the seats' average policies every time: rows that were
    checked are taken as they are, an unchecked table is checked once, as a whole."""
    from nashzoo.agents import policy as module

    calls = []
    real = module.checked_exact
    monkeypatch.setattr(module, "checked_exact", lambda *a, **k: calls.append(1) or real(*a, **k))
    game = load_game("kuhn_poker")
    tree = compile_tree(game)
    bet = TabularPolicy("kuhn_poker", np.tile([0.0, 1.0], (tree.num_infosets, 1)))
    calls.clear()
    joint = TabularPolicy.joint(game, [bet, TabularPolicy.uniform(game).check()])
    assert joint.checked and calls == [1]  # uniform's own check; none for the joint
    calls.clear()
    loose = np.array(bet.probs)
    loose[tree.infosets_of(1)[0]] = [0.5, 0.5 + 5e-7]  # within the tolerance: made exact
    joint = TabularPolicy.joint(game, [bet, TabularPolicy.adopt(game, tree, loose)])
    assert joint.checked and calls == [1]
    assert joint.probs[tree.infosets_of(1)[0]].sum() == pytest.approx(1.0, abs=1e-15)
    assert joint.probs[tree.infosets_of(0)].tolist() == bet.probs[tree.infosets_of(0)].tolist()
    with pytest.raises(PolicyError, match="policy is for leduc_poker, not kuhn_poker"):
        TabularPolicy.joint(game, [bet, TabularPolicy.uniform("leduc_poker")])
    from nashzoo.games import clear_caches

    clear_caches()  # as after editing a game's rules: the game's tree is compiled anew
    calls.clear()
    joint = TabularPolicy.joint(game, [bet, bet])
    assert joint.tree is not bet.tree and joint.checked
    assert len(calls) >= 1  # rows of a policy over another tree are checked (review)


def test_an_average_policy_reads_only_its_own_rows() -> None:
    """``behaviour_strategy(rows=...)`` normalises only those rows (the rest uniform), with the
    same numbers as normalising the whole table; a mask of rows works like their indices."""
    from nashzoo.games import treemath as tm

    tree = compile_tree(load_game("leduc_poker"))
    rng = np.random.default_rng(4)
    weights = rng.random(tree.legal_mask.shape) * (rng.random(tree.legal_mask.shape) < 0.7)
    weights[::5] = 0.0  # never reached: uniform
    whole = tm.behaviour_strategy(tree, weights)
    rows = tree.infosets_of(1)
    mine = tm.behaviour_strategy(tree, weights, rows=rows)
    assert mine[rows].tobytes() == whole[rows].tobytes()
    others = tree.infosets_of(0)
    assert mine[others].tobytes() == tm.uniform_strategy(tree)[others].tobytes()
    masked = tm.behaviour_strategy(tree, weights, rows=tree.infoset_player == 1)
    assert masked.tobytes() == mine.tobytes()
    empty = tm.behaviour_strategy(tree, weights, rows=[])  # no rows: all uniform
    assert empty.tobytes() == tm.uniform_strategy(tree).tobytes()
    weights[others] = np.nan  # other rows are not read
    assert tm.behaviour_strategy(tree, weights, rows=rows).tobytes() == mine.tobytes()


def test_a_row_off_by_the_tolerance_is_decided_alike_by_every_path(monkeypatch) -> None:
    """A legal sum within rounding of 1 +- 1e-6 is accepted or refused by the order its
    numbers are added in. The compiled pass, the numpy check and its per-row pass (which names
    the row) all add as numpy's ``sum(axis=1)``, so they decide alike (found by a review: the
    numpy check added in BLAS's order, and the compiled pass refused what it accepted)."""
    from nashzoo.agents import policy as module
    from nashzoo.games import treemath as tm

    _jit = _compiled_or_skip()
    game = load_game("liars_dice(dice_sides=3)")
    tree = compile_tree(game)
    base = tm.uniform_strategy(tree)
    widest = int(np.argmax(tree.legal_mask.sum(axis=1)))
    legal = np.flatnonzero(tree.legal_mask[widest])
    rng = np.random.default_rng(0)
    verdicts = set()
    for _ in range(300):
        table = base.copy()
        row = rng.random(legal.size)
        row *= (1 + rng.choice([-1e-6, 1e-6])) / row.sum()
        row[-1] += rng.integers(-20, 21) * np.spacing(1.0)
        table[widest, legal] = row
        decided = []
        for compiled in (True, False):
            monkeypatch.setattr(_jit, "ENABLED", compiled)
            decided.append(module._all_distributions(tree, table))
            try:
                TabularPolicy(game, table)
                decided.append(True)
            except PolicyError:
                decided.append(False)
        monkeypatch.setattr(_jit, "ENABLED", True)
        assert len(set(decided)) == 1, decided
        verdicts.add(decided[0])
    assert verdicts == {True, False}


def test_a_table_of_lists_is_read_at_once_and_as_row_by_row(tmp_path) -> None:
    """Rows that are lists of numbers go through one conversion (a policy file's millions of
    numbers); the result is the row-by-row one's, and anything else still gets the row-by-row
    check naming the first bad row, a number too large for a float included."""
    from nashzoo.io.policy_file import lists_of_numbers

    game = load_game("leduc_poker")
    tree = compile_tree(game)
    rng = np.random.default_rng(8)
    table = {}
    for i, key in enumerate(tree.infoset_keys):
        row = rng.random(tree.num_actions) * tree.legal_mask[i]
        table[key] = (row / row.sum()).tolist()
    table[tree.infoset_keys[0]] = [int(x) for x in tree.legal_mask[0] * 0]
    table[tree.infoset_keys[0]][int(np.flatnonzero(tree.legal_mask[0])[0])] = 1  # ints
    at_once = TabularPolicy.from_dict(game, table)
    row_by_row = TabularPolicy.from_dict(game, {k: tuple(v) for k, v in table.items()})
    assert at_once.probs.tobytes() == row_by_row.probs.tobytes()
    assert lists_of_numbers([[0.5, 1], []]) and not lists_of_numbers([(0.5, 0.5)])
    for bad in (True, None, "0.5", [0.5], 1j):
        assert not lists_of_numbers([[0.5, 0.5], [0.25, bad]])
    at_once.save(tmp_path / "p.json")
    stored = json.loads((tmp_path / "p.json").read_text())
    stored["policy"][tree.infoset_keys[3]] = [10**400, 0, 0]
    (tmp_path / "p.json").write_text(json.dumps(stored))
    with pytest.raises(PolicyError, match=r"about 401 digits is too large to be a probability"):
        TabularPolicy.load(tmp_path / "p.json")


def test_a_check_reads_an_exact_table_once(monkeypatch) -> None:
    """Checking a table and making its rows exact is one compiled pass when every row is an
    exact distribution (a learner's); a table with a bad row still names it, and one within the
    tolerance is still mended."""
    from nashzoo.agents import policy as module

    game = load_game("leduc_poker")
    tree = compile_tree(game)
    table = np.array(TabularPolicy.uniform(game).probs)
    passes: list[int | None] = []

    def counted(*args, **kwargs):
        passes.append(real(*args, **kwargs))
        return passes[-1]

    real = module.distribution_status
    monkeypatch.setattr(module, "distribution_status", counted)
    assert module.checked_exact(tree, table) is table
    compiled = [status for status in passes if status is not None]  # None: numba not in use
    assert compiled == [0] or not compiled
    loose = np.array(table)
    loose[0, 0] += 5e-7
    mended = module.checked_exact(tree, loose)
    assert mended is not loose and mended[0].sum() == pytest.approx(1.0, abs=1e-15)
    bad = np.array(table)
    bad[3, np.flatnonzero(tree.legal_mask[3])[0]] += 0.5
    with pytest.raises(PolicyError, match=re.escape(f"{tree.infoset_keys[3]!r} does not sum")):
        module.checked_exact(tree, bad)
