"""What nashzoo offers, from the command line: ``nashzoo games`` (the games, their sizes, one
game's exact value, OpenSpiel's games the bridge loads), ``nashzoo learners`` (the learners,
one learner's settings) and ``nashzoo solve`` (an exact equilibrium to a policy file)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import subprocess
import sys
import textwrap

import pytest

from nashzoo.agents import learner_class, learner_names
from nashzoo.agents.catalog import REQUIRED, config_fields, learner_facts
from nashzoo.cli import main
from nashzoo.games import GameTooLarge, LeducPokerGame, limits, load_game, progress, unregister_game
from nashzoo.games import fast_walk as fw
from nashzoo.games.catalog import TOO_BIG, GameSize, game_size
from nashzoo.train.settings import SettingsError, check_overrides, parse_value


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _error(capsys, argv, code=1):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    return err


# --- nashzoo games -------------------------------------------------------------------------------
def test_the_games_table_counts_every_built_in_game(capsys):
    rows = {row["name"]: row for row in _json(capsys, ["games", "--json"])}
    assert list(rows) == ["rps", "matrix", "kuhn_poker", "leduc_poker", "liars_dice"]
    sizes = {name: (r["histories"], r["infosets"], r["terminals"]) for name, r in rows.items()}
    assert sizes["rps"] == (13, 2, 9)
    assert sizes["kuhn_poker"] == (58, 12, 30)
    assert sizes["leduc_poker"] == (9_457, 936, 5_520)
    assert sizes["liars_dice"] == (294_883, 24_576, 147_420)
    assert rows["liars_dice"]["parameters"] == {
        "numdice": 1,
        "dice_sides": 6,
        "bidding_rule": "reset-face",
        "players": 2,
    }
    assert rows["kuhn_poker"]["parameters"] == {} and rows["kuhn_poker"]["players"] == 2
    assert rows["leduc_poker"]["pettingzoo_env"] == "nashzoo/leduc_holdem-v0"
    # matrix needs a preset or payoffs: listed with its parameters, uncounted, and why
    assert list(rows["matrix"]["parameters"]) == [
        "preset",
        "row_payoffs",
        "col_payoffs",
        "action_names",
    ]
    assert rows["matrix"]["histories"] is None
    assert "needs preset=NAME or row_payoffs" in rows["matrix"]["note"]

    assert main(["games"]) == 0
    table = capsys.readouterr().out.splitlines()
    liars = next(line for line in table if line.startswith("liars_dice "))
    assert liars.split()[-3:] == ["294,883", "24,576", "nashzoo/liars_dice-v0"]
    assert "dice_sides=6" in liars


@pytest.mark.parametrize(
    ("spec", "histories", "infosets", "value0", "uniform"),
    [
        ("kuhn_poker", 58, 12, -1 / 18, 11 / 24),
        ("leduc_poker", 9_457, 936, -0.0856064240780005, 2.373611111111111),
        ("rps", 13, 2, 0.0, 0.0),
        ("liars_dice(numdice=1,dice_sides=4)", 8_181, 1_024, 0.0625, 0.6550595238095238),
    ],
)
def test_a_described_game_has_its_size_and_exact_value(
    capsys, spec, histories, infosets, value0, uniform
):
    facts = _json(capsys, ["games", spec, "--json"])
    assert (facts["histories"], facts["infosets"]) == (histories, infosets)
    assert facts["value"][0] == pytest.approx(value0, abs=1e-12)
    assert facts["value"][1] == pytest.approx(-value0, abs=1e-12)
    assert facts["equilibrium_nash_conv"] < 1e-12
    assert facts["uniform_exploitability"] == pytest.approx(uniform, abs=1e-12)


def test_a_described_game_shows_its_own_parameters(capsys):
    facts = _json(capsys, ["games", "liars_dice(numdice=1,dice_sides=4)", "--json"])
    assert facts["game_id"] == "liars_dice(dice_sides=4)"
    assert facts["parameters"]["dice_sides"] == 4 and facts["parameters"]["numdice"] == 1
    assert main(["games", "kuhn_poker"]) == 0
    lines = dict(line.split("  ", 1) for line in capsys.readouterr().out.splitlines())
    assert lines["value"].strip() == "player 0 -0.0555555555556, player 1 0.0555555555556"
    assert lines["information sets"].strip() == "12"


def test_a_general_sum_game_is_described_without_a_value(capsys):
    facts = _json(capsys, ["games", "matrix:prisoners_dilemma", "--json"])
    assert facts["value"] is None and facts["histories"] == 7  # 2x2: 1 + 2 + 4
    assert facts["value_note"].startswith("no single value: it is general-sum")
    assert facts["uniform_exploitability"] == pytest.approx(0.75)


def test_a_game_too_big_to_count_says_so_instead_of_compiling(capsys):
    """Liar's dice with two dice has 43,486,542,835 histories (counted by formula): shown,
    and nothing compiled."""
    facts = _json(capsys, ["games", "liars_dice(numdice=2)", "--json"])
    assert facts["histories"] == 43_486_542_835
    assert facts["infosets"] is None and facts["note"] == TOO_BIG
    assert "value" not in facts
    size = game_size(load_game("liars_dice"), cap=100_000)
    assert size == GameSize(294_883, None, None, TOO_BIG)


class _WalkedLeduc(LeducPokerGame):
    """Leduc compiled by walking its States, as a plugin's game is."""

    compile_arrays = None


