"""The surroundings of a process rather than its input: an output that goes away (a terminal hung
up, a log's disk full), a file system that refuses, the current folder, the locale, the
environment. Each test is a row of docs/reliability.md's fourteenth pass."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parents[1])
ON_LINUX = Path("/dev/full").exists()
SETPRIV = ["/usr/bin/setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
SETPRIV += ["--inh-caps=-all"]


def _nashzoo(tmp: Path, *argv: str, env: dict[str, str] | None = None, **kwargs):
    """``nashzoo ARGV`` as the installed script runs it (its own folder on ``sys.path``, not the
    current one), in ``tmp``, with this checkout importable."""
    script = tmp / "bin" / "nashzoo_script.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(  # as pip writes a console script
        "import sys\nfrom nashzoo.cli import main\n\n"
        "if __name__ == '__main__':\n    sys.exit(main())\n"
    )
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    full_env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    return subprocess.run(
        [sys.executable, str(script), *argv],
        cwd=tmp,
        env=full_env,
        capture_output=kwargs.pop("capture_output", "stdout" not in kwargs),
        text=True,
        timeout=300,
        **kwargs,
    )


@pytest.mark.skipif(not ON_LINUX, reason="writes to /dev/full (Linux)")
def test_a_training_run_whose_output_fails_keeps_every_file(tmp_path):
    """``train > /dev/full`` (a log's disk full; a terminal that hung up fails alike, EIO): the
    run used to stop at its first printed line with only train_config.json written. Now the
    run goes on and writes every file; the exit status says the output failed."""
    with open("/dev/full", "w") as full:
        argv = ["train", "--learner", "cfr", "--iterations", "40", "--out", "run"]
        done = _nashzoo(tmp_path, *argv, "--no-progress", stdout=full, stderr=subprocess.PIPE)
    assert done.returncode == 1 and "No space left on device" in done.stderr
    run = tmp_path / "run"
    for name in ("average_policy.json", "history.csv", "result.json", "checkpoint.npz"):
        assert (run / name).exists(), name
    assert json.loads((run / "result.json").read_text())["iterations"] == 40


@pytest.mark.skipif(not ON_LINUX, reason="writes to /dev/full (Linux)")
def test_a_race_whose_output_fails_finishes_and_writes_its_report(tmp_path):
    """``race > /dev/full``: the first run's line failed and stopped the race as a failed report
    ("perhaps a bug in nashzoo"), one run per resume. Now every run finishes and the report is
    written."""
    argv = ["race", "--learners", "cfr,cfr_plus", "--seeds", "1", "--budget-seconds", "0"]
    argv += ["--budget-iterations", "3", "--no-progress", "--no-plots", "--backend", "serial"]
    with open("/dev/full", "w") as full:
        done = _nashzoo(tmp_path, *argv, "--out", "r", stdout=full, stderr=subprocess.PIPE)
    assert "RaceReportError" not in done.stderr and "perhaps a bug" not in done.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["interrupted"] is False
    assert len(list((tmp_path / "r" / "runs").glob("*/result.json"))) == 2


def test_files_in_the_current_folder_do_not_replace_the_standard_library(tmp_path):
    """A ``secrets.py``, ``logging.py`` or ``queue.py`` in the current folder replaced the
    standard library's in every command (``error: cannot import name randbits``) and in race
    workers; the current folder now comes after everything installed, and a plugin module
    lying there is still found."""
    for name in ("secrets", "logging", "queue", "uuid"):
        (tmp_path / f"{name}.py").write_text(
            f"raise RuntimeError('user file {name}.py imported')\n"
        )
    (tmp_path / "my_local_plugin.py").write_text(
        "from nashzoo.agents import register\nfrom nashzoo.agents.cfr import CFR\n\n"
        "@register\nclass LocalCFR(CFR):\n    name = 'local_cfr'\n"
    )
    done = _nashzoo(tmp_path, "train", "--learner", "cfr", "--iterations", "3", "--out", "run")
    assert done.returncode == 0, done.stderr
    done = _nashzoo(tmp_path, "eval", "run/average_policy.json")
    assert done.returncode == 0, done.stderr
    argv = ["--plugin", "my_local_plugin", "race", "--learners", "local_cfr,cfr", "--seeds", "1"]
    argv += ["--budget-seconds", "0", "--budget-iterations", "3", "--workers", "2"]
    done = _nashzoo(tmp_path, *argv, "--no-progress", "--no-plots", "--out", "r")
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "r" / "runs").glob("*/result.json"))) == 2


def test_a_current_folder_deleted_under_the_shell_is_named(tmp_path):
    """From a deleted current folder every command failed with a bare ``[Errno 2] No such file
    or directory`` (PettingZoo asks for the folder when imported, so no command can run there);
    the error now says what is missing and what to do."""
    gone = tmp_path / "gone"
    gone.mkdir()
    script = tmp_path / "run_in_gone.py"
    script.write_text(
        "import os, sys\nos.chdir(sys.argv[1]); os.rmdir(sys.argv[1])\n"
        "from nashzoo.cli import main\nraise SystemExit(main(sys.argv[2:]))\n"
    )
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(script), str(gone), "games"],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: the current folder no longer exists")
    assert "cd to an existing folder" in done.stderr and len(done.stderr.splitlines()) == 1


def test_register_given_a_name_says_how_it_is_used():
    """``@register("my_cfr")`` (the name as an argument, as many registries take it) failed in
    every command with ``'str' object has no attribute 'name' ... perhaps a bug``."""
    from nashzoo.agents import register

    with pytest.raises(TypeError, match=r"@register takes the class itself.*`name = 'my_cfr'`"):
        register("my_cfr")


def test_a_failed_write_names_the_file_asked_for_and_keeps_the_old_one(tmp_path):
    """Writes failed with the hidden temporary file's name (``Permission denied:
    '/x/.eq.json.58873b12e241.nashzoo-tmp'``) or none at all (``[Errno 28] No space left on
    device``); now the file asked for, what to do, and the old file is unchanged."""
    from nashzoo.io import FileWriteError, atomic_write_bytes

    folder = tmp_path / "policy.json"
    folder.mkdir()
    with pytest.raises(FileWriteError, match=r"cannot write .*policy.json: it is a folder; give"):
        atomic_write_bytes(folder, b"{}")
    # a file larger than the process may write (as a full disk fails, with another errno)
    target = tmp_path / "big.bin"
    target.write_bytes(b"old")
    code = (
        "import resource, sys\n"
        "from nashzoo.io import atomic_write_bytes\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "try:\n    atomic_write_bytes(sys.argv[1], [b'x' * 3000, b'y' * 3000])\n"
        "except OSError as err:\n    print(type(err).__name__, err.errno, err)\n"
    )
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", code, str(target)],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.startswith(f"FileWriteError 27 cannot write {target} (File too large)")
    assert "raise the limit and run the command again" in done.stdout
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".nashzoo-tmp")] == []


def test_a_file_name_up_to_the_file_systems_limit_can_be_written(tmp_path):
    """A legal name of 230-255 bytes failed with ``File name too long``: the temporary file's
    name added 26 bytes. Multi-byte characters are cut whole."""
    from nashzoo.agents import TabularPolicy
    from nashzoo.io import atomic_write_bytes

    for name in ("p" * 250 + ".json", "é" * 125 + ".json"):
        target = tmp_path / name
        TabularPolicy.uniform("kuhn_poker").save(target)
        assert TabularPolicy.load(target).probs.shape[0] == 12
        atomic_write_bytes(target, b"again")
        assert target.read_bytes() == b"again"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_terminal_that_cannot_show_unicode_gets_escapes_not_a_crash(tmp_path):
    """Under ``PYTHONIOENCODING=ascii`` (or a C locale without UTF-8 mode) a race failed after
    every run had finished, on its report's ``µs``, and every resume failed alike."""
    argv = ["race", "--learners", "cfr,cfr_plus", "--seeds", "1", "--budget-seconds", "0.2"]
    argv += ["--cross-play", "--backend", "serial", "--no-progress", "--no-plots", "--out", "r"]
    done = _nashzoo(tmp_path, *argv, env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert "\\xb5s" in done.stdout and "\\u2014" in done.stdout  # µs and an em dash, escaped
    assert "µs" in (tmp_path / "r" / "summary.md").read_text(encoding="utf-8")


@pytest.mark.skipif(not Path("/bin/sh").exists(), reason="closes streams with /bin/sh")
def test_closed_standard_streams_are_the_null_device(tmp_path):
    """``nashzoo learners >&-`` failed with ``'NoneType' object has no attribute 'flush' ...
    perhaps a bug`` (every command, after its work); ``play <&-`` on ``readline``."""
    script = tmp_path / "bin" / "nashzoo_script.py"
    _nashzoo(tmp_path, "--version")  # writes the script
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    for line in ("learners >&-", "play --agent uniform <&-"):
        done = subprocess.run(
            ["/bin/sh", "-c", f'"{sys.executable}" "{script}" {line}'],
            cwd=tmp_path,
            env=env,
            capture_output=True,  # the shell closes the stream named in the line
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, (line, done.stderr)
        assert "perhaps a bug" not in done.stderr


def test_kernels_compile_in_memory_where_numba_cannot_cache(monkeypatch):
    """numba refuses ``cache=True`` where it finds no writable place (nashzoo installed
    read-only, no writable home or NUMBA_CACHE_DIR: a container's usual state): every command
    that compiles a game failed with ``cannot cache function ...: no locator available``. The
    kernels are now compiled in memory, with one warning naming the fix."""
    from nashzoo.games import _numba

    def fake_njit(**options):
        def decorate(function):
            if options.get("cache"):
                raise RuntimeError("cannot cache function 'f': no locator available for file 'f'")
            return function

        return decorate

    monkeypatch.setattr(_numba, "_CACHE", True)
    with pytest.warns(UserWarning, match="set NUMBA_CACHE_DIR to a writable folder"):
        assert _numba._jit(fake_njit, len) is len
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        assert _numba._jit(fake_njit, abs) is abs


@pytest.mark.skipif(
    not (hasattr(os, "geteuid") and os.geteuid() == 0 and Path("/usr/bin/setpriv").exists()),
    reason="drops root's override of file permissions with setpriv",
)
def test_a_read_only_install_without_a_writable_home_still_compiles(tmp_path):
    # root without its override of file permissions, as an unprivileged container user
    """The real case: a read-only copy of nashzoo, HOME unwritable, run by a process without
    root's override of permissions; ``eval`` of a policy compiles Kuhn's tree."""
    pytest.importorskip("numba")
    import shutil

    copy = tmp_path / "install"
    shutil.copytree(
        Path(ROOT) / "nashzoo", copy / "nashzoo", ignore=shutil.ignore_patterns("__pycache__")
    )
    home = tmp_path / "home"
    home.mkdir()
    from nashzoo.agents import TabularPolicy

    TabularPolicy.uniform("kuhn_poker").save(tmp_path / "uniform.json")
    for path in [copy, *copy.rglob("*"), home]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_"))}
    env.update(HOME=str(home), PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    code = "import sys; from nashzoo.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [*SETPRIV, sys.executable, "-c", code, "eval", str(tmp_path / "uniform.json")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "kuhn_poker: NashConv" in done.stdout
    assert "set NUMBA_CACHE_DIR" in done.stderr


def _cgroup_tree(tmp_path, monkeypatch, proc: str, files: dict[str, str]) -> None:
    """A fake ``/proc/self/cgroup`` and ``/sys/fs/cgroup`` for :func:`cgroup_headroom`."""
    from nashzoo.games import limits

    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "proc_cgroup").write_text(proc)
    for name, text in files.items():
        (tmp_path / "cg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "cg" / name).write_text(text)
    monkeypatch.setattr(limits, "PROC_CGROUP", tmp_path / "proc_cgroup")
    monkeypatch.setattr(limits, "PROC_MOUNTINFO", tmp_path / "no-mountinfo")  # by name
    monkeypatch.setattr(limits, "CGROUP_ROOT", tmp_path / "cg")


def test_a_memory_limit_on_the_process_group_counts_as_the_memory_available(tmp_path, monkeypatch):
    """In a 256 MiB cgroup on a 22 GiB machine a 306 MiB game was compiled (the guard read the
    machine's MemAvailable alone) and the kernel killed the process: exit 137, "Killed". The
    least headroom over the group and its parents now counts (v2 and v1; inactive file cache
    counted free), and the game is refused in one line."""
    from nashzoo.games import limits

    mib = 2**20
    v2 = {
        "memory.max": "max",  # the root: no limit
        "job/memory.max": f"{1024 * mib}",
        "job/memory.current": f"{100 * mib}",
        "job/step/memory.max": f"{256 * mib}",
        "job/step/memory.current": f"{200 * mib}",
        "job/step/memory.stat": f"anon 1\ninactive_file {100 * mib}\n",
    }
    _cgroup_tree(tmp_path, monkeypatch, "0::/job/step\n", v2)
    assert limits.cgroup_headroom() == 156 * mib  # 256 - (200 - 100)
    v1 = {
        "memory/memory.limit_in_bytes": "9223372036854771712",
        "memory/a/memory.limit_in_bytes": f"{64 * mib}",
        "memory/a/memory.usage_in_bytes": f"{80 * mib}",
        "memory/a/b/memory.limit_in_bytes": "9223372036854771712",
        "memory/a/b/memory.usage_in_bytes": f"{10 * mib}",
    }
    _cgroup_tree(tmp_path / "v1", monkeypatch, "4:memory:/a/b\n1:cpu:/\n", v1)
    assert limits.cgroup_headroom() == 0  # over its limit: nothing to spare
    assert limits.available_memory() == 0
    _cgroup_tree(tmp_path / "none", monkeypatch, "0::/\n", {"memory.max": "max"})
    assert limits.cgroup_headroom() is None
    # the refusal, with a 256 MiB group and a game of about 306 MiB
    _cgroup_tree(
        tmp_path / "small",
        monkeypatch,
        "0::/j\n",
        {"j/memory.max": f"{256 * mib}", "j/memory.current": f"{50 * mib}"},
    )
    with pytest.raises(Exception, match=r"histories: compiling them takes about .* available"):
        limits.check_counted("liars_dice(dice_sides=7)", 3_000_000)


def test_a_file_system_without_locks_is_written_unlocked_with_a_warning(tmp_path, monkeypatch):
    """On Lustre without ``-o flock`` (ENOSYS) or NFS mounted ``nolock`` (ENOLCK) every writing
    command said "is being written by another nashzoo process (pid unknown)", for ever."""
    import errno
    import fcntl

    from nashzoo.io import FolderLockedError, folder_lock

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    warned = pytest.warns(UserWarning, match="on a file system without file locks")
    with warned, folder_lock(tmp_path / "out"):
        pass
    monkeypatch.undo()
    # a real lock holds
    with (
        folder_lock(tmp_path / "out"),
        pytest.raises(FolderLockedError),
        folder_lock(tmp_path / "out"),
    ):
        pass


def test_a_lock_file_another_user_made_is_taken_read_only(tmp_path, monkeypatch):
    """In a folder a group shares, the first user's ``.nashzoo.lock`` is 0o644: another user
    got ``Permission denied: '.../.nashzoo.lock'`` though the folder was writable. A lock needs
    no write access to its file."""
    from nashzoo.io import FolderLockedError, folder_lock

    folder = tmp_path / "shared"
    folder.mkdir()  # the group's folder (one a lock created and left empty would be removed)
    with folder_lock(folder):
        pass
    real_open = os.open

    def as_another_user(path, flags, *args):
        if str(path).endswith(".nashzoo.lock") and flags & os.O_RDWR:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", as_another_user)
    # and it still keeps a second writer out
    with folder_lock(folder), pytest.raises(FolderLockedError), folder_lock(folder):
        pass


@pytest.mark.skipif(not hasattr(os, "setpgrp"), reason="sets a file-size limit (POSIX)")
def test_a_final_checkpoint_that_cannot_be_written_costs_only_itself(tmp_path):
    """With the disk nearly full at the end of a run (here a file-size limit: the checkpoint
    does not fit, the policy, history and result do), ``train`` wrote nothing but
    train_config.json: the final checkpoint failed inside ``Trainer.run`` and the result went
    with it. Now the other outputs are written, and the status and one line say what was not."""
    import resource

    def limit_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))

    argv = ["train", "--learner", "cfr_plus", "--iterations", "50", "--out", "run"]
    done = _nashzoo(tmp_path, *argv, "--no-progress", preexec_fn=limit_file_size)
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot write run/checkpoint.npz (File too large)")
    assert "raise the limit" in done.stderr and "perhaps a bug" not in done.stderr
    run = tmp_path / "run"
    assert not (run / "checkpoint.npz").exists()
    for name in ("average_policy.json", "history.csv", "result.json"):
        assert (run / name).exists(), name
    assert json.loads((run / "result.json").read_text())["iterations"] == 50
    assert "wrote run/average_policy.json" in done.stdout


def test_a_trainer_returns_its_result_when_the_final_checkpoint_fails(tmp_path, monkeypatch):
    from nashzoo.train import Trainer

    trainer = Trainer("kuhn_poker", "cfr", "cfr", checkpoint_path=tmp_path / "ckpt.npz")

    def disk_full(self, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Trainer, "save", disk_full)
    with pytest.warns(UserWarning, match="final checkpoint could not be written"):
        result = trainer.run(iterations=5)
    assert result.iterations == 5 and trainer.checkpoint_error.errno == 28
    monkeypatch.undo()
    trainer.run(iterations=2)  # the next run's checkpoint is written, and the error forgotten
    assert trainer.checkpoint_error is None and (tmp_path / "ckpt.npz").exists()


def test_out_options_expand_a_leading_tilde_and_solve_checks_its_file_first(
    tmp_path, monkeypatch, capsys
):
    """``--out=~/x`` (no shell expands ``~`` after ``=``) made a folder named ``~`` in the
    current one. ``solve --out FOLDER`` failed after the solve, naming a temporary file."""
    from nashzoo.cli import main

    home, here = tmp_path / "home", tmp_path / "here"
    home.mkdir()
    here.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    assert main(["train", "--learner", "cfr", "--iterations", "3", "--out=~/run"]) == 0
    assert main(["solve", "kuhn_poker", "--out=~/eq.json"]) == 0
    assert (home / "run" / "result.json").exists() and (home / "eq.json").exists()
    assert list(here.iterdir()) == []
    capsys.readouterr()
    assert main(["solve", "kuhn_poker", "--out", str(home)]) == 2
    assert f"--out {home} is a folder; give a file path such as" in capsys.readouterr().err


def test_a_stale_mplbackend_does_not_cost_a_race_its_plots(tmp_path):
    """``MPLBACKEND`` naming a backend not installed (a notebook's, left in the shell) made a
    race that had run every run exit 1 on matplotlib's ``Key backend: ... is not a valid
    value``, with no leaderboard and no plots; the variable was named nowhere."""
    pytest.importorskip("matplotlib")
    import importlib.util

    if importlib.util.find_spec("matplotlib_inline") is not None:
        pytest.skip("matplotlib_inline is installed here: its backend is a valid one")
    backend = "module://matplotlib_inline.backend_inline"
    argv = ["race", "--learners", "cfr", "--seeds", "1", "--budget-seconds", "0"]
    argv += ["--budget-iterations", "3", "--no-progress", "--backend", "serial", "--out", "r"]
    done = _nashzoo(tmp_path, *argv, env={"MPLBACKEND": backend})
    assert done.returncode == 0, done.stderr
    assert f"warning: MPLBACKEND={backend} is not a backend" in done.stderr
    assert len(list((tmp_path / "r").glob("*.png"))) >= 1


def test_a_race_without_shared_locks_runs_in_this_process(tmp_path, monkeypatch):
    """Where ``/dev/shm`` is read-only or missing, a race with workers failed with ``[Errno 30]
    Read-only file system`` after claiming its folder; it now runs its runs one at a time, as
    ``--workers 1`` does, and says why."""
    import multiprocessing.context

    from nashzoo.train.race import RaceConfig, run_race

    def no_semaphores(self):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(multiprocessing.context.BaseContext, "Lock", no_semaphores)
    config = RaceConfig(
        game="kuhn_poker",
        learners=("cfr", "cfr_plus"),
        seeds=1,
        budget_seconds=None,
        budget_iterations=3,
        workers=2,
        plots=False,
        out=str(tmp_path / "r"),
    )
    with pytest.warns(UserWarning, match=r"no shared locks \(Read-only file system; is /dev/shm"):
        outcome = run_race(config, progress=False, stream=io.StringIO())
    assert len(outcome.results) == 2 and not outcome.failures


def test_a_tournament_never_shares_a_folder_with_a_run_or_a_race(tmp_path, capsys):
    """``tournament --out`` wrote into a training run's or a race's folder, and ``train`` or
    ``race`` into a tournament's, without a word (README: such folders are never shared)."""
    from nashzoo.cli import main
    from nashzoo.eval.tournament_folder import CONFIG_FILE as TOURNAMENT_MARKER
    from nashzoo.io.folder_kinds import FOLDER_MARKERS
    from nashzoo.train.race.storage import RACE_CONFIG_FILE
    from nashzoo.train.run_folder import CONFIG_FILE as TRAIN_MARKER

    assert FOLDER_MARKERS == {
        "training run": TRAIN_MARKER,
        "race": RACE_CONFIG_FILE,
        "tournament": TOURNAMENT_MARKER,
    }
    run, race, tour = (str(tmp_path / name) for name in ("run", "race", "tour"))
    tournament = ["tournament", "uniform", "equilibrium", "--episodes", "0", "--no-plots"]
    race_argv = ["race", "--learners", "cfr", "--seeds", "1", "--budget-seconds", "0"]
    race_argv += ["--budget-iterations", "2", "--no-progress", "--no-plots"]
    assert main(["train", "--learner", "cfr", "--iterations", "2", "--out", run]) == 0
    assert main([*race_argv, "--out", race]) == 0
    assert main([*tournament, "--out", tour]) == 0
    capsys.readouterr()
    for folder, kind in ((run, "training run"), (race, "race")):
        for force in ([], ["--force"]):
            assert main([*tournament, "--out", folder, *force]) == 1
            err = capsys.readouterr().err
            assert f"{folder} holds a {kind} (" in err and "never a" in err
    assert main(["train", "--learner", "cfr", "--iterations", "2", "--out", tour]) == 1
    assert f"{tour} holds a tournament (tournament_config.json), not a training run" in (
        capsys.readouterr().err
    )
    assert main([*race_argv, "--out", tour, "--force"]) == 1
    assert "holds a tournament (tournament_config.json), not a race" in capsys.readouterr().err
    assert not (Path(tour) / "train_config.json").exists()
    assert not (Path(run) / "pairings").exists()


def test_a_broken_link_as_the_output_folder_is_named(tmp_path, capsys):
    from nashzoo.cli import main

    (tmp_path / "out").symlink_to(tmp_path / "gone")
    assert (
        main(["train", "--learner", "cfr", "--iterations", "2", "--out", str(tmp_path / "out")])
        == 1
    )
    err = capsys.readouterr().err
    assert f"is a link to {tmp_path / 'gone'}, which does not exist; create that folder" in err


def test_a_run_folder_deleted_while_training_can_be_resumed(tmp_path, monkeypatch, capsys):
    """``rm -rf D`` during ``train --out D``: the writes made D again without its config, and
    ``--resume`` said "no run to resume" while a plain start said "already holds a run"."""
    import shutil

    from nashzoo.cli import main
    from nashzoo.train import Trainer

    original = Trainer.step
    folder = tmp_path / "run"

    def step_then_delete(self):
        metrics = original(self)
        if self.iteration == 3:
            shutil.rmtree(folder)
        return metrics

    monkeypatch.setattr(Trainer, "step", step_then_delete)
    argv = ["train", "--learner", "cfr", "--iterations", "6", "--out", str(folder)]
    assert main([*argv, "--no-progress"]) == 0
    assert "train_config.json was removed while the run trained" in capsys.readouterr().err
    monkeypatch.setattr(Trainer, "step", original)
    assert main(["train", "--resume", "--iterations", "9", "--out", str(folder)]) == 0
    assert json.loads((folder / "result.json").read_text())["iterations"] == 9


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="makes a named pipe (POSIX)")
def test_a_policy_read_from_a_pipe(tmp_path, capsys):
    """``nashzoo eval <(gunzip -c policy.json.gz)`` (a pipe, readable once) was refused with
    ``expected a policy .json, a checkpoint .npz or a Stable-Baselines3 .zip``."""
    import threading

    from nashzoo.agents import TabularPolicy
    from nashzoo.cli import main

    TabularPolicy.uniform("kuhn_poker").save(tmp_path / "uniform.json")
    pipe = tmp_path / "63"
    os.mkfifo(pipe)
    writer = threading.Thread(
        target=lambda: pipe.write_bytes((tmp_path / "uniform.json").read_bytes())
    )
    writer.start()
    assert main(["eval", str(pipe)]) == 0, capsys.readouterr().err
    writer.join(timeout=10)
    assert "kuhn_poker: NashConv 0.9166" in capsys.readouterr().out


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGHUP"), reason="no SIGHUP here")
def test_a_run_under_nohup_keeps_sighup_ignored(tmp_path, monkeypatch):
    """``nohup nashzoo train ...``: SIGHUP is ignored, and the command line's handling of it
    (as of Ctrl-C) must not undo that."""
    import signal

    from nashzoo.cli import main
    from nashzoo.train import Trainer

    seen = []
    original = Trainer.step

    def step_and_look(self):
        seen.append(signal.getsignal(signal.SIGHUP))
        return original(self)

    monkeypatch.setattr(Trainer, "step", step_and_look)
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        argv = ["train", "--learner", "cfr", "--iterations", "2", "--out", str(tmp_path / "r")]
        assert main(argv) == 0
    finally:
        signal.signal(signal.SIGHUP, previous)
    assert seen == [signal.SIG_IGN, signal.SIG_IGN]


