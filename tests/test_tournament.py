"""Tournaments: exact payoffs pinned by hand, sampled matches agree with them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nashzoo.eval.tournament import Entrant, load_entrant, round_robin


def test_rps_exact_payoffs_by_hand():
    entrants = [
        load_entrant("rps", "uniform"),
        load_entrant("rps", "fixed:0.3,0.3,0.4"),
        load_entrant("rps", "rock=fixed:1,0,0"),
    ]
    result = round_robin("rps", entrants)
    # rock against (.3, .3, .4): 0.3*0 + 0.3*(-1) + 0.4*(+1) = +0.1
    assert result.exact[2, 1] == pytest.approx(0.1)
    assert result.exact[1, 2] == pytest.approx(-0.1)
    assert np.allclose(result.exact[0], 0.0)  # uniform earns 0 against anything
    assert result.names[result.ranking[0]] == "rock"


def test_sampled_matches_agree_with_exact_within_interval():
    game = "kuhn_poker"
    entrants = [load_entrant(game, "uniform"), load_entrant(game, "equilibrium")]
    result = round_robin(game, entrants, episodes=3000, seed=7)
    # Kuhn: equilibrium vs uniform, both seats averaged, is exactly 1/9 (hand-checked via LP)
    assert result.exact[1, 0] == pytest.approx(1 / 9, abs=1e-9)
    for i in range(2):
        for j in range(2):
            if i != j:
                assert abs(result.sampled[i, j] - result.exact[i, j]) <= result.ci95[i, j]
    assert result.names[result.ranking[0]] == "equilibrium"


def test_entrant_errors(tmp_path):
    with pytest.raises(ValueError, match="neither a built-in"):
        load_entrant("kuhn_poker", "nothing-here")
    with pytest.raises(ValueError, match="probabilities like"):
        load_entrant("rps", "fixed:a,b")
    u = load_entrant("kuhn_poker", "uniform")
    with pytest.raises(ValueError, match="unique"):
        round_robin("kuhn_poker", [u, Entrant("uniform", u.policy)])
    with pytest.raises(ValueError, match="at least two"):
        round_robin("kuhn_poker", [u])


def test_a_spec_string_given_as_an_entrant_names_the_call_that_builds_it():
    """README's ``round_robin(game, entrants, ...)``: a spec passed as is was an AttributeError
    ('str' object has no attribute 'name'); now it is refused with the call to make instead."""
    with pytest.raises(TypeError, match=r"entrant 0 is a str.*load_entrant\(game, 'equilibrium'\)"):
        round_robin("kuhn_poker", ["equilibrium", "uniform"])
    u = load_entrant("kuhn_poker", "uniform")
    with pytest.raises(TypeError, match=r"entrant 1 is a TabularPolicy.*Entrant\(name, policy\)"):
        round_robin("kuhn_poker", [u, u.policy])


def test_the_equilibrium_agent_names_itself_on_a_general_sum_game():
    """On the prisoner's dilemma it said 'solve_game needs a zero-sum ... Use nash_conv /
    exploitability instead', which is no agent to pick."""
    with pytest.raises(ValueError, match=r"^the equilibrium agent needs a two-player zero-sum.*"):
        load_entrant("matrix(preset='prisoners_dilemma')", "equilibrium")


def test_play_matches_on_a_non_square_matrix_game():
    from nashzoo.agents import TabularPolicy
    from nashzoo.eval.tournament import play_matches
    from nashzoo.games import load_game

    game = load_game("matrix", row_payoffs=[[1], [2], [3]])
    uniform = TabularPolicy.uniform(game)
    out = play_matches(game, [uniform, uniform], 300, np.random.default_rng(0))
    assert set(out[:, 0].tolist()) == {1.0, 2.0, 3.0}
    np.testing.assert_array_equal(out[:, 1], -out[:, 0])


def test_rounded_policies_play_and_score_as_exact_ones():
    """Rows within the check's 1e-6 (seven digits, as in a hand-written or rounded file) are
    made exact once accepted: sampled matches no longer trip numpy's 1e-8 check."""
    third = load_entrant("rps", "third=fixed:0.3333333,0.3333333,0.3333333")
    np.testing.assert_allclose(third.policy.probs, np.full((2, 3), 1 / 3), rtol=1e-15)
    result = round_robin("rps", [third, load_entrant("rps", "uniform")], episodes=50)
    assert result.exact[0, 1] == pytest.approx(0.0, abs=1e-15)


