"""A policy file is streamed into its table (``read_policy_table``) and read whole only where the
stream declines: the two reads give the same table bit for bit, and every file the stream
declines gets the same result or the same error, word for word, as the whole read gives it."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nashzoo.agents import TabularPolicy
from nashzoo.agents import policy as policy_module
from nashzoo.games import compile_tree, load_game
from nashzoo.io import policy_file
from nashzoo.io.policy_file import read_policy_table

CHUNKS = [7, 64, 1 << 18]  # bytes read at a time: cuts in every place, and the default


def _random_policy(name: str, seed: int) -> TabularPolicy:
    game = load_game(name)
    tree = compile_tree(game)
    probs = np.random.default_rng(seed).random(tree.legal_mask.shape) * tree.legal_mask
    return TabularPolicy(game, probs / probs.sum(axis=1, keepdims=True))


def _outcome(path: Path, game: str | None = None) -> tuple[Any, ...]:
    """What ``TabularPolicy.load`` gives: the game, the table's bytes and whether it is
    checked, or the error's type and message."""
    try:
        policy = TabularPolicy.load(path, game)
    except Exception as err:
        return type(err), str(err)
    return policy.game.id, policy.probs.tobytes(), policy.checked


def _whole_outcome(monkeypatch, path: Path, game: str | None = None) -> tuple[Any, ...]:
    """:func:`_outcome` with the stream turned off: the file parsed whole, as before."""
    with monkeypatch.context() as patch:
        patch.setattr(policy_module, "read_policy_table", lambda path: None)
        return _outcome(path, game)


def _same_both_ways(monkeypatch, path: Path, game: str | None = None) -> tuple[Any, ...]:
    outcome = _outcome(path, game)
    assert outcome == _whole_outcome(monkeypatch, path, game)
    return outcome


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "liars_dice"])
def test_the_writers_files_are_streamed_into_json_loads_table(tmp_path, name) -> None:
    policy = _random_policy(name, seed=5)
    path = tmp_path / "p.json"
    policy.save(path)
    streamed = read_policy_table(path)
    assert streamed is not None
    table = json.loads(path.read_text())["policy"]
    expected = TabularPolicy.from_dict(name, table).probs
    assert streamed.probs.tobytes() == expected.tobytes() == policy.probs.tobytes()
    loaded = TabularPolicy.load(path)
    assert loaded.probs.tobytes() == expected.tobytes() and loaded.checked
    assert not loaded.probs.flags.writeable


@pytest.mark.parametrize("chunk", CHUNKS)
def test_cut_anywhere_the_rows_are_read_alike(tmp_path, monkeypatch, chunk) -> None:
    monkeypatch.setattr(policy_file, "_CHUNK_BYTES", chunk)
    policy = _random_policy("leduc_poker", seed=6)
    policy.save(tmp_path / "p.json")
    streamed = read_policy_table(tmp_path / "p.json")
    assert streamed is not None and streamed.probs.tobytes() == policy.probs.tobytes()


def _reordered(payload: dict, *first: str) -> dict:
    return {**{key: payload[key] for key in first}, **payload}


# (name, how the writer's payload is written again, whether the stream reads it)
REWRITTEN: list[tuple[str, Callable[[dict], str | bytes], bool]] = [
    ("one line", lambda p: json.dumps(p), True),
    ("indent 0", lambda p: json.dumps(p, indent=0), True),
    ("indent 4", lambda p: json.dumps(p, indent=4), True),
    ("tabs", lambda p: json.dumps(p, indent="\t"), True),
    ("compact", lambda p: json.dumps(p, separators=(",", ":")), True),
    ("sorted fields", lambda p: json.dumps(p, indent=2, sort_keys=True), True),
    ("CRLF", lambda p: json.dumps(p, indent=1).replace("\n", "\r\n"), True),
    ("space before commas", lambda p: json.dumps(p, separators=(" , ", ": ")), True),
    ("spaces around", lambda p: " \n\t" + json.dumps(p, indent=1) + "\n\r\n ", True),
    ("ints in a row", lambda p: json.dumps(_with_row(p, "J|", [1, 0]), indent=1), True),
    ("version after the table", lambda p: json.dumps(_moved_last(p, "nashzoo")), True),
    ("game_id after the table", lambda p: json.dumps(_moved_last(p, "game_id")), True),
    ("table first", lambda p: json.dumps(_reordered(p, "policy"), indent=1), False),
    ("game after the table", lambda p: json.dumps(_moved_last(p, "game"), indent=1), False),
    ("byte order mark", lambda p: b"\xef\xbb\xbf" + json.dumps(p).encode(), False),
    ("UTF-16", lambda p: json.dumps(p, indent=1).encode("utf-16"), False),
    ("UTF-16 without a mark", lambda p: json.dumps(p).encode("utf-16-le"), False),
    ("UTF-32 without a mark", lambda p: json.dumps(p).encode("utf-32-be"), False),
    ("escaped field name", lambda p: json.dumps(p).replace('"policy"', '"p\\u006flicy"'), False),
]


