"""The docs cannot rot either (tests/test_readme.py runs README's Python examples): the Python
examples of docs/integrations.md run where their libraries are installed, every ``nashzoo``
command in README.md, DEVELOPERS.md, docs/ARCHITECTURE.md and docs/integrations.md is one the
command line takes (options, learner specs and ``--set`` fields included), every ``make``
target they name exists, and every file, module and name they point to is where they say."""

from __future__ import annotations

import ast
import builtins
import importlib
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from nashzoo.cli import UsageError, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md", "DEVELOPERS.md", "docs/ARCHITECTURE.md", "docs/integrations.md"]
TEXT = {name: (ROOT / name).read_text() for name in DOCS}
INTEGRATIONS = TEXT["docs/integrations.md"]
# The pages whose names (files, tests, modules' and classes' names) are checked: the docs above
# and the reliability page, whose command lines are malformed on purpose (test_cli_malformed.py
# checks those).
NAMED = {**TEXT, "docs/reliability.md": (ROOT / "docs/reliability.md").read_text()}


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def _spans(text: str) -> list[str]:
    """The inline code spans outside the code blocks, whitespace (line breaks) made one space."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]


PY_BLOCKS = _blocks(INTEGRATIONS, "python")
# Shorter training, same calls: the examples' budgets are for results, not for a test.
SHORTER = {
    'MaskablePPO("MlpPolicy", env, seed=0).learn(20_000)': (
        'MaskablePPO("MlpPolicy", env, seed=0, n_steps=64, batch_size=32).learn(64)'
    ),
}


# --- docs/integrations.md's Python examples ---------------------------------------------------
def _imported_modules(code: str) -> list[str]:
    """The modules a block imports, other than nashzoo's own."""
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return sorted(m for m in found if m.split(".")[0] != "nashzoo")


def _free_names(code: str) -> set[str]:
    """Names a block reads but never binds: what its elided parts (``# ...``) would define."""
    bound = set(dir(builtins))
    loaded = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else loaded).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
    return loaded - bound


def _tianshou_dqn():
    """An untrained Tianshou DQN for Kuhn's seat 0: what the recipe's elided training makes."""
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.env import PettingZooEnv
    from tianshou.utils.net.common import Net

    from nashzoo.envs import kuhn_poker_v0

    env = PettingZooEnv(kuhn_poker_v0.env())
    shape = env.observation_space["observation"].shape
    net = Net(state_shape=shape, action_shape=2, hidden_sizes=[8])
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_inference=0.05)
    return DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3))


def _leduc_network():
    """A torch network over Leduc's information-set tensors (logits or action values)."""
    import torch

    from nashzoo import load_game

    game = load_game("leduc_poker")
    torch.manual_seed(0)
    return torch.nn.Linear(game.infoset_tensor_size, game.num_actions)


def _uniform_probs(tensors: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """A callable policy ``fn(tensors, masks)``: uniform over the legal actions."""
    return masks / masks.sum(axis=1, keepdims=True)


STAND_INS = {
    "dqn": _tianshou_dqn,
    "net": _leduc_network,
    "q_net": _leduc_network,
    "fn": lambda: _uniform_probs,
}


@pytest.mark.parametrize("index", range(len(PY_BLOCKS)))
def test_integrations_python_examples_run(index, tmp_path, monkeypatch, capsys):
    """Each block as written (budgets cut by SHORTER), in an empty folder; a block whose library
    is not installed is skipped, and a name its elided part defines is given a stand-in."""
    code = PY_BLOCKS[index]
    for module in _imported_modules(code):
        pytest.importorskip(module, exc_type=ImportError)
    for long, short in SHORTER.items():
        code = code.replace(long, short)
    missing = sorted(_free_names(code) - set(STAND_INS))
    assert not missing, f"block {index} uses {missing}, never defined: add a stand-in here"
    namespace = {"__name__": "__main__"}
    namespace.update({name: STAND_INS[name]() for name in _free_names(code)})
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"docs/integrations.md python block {index}", "exec"), namespace)
    if (tmp_path / "ppo_kuhn.zip").exists():  # the SB3 recipe: its commands read the file
        _run_integrations_commands(capsys)


