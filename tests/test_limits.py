"""A game too big for the machine is refused with one line, before or while it compiles, instead
of taking all the memory (``nashzoo.games.limits``)."""

from __future__ import annotations

import itertools

import pytest

from nashzoo.cli import main
from nashzoo.games import GameTooLarge, limits, load_game, progress
from nashzoo.games import fast_walk as fw
from nashzoo.games.tree import _compile, walk_states


def _fast(game):
    return fw.walk(game, game.new_initial_state(), fw.state_ops(game))


def test_a_game_that_counts_itself_is_refused_before_any_work():
    game = load_game("liars_dice(numdice=2)")  # 43,486,542,835 histories: no machine has 8 TB
    message = r"43,486,542,835 histories: compiling them takes about 8,100 GiB and this"
    with pytest.raises(GameTooLarge, match=message):
        _compile(game)


def test_the_cap_refuses_a_counted_game(monkeypatch):
    monkeypatch.setenv(limits.MAX_HISTORIES_VARIABLE, "100000")
    with pytest.raises(GameTooLarge, match=r"294,883 histories, over the cap of 100,000"):
        _compile(load_game("liars_dice"))
    monkeypatch.setenv(limits.MAX_HISTORIES_VARIABLE, "300_000")
    assert _compile(load_game("liars_dice")).num_nodes == 294_883


@pytest.mark.parametrize("walk", [_fast, walk_states], ids=["fast walk", "checking walk"])
def test_the_cap_stops_a_walk(walk, monkeypatch):
    game = load_game("leduc_poker")  # walked through its States here: 9,457 histories
    monkeypatch.setenv(limits.MAX_HISTORIES_VARIABLE, "500")
    with pytest.raises(GameTooLarge, match="more than the 500 histories that NASHZOO_MAX"):
        walk(game)
    monkeypatch.setenv(limits.MAX_HISTORIES_VARIABLE, "9457")
    assert walk(game).num_nodes == 9457


@pytest.mark.parametrize("walk", [_fast, walk_states], ids=["fast walk", "checking walk"])
def test_a_walk_stops_when_the_process_outgrows_the_memory_it_had(walk, monkeypatch):
    grows = itertools.count(0, 5 * 2**20)  # the process grows by 5 MiB between two looks
    monkeypatch.setattr(limits, "resident_memory", lambda: next(grows))
    monkeypatch.setattr(limits, "available_memory", lambda: 10 * 2**20)  # 6 MiB may be taken
    monkeypatch.setattr(progress, "PROGRESS_EVERY", 64)  # a look every 64 histories
    message = r"on this machine: after [0-9,]+ histories the walk holds 10.0 MiB, more than 60%"
    with pytest.raises(GameTooLarge, match=message):
        walk(load_game("leduc_poker"))


def test_a_walk_that_grows_fast_per_history_is_looked_at_before_the_limit():
    """A deep game's walk holds megabytes per history (crazyhouse: 8 MB): after each look
    the next comes at most half of the way to the limit at the rate seen, so the walk stops
    near 60% of the memory instead of far past it (crazyhouse held 17.9 of 23 GiB; shogi
    was killed for memory)."""
    readings = iter([0, 64 * 2**20, 128 * 2**20])  # 1 MiB per history
    limits_ = limits.WalkLimits("deep")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(limits, "resident_memory", lambda: next(readings))
        patch.setattr(limits, "available_memory", lambda: 1000 * 2**20)  # 600 MiB may be taken
        assert limits_.check(64) is None  # the baseline
        room = limits_.check(128)  # 64 MiB taken, 536 MiB left, 1 MiB per history
        assert room == 268
        # 128 MiB taken after 268 more histories (64 MiB): 472 MiB left at 64/268 MiB each
        assert limits_.check(128 + room) == int(472 * 268 / 64 / 2)