def test_a_walked_game_past_the_cap_is_too_big_to_count():
    size = game_size(_WalkedLeduc(), cap=500)
    assert (size.histories, size.infosets, size.note) == (None, None, TOO_BIG)
    assert game_size(_WalkedLeduc()).infosets == 936


def test_history_cap_stops_a_walk_by_histories_and_by_time(monkeypatch):
    game = _WalkedLeduc()
    walk = lambda: fw.walk(game, game.new_initial_state(), fw.state_ops(game))  # noqa: E731
    with limits.history_cap(500), pytest.raises(GameTooLarge, match="more than the 500 hist"):
        walk()
    ticks = itertools.count()  # a clock that moves one second at every reading
    monkeypatch.setattr(limits, "_clock", lambda: float(next(ticks)))
    monkeypatch.setattr(progress, "PROGRESS_EVERY", 64)  # a look every 64 histories
    message = "was not compiled within the 2.5 s that nashzoo.games.limits.history_cap allows"
    with limits.history_cap(10**9, seconds=2.5), pytest.raises(GameTooLarge, match=message):
        walk()
    assert walk().num_nodes == 9_457  # outside the block: no cap


def test_a_plugin_game_is_listed_with_its_parameters(tmp_path, monkeypatch, capsys):
    (tmp_path / "catalog_plugin_game.py").write_text(
        textwrap.dedent(
            """
            from nashzoo.games import KuhnPokerGame, register_game

            class CatalogKuhn(KuhnPokerGame):
                name = "catalog_kuhn"

            def make(ante: int = 1, deck: str = "JQK") -> CatalogKuhn:
                return CatalogKuhn()

            register_game("catalog_kuhn", make)
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        rows = _json(capsys, ["--plugin", "catalog_plugin_game", "games", "--json"])
    finally:
        unregister_game("catalog_kuhn")
    row = rows[-1]
    assert row["name"] == "catalog_kuhn"
    assert row["parameters"] == {"ante": 1, "deck": "JQK"}
    assert (row["histories"], row["infosets"], row["pettingzoo_env"]) == (58, 12, None)


def test_a_bad_game_spec_is_one_line(capsys):
    assert "unknown game 'nope'; valid games: rps" in _error(capsys, ["games", "nope"])
    assert "closing ')'" in _error(capsys, ["games", "liars_dice(numdice=1"])
    assert "unknown game 'nope'" in _error(capsys, ["solve", "nope"])
    _error(capsys, ["games", "--openspiel", "kuhn_poker"], code=2)


def test_openspiel_games_the_bridge_loads_are_listed_from_their_types(capsys):
    pytest.importorskip("pyspiel")
    entries = {e["name"]: e for e in _json(capsys, ["games", "--openspiel", "--json"])}
    assert entries["kuhn_poker"]["spec"] == "openspiel:kuhn_poker"
    assert entries["goofspiel"]["dynamics"] == "simultaneous"
    assert entries["leduc_poker"]["utility"] == "zero-sum"
    # one player, four players, no information-state strings, sampled chance, mean-field
    for name in ("2048", "bridge", "backgammon", "add_noise", "mfg_garnet"):
        assert name not in entries
    for name in ("kuhn_poker", "goofspiel", "matrix_rps", "tic_tac_toe", "liars_dice"):
        load_game(entries[name]["spec"])  # what is listed loads
    assert main(["games", "--openspiel"]) == 0
    assert "Checked only when a game is loaded or compiled" in capsys.readouterr().out


def test_openspiel_listing_without_open_spiel_names_the_extra(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # as if open_spiel were not installed
    err = _error(capsys, ["games", "--openspiel"])
    assert "pip install 'nashzoo[openspiel]'" in err


# --- nashzoo learners ----------------------------------------------------------------------------
def test_the_learners_table_lists_every_learner_with_its_kind_and_extra(capsys):
    rows = {row["name"]: row for row in _json(capsys, ["learners", "--json"])}
    assert list(rows) == learner_names()
    assert rows["cfr_plus"]["kind"] == "tabular" and rows["cfr_plus"]["extra"] is None
    assert rows["es_mccfr"]["kind"] == "sampling"
    assert rows["uniform"]["kind"] == "fixed" and rows["uniform"]["learns"] is False
    assert rows["nfsp"]["kind"] == "neural" and rows["nfsp"]["extra"] == "neural"
    assert rows["ppo"]["extra"] == "rl" and "stable-baselines3" in rows["ppo"]["packages"]
    assert rows["cfr"]["summary"].startswith("Vanilla CFR (Zinkevich et al. 2007)")
    assert rows["nfsp"]["summary"] == "Neural Fictitious Self-Play for one seat."


def test_a_learner_whose_extra_is_missing_says_so(capsys, monkeypatch):
    from nashzoo.agents import catalog

    monkeypatch.setattr(catalog, "_installed", lambda distribution: distribution != "torch")
    assert main(["learners"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "torch (nashzoo[neural]) (not installed)" in rows["nfsp"]
    assert "(not installed)" not in rows["cfr"]


def test_listing_the_learners_does_not_import_torch():
    code = (
        "import sys\nfrom nashzoo.cli import main\nassert main(['learners']) == 0\n"
        "print('torch' in sys.modules, 'stable_baselines3' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "False False"


def test_a_learners_settings_are_its_config_fields(capsys):
    facts = _json(capsys, ["learners", "os_mccfr", "--json"])
    fields = {f["name"]: f for f in facts["fields"]}
    assert list(fields) == ["exploration", "trajectories_per_step", "averaging", "weighting"]
    assert fields["exploration"]["type"] == "float" and fields["exploration"]["default"] == "0.6"
    assert fields["averaging"]["type"] == "'stochastic' | 'exact'"
    assert fields["exploration"]["doc"].startswith("epsilon of the epsilon-on-policy sampling")
    assert main(["learners", "cfr_plus"]) == 0
    out = capsys.readouterr().out
    assert "  averaging_delay: int = 0\n" in out and "--set cfr_plus.FIELD=VALUE" in out


def test_every_listed_setting_is_one_the_command_line_takes(builtin_learner):
    """Each field ``nashzoo learners NAME`` lists, with its listed default typed back, is
    accepted by ``--set NAME.FIELD=VALUE`` (the same check as NAME(FIELD=VALUE)): its name and
    its type. (The config's own checks may still want more: ``fixed`` needs a strategy.)"""
    name = builtin_learner
    try:
        fields = config_fields(name)
    except ImportError:
        pytest.skip(f"{name}'s extra is not installed")
    assert learner_facts(name).name == name
    typed = {f.name: parse_value(f.default) for f in fields if f.default != REQUIRED}
    declared = dataclasses.fields(learner_class(name).Config)
    assert [f.name for f in fields] == [f.name for f in declared]
    defaults = {
        f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
        for f in declared
        if f.name in typed
    }
    try:  # the listed defaults, typed back, are the config's own defaults
        assert check_overrides(name, name, typed) == defaults
    except SettingsError as err:
        assert name == "fixed" and "needs exactly one of strategy= " in str(err)


def test_a_listed_settings_text_agrees_with_its_default(builtin_learner):
    """``nashzoo learners mmd_ppo`` listed ``n_epochs: int = 4`` over PPO's text "passes over
    each rollout (10)": a subclass changing a default kept its parent's entry. A number in
    parentheses in a setting's text is its default (a cited year aside), and no entry points to
    a table "below", which the listing does not show."""
    import re

    try:
        fields = config_fields(builtin_learner)
    except ImportError:
        pytest.skip(f"{builtin_learner}'s extra is not installed")
    for field in fields:
        assert not re.search(r"(table|see|section) below", field.doc), (field.name, field.doc)
        try:
            default = float(field.default)
        except ValueError:
            continue
        for shown in re.findall(r"\((?:default:? )?(-?[0-9][0-9.e-]*)\)", field.doc):
            cited = re.search(rf"[A-Z][a-z]+(?: et al\.)? \({shown}\)", field.doc)  # a year
            assert cited or float(shown) == default, (field.name, field.default, field.doc)


def test_a_plugin_config_with_an_annotation_only_type_checkers_import_is_listed():
    """A plugin config may name a type it imports only for type checkers: the command line
    does not type-check such fields (config_fields.field_hints), and the listing says so
    (``any``) rather than failing with the NameError of resolving the annotation."""
    import dataclasses as dc

    from nashzoo.agents import register
    from nashzoo.agents.base import LearnerConfig
    from nashzoo.agents.fixed import UniformLearner
    from nashzoo.agents.registry import _REGISTRY

    @dc.dataclass(frozen=True)
    class UnreadableConfig(LearnerConfig):
        shape: OnlyForTypeCheckers | None = None  # type: ignore[name-defined]  # noqa: F821
        rate: float = 0.5

    class Unreadable(UniformLearner):
        name = "catalog_unreadable"
        Config = UnreadableConfig

    register(Unreadable)
    try:
        fields = {f.name: (f.type, f.default) for f in config_fields("catalog_unreadable")}
    finally:
        _REGISTRY.pop("catalog_unreadable", None)
    assert fields == {"shape": ("any", "None"), "rate": ("any", "0.5")}


def test_an_unknown_learner_is_one_line(capsys):
    message = _error(capsys, ["learners", "nope"])
    assert "unknown learner 'nope'; valid learners: " in message  # (others' test plugins too)
    assert "cfr, cfr_plus, dcfr" in message and len(message.splitlines()) == 1


# --- nashzoo solve -------------------------------------------------------------------------------
def test_solve_writes_an_equilibrium_that_eval_and_tournament_read(tmp_path, capsys):
    out = tmp_path / "eq" / "kuhn.json"
    solved = _json(capsys, ["solve", "kuhn_poker", "--out", str(out), "--json"])
    assert solved["value"][0] == pytest.approx(-1 / 18, abs=1e-12)
    assert solved["nash_conv"] < 1e-12
    report = _json(capsys, ["eval", str(out), "--json"])
    assert report["nash_conv"] < 1e-12
    assert main(["tournament", "uniform", f"eq={out}", "--episodes", "0"]) == 0
    assert "1. eq" in capsys.readouterr().out
    assert main(["solve", "rps"]) == 0
    assert "value: player 0 0, player 1 0" in capsys.readouterr().out


def test_solve_and_games_take_the_game_as_every_other_command_does_too(capsys):
    """``--game SPEC`` (how train, race, eval and play name a game) works for solve and games as
    their positional GAME_SPEC does; two different games, or none for solve, are one line."""
    assert _json(capsys, ["solve", "--game", "kuhn_poker", "--json"])["game"] == "kuhn_poker"
    assert _json(capsys, ["solve", "rps", "--game", "rps", "--json"])["game"] == "rps"
    assert main(["games", "--game", "leduc_poker"]) == 0
    assert "9,457" in capsys.readouterr().out
    err = _error(capsys, ["solve", "kuhn_poker", "--game", "leduc_poker"], code=2)
    assert "two games given, 'kuhn_poker' and --game 'leduc_poker'; give one" in err
    err = _error(capsys, ["solve"], code=2)
    assert "which game? e.g. nashzoo solve kuhn_poker" in err and len(err.splitlines()) == 1
    err = _error(capsys, ["games", "--game", "kuhn_poker", "--openspiel"], code=2)
    assert "give no GAME_SPEC with it" in err


def test_solve_refuses_a_game_without_a_value(capsys):
    err = _error(capsys, ["solve", "matrix:prisoners_dilemma"])
    assert "needs a two-player zero-sum (or constant-sum) game" in err
    assert "is general-sum" in err


def test_a_slow_lp_is_skipped_by_games_and_solved_after_a_warning_by_solve(capsys, monkeypatch):
    from nashzoo.eval import lp

    monkeypatch.setattr(lp, "CHEAP_LP_TERMINALS", 5)
    spec = "matrix(row_payoffs=[[1, -2, 3], [0, 4, -1]])"  # 6 terminals; solved nowhere else
    facts = _json(capsys, ["games", spec, "--json"])
    assert facts["value"] is None
    assert facts["value_note"].startswith("not solved here: 6 terminal histories, over the 5 ")
    assert main(["solve", spec, "--json"]) == 0
    captured = capsys.readouterr()
    solved = json.loads(captured.out)
    assert solved["value"][0] == pytest.approx(4 / 7, abs=1e-12) and solved["nash_conv"] < 1e-12
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(
        "warning: solve_game: matrix(row_payoffs=[[1.0, -2.0, 3.0], [0.0, 4.0, -1.0]]) has 6 "
        "terminal histories, over the 5"
    )


def test_describing_a_game_too_big_to_count_says_why_and_what_gives_its_value(capsys):
    """``nashzoo games "liars_dice(numdice=2)"`` said "too big to count quickly" and "value:
    not computed" without the limit behind it or a way to the value (review of the ladder)."""
    assert main(["games", "liars_dice(numdice=2)"]) == 0
    said = capsys.readouterr().out
    assert "value               not computed: the tree was not compiled" in said
    assert "compiles no game past 1,000,000 histories or" in said
    assert "nashzoo solve 'liars_dice(numdice=2)' computes the value" in said
