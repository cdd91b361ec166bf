"""Fuzz every file reader with random bytes, random JSON and valid files with one field replaced
by random JSON: the only exceptions allowed are the project's own (a one-line message naming the
file), never a TypeError, KeyError or anything else from deep inside."""

from __future__ import annotations

import io
import json
import tempfile
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nashzoo.agents import CFR, PolicyError, TabularPolicy, load_learner, load_policy_file
from nashzoo.agents.registry import check_module_name
from nashzoo.eval import tournament_folder
from nashzoo.eval.tournament import load_entrant, round_robin
from nashzoo.io import FileFormatError
from nashzoo.train import Trainer
from nashzoo.train import race as race_mod
from nashzoo.train.race import storage
from nashzoo.train.run_folder import RunConfig

OWN_ERRORS = (FileFormatError, PolicyError)
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


_ROOT: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def scratch_root(tmp_path_factory):
    """Every fuzzed file lives under pytest's temporary folder (removed with it)."""
    _ROOT.append(tmp_path_factory.mktemp("fuzz"))
    yield
    _ROOT.pop()


def _scratch() -> Path:
    return Path(tempfile.mkdtemp(dir=_ROOT[-1]))


# --- valid files to start from ------------------------------------------------------------------
@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("samples")
    TabularPolicy.uniform("kuhn_poker").save(root / "policy.json")
    learner = CFR("kuhn_poker", 0)
    learner.step(TabularPolicy.uniform("kuhn_poker"))
    learner.save(root / "learner.npz")
    trainer = Trainer("kuhn_poker", "cfr", "xfp", eval_every=1)
    trainer.run(iterations=2)
    trainer.save(root / "trainer.npz")
    config = race_mod.RaceConfig(
        learners=("cfr",),
        seeds=1,
        budget_seconds=None,
        budget_iterations=3,
        out=str(root / "race"),
        backend="serial",
        plots=False,
    )
    outcome = race_mod.run_race(config, progress=False, stream=io.StringIO())
    entrants = [load_entrant("kuhn_poker", spec) for spec in ("uniform", "equilibrium")]
    round_robin("kuhn_poker", entrants, episodes=3, out=root / "tour")
    with np.load(root / "learner.npz") as data:
        learner_arrays = {k: data[k] for k in data.files}
    with np.load(root / "trainer.npz") as data:
        trainer_entries = {k: data[k] for k in data.files}
    return {
        "policy": json.loads((root / "policy.json").read_text()),
        "learner_arrays": learner_arrays,
        "trainer_entries": trainer_entries,
        "race_config": json.loads((root / "race" / "race_config.json").read_text()),
        "result": dict(outcome.results[0]),
        "tournament_config": json.loads((root / "tour" / "tournament_config.json").read_text()),
        "pairing": json.loads((root / "tour" / "pairings" / "1-0.json").read_text()),
        "run_config": {
            "format": "nashzoo.TrainRun/1",
            "game": "kuhn_poker",
            "learners": ["cfr", "cfr"],
            "seed": 0,
            "eval_every": "log",
            "iterations": 5,
            "seconds": None,
            "work": None,
            "checkpoint_every": None,
        },
    }


def _replace(payload: dict, key_choice: int, value: object) -> dict:
    out = dict(payload)
    keys = sorted(out)
    out[keys[key_choice % len(keys)]] = value
    return out


# --- readers, each given the bytes of one file -------------------------------------------------
def _read_policy(data: bytes) -> None:
    path = _scratch() / "p.json"
    path.write_bytes(data)
    TabularPolicy.load(path)
    load_policy_file(path)


def _read_learner(data: bytes) -> None:
    path = _scratch() / "l.npz"
    path.write_bytes(data)
    load_learner(path)
    load_policy_file(path)


def _read_trainer(data: bytes) -> None:
    path = _scratch() / "t.npz"
    path.write_bytes(data)
    Trainer.load(path)
    load_policy_file(path)


def _read_race_config(data: bytes) -> None:
    out = _scratch()
    (out / "race_config.json").write_bytes(data)
    race_mod.stored_race_config(out)