@pytest.mark.parametrize(
    ("spec", "histories", "within"),
    [("kuhn_poker", 58, 1.15), ("leduc_poker", 9_457, 1.5), ("liars_dice(dice_sides=4)", 4_665, 3)],
)
def test_a_sample_of_random_paths_estimates_the_trees_size(spec, histories, within):
    """Knuth's estimator, averaged over the sampled paths (seeded: the same every run)."""
    game = load_game(spec)
    estimate = limits.sampled_size(game.new_initial_state(), fw.state_ops(game))
    assert histories / within < estimate < histories * within
    assert estimate == limits.sampled_size(game.new_initial_state(), fw.state_ops(game))


@pytest.mark.parametrize(("estimate", "stops"), [(1e12, True), (2e6, False)])
def test_a_long_walk_stops_where_its_estimated_tree_would_need_far_more_memory(
    estimate, stops, monkeypatch
):
    """OpenSpiel's 3x3 dark_hex (about 1.7e10 histories) walked for half an hour until the
    memory limit stopped it; now, past ESTIMATE_AFTER histories, a tree estimated to need more
    than ten times the memory the walk may take stops it at once. Here 100 bytes a history:
    1e12 histories need 100 TB of 600 MB; 2e6 need 200 MB, and the walk goes on."""
    after = limits.ESTIMATE_AFTER
    readings = iter([0, 100 * after, 100 * after + 1])
    monkeypatch.setattr(limits, "resident_memory", lambda: next(readings))
    monkeypatch.setattr(limits, "available_memory", lambda: 1000 * 10**6)
    asked = []
    walk = limits.WalkLimits("huge", estimate=lambda: asked.append(1) or estimate)
    assert walk.check(64) is None  # the baseline
    if stops:
        message = r"about 1,000,000,000,000 histories \(Knuth's estimate\), some 93,132 GiB"
        with pytest.raises(GameTooLarge, match=message):
            walk.check(after + 64)
    else:
        assert walk.check(after + 64) is not None
        walk.check(after + 128)
    assert asked == [1]  # asked once, however long the walk


class _DeepOps:
    """The StateOps of a game whose every path is 300 moves deep with 1,000 moves a node: some
    1e900 histories, far past the largest float (OpenSpiel's chess: about 1e800)."""

    def player(self, depth):
        return 0 if depth < 300 else limits.TERMINAL

    def legal(self, depth):
        return range(1000)

    def child(self, depth, action):
        return depth + 1


def test_a_deep_games_estimate_is_exact_past_the_largest_float(monkeypatch):
    """`nashzoo train --game openspiel:chess` failed after 4 minutes and 9 GB with "cannot
    convert float infinity to integer": the estimate of its size was inf, and the refusal could
    not print it. The estimate is now a whole number, exact at any size, and the refusal says
    it."""
    estimate = limits.sampled_size(0, _DeepOps(), paths=2)
    assert estimate == sum(1000**d for d in range(301))  # 1.001e900
    readings = iter([0, 100 * 64])  # 100 bytes a history
    monkeypatch.setattr(limits, "resident_memory", lambda: next(readings))
    monkeypatch.setattr(limits, "available_memory", lambda: 10**9)
    monkeypatch.setattr(limits, "ESTIMATE_AFTER", 100)
    walk = limits.WalkLimits("deep", estimate=lambda: estimate)
    assert walk.check(64) is None
    message = r"about 1.00e\+900 histories \(Knuth's estimate\), some 9.32e\+892 GiB"
    with pytest.raises(GameTooLarge, match=message):
        walk.check(128)


def test_a_slow_walk_asks_for_the_estimate_after_some_seconds(monkeypatch):
    """A slow game reached ESTIMATE_AFTER histories only after minutes (OpenSpiel's chess: four
    minutes and 9 GB); past ESTIMATE_AFTER_SECONDS of walking the estimate is asked however
    few histories were walked."""
    now = itertools.count(0.0, 4.0)  # each look four seconds after the last
    monkeypatch.setattr(limits, "_clock", lambda: next(now))
    readings = itertools.count(0, 100 * 64)
    monkeypatch.setattr(limits, "resident_memory", lambda: next(readings))
    monkeypatch.setattr(limits, "available_memory", lambda: 10**9)
    asked = []
    walk = limits.WalkLimits("slow", estimate=lambda: asked.append(1) or 10)
    for visited in (64, 128, 192):  # at 4 and 8 seconds: not yet
        walk.check(visited)
    assert asked == []
    walk.check(256)  # at 12 seconds
    assert asked == [1]