def test_a_plugin_named_like_an_installed_module_is_named_as_shadowed(tmp_path, monkeypatch):
    """With the current folder searched last, a plugin saved as ``code.py`` imports the
    standard library's ``code``, and its learners were "unknown" with no word of why."""
    from nashzoo.agents import import_plugins

    (tmp_path / "code.py").write_text("raise RuntimeError('never imported')\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ImportError, match=r"plugin module 'code': the name is also an installed"):
        import_plugins(["code"])


def test_non_utf8_file_names_and_a_callers_own_errors_pass_through_the_atomic_writer(tmp_path):
    """The temporary name is made of the name's bytes (a non-UTF-8 byte in a name failed with
    ``surrogates not allowed``); an error from the caller's chunks, not the write, keeps its
    type (a ``ConnectionResetError`` came out as "cannot write FILE")."""
    from nashzoo.io import atomic_write_bytes

    target = Path(os.fsdecode(bytes(tmp_path) + b"/\xffeq.json"))
    atomic_write_bytes(target, b"{}")
    assert target.read_bytes() == b"{}"
    long_name = Path(os.fsdecode(bytes(tmp_path) + b"/" + b"\xfe" * 250))
    atomic_write_bytes(long_name, b"x")
    assert long_name.read_bytes() == b"x"

    def source():
        yield b"part"
        raise ConnectionResetError(104, "Connection reset by peer")

    with pytest.raises(ConnectionResetError):
        atomic_write_bytes(tmp_path / "out.bin", source())
    assert not (tmp_path / "out.bin").exists()
    assert [p for p in tmp_path.iterdir() if p.name.endswith(".nashzoo-tmp")] == []


class _GoneTerminal(io.TextIOBase):
    """A terminal that hung up: every write fails with EIO."""

    def write(self, text):
        raise OSError(5, "Input/output error")


def _train_signalled(tmp_path, monkeypatch, *signals) -> tuple[int, dict]:
    """``nashzoo train`` on Kuhn that sends itself ``signals`` right after its 7th step (with
    SIGHUP's default handler, whatever the suite was started under); its status and stored
    result."""
    import signal

    from nashzoo.cli import main
    from nashzoo.train import Trainer

    if not hasattr(signal, "SIGHUP"):
        pytest.skip("no SIGHUP here")
    original = Trainer.step

    def step_then_signal(self):
        metrics = original(self)
        if self.iteration == 7:
            for signum in signals:
                os.kill(os.getpid(), signum)
        return metrics

    monkeypatch.setattr(Trainer, "step", step_then_signal)
    hangup = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        argv = ["train", "--learner", "cfr", "--iterations", "50", "--out", str(tmp_path / "r")]
        status = main(argv)
    finally:
        signal.signal(signal.SIGHUP, hangup)
        monkeypatch.setattr(Trainer, "step", original)
    return status, json.loads((tmp_path / "r" / "result.json").read_text())


def test_a_hang_up_whose_terminal_is_gone_still_keeps_the_run(tmp_path, monkeypatch):
    """A real hang-up: the terminal that sent SIGHUP is gone, so every print fails with EIO,
    the one in the signal handler included (it raised inside the step, and the run was lost
    with exit 1). Now the run stops after the step with its outputs, status 129."""
    import signal

    monkeypatch.setattr(sys, "stdout", _GoneTerminal())
    monkeypatch.setattr(sys, "stderr", _GoneTerminal())
    status, stored = _train_signalled(tmp_path, monkeypatch, getattr(signal, "SIGHUP", 1))
    assert status == 129
    assert (stored["iterations"], stored["stopped_by"]) == (7, "interrupted")


def test_two_signals_of_one_event_stop_once_and_only_long_commands_take_them(tmp_path, monkeypatch):
    """systemd sends SIGTERM then SIGHUP at once: counted as a second request, they stopped
    train inside its step (and crashed a race in a lock). Commands with nothing to keep
    (``solve``, ``eval``) keep the default SIGTERM: they end at once, not when an LP returns."""
    import argparse
    import signal

    from nashzoo.cli.main import _run_command

    both = (signal.SIGTERM, getattr(signal, "SIGHUP", 1))
    status, stored = _train_signalled(tmp_path, monkeypatch, *both)
    assert status == 143
    assert (stored["iterations"], stored["stopped_by"]) == (7, "interrupted")
    before = signal.getsignal(signal.SIGTERM)  # SIG_DFL, or a test runner's worker's own
    seen = []
    quick = argparse.Namespace(func=lambda args: seen.append(signal.getsignal(signal.SIGTERM)) or 0)
    quick.debug = False
    assert _run_command(quick) == 0 and seen == [before]  # left as it was