def test_tournament_inputs_are_checked():
    from nashzoo.agents import PolicyError, UniformPolicy
    from nashzoo.eval.tournament import play_matches

    u, eq = load_entrant("kuhn_poker", "uniform"), load_entrant("kuhn_poker", "equilibrium")
    with pytest.raises(PolicyError, match="holds a UniformPolicy, not a TabularPolicy"):
        round_robin("kuhn_poker", [Entrant("u", UniformPolicy()), eq])
    for episodes in (2.5, -3, True):
        with pytest.raises(ValueError, match="episodes must be a non-negative integer"):
            round_robin("kuhn_poker", [u, eq], episodes=episodes)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="2 seats but 1 seat policies"):
        play_matches("kuhn_poker", [u.policy], 3, rng)
    with pytest.raises(PolicyError, match="a seat policy must be a Policy"):
        play_matches("kuhn_poker", [lambda infoset: [0.5, 0.5], u.policy], 3, rng)


def test_payoffs_that_round_to_zero_show_as_plus_zero():
    """A draw computed as -1e-17 is not a loss: tables (the tournament's, the race report's)
    never print -0.000."""
    from nashzoo.eval.numbers import format_number

    assert [format_number(v, "+.3f") for v in (-1e-17, -0.0004, -0.0006, 0.25)] == [
        "+0.000",
        "+0.000",
        "-0.001",
        "+0.250",
    ]
    assert format_number(-1e-17, ".2f") == "0.00"
    assert format_number(-1e-17, ".3g") == "-1e-17"  # not fixed-point: shown as it is


def test_sampled_interval_comes_from_each_seating_not_the_pooled_payoffs():
    """A sampled cell averages two seatings played apart; pooling their payoffs counted the
    difference between the seats as noise. In a game paying seat 0 a fixed +5 every cell is
    exactly 0 with no sampling error: the interval was +-0.695 at 100 matches."""
    game = "matrix(row_payoffs=[[5,5],[5,5]])"
    entrants = [load_entrant(game, "uniform"), load_entrant(game, "a=fixed:1,0")]
    result = round_robin(game, entrants, episodes=100, seed=0)
    np.testing.assert_array_equal(result.sampled, np.zeros((2, 2)))
    np.testing.assert_array_equal(result.ci95, np.zeros((2, 2)))


def test_sampled_interval_matches_the_stratified_formula():
    """The same matches replayed from the seed: each off-diagonal cell is the mean of the two
    seatings' means, its half-width 1.96 * sqrt(var_0 / n + var_1 / n) / 2; a diagonal cell
    averages both seats match by match."""
    from nashzoo.eval.tournament import play_matches

    game = "matrix(row_payoffs=[[3,1],[1,2]])"
    specs = ["uniform", "a=fixed:0.9,0.1", "b=fixed:0.2,0.8"]
    entrants = [load_entrant(game, spec) for spec in specs]
    result = round_robin(game, entrants, episodes=60, seed=4)
    played = {  # each pairing's matches from its own stream (test_each_pairing_is_seeded_...)
        (i, j): play_matches(game, [entrants[i].policy, entrants[j].policy], 60, _stream(4, i, j))
        for i in range(3)
        for j in range(3)
    }
    for i in range(3):
        x = played[i, i].mean(axis=1)
        assert result.sampled[i, i] == pytest.approx(x.mean(), abs=1e-12)
        assert result.ci95[i, i] == pytest.approx(1.96 * x.std(ddof=1) / np.sqrt(60))
        for j in set(range(3)) - {i}:
            first, second = played[i, j][:, 0], played[j, i][:, 1]
            assert result.sampled[i, j] == pytest.approx((first.mean() + second.mean()) / 2)
            half = 1.96 * np.sqrt(first.var(ddof=1) / 60 + second.var(ddof=1) / 60) / 2
            assert result.ci95[i, j] == pytest.approx(half)
    # Seat 0 earns 1 to 3 whoever plays: pooling both seats' payoffs made this 0.31684.
    assert result.ci95[1, 2] == pytest.approx(0.151738, abs=1e-6)