@pytest.mark.parametrize("walk", [_fast, walk_states], ids=["fast walk", "checking walk"])
def test_both_walks_ask_for_the_estimate_once_they_grow_long(walk, monkeypatch):
    """The wiring: each walk hands WalkLimits an estimate of its game (here made to refuse any
    tree, and asked from 1,000 histories on)."""
    grows = itertools.count(0, 2**10)
    monkeypatch.setattr(limits, "resident_memory", lambda: next(grows))
    monkeypatch.setattr(limits, "available_memory", lambda: 10**12)
    monkeypatch.setattr(limits, "ESTIMATE_AFTER", 1_000)
    monkeypatch.setattr(limits, "ESTIMATE_MARGIN", 1e-12)
    monkeypatch.setattr(progress, "PROGRESS_EVERY", 64)
    with pytest.raises(GameTooLarge, match=r"histories \(Knuth's estimate\)"):
        walk(load_game("leduc_poker"))


def test_without_memory_figures_only_the_cap_applies(monkeypatch):
    monkeypatch.setattr(limits, "resident_memory", lambda: None)
    monkeypatch.setattr(limits, "available_memory", lambda: None)
    assert _fast(load_game("leduc_poker")).num_nodes == 9457


def test_the_fast_walk_does_not_hand_a_game_too_large_to_the_checking_walk(monkeypatch):
    pytest.importorskip("pyspiel")
    from nashzoo.games import tree

    monkeypatch.setattr(tree, "walk_states", lambda game: pytest.fail("walked twice"))
    monkeypatch.setenv(limits.MAX_HISTORIES_VARIABLE, "1000")
    with pytest.raises(GameTooLarge):
        _compile(load_game("openspiel:leduc_poker"))


@pytest.mark.parametrize("value", ["0", "-5", "many", "1e6"])
def test_a_bad_cap_is_refused_naming_the_variable(value, monkeypatch):
    monkeypatch.setenv(limits.MAX_HISTORIES_VARIABLE, value)
    with pytest.raises(ValueError, match=f"NASHZOO_MAX_HISTORIES={value!r} is not a positive"):
        _fast(load_game("kuhn_poker"))