def _read_run_config(data: bytes) -> None:
    folder = _scratch()
    (folder / "train_config.json").write_bytes(data)
    RunConfig.read(folder)


def _read_result(data: bytes) -> None:
    out = _scratch()
    job = race_mod.RaceJob("kuhn_poker", ("cfr", "cfr"), 0, None, 3, None)
    (out / "runs" / job.run_id).mkdir(parents=True)
    (out / "runs" / job.run_id / "result.json").write_bytes(data)
    payload, problem = storage._stored(out, job)  # never raises: a bad result is re-run
    assert (payload is None) == bool(problem) or payload is None


TOURNAMENT_NAMES = ["uniform", "equilibrium"]


def _read_tournament_config(data: bytes) -> None:
    path = _scratch() / "tournament_config.json"
    path.write_bytes(data)
    tournament_folder._read_config(path)


def _read_pairing(data: bytes, config: dict | None = None) -> None:
    """The pairing 1-0 of the samples' tournament, as a resume reads it."""
    path = _scratch() / "1-0.json"
    path.write_bytes(data)
    config = config or {"format": "nashzoo.Tournament/1", "episodes": 3}
    tournament_folder._read_pairing(path, 1, 0, TOURNAMENT_NAMES, config)


READERS = {
    "policy": _read_policy,
    "learner": _read_learner,
    "trainer": _read_trainer,
    "race_config": _read_race_config,
    "run_config": _read_run_config,
    "result": _read_result,
    "tournament_config": _read_tournament_config,
    "pairing": _read_pairing,
}


def _only_own_errors(reader, data: bytes) -> None:
    try:
        reader(data)
    except OWN_ERRORS as err:
        # one line, no control characters (a file's strings are shown escaped)
        assert not any(unicodedata.category(c) == "Cc" for c in str(err)), repr(str(err))


@pytest.mark.parametrize("name", sorted(READERS))
@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes(name, data):
    _only_own_errors(READERS[name], data)


@pytest.mark.parametrize("name", sorted(READERS))
@FUZZ
@given(value=json_values)
def test_random_json(name, value):
    _only_own_errors(READERS[name], json.dumps(value).encode())


@pytest.mark.parametrize(
    "name", ["policy", "race_config", "run_config", "result", "tournament_config"]
)
@FUZZ
@given(key=st.integers(0, 50), value=json_values)
def test_valid_json_files_with_one_field_replaced(samples, name, key, value):
    payload = _replace(samples[name], key, value)
    _only_own_errors(READERS[name], json.dumps(payload).encode())


@pytest.mark.parametrize(
    "name", ["policy", "race_config", "run_config", "result", "tournament_config"]
)
@pytest.mark.parametrize("text", ["kuhn\npoker", "a\rb", "\x1b[2J"])
def test_a_string_with_control_characters_in_any_field(samples, name, text):
    """A file's strings are shown escaped in its readers' one-line errors: a policy whose
    'game_id' held a line break was refused over two lines (found by the random test above)."""
    for key in range(len(samples[name])):
        _only_own_errors(READERS[name], json.dumps(_replace(samples[name], key, text)).encode())


@pytest.mark.parametrize(
    "name", ["policy", "race_config", "run_config", "result", "tournament_config"]
)
def test_a_number_too_large_for_a_float_in_any_field(samples, name):
    """JSON integers have no bound: 10**400 in a numeric field raised OverflowError from
    math.isfinite in the shared field check (io.fields.number, games.base.is_finite_number)."""
    for key in range(len(samples[name])):
        payload = _replace(samples[name], key, 10**400)
        _only_own_errors(READERS[name], json.dumps(payload).encode())