def _stream(seed, row, col):
    """A pairing's stream, spelled out: the seed and the pairing's two places, nothing else."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(row, col)))


def test_each_pairing_is_seeded_on_its_own_whatever_was_played_before_it():
    """The matches of one pairing came from one stream shared by the whole tournament, so they
    depended on every pairing played before them: a resumed tournament, which plays only the
    missing pairings, could not have given the uninterrupted one's table. Each pairing now has
    its own stream, a function of the seed and the pairing alone."""
    from nashzoo.agents import TabularPolicy
    from nashzoo.eval.tournament import assemble, pairing_rng, play_pairing
    from nashzoo.games import load_game

    game = load_game("kuhn_poker")
    uniform = TabularPolicy.uniform(game)
    passer = np.zeros_like(uniform.probs)
    passer[:, 0] = 1.0  # pass or fold at every information set
    entrants = [load_entrant(game, s) for s in ("uniform", "equilibrium")]
    entrants.append(Entrant("passer", TabularPolicy(game, passer)))
    whole = round_robin(game, entrants, episodes=40, seed=3)
    # the pairings one by one, last first, each in a fresh call: the same tournament
    backwards = {
        (i, j): play_pairing(game, entrants, i, j, 40, 3)
        for i, j in reversed([(i, j) for i in range(3) for j in range(3)])
    }
    alone = assemble(game, whole.names, backwards, 40)
    assert alone.to_dict() == whole.to_dict()
    for array in ("exact_seat", "sampled", "ci95"):
        np.testing.assert_array_equal(getattr(alone, array), getattr(whole, array))
    # a pairing's stream is SeedSequence(seed, spawn_key=(row, col)), the same in every process
    a, b = pairing_rng(3, 2, 1).random(4), _stream(3, 2, 1).random(4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, pairing_rng(3, 1, 2).random(4))
    # and two entrants' cell does not move when a third one joins the tournament
    two = round_robin(game, entrants[:2], episodes=40, seed=3)
    np.testing.assert_array_equal(two.sampled, whole.sampled[:2, :2])


def test_an_entrant_against_itself_in_a_zero_sum_game_is_exactly_zero():
    """Both seats of the same matches: the payoffs cancel match by match, so there is no
    sampling error (the interval was +-0.114 at 300 Kuhn matches)."""
    entrants = [load_entrant("kuhn_poker", "uniform"), load_entrant("kuhn_poker", "equilibrium")]
    result = round_robin("kuhn_poker", entrants, episodes=300, seed=1)
    np.testing.assert_array_equal(np.diag(result.sampled), [0.0, 0.0])
    np.testing.assert_array_equal(np.diag(result.ci95), [0.0, 0.0])


def test_one_match_per_seating_gives_no_interval():
    """One payoff says nothing about the spread: no interval (it printed +-1.960 and +-3.920)."""
    entrants = [load_entrant("kuhn_poker", "uniform"), load_entrant("kuhn_poker", "equilibrium")]
    result = round_robin("kuhn_poker", entrants, episodes=1, seed=0)
    assert not np.isnan(result.sampled).any()
    assert np.isnan(result.ci95).all()
    rows = result.table().splitlines()[-2:]
    assert all("+-" not in row and "nan" not in row and "]" in row for row in rows)
    assert result.to_dict()["ci95"] == [[None, None], [None, None]]


def test_equal_scores_rank_by_name_not_by_rounding_noise():
    """In RPS everyone scores 0 against uniform; the LP's equilibrium and rock differ from 0 by
    5.6e-17 either way, which ranked rock first, then uniform, then equilibrium."""
    entrants = [load_entrant("rps", s) for s in ("uniform", "equilibrium", "rock=fixed:1,0,0")]
    result = round_robin("rps", entrants)
    assert [result.names[i] for i in result.ranking] == ["equilibrium", "rock", "uniform"]


# --- a tournament kept in a folder: interrupted, resumed -------------------------------------
KUHN3 = ("uniform", "equilibrium", "passer")


def _kuhn_entrants(names=KUHN3):
    """Three Kuhn entrants (``passer`` passes or folds everywhere) by name."""
    from nashzoo.agents import TabularPolicy
    from nashzoo.games import load_game

    game = load_game("kuhn_poker")
    passer = np.zeros_like(TabularPolicy.uniform(game).probs)
    passer[:, 0] = 1.0
    built = {
        "uniform": load_entrant(game, "uniform"),
        "equilibrium": load_entrant(game, "equilibrium"),
        "passer": Entrant("passer", TabularPolicy(game, passer)),
    }
    return [built[name] for name in names]


def _stop_at(monkeypatch, call, error=KeyboardInterrupt):
    """Make the ``call``-th pairing played raise ``error`` (Ctrl-C by default) once; the
    pairings played, as (row, col), are appended to the list returned."""
    import nashzoo.eval.tournament_folder as tournament_folder

    played = []
    calls = []
    real = tournament_folder.play_pairing

    def play(game, entrants, row, col, episodes, seed):
        calls.append((row, col))
        if len(calls) == call:
            raise error("stopped here")
        played.append((row, col))
        return real(game, entrants, row, col, episodes, seed)

    monkeypatch.setattr(tournament_folder, "play_pairing", play)
    return played


def _pairing_files(folder):
    return sorted(p.name for p in (folder / "pairings").glob("*.json"))


def test_an_interrupted_tournament_keeps_its_pairings_and_a_resume_plays_only_the_rest(
    tmp_path, monkeypatch
):
    """An interrupted tournament kept nothing; each pairing is now written as it finishes, and
    resume=True plays only the missing ones, ending with the uninterrupted tournament's result
    and tournament.json, byte for byte."""
    entrants = _kuhn_entrants()
    straight = round_robin("kuhn_poker", entrants, episodes=30, seed=5, out=tmp_path / "straight")
    played = _stop_at(monkeypatch, call=4)
    out = tmp_path / "tour"
    with pytest.raises(KeyboardInterrupt):
        round_robin("kuhn_poker", entrants, episodes=30, seed=5, out=out)
    assert _pairing_files(out) == ["0-0.json", "0-1.json", "0-2.json"]
    assert not (out / "tournament.json").exists()
    played.clear()
    resumed = round_robin("kuhn_poker", entrants, episodes=30, seed=5, out=out, resume=True)
    assert played == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]  # the missing six only
    assert resumed.to_dict() == straight.to_dict()
    for array in ("exact_seat", "exact", "sampled", "ci95"):
        np.testing.assert_array_equal(getattr(resumed, array), getattr(straight, array))
    assert (out / "tournament.json").read_bytes() == (
        tmp_path / "straight" / "tournament.json"
    ).read_bytes()
    # the folder's result is the one of a tournament played in memory, with no folder
    assert round_robin("kuhn_poker", entrants, episodes=30, seed=5).to_dict() == straight.to_dict()
    # resuming a finished tournament plays nothing and gives the same result again
    played.clear()
    again = round_robin("kuhn_poker", entrants, episodes=30, seed=5, out=out, resume=True)
    assert played == [] and again.to_dict() == straight.to_dict()


def test_a_pairing_that_fails_leaves_the_finished_ones_kept(tmp_path, monkeypatch):
    """A crash in one pairing (here a RuntimeError in the fifth) keeps the four before it."""
    entrants = _kuhn_entrants()
    _stop_at(monkeypatch, call=5, error=RuntimeError)
    with pytest.raises(RuntimeError, match="stopped here"):
        round_robin("kuhn_poker", entrants, episodes=5, out=tmp_path)
    assert _pairing_files(tmp_path) == ["0-0.json", "0-1.json", "0-2.json", "1-0.json"]


def test_a_folder_holding_a_tournament_is_refused_unless_resumed_or_replaced(tmp_path):
    """Like train's and race's --out: no silent overwrite; force starts over."""
    from nashzoo.eval.tournament_folder import TournamentFolderError

    entrants = _kuhn_entrants()
    round_robin("kuhn_poker", entrants, out=tmp_path)
    with pytest.raises(TournamentFolderError, match=r"already holds a tournament .*--resume"):
        round_robin("kuhn_poker", entrants, out=tmp_path)
    (tmp_path / "pairings" / "0-1.json").unlink()
    other = _kuhn_entrants(("passer", "uniform"))
    replaced = round_robin("kuhn_poker", other, out=tmp_path, force=True)
    assert replaced.names == ("passer", "uniform")
    assert _pairing_files(tmp_path) == ["0-0.json", "0-1.json", "1-0.json", "1-1.json"]
    with pytest.raises(ValueError, match="choose one"):
        round_robin("kuhn_poker", entrants, out=tmp_path, resume=True, force=True)
    with pytest.raises(ValueError, match="give out=FOLDER"):
        round_robin("kuhn_poker", entrants, resume=True)
    # a tournament.json without its config (an older nashzoo's): nothing to resume
    (tmp_path / "tournament_config.json").unlink()
    with pytest.raises(TournamentFolderError, match="no tournament to resume; start over with"):
        round_robin("kuhn_poker", other, out=tmp_path, resume=True)
    with pytest.raises(TournamentFolderError) as refused:
        round_robin("kuhn_poker", other, out=tmp_path)
    assert "--force" in str(refused.value) and "--resume" not in str(refused.value)
    # resume in an empty folder starts the tournament
    assert round_robin("kuhn_poker", other, out=tmp_path / "new", resume=True).names == (
        "passer",
        "uniform",
    )


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"episodes": 20}, r"--episodes 20 \(the tournament has 10\)"),
        ({"seed": 1}, r"--seed 1 \(the tournament has 0\)"),
        ({"entrants": ("equilibrium", "uniform")}, r"the entrants equilibrium, uniform \(the "),
        ({"entrants": ("passer", "uniform", "equilibrium")}, "passer, uniform, equilibrium"),
        ({"entrants": ("uniform", "equilibrium", "passer"), "seed": 1}, r"has --seed 1 \(the"),
        ({"policy": True}, "entrant 'equilibrium' with another policy"),
        ({"game": "leduc_poker"}, r"--game leduc_poker \(the tournament has kuhn_poker\)"),
    ],
)
def test_a_resume_of_another_tournament_is_refused_naming_the_difference(tmp_path, change, named):
    from nashzoo.eval.tournament_folder import TournamentFolderError

    round_robin("kuhn_poker", _kuhn_entrants(("uniform", "equilibrium")), episodes=10, out=tmp_path)
    game = change.get("game", "kuhn_poker")
    if "game" in change:
        entrants = [load_entrant(game, "uniform"), load_entrant(game, "equilibrium")]
    else:
        entrants = _kuhn_entrants(change.get("entrants", ("uniform", "equilibrium")))
    if change.get("policy"):
        entrants[1] = Entrant("equilibrium", entrants[0].policy)  # uniform, under its name
    options = {"episodes": change.get("episodes", 10), "seed": change.get("seed", 0)}
    before = sorted(p.read_bytes() for p in tmp_path.rglob("*.json"))
    with pytest.raises(TournamentFolderError, match=named) as refused:
        round_robin(game, entrants, **options, out=tmp_path, resume=True)
    assert "or start a new tournament (--force, or another --out)" in str(refused.value)
    assert "; new entrants may follow its own, in the same order (the tournament grows); or" in str(
        refused.value
    )
    assert sorted(p.read_bytes() for p in tmp_path.rglob("*.json")) == before  # untouched


def _edit_a_number(path, value=None):
    """Change a payoff in a pairing file; with ``value``, put it there and sign the file
    again (its checksum then matches: only the field checks can refuse it)."""
    import json

    from nashzoo.eval.tournament_folder import _digest

    payload = json.loads(path.read_text())
    payload["exact"][0] = payload["exact"][0] + 1.0 if value is None else value
    if value is not None:
        payload["checksum"] = _digest(payload)
    path.write_text(json.dumps(payload))


@pytest.mark.parametrize(
    "damage", ["truncated", "edited", "another tournament's", "not json", "huge", "a string"]
)
def test_a_damaged_pairing_file_is_played_again_with_a_warning(tmp_path, damage):
    """A pairing file that is not this tournament's whole pairing is never trusted: it is
    played again (the same matches: the same result), and a warning names the file."""
    entrants = _kuhn_entrants()
    straight = round_robin("kuhn_poker", entrants, episodes=20, seed=2)
    out = tmp_path / "tour"
    round_robin("kuhn_poker", entrants, episodes=20, seed=2, out=out)
    path = out / "pairings" / "1-2.json"
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:40])
    elif damage == "edited":
        _edit_a_number(path)
    elif damage == "another tournament's":
        round_robin("kuhn_poker", entrants, episodes=20, seed=3, out=tmp_path / "other")
        path.write_bytes((tmp_path / "other" / "pairings" / "1-2.json").read_bytes())
    elif damage == "not json":
        path.write_bytes(b"\x00\xff")
    else:  # re-signed, with a payoff no float holds, or no number at all
        _edit_a_number(path, 10**400 if damage == "huge" else "1.0")
    with pytest.warns(UserWarning, match=r"1-2\.json.*: playing equilibrium vs passer again"):
        resumed = round_robin("kuhn_poker", entrants, episodes=20, seed=2, out=out, resume=True)
    assert resumed.to_dict() == straight.to_dict()


def test_a_damaged_tournament_config_is_refused_in_one_line(tmp_path):
    from nashzoo.eval.tournament_folder import TournamentFolderError

    entrants = _kuhn_entrants()
    round_robin("kuhn_poker", entrants, out=tmp_path)
    (tmp_path / "tournament_config.json").write_text('{"format": "nashzoo.Tournament/1"')
    with pytest.raises(TournamentFolderError, match="not a readable tournament config") as err:
        round_robin("kuhn_poker", entrants, out=tmp_path, resume=True)
    assert "start over with --force" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("landed", ["before the rename", "after the rename"])
def test_an_interruption_inside_a_pairings_write_is_counted_as_the_folder_holds_it(
    tmp_path, monkeypatch, landed
):
    """Ctrl-C while the second pairing's file is written: it is counted as kept exactly when
    its file is in place (the count is what the resume will find)."""
    import nashzoo.eval.tournament_folder as tournament_folder
    from nashzoo.eval.tournament_folder import open_tournament
    from nashzoo.games import load_game

    real, writes = tournament_folder.atomic_write_bytes, []

    def write(path, data, **kwargs):
        writes.append(path)
        if len(writes) == 2 and landed == "before the rename":
            raise KeyboardInterrupt
        real(path, data, **kwargs)
        if len(writes) == 2:
            raise KeyboardInterrupt

    game = load_game("kuhn_poker")
    entrants = _kuhn_entrants()
    with open_tournament(tmp_path, game, entrants, episodes=0, seed=0) as tournament:
        monkeypatch.setattr(tournament_folder, "atomic_write_bytes", write)
        with pytest.raises(KeyboardInterrupt):
            tournament.play()
    kept = 1 if landed == "before the rename" else 2
    assert len(tournament.pairings) == kept == len(_pairing_files(tmp_path))


def test_a_kept_tournament_grows_playing_only_the_pairings_of_the_entrant_added(
    tmp_path, monkeypatch, capsys
):
    """A resume with the stored entrants followed by a new one was refused as another
    tournament ("the entrants uniform, equilibrium, passer"); it now plays only the pairings
    with the new entrant (on both seats, and against itself), keeps the earlier pairing files
    as they are, and writes the tournament.json of the whole list played at once, byte for
    byte, also when the growing is interrupted and resumed."""
    import json

    straight = tmp_path / "straight"
    whole = round_robin("kuhn_poker", _kuhn_entrants(), episodes=30, seed=5, out=straight)
    out = tmp_path / "tour"
    round_robin("kuhn_poker", _kuhn_entrants(KUHN3[:2]), episodes=30, seed=5, out=out)
    earlier = {p.name: p.read_bytes() for p in (out / "pairings").iterdir()}
    played = _stop_at(monkeypatch, call=3)
    with pytest.raises(KeyboardInterrupt):
        round_robin("kuhn_poker", _kuhn_entrants(), episodes=30, seed=5, out=out, resume=True)
    assert played == [(0, 2), (1, 2)]  # the new entrant's pairings only
    assert not (out / "tournament.json").exists()  # the two-entrant table is not this one
    config = json.loads((out / "tournament_config.json").read_text())
    assert [e["name"] for e in config["entrants"]] == list(KUHN3)
    assert config["specs"] is None  # passer was built by hand: no spec to store
    played.clear()
    capsys.readouterr()
    grown = round_robin(
        "kuhn_poker", _kuhn_entrants(), episodes=30, seed=5, out=out, resume=True, progress=True
    )
    assert played == [(2, 0), (2, 1), (2, 2)]
    assert f"resuming the tournament in {out}/: 6 of 9 pairings already played, 3 to play" in (
        capsys.readouterr().err
    )
    assert grown.to_dict() == whole.to_dict()
    assert (out / "tournament.json").read_bytes() == (straight / "tournament.json").read_bytes()
    assert all((out / "pairings" / name).read_bytes() == data for name, data in earlier.items())
    # growing a finished tournament says what it adds
    out = tmp_path / "finished"
    round_robin("kuhn_poker", _kuhn_entrants(KUHN3[:2]), episodes=30, seed=5, out=out)
    played.clear()
    grown = round_robin(
        "kuhn_poker", _kuhn_entrants(), episodes=30, seed=5, out=out, resume=True, progress=True
    )
    assert played == [(0, 2), (1, 2), (2, 0), (2, 1), (2, 2)]
    err = capsys.readouterr().err
    assert f"adding 1 entrant (passer) to the tournament in {out}/: 5 new pairings; 4 kept\n" in err
    assert (out / "tournament.json").read_bytes() == (straight / "tournament.json").read_bytes()


def test_round_robin_into_a_folder_stores_the_specs_of_entrants_built_from_one(tmp_path):
    """round_robin(out=...) stored no specs, so the folder could not be resumed from the
    command line without the entrants typed; an entrant made by load_entrant keeps its spec,
    and when every entrant has one they are stored, as the command line stores them."""
    import json

    specs = ["uniform", "eq=equilibrium"]
    entrants = [load_entrant("kuhn_poker", spec) for spec in specs]
    assert [entrant.spec for entrant in entrants] == specs
    round_robin("kuhn_poker", entrants, out=tmp_path / "specs")
    stored = json.loads((tmp_path / "specs" / "tournament_config.json").read_text())
    assert stored["specs"] == specs and stored["working_directory"] == str(Path.cwd())
    round_robin("kuhn_poker", _kuhn_entrants(), out=tmp_path / "none")
    stored = json.loads((tmp_path / "none" / "tournament_config.json").read_text())
    assert stored["specs"] is None and "working_directory" not in stored


def test_a_fixed_entrant_takes_one_strategy_per_seat_where_the_seats_differ():
    """A 2x3 matrix game: ``fixed:P;Q`` plays P as the row player and Q as the column player
    (exact payoff by hand); one strategy that fits only one seat says how to give two."""
    from nashzoo.agents import PolicyError
    from nashzoo.games import load_game

    game = load_game("matrix(row_payoffs=[[1,-2,3],[0,4,-1]])")
    entrant = load_entrant(game, "fixed:0.5,0.5;0.2,0.3,0.5")
    result = round_robin(game, [entrant, load_entrant(game, "fixed:1,0;0,0,1")], episodes=0)
    # Seat 0 of the first entrant (0.5, 0.5) against seat 1 of the second (always a2): row
    # payoff 0.5 * 3 + 0.5 * -1 = 1. Seat 1 (0.2, 0.3, 0.5) against the row player's a0:
    # -(0.2 * 1 + 0.3 * -2 + 0.5 * 3) = -1.1. Mean over the two seats: -0.05.
    assert result.exact_seat[0, 1, 0] == pytest.approx(1.0)
    assert result.exact_seat[1, 0, 1] == pytest.approx(-1.1)
    assert result.exact[0, 1] == pytest.approx(-0.05)
    with pytest.raises(PolicyError, match="give one strategy per seat, separated by ';'"):
        load_entrant(game, "fixed:0.2,0.3,0.5")
    with pytest.raises(ValueError, match="3 strategies separated by ';' for 2 seats"):
        load_entrant(game, "fixed:0.5,0.5;0.2,0.3,0.5;1")