@pytest.mark.parametrize(
    ("spec", "count"),
    [
        ("liars_dice(numdice=2)", "43,486,542,835"),
        ("liars_dice(numdice=30,dice_sides=30)", "6.06e+630"),  # was an OverflowError
    ],
)
def test_the_command_line_says_it_in_one_line(spec, count, tmp_path, capsys):
    argv = ["train", "--game", spec, "--learner", "cfr_plus"]
    assert main([*argv, "--iterations", "1", "--out", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {load_game(spec).id} has {count} histories")
    assert err.count("\n") == 1


def test_training_a_learner_that_needs_no_tree_on_a_game_too_big_is_refused_before_it_trains(
    monkeypatch,
):
    """NFSP steps through the game's states, but a training run evaluates exactly and returns
    a tabular policy: on a game too big to compile it trained every iteration and failed at the
    end; now it is refused before any learner is built."""
    from nashzoo.agents import base
    from nashzoo.train import train

    monkeypatch.setattr(
        base.Learner, "__init__", lambda *a, **k: pytest.fail("a learner was built")
    )
    with pytest.raises(GameTooLarge, match="43,486,542,835 histories"):
        train("liars_dice(numdice=2)", "nfsp", iterations=3)


def test_an_env_asked_to_tabulate_a_game_too_big_names_the_fix():
    """tabulate=True asks for the whole tree; the fix is the env's states mode, not 'play it
    through nashzoo.envs' (which is what the user is doing)."""
    from nashzoo.envs import env

    with pytest.raises(GameTooLarge, match="leave tabulate at 'auto'"):
        env("liars_dice", numdice=3, tabulate=True)


@pytest.mark.parametrize(
    ("params", "count"),
    [
        ({"numdice": 30, "dice_sides": 30}, r"6\.06e\+630 histories"),  # a float overflowed
        ({"numdice": 500, "dice_sides": 100}, r"\d\.\d\de\+\d{5} histories"),  # 30,000+ digits
        ({"numdice": 3}, r"6\.41e\+15 histories"),  # 6,412,351,813,152,307
    ],
)
def test_a_game_with_a_vast_count_is_refused_in_one_readable_line(params, count, monkeypatch):
    """Liar's dice counts its histories by formula, hundreds of digits of them: the refusal
    writes the count and the memory with an exponent (it overflowed a float, and a count past
    4,300 digits cannot even be printed in full)."""
    game = load_game("liars_dice", **params)
    with pytest.raises(GameTooLarge, match=count + ": compiling them takes about .* GiB") as info:
        _compile(game)
    assert len(str(info.value)) < 500
    monkeypatch.setenv(limits.MAX_HISTORIES_VARIABLE, "1000")
    with pytest.raises(GameTooLarge, match=count + ", over the cap of 1,000") as info:
        _compile(game)
    assert len(str(info.value)) < 500


def test_a_race_on_a_game_too_big_is_refused_before_it_starts(tmp_path, capsys):
    """`nashzoo race --game "liars_dice(numdice=2)"` claimed the folder and started every run,
    each failing in its worker with the same GameTooLarge; it then said "results written to
    ... (results.csv, ..., plots)", none of which existed, and "--resume runs them again",
    which failed alike. `train` refused the game at once; so does `race` now, writing nothing."""
    out = tmp_path / "race"
    race = ["race", "--game", "liars_dice(numdice=2)", "--learners", "cfr_plus,nfsp"]
    assert main([*race, "--seeds", "1", "--budget-seconds", "5", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: liars_dice(numdice=2) has 43,486,542,835 histories")
    assert len(err.splitlines()) == 1 and not out.exists()


def test_the_cap_holds_for_a_game_a_vectorised_builder_compiles(monkeypatch):
    """NASHZOO_MAX_HISTORIES "caps every compile", but Leduc (9,457 histories, built by the
    card builder and not counted beforehand) compiled under a cap of 1,000."""
    from nashzoo.games import GameTooLarge, LeducPokerGame, compile_tree

    class CappedLeduc(LeducPokerGame):  # a key of its own: no tree cached by another test
        name = "_capped_leduc"
        compile_arrays = LeducPokerGame.compile_arrays  # the card builder, as Leduc's

    monkeypatch.setenv(limits.MAX_HISTORIES_VARIABLE, "1000")
    with pytest.raises(GameTooLarge, match="_capped_leduc has 9,457 histories, over the cap of"):
        compile_tree(CappedLeduc())
    with limits.history_cap(50), pytest.raises(GameTooLarge, match="over the cap of 50 set by"):
        compile_tree(CappedLeduc())
    monkeypatch.delenv(limits.MAX_HISTORIES_VARIABLE)
    assert compile_tree(CappedLeduc()).num_nodes == 9_457


def test_a_cap_below_kuhns_size_still_sets_up_a_learner_of_a_smaller_game(monkeypatch):
    """The kernels' warm-up compiled Kuhn through ``compile_tree``: a cap under its 58
    histories refused every learner's set-up, naming kuhn_poker (review)."""
    from nashzoo.agents import make_learner
    from nashzoo.games.treemath import _jit

    monkeypatch.setattr(_jit, "_WARM", False)  # as in a fresh process
    with limits.history_cap(20):
        learner = make_learner("cfr", "rps", 0)  # 13 histories
        learner.step(learner.current_policy())
    assert _jit._WARM == _jit.ENABLED