def _run_integrations_commands(capsys) -> None:
    """docs/integrations.md's shell commands, on the model the SB3 recipe saved (a tournament
    plays 20 sampled matches a pairing rather than 2,000)."""
    lines = [line for block in _blocks(INTEGRATIONS, "bash") for line in block.splitlines()]
    assert lines, "docs/integrations.md has no nashzoo commands"
    for line in lines:
        argv = shlex.split(line)[1:]
        if argv[0] == "tournament":
            argv += ["--episodes", "20", "--no-progress"]
        capsys.readouterr()
        assert main(argv) == 0, f"{line}: {capsys.readouterr().err}"
        assert "kuhn_poker" in capsys.readouterr().out or argv[0] == "tournament"


def test_every_shortened_example_is_still_in_the_docs():
    """A SHORTER entry whose text left the docs would run the example at its full budget."""
    for long in SHORTER:
        assert any(long in block for block in PY_BLOCKS), f"no longer in the docs: {long}"


# --- commands ---------------------------------------------------------------------------------
def _commands() -> list[tuple[str, str]]:
    """``(doc, line)`` for every ``nashzoo ...`` line of the docs' shell blocks, comment cut."""
    found = []
    for name, text in TEXT.items():
        for block in _blocks(text, "bash"):
            for line in block.splitlines():
                line = line.split(" #", 1)[0].strip()
                if line.startswith("nashzoo "):
                    found.append((name, line))
    return found


COMMANDS = _commands()


def _parse(line: str):
    try:
        return build_parser().parse_args(shlex.split(line)[1:])
    except UsageError as err:
        pytest.fail(f"{line}: {err}")


def _learner_specs(args) -> list[str]:
    """The learner specs a parsed command names (a race without --learners: the ones its
    ``--set`` entries name, since the default list has its own rules)."""
    if args.command == "race":
        named = getattr(args, "learners", None)
        sets = getattr(args, "sets", None) or ()
        return list(named) if named else [item.split(".")[0] for item in sets]
    if args.command == "duel":
        return [args.seat0, args.seat1]
    if args.command == "train" and args.learner:
        return [args.learner, args.opponent or args.learner]
    return []


@pytest.mark.parametrize(("doc", "line"), COMMANDS, ids=[line for _, line in COMMANDS])
def test_every_command_in_the_docs_parses_and_its_learner_settings_exist(doc, line):
    """The command line's own parser takes it, and its learner specs and ``--set`` fields are
    fields of the learners' configs (checked as the command checks them before any work; not
    where a ``--plugin`` brings the learner)."""
    from nashzoo.train.settings import resolve_settings

    args = _parse(line)
    specs = _learner_specs(args)
    if specs and not args.plugin:
        resolve_settings(specs, sets=getattr(args, "sets", None) or ())


def test_the_docs_name_commands():
    assert {line.split()[1] for _, line in COMMANDS} >= {"race", "train", "eval", "tournament"}


def test_no_two_race_examples_write_one_folder():
    """Races run one after another from README (after ``make race``) are not refused because an
    earlier one holds their folder: each has its own ``--out``, none ``make race``'s."""
    outs = {}
    for _, line in COMMANDS:
        args = _parse(line)
        if args.command == "race" and not getattr(args, "resume", False):
            outs.setdefault(getattr(args, "out", "runs/race"), []).append(line)
    assert "runs/race" not in outs, f"these write make race's runs/race: {outs['runs/race']}"
    shared = {out: lines for out, lines in outs.items() if len(lines) > 1}
    assert not shared, f"race examples sharing a folder: {shared}"


def _subcommand_options() -> dict[str, set[str]]:
    """Every option string of each subcommand (and of the top level, under ``""``)."""
    parser = build_parser()
    top = {opt for action in parser._actions for opt in action.option_strings}
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    options = {"": top}
    for name, sub in subparsers.choices.items():
        options[name] = top | {opt for action in sub._actions for opt in action.option_strings}
    return options