def _with_row(payload: dict, key: str, row: list) -> dict:
    return {**payload, "policy": {**payload["policy"], key: row}}


def _moved_last(payload: dict, key: str) -> dict:
    out = {k: v for k, v in payload.items() if k != key}
    out[key] = payload[key]
    return out


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize(("name", "rewrite", "streams"), REWRITTEN, ids=[r[0] for r in REWRITTEN])
def test_any_layout_reads_as_the_whole_read(tmp_path, monkeypatch, chunk, name, rewrite, streams):
    monkeypatch.setattr(policy_file, "_CHUNK_BYTES", chunk)
    path = tmp_path / "p.json"
    TabularPolicy.uniform("kuhn_poker").save(path)
    data = rewrite(json.loads(path.read_text()))
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    outcome = _same_both_ways(monkeypatch, path)
    assert outcome[0] == "kuhn_poker", outcome  # it loads
    assert (read_policy_table(path) is not None) == streams


def _edit(old: str, new: str, count: int = 1) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text
        return text.replace(old, new, count)

    return edit


def _table_edit(change: Callable[[dict], Any]) -> Callable[[str], str]:
    def edit(text: str) -> str:
        payload = json.loads(text)
        change(payload["policy"])
        return json.dumps(payload, indent=1)

    return edit


def _top_edit(change: Callable[[dict], Any]) -> Callable[[str], str]:
    def edit(text: str) -> str:
        payload = json.loads(text)
        change(payload)
        return json.dumps(payload, indent=1)

    return edit


_END = "\n }\n}"
_DEEP = "[" * 100_000 + "]" * 100_000

