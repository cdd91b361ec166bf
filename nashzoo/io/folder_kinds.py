"""The three kinds of output folder the command line writes, told apart by the file each stores
first: a training run (``train``), a race (``race``) and a tournament (``tournament``). One
folder holds one kind: mixed, their files would be read as each other's, and ``--force`` of one
kind would delete the other's work."""

from __future__ import annotations

from pathlib import Path

FOLDER_MARKERS = {
    "training run": "train_config.json",
    "race": "race_config.json",
    "tournament": "tournament_config.json",
}
"""Each kind of output folder and the file that marks it (the writers' own constants equal
these: ``tests/test_surroundings.py`` checks)."""


def refuse_other_kinds(folder: str | Path, kind: str, error: type[Exception]) -> None:
    """Raise ``error`` when ``folder`` holds an output of another kind than ``kind`` (one of
    :data:`FOLDER_MARKERS`), naming it and the way out; ``--force`` never replaces it."""
    for other, marker in FOLDER_MARKERS.items():
        if other != kind and (Path(folder) / marker).exists():
            raise error(
                f"{folder} holds a {other} ({marker}), not a {kind}; choose another --out "
                f"(--force replaces a {kind}, never a {other})"
            )