def test_every_command_named_in_the_prose_exists_with_its_options():
    """Inline ``nashzoo SUBCOMMAND --option ...`` (often a fragment, so not parsed whole): the
    subcommand exists and every option belongs to it."""
    options = _subcommand_options()
    checked = 0
    for name, text in TEXT.items():
        for span in _spans(text):
            words = span.split()
            if words[0] != "nashzoo" or "|" in span or "..." in span:
                continue
            rest = words[1:]
            while rest and rest[0].startswith("-"):  # global options, --plugin with its value
                rest = rest[2:] if rest[0] == "--plugin" else rest[1:]
            sub = rest[0] if rest else ""
            assert sub in options, f"{name}: `{span}`: no subcommand {sub!r}"
            unknown = [w for w in words if w.startswith("--") and w not in options[sub]]
            assert not unknown, f"{name}: `{span}`: nashzoo {sub} has no {unknown}"
            checked += 1
    assert checked >= 5


def test_every_set_in_the_prose_names_a_config_field():
    """``--set LEARNER.FIELD=VALUE`` quoted in the prose (README's mmd_ppo recipes) is valid."""
    from nashzoo.train.settings import parse_set, resolve_settings

    checked = 0
    for text in TEXT.values():
        for span in _spans(text):
            sets = [s for s in re.findall(r"--set (\S+)", span) if not s[0].isupper()]  # LEARNER
            if sets:
                resolve_settings(list(parse_set(sets)), sets=sets)
                checked += len(sets)
    assert checked >= 5


def test_every_option_in_the_docs_is_one_a_command_or_script_takes():
    """Any ``--option`` written in the docs belongs to the command line or to a script in
    benchmarks/ (DEVELOPERS.md's ``--quick``, ``--before``, ...), or to the named other tool."""
    known = set().union(*_subcommand_options().values())
    for script in (ROOT / "benchmarks").glob("*.py"):
        known |= set(re.findall(r"add_argument\(\s*\"(--[a-z][a-z0-9-]*)\"", script.read_text()))
    other_tools = {"--logdir"}  # tensorboard --logdir
    for name, text in TEXT.items():
        unknown = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text)) - known - other_tools
        assert not unknown, f"{name} names options nothing takes: {sorted(unknown)}"


def test_every_make_target_in_the_docs_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile, flags=re.M))
    named = set()
    for text in TEXT.values():
        named |= set(re.findall(r"`make ([a-z][\w-]*)", text))
        for block in _blocks(text, "bash"):
            named |= set(re.findall(r"^make ([a-z][\w-]*)", block, flags=re.M))
    assert named >= {"race", "test"}
    assert not named - targets, f"make targets named but not in the Makefile: {named - targets}"


# --- files, modules and names -----------------------------------------------------------------
PATH_SPAN = re.compile(r"(?P<path>(?:[\w.]+/)*[\w]+(?:\.py|/))(?:::(?P<test>\w+))?")
MODULE_NAME_SPAN = re.compile(r"(?P<module>(?:[a-z_]+/)*_?[a-z_]+)\.(?P<name>[A-Za-z_]\w*)")


def _find(relative: str) -> list[Path]:
    """Where a path the docs give is: from the root, from ``nashzoo/``, or (a bare file name)
    anywhere in the package, the tests or the benchmarks."""
    direct = [base / relative for base in (ROOT, ROOT / "nashzoo") if (base / relative).exists()]
    if direct or "/" in relative.rstrip("/"):
        return direct
    homes = ("nashzoo", "tests", "benchmarks")
    return [p for home in homes for p in (ROOT / home).rglob(relative)]