# (name, how the writer's Kuhn file is damaged): each is refused, by both reads alike
BROKEN: list[tuple[str, Callable[[str], str | bytes]]] = [
    ("half", lambda text: text[: len(text) // 2]),
    ("last brace gone", lambda text: text[:-1]),
    ("empty", lambda text: ""),
    ("a list", lambda text: "[1, 2, 3]"),
    ("null", lambda text: "null"),
    ("another game", _edit('"kuhn_poker"', '"chess"')),
    ("action names", _edit('"bet"', '"raise"')),
    ("unknown key", _edit('"K|pb"', '"K|pbb"')),
    ("unknown key holding '],'", _edit('"K|pb"', '"K|pb],\\n  \\"x\\": ["')),
    ("row missing", _table_edit(lambda table: table.pop("Q|pb"))),
    ("not a distribution", _edit("0.5,", "0.9,")),
    ("game_params a list", _edit('"game_params": {}', '"game_params": [1, 2]')),
    ("game_params nested junk", _edit('"game_params": {}', '"game_params": {"a": [[{}]]}')),
    ("game missing", _edit('"game": "kuhn_poker",', "")),
    ("format missing", _top_edit(lambda payload: payload.pop("format"))),
    ("format 2", _edit("TabularPolicy/1", "TabularPolicy/2")),
    ("game_id wrong", _edit('"game_id": "kuhn_poker"', '"game_id": "leduc_poker"')),
    ("game_id wrong after the table", _top_edit(lambda p: p.update(game_id=p.pop("game_id")[1:]))),
    ("a string in a row", _edit("0.5,", '"half",')),
    ("a bool in a row", _edit("0.5,", "true,")),
    ("null row", _table_edit(lambda table: table.update({"J|": None}))),
    ("mapping row", _table_edit(lambda table: table.update({"J|": {"a": 1}}))),
    ("nested row", _table_edit(lambda table: table.update({"J|": [[0.5], [0.5]]}))),
    ("short row", _table_edit(lambda table: table.update({"J|": [1.0]}))),
    ("long row", _table_edit(lambda table: table.update({"J|": [1.0, 0.0, 0.0]}))),
    ("10**400", _edit("0.5,", "1" + "0" * 400 + ",")),
    ("NaN", _edit("0.5,", "NaN,")),
    ("Infinity", _edit("0.5,", "Infinity,")),
    ("-Infinity", _edit("0.5,", "-Infinity,")),
    ("a key twice, close", _edit('"J|":', '"J|": [0.0, 1.0], "J|":')),
    ("a key twice, far apart", _edit(_END, ',\n  "J|": [0.5, 0.5]' + _END)),
    ("format twice", _edit("{\n", '{\n "format": "nashzoo.TabularPolicy/1",\n')),
    ("table twice, first", lambda text: '{"policy": {}, ' + text[1:]),
    ("table twice, last", _edit(_END, '\n },\n "policy": {}\n}')),
    ("table a list", _top_edit(lambda payload: payload.update(policy=[]))),
    ("garbage after", lambda text: text + "x"),
    ("another object after", lambda text: text + "{}"),
    ("a comma ending the table", _edit(_END, ",\n }\n}")),
    ("a comma ending the file", _edit(_END, "\n },\n}")),
    ("two commas", _edit("],\n", "],,\n")),
    ("a bad byte", lambda text: text.encode().replace(b'"K|pb"', b'"K|\xffpb"')),
    ("a lone surrogate, escaped", _edit('"K|pb"', '"K|pb\\ud800"')),
    ("a lone surrogate, raw", lambda text: text.encode().replace(b"K|pb", b"K|\xed\xa0\x80")),
    ("a tab in a key", _edit('"K|pb"', '"K|\tpb"')),
    ("deep nesting", _edit('"K|pb": [\n   0.5,\n   0.5\n  ]', '"K|pb": ' + _DEEP)),
    ("a comment", _edit("{\n", "{\n // mine\n")),
    ("single quotes", _edit('"K|pb"', "'K|pb'")),
]


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize(("name", "damage"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_file_gets_the_whole_reads_error(tmp_path, monkeypatch, chunk, name, damage):
    monkeypatch.setattr(policy_file, "_CHUNK_BYTES", chunk)
    path = tmp_path / "p.json"
    TabularPolicy.uniform("kuhn_poker").save(path)
    data = damage(path.read_text())
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    outcome = _same_both_ways(monkeypatch, path)
    assert isinstance(outcome[0], type) and issubclass(outcome[0], Exception), outcome
    if name != "not a distribution":  # the table reads, its rows are refused as the policy's
        assert read_policy_table(path) is None


def test_the_game_asked_for_is_checked_as_before(tmp_path, monkeypatch) -> None:
    path = tmp_path / "p.json"
    TabularPolicy.uniform("kuhn_poker").save(path)
    assert _same_both_ways(monkeypatch, path, "kuhn_poker")[0] == "kuhn_poker"
    outcome = _same_both_ways(monkeypatch, path, "leduc_poker")
    assert "holds a policy for kuhn_poker, not for leduc_poker" in outcome[1]
    assert isinstance(_same_both_ways(monkeypatch, path, "no_such_game")[0], type)
    path.write_text(path.read_text()[:-1])  # the file's own error comes first, as before
    assert "not a readable policy JSON file" in _same_both_ways(monkeypatch, path, "leduc")[1]


def test_missing_files_and_folders_are_named_as_before(tmp_path, monkeypatch) -> None:
    for path in (tmp_path / "nothing.json", tmp_path):
        assert read_policy_table(path) is None
        assert isinstance(_same_both_ways(monkeypatch, path)[0], type)


def test_a_policy_is_streamed_never_parsed_whole(tmp_path, monkeypatch) -> None:
    """Parsed whole, Liar's dice's policy took five to seven times its file's size (the text,
    then every row as a Python list of floats); streamed, the table and one chunk's rows."""
    monkeypatch.setattr(policy_file, "_CHUNK_BYTES", 1 << 14)
    policy = _random_policy("liars_dice", seed=7)
    path = tmp_path / "p.json"
    policy.save(path)
    size = path.stat().st_size

    def refused(*args, **kwargs):
        raise AssertionError("the whole file was parsed at once")

    TabularPolicy.load(path)  # the tree's keys and index, made the first time they are asked
    with monkeypatch.context() as patch:
        patch.setattr(policy_file, "read_json", refused)
        loaded = TabularPolicy.load(path)
        # The reading alone: the rows' check after it is the whole read's too, and without
        # numba its numpy pass holds a few temporaries the table's size (10 MB here).
        tracemalloc.start()
        try:
            streamed = policy_file.read_policy_table(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert loaded.probs.tobytes() == policy.probs.tobytes()
    assert streamed is not None and streamed.probs.tobytes() == policy.probs.tobytes()
    assert peak < policy.probs.nbytes + size / 2, (peak, policy.probs.nbytes, size)


_TABLES = st.lists(
    st.lists(st.floats(min_value=0.0, max_value=1e6, allow_subnormal=True), min_size=2, max_size=2)
    .filter(lambda row: sum(row) > 0)
    .map(lambda row: [x / sum(row) for x in row]),
    min_size=12,
    max_size=12,
)
_LAYOUTS = st.sampled_from([None, 0, 1, 3, "\t"])


@settings(max_examples=40, deadline=None, derandomize=True)
@given(rows=_TABLES, indent=_LAYOUTS, compact=st.booleans(), chunk=st.sampled_from(CHUNKS))
def test_any_table_written_reads_back_alike(rows, indent, compact, chunk) -> None:
    """Any Kuhn table, saved and rewritten in any layout, reads back as the whole read reads it
    (and, as saved, as itself)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(policy_file, "_CHUNK_BYTES", chunk)
        path = Path(folder) / "p.json"
        policy = TabularPolicy("kuhn_poker", np.array(rows))
        policy.save(path)
        assert TabularPolicy.load(path).probs.tobytes() == policy.probs.tobytes()
        separators = (",", ":") if compact else None
        path.write_text(
            json.dumps(json.loads(path.read_text()), indent=indent, separators=separators)
        )
        assert _same_both_ways(patch, path)[0] == "kuhn_poker"
        assert read_policy_table(path) is not None
