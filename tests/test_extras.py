"""Features of optional extras, asked for where the extra is not installed: one line that names
the extra, before any folder is claimed or any work is done (so the retry after installing it,
or without the feature, is not refused as "already holds a run").

The extras are all installed here; a missing one is simulated by hiding its package from
``importlib.util.find_spec``, which is what :mod:`nashzoo.extras` asks.
"""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path

import pytest

from nashzoo import __version__
from nashzoo.cli import main
from nashzoo.extras import MissingExtra, missing_modules, require

RACE = ["race", "--learners", "cfr", "--seeds", "1", "--budget-seconds", "0"]
RACE_BUDGET = ["--budget-iterations", "2", "--no-progress"]


@pytest.fixture
def hide(monkeypatch):
    """``hide("matplotlib", ...)``: those packages look uninstalled to nashzoo's checks."""

    def hide_modules(*names: str) -> None:
        real = importlib.util.find_spec

        def find_spec(name, *args, **kwargs):
            if name.split(".")[0] in names:
                return None
            return real(name, *args, **kwargs)

        monkeypatch.setattr(importlib.util, "find_spec", find_spec)

    return hide_modules


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_require_names_the_missing_packages_and_the_extra(hide):
    hide("tensorboard")
    assert missing_modules("numpy", "tensorboard") == ["tensorboard"]
    require("numpy things", "core", "numpy")  # installed: nothing happens
    with pytest.raises(MissingExtra, match=r"^X needs tensorboard: pip install 'nashzoo\[t\]'$"):
        require("X", "t", "numpy", "tensorboard")


def test_race_without_matplotlib_stops_before_claiming_the_folder(hide, tmp_path, capsys):
    hide("matplotlib")
    out = tmp_path / "race"
    assert main([*RACE, *RACE_BUDGET, "--out", str(out)]) == 1
    err = _error(capsys)
    assert "pip install 'nashzoo[plot]'" in err and "--no-plots" in err
    assert not (out / "race_config.json").exists()
    # the retry the message suggests works at once, in the same folder
    assert main([*RACE, *RACE_BUDGET, "--out", str(out), "--no-plots"]) == 0
    assert (out / "results.csv").exists()


@pytest.mark.parametrize(
    ("logger", "package"), [("tensorboard", "tensorboard"), ("wandb", "wandb")]
)
def test_a_logger_without_its_packages_is_refused_before_any_run(
    hide, tmp_path, capsys, logger, package
):
    hide(package)
    out = tmp_path / "race"
    race = [*RACE, *RACE_BUDGET, "--no-plots", "--out", str(out), "--logger", logger]
    assert main(race) == 1
    assert f"--logger {logger} needs {package}: pip install 'nashzoo[tracking]'" in _error(capsys)
    assert not out.exists() or not any(out.iterdir())
    run = tmp_path / "run"
    train = ["train", "--learner", "cfr", "--iterations", "2", "--no-progress", "--out", str(run)]
    assert main([*train, "--logger", logger]) == 1
    assert "pip install 'nashzoo[tracking]'" in _error(capsys)
    assert not (run / "train_config.json").exists()
    assert main(train) == 0  # the retry without the logger is not refused


def test_ray_backend_without_ray_is_refused_before_the_folder_is_claimed(hide, tmp_path, capsys):
    hide("ray")
    out = tmp_path / "race"
    assert main([*RACE, *RACE_BUDGET, "--no-plots", "--out", str(out), "--backend", "ray"]) == 1
    assert "backend 'ray' needs ray: pip install 'nashzoo[ray]'" in _error(capsys)
    assert not (out / "race_config.json").exists()


def test_tournament_heatmap_without_matplotlib_is_refused_before_the_games(hide, tmp_path, capsys):
    hide("matplotlib")
    out = tmp_path / "tour"
    assert main(["tournament", "uniform", "equilibrium", "--out", str(out), "--no-progress"]) == 1
    err = _error(capsys)
    assert "pip install 'nashzoo[plot]'" in err and "--no-plots" in err
    assert not (out / "tournament.json").exists()


def test_reading_a_stable_baselines3_zip_without_the_rl_extra_names_it(hide, tmp_path, capsys):
    hide("stable_baselines3")
    model = tmp_path / "model.zip"
    with zipfile.ZipFile(model, "w") as archive:
        archive.writestr("data", "{}")
    assert main(["eval", str(model), "--game", "kuhn_poker"]) == 1
    assert "needs stable_baselines3: pip install 'nashzoo[rl]'" in _error(capsys)


def test_resume_names_a_flag_typed_now_the_way_it_is_typed(tmp_path, capsys):
    out = tmp_path / "race"
    assert main([*RACE, *RACE_BUDGET, "--no-plots", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["race", "--resume", "--cross-play", "--no-progress", "--out", str(out)]) in (0, 1)
    said = capsys.readouterr().out
    assert "--cross-play (the stored race was started without it)" in said
    assert "True" not in said and "False" not in said


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"nashzoo {__version__}"


def test_main_returns_the_status_of_help_and_malformed_options(capsys):
    """``main`` returns the exit status, as its docstring says, for what argparse answers
    itself too: a notebook or a script calling it is not stopped by ``SystemExit``."""
    assert main(["--help"]) == 0
    assert "race" in capsys.readouterr().out
    assert main(["race", "--help"]) == 0
    assert "--budget-seconds" in capsys.readouterr().out
    assert main(["race", "--no-such-option"]) == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err


def test_the_version_is_written_once():
    """pyproject.toml reads it from nashzoo.__version__ (no second copy to drift)."""
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text
    assert 'version = { attr = "nashzoo.__version__" }' in text


def test_tournament_without_matplotlib_makes_no_out_folder(hide, tmp_path, capsys):
    """--out was made before matplotlib was looked for: the refusal left an empty folder."""
    hide("matplotlib")
    out = tmp_path / "tour"
    argv = ["tournament", "uniform", "equilibrium", "--episodes", "0", "--no-progress"]
    assert main([*argv, "--out", str(out)]) == 1
    assert "pip install 'nashzoo[plot]'" in _error(capsys)
    assert not out.exists()
    assert main([*argv, "--out", str(out), "--no-plots"]) == 0
    assert (out / "tournament.json").exists()