def _defines(path: Path, name: str) -> bool:
    """Whether a module defines ``name`` at its top level or in one of its classes."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            if node.name == name:
                return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


READERS_FILES = {"coin_bluff.py", "my_learners.py"}  # README's examples, saved by the reader
# Folders the reliability page's probes wrote into, and the file the command line was before it
# became the package nashzoo/cli/ (the page tells that history).
NOT_OURS = {"MISSING/", "newdir/", "work/", "pp/", "nashzoo/cli.py"}
# A user's files that shadowed the standard library's (the fourteenth pass's probe).
NOT_OURS |= {f"{name}.py" for name in ("secrets", "logging", "queue", "uuid", "pickle")}


def test_every_file_and_test_the_docs_point_to_exists():
    missing = []
    for doc, text in NAMED.items():
        for span in _spans(text):
            match = PATH_SPAN.fullmatch(span)
            if not match or span.startswith(("runs/", "DIR/")) or span in READERS_FILES | NOT_OURS:
                continue  # a run's output folder, or a file the reader writes
            found = _find(match["path"])
            if not found:
                missing.append(f"{doc}: {span}")
            elif match["test"] and not _defines(found[0], match["test"]):
                missing.append(f"{doc}: {span} (no such test)")
    assert not missing, f"files the docs point to that do not exist: {missing}"


FILE_KINDS = {"py", "json", "md", "csv", "png", "npz", "zip", "toml", "txt", "lock"}


def _module_has(path: Path, name: str) -> bool:
    """The module at ``path`` (a file or a package folder) has ``name``: as an attribute (one
    its ``__getattr__`` makes included) or as a field or method of a class it defines
    (``infoset.tensor`` is the ``Infoset`` field an object of that module has)."""
    module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
    source = path / "__init__.py" if path.is_dir() else path
    return hasattr(module, name) or _defines(source, name)


def test_every_module_name_the_docs_point_to_is_defined_there():
    """``games/tree.walk_states``, ``lp.lp_is_cheap``, ``torch_networks.ManualMLP``: the name is
    defined in that nashzoo module (spans whose first part is no nashzoo module are others')."""
    missing = []
    checked = 0
    for doc, text in NAMED.items():
        for span in _spans(text):
            match = MODULE_NAME_SPAN.fullmatch(span)
            if not match or match["name"] in FILE_KINDS or span.startswith("nashzoo."):
                continue
            module = match["module"]
            files = [f for f in _find(f"{module}.py") if "nashzoo" in f.parts]
            files += [f.parent for f in _find(f"{module}/__init__.py") if "nashzoo" in f.parts]
            if not files:
                continue
            checked += 1
            if not any(_module_has(f, match["name"]) for f in files):
                missing.append(f"{doc}: {span}")
    assert checked >= 10
    assert not missing, f"names the docs place in a module that does not define them: {missing}"


def test_every_dotted_nashzoo_name_in_the_docs_imports():
    missing = []
    for doc, text in NAMED.items():
        for span in set(_spans(text)):
            if not re.fullmatch(r"nashzoo(\.\w+)+", span):
                continue
            parts = span.split(".")
            for cut in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:cut]))
                    break
                except ImportError:
                    continue
            try:
                for part in parts[cut:]:
                    obj = getattr(obj, part)
            except AttributeError:
                missing.append(f"{doc}: {span}")
    assert not missing, f"nashzoo names in the docs that do not exist: {missing}"


def _nashzoo_classes() -> dict[str, list[str]]:
    """Every class nashzoo defines at a module's top level: its name -> the modules."""
    found: dict[str, list[str]] = {}
    for path in (ROOT / "nashzoo").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                found.setdefault(node.name, []).append(module.removesuffix(".__init__"))
    return found


def test_every_test_and_class_member_the_docs_name_exists():
    """``test_...`` names (the reliability tables cite hundreds) are tests in tests/, and
    ``Class.member`` names of nashzoo's classes are members of them: the reliability page once
    cited a ``State.apply_action`` that never existed."""
    modules = list((ROOT / "tests").glob("test_*.py"))
    tests = {path.stem for path in modules} | {
        node.name
        for path in modules
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef)
    }
    classes = _nashzoo_classes()
    missing = []
    checked = 0
    for doc, text in NAMED.items():
        for span in set(_spans(text)):
            for name in re.findall(r"\btest_\w+", span) if span.startswith("test_") else []:
                checked += 1
                if name not in tests:
                    missing.append(f"{doc}: {name}")
            member = re.fullmatch(r"([A-Z]\w*)\.([a-z_]\w*)", span)
            if member and member[1] in classes:
                checked += 1
                owners = [
                    getattr(importlib.import_module(m), member[1]) for m in classes[member[1]]
                ]
                if not any(
                    hasattr(cls, member[2])
                    or member[2] in getattr(cls, "__dataclass_fields__", {})
                    or member[2] in getattr(cls, "__annotations__", {})
                    for cls in owners
                ):
                    missing.append(f"{doc}: {span}")
    assert checked >= 300
    assert not missing, f"tests and members the docs name that do not exist: {missing}"