@FUZZ
@given(key=st.integers(0, 50), value=json_values, item=st.integers(0, 2))
def test_a_pairing_with_one_field_replaced_and_signed_again(samples, key, value, item):
    """Signed again, so that the checksum passes and the field checks are what is tried: one
    field replaced, or one number in the exact, mean or variance list."""
    from nashzoo.eval.tournament_folder import _digest

    config = samples["tournament_config"]
    _read_pairing(json.dumps(samples["pairing"]).encode(), config)  # the sample itself reads
    payload = json.loads(json.dumps(samples["pairing"]))
    if key % 2:
        payload = _replace(payload, key // 2, value)
    else:
        payload[("exact", "mean", "variance")[key // 2 % 3]][item % 2] = value
    payload["checksum"] = _digest(payload)
    _only_own_errors(lambda data: _read_pairing(data, config), json.dumps(payload).encode())


def _npz_bytes(entries: dict) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **entries)
    return buffer.getvalue()


@FUZZ
@given(key=st.integers(0, 50), value=json_values)
def test_learner_checkpoint_metadata_with_one_field_replaced(samples, key, value):
    entries = dict(samples["learner_arrays"])
    meta = _replace(json.loads(str(entries["__meta__"])), key, value)
    entries["__meta__"] = np.array(json.dumps(meta))
    _only_own_errors(_read_learner, _npz_bytes(entries))


arrays = st.sampled_from([np.float64, np.float32, np.int64, np.bool_, np.uint8, np.str_]).flatmap(
    lambda dtype: st.lists(st.integers(0, 4), max_size=3).map(
        lambda shape: np.ones(tuple(shape), dtype=dtype)
    )
)


@FUZZ
@given(
    name=st.sampled_from(["regrets", "strategy_sum", "extra"]),
    array=arrays,
    poison=st.sampled_from([None, np.nan, np.inf, -1.0, 1e300]),
)
def test_learner_checkpoint_arrays_replaced(samples, name, array, poison):
    entries = dict(samples["learner_arrays"])
    if poison is not None and name != "extra":
        array = np.array(entries[name], dtype=np.float64)
        array.flat[0] = poison
    entries[name] = array
    _only_own_errors(_read_learner, _npz_bytes(entries))


@FUZZ
@given(key=st.integers(0, 50), value=json_values, seat_bytes=st.binary(max_size=64))
def test_trainer_checkpoint_with_one_field_or_seat_replaced(samples, key, value, seat_bytes):
    entries = dict(samples["trainer_entries"])
    state = _replace(json.loads(str(entries["__trainer__"])), key, value)
    entries["__trainer__"] = np.array(json.dumps(state))
    _only_own_errors(_read_trainer, _npz_bytes(entries))
    entries = dict(samples["trainer_entries"])
    entries["seat1"] = np.frombuffer(seat_bytes, dtype=np.uint8)
    _only_own_errors(_read_trainer, _npz_bytes(entries))


@FUZZ
@given(names=st.lists(st.text(max_size=10), max_size=3))
def test_plugin_lists(names):
    """Plugin names are checked before anything is imported (no fuzzed import is attempted)."""
    for name in names:
        try:
            check_module_name(name)
        except ValueError as err:
            assert "not a module name" in str(err)
        else:
            assert all(part.isidentifier() for part in name.split("."))


def test_a_wrapped_error_with_a_newline_is_reported_on_one_line():
    """Python 3.10 writes a keyword argument named "\\n" raw in its TypeError (3.11+ escape
    it), so a damaged trainer checkpoint gave a two-line CheckpointError there."""
    from nashzoo.io import cause

    err = TypeError("EvalSchedule.__init__() got an unexpected keyword argument '\n'")
    assert cause(err) == "TypeError: EvalSchedule.__init__() got an unexpected keyword argument ' '"


# --- format tags and writer versions ------------------------------------------------------------
def _with_tag(samples, name: str, tag: str, writer: str | None) -> bytes:
    """The bytes of sample ``name`` with its format tag and writer version replaced."""

    def stamp(payload: dict) -> dict:
        payload = {**payload, "format": tag}
        payload.pop("nashzoo", None)
        return payload if writer is None else {**payload, "nashzoo": writer}

    if name in ("learner", "trainer"):
        entries = dict(samples[f"{name}_{'arrays' if name == 'learner' else 'entries'}"])
        key = "__meta__" if name == "learner" else "__trainer__"
        entries[key] = np.array(json.dumps(stamp(json.loads(str(entries[key])))))
        return _npz_bytes(entries)
    return json.dumps(stamp(samples[name])).encode()


FORMATS = {
    "policy": "nashzoo.TabularPolicy/1",
    "learner": "nashzoo.Learner/1",
    "trainer": "nashzoo.Trainer/1",
    "run_config": "nashzoo.TrainRun/1",
    "tournament_config": "nashzoo.Tournament/1",
    "pairing": "nashzoo.TournamentPairing/1",
}


def test_every_file_names_the_nashzoo_that_wrote_it(samples, tmp_path):
    """Beside its format tag (what the readers below go by), so that a refusal can say which
    nashzoo wrote the file."""
    from nashzoo import __version__

    RunConfig.read(_folder_with(samples["run_config"], tmp_path)).write(tmp_path)
    written = {
        "policy": samples["policy"],
        "learner": json.loads(str(samples["learner_arrays"]["__meta__"])),
        "trainer": json.loads(str(samples["trainer_entries"]["__trainer__"])),
        "run_config": json.loads((tmp_path / "train_config.json").read_text()),
        "tournament_config": samples["tournament_config"],
        "pairing": samples["pairing"],
    }
    for name, payload in written.items():
        assert (payload["format"], payload["nashzoo"]) == (FORMATS[name], __version__), name


def _folder_with(run_config: dict, folder: Path) -> Path:
    (folder / "train_config.json").write_text(json.dumps(run_config))
    return folder


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_a_file_in_a_newer_format_says_to_upgrade(samples, name):
    """Before, a reader refused it as 'not a nashzoo ... (format tag)', as if it were some other
    program's file, or (a checkpoint of the same tag with a setting added later) named the
    setting it did not know and not the version."""
    kind = FORMATS[name].rpartition("/")[0]
    with pytest.raises(FileFormatError) as newer:
        READERS[name](_with_tag(samples, name, f"{kind}/2", "9.0.0"))
    assert f"written by nashzoo 9.0.0 in format '{kind}/2', newer than the '{kind}/1'" in str(
        newer.value
    )
    assert str(newer.value).endswith("upgrade nashzoo to read it")
    with pytest.raises(FileFormatError, match=r"older .* with the nashzoo that wrote it \(pip"):
        READERS[name](_with_tag(samples, name, f"{kind}/0", "0.0.1"))
    with pytest.raises(FileFormatError, match=r"in format '.*/0', older.*wrote it$"):
        READERS[name](_with_tag(samples, name, f"{kind}/0", None))  # no version: before 11-28
    # not a newer or older number: Unicode digits (int() refused "²"), the same number
    for foreign in ("other.Thing/1", f"{kind}/x", f"{kind}/²", f"{kind}/01", None):
        with pytest.raises(FileFormatError, match=r"is not a nashzoo .*format tag\)$"):
            READERS[name](_with_tag(samples, name, foreign, "9.0.0"))


def test_a_checkpoint_with_a_setting_from_a_newer_nashzoo_names_its_version(samples):
    from nashzoo import __version__

    entries = dict(samples["learner_arrays"])
    meta = json.loads(str(entries["__meta__"]))
    meta["config"] = {**meta["config"], "knob_of_the_future": 1}
    for writer, note in (("9.0.0", True), ("0.1.0", False), ("0.0.9", False), (None, False)):
        stamped = {k: v for k, v in meta.items() if k != "nashzoo"}
        if writer is not None:
            stamped["nashzoo"] = writer
        entries["__meta__"] = np.array(json.dumps(stamped))
        with pytest.raises(FileFormatError, match="knob_of_the_future") as refused:
            _read_learner(_npz_bytes(entries))
        said = f"written by nashzoo 9.0.0, newer than this one ({__version__}): upgrade nashzoo"
        assert (said in str(refused.value)) == note, writer


def test_release_numbers_of_versions():
    from nashzoo.io.fields import _release

    assert _release("0.10.2") > _release("0.9.9")
    assert _release("1.0.0rc1") == (1, 0, 0)
    assert _release("0.1.0+abc123") == (0, 1, 0)
    assert _release("dev") == ()


def test_a_damaged_writer_version_stays_out_of_the_message(samples):
    data = _with_tag(samples, "policy", "nashzoo.TabularPolicy/2", "9.0\nline two" + "x" * 10**5)
    with pytest.raises(FileFormatError) as refused:
        READERS["policy"](data)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 400
